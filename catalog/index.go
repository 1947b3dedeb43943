package catalog

import (
	"math"
	"regexp"
	"strings"

	"github.com/tdewolff/parse/v2/js"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

// indexData is what Load keeps of the index bundle.
type indexData struct {
	path     string // "/assets/index-Ab12.js"
	assets   *assetTable
	menus    map[int]string
	i18n     map[string]map[string]i18nImport
	langs    *languageConfig // nil when not found
	units    map[string]*jsval.Object
	prog     *jsval.Program // released once definitions are resolved
	parseErr bool           // the bundle did not parse whole
}

// buildIndex reads an index bundle: the text scans
// (docs/spec.md A-1.4a to A-1.4c), then the syntax tree
// (docs/spec.md A-1.4d, A-1.4e). A bundle that does not parse whole still gives
// its text scans and whatever the recovery parser kept.
func buildIndex(src []byte, indexPath string) *indexData {
	text := strings.ToValidUTF8(string(src), "\uFFFD")
	d := &indexData{
		path:   indexPath,
		assets: scanAssets(text, indexPath),
		menus:  scanMenuMap(text),
		i18n:   scanI18nMap(text),
	}
	d.prog = jsval.Parse(src, jsval.Limits{})
	d.parseErr = d.prog.Err != nil
	d.langs = findLanguageConfig(d.prog)
	d.units = findUnitTable(d.prog)
	return d
}

// usable says whether the bundle looks like the web app's index at all.
func (d *indexData) usable() bool {
	return d.assets.size() > 0 || len(d.menus) > 0 || len(d.i18n) > 0
}

// languageConfig is the object of docs/spec.md A-1.4d.
type languageConfig struct {
	offered []string // lower-cased ids of the non-development translations
	deflt   string   // defaultTranslation, lower case
	// fallback is the app's fallbackLocale, lower case ("" when it names
	// none): the language the app shows a text in that the chosen one lacks.
	fallback string
}

// secondLanguage is the language the app shows a text in that lang lacks,
// its fallbackLocale; "" when it names none, names lang itself, or the
// index has no translations in it.
func (d *indexData) secondLanguage(lang string) string {
	if d.langs == nil || d.langs.fallback == lang || len(d.i18n[d.langs.fallback]) == 0 {
		return ""
	}
	return d.langs.fallback
}

// findLanguageConfig finds, anywhere in the bundle (a declaration,
// window.X = …, nested, inside an IIFE, export default), the first object
// literal with a "translations" array literal of which at least 70 % of the
// object elements carry both "id" and "flag", and a string literal
// "defaultTranslation" (docs/spec.md A-1.4d).
func findLanguageConfig(p *jsval.Program) *languageConfig {
	var found *languageConfig
	p.WalkLiterals(func(e js.IExpr, site jsval.Site) bool {
		o, ok := e.(*js.ObjectExpr)
		if !ok || !looksLikeLanguageConfig(o) {
			return true
		}
		v, _ := p.EvalAt(o, site).(*jsval.Object)
		list, _ := v.Value("translations").([]jsval.Value)
		def, _ := v.Value("defaultTranslation").(string)
		if len(list) == 0 || strings.TrimSpace(def) == "" {
			return true
		}
		cfg := &languageConfig{deflt: strings.ToLower(strings.TrimSpace(def))}
		if fb, ok := v.Value("fallbackLocale").(string); ok {
			cfg.fallback = strings.ToLower(strings.TrimSpace(fb))
		}
		seen := map[string]bool{}
		for _, item := range list {
			t, _ := item.(*jsval.Object)
			id, _ := jsval.Text(t.Value("id"))
			id = strings.ToLower(strings.TrimSpace(id))
			if id == "" || seen[id] {
				continue
			}
			if dev, _ := t.Value("dev").(bool); dev {
				continue // a development language is not offered to users
			}
			seen[id] = true
			cfg.offered = append(cfg.offered, id)
		}
		found = cfg
		return false
	})
	return found
}

func looksLikeLanguageConfig(o *js.ObjectExpr) bool {
	var trans *js.ArrayExpr
	defOK := false
	for i := range o.List {
		k, static := jsval.PropertyKey(&o.List[i])
		if !static {
			continue
		}
		switch k {
		case "translations":
			trans, _ = o.List[i].Value.(*js.ArrayExpr)
		case "defaultTranslation":
			l, ok := o.List[i].Value.(*js.LiteralExpr)
			defOK = ok && l.TokenType == js.StringToken
		}
	}
	if trans == nil || !defOK {
		return false
	}
	objects, withIDFlag := 0, 0
	for _, el := range trans.List {
		eo, ok := el.Value.(*js.ObjectExpr)
		if !ok {
			continue
		}
		objects++
		hasID, hasFlag := false, false
		for i := range eo.List {
			switch k, _ := jsval.PropertyKey(&eo.List[i]); k {
			case "id":
				hasID = true
			case "flag":
				hasFlag = true
			}
		}
		if hasID && hasFlag {
			withIDFlag++
		}
	}
	return objects > 0 && float64(withIDFlag) >= 0.7*float64(objects)
}

// descriptorKeys mark a unit descriptor (docs/spec.md A-1.4e).
var descriptorKeys = []string{"text", "options", "value", "valuePrepare"}

// findUnitTable picks, among the top-level declarators initialised with an
// object literal, the one with the most descriptor-shaped entries under
// integer keys (hex keys included: 0x31 is "49"); the first wins ties
// (docs/spec.md A-1.4e). Only the winner is evaluated.
func findUnitTable(p *jsval.Program) map[string]*jsval.Object {
	var best *jsval.Decl
	bestN := 0
	for _, d := range p.Decls() {
		o, ok := d.Init.(*js.ObjectExpr)
		if !ok {
			continue
		}
		n := 0
		for i := range o.List {
			k, static := jsval.PropertyKey(&o.List[i])
			if !static || unitKey(k) == "" {
				continue
			}
			if v, ok := o.List[i].Value.(*js.ObjectExpr); ok && hasAnyKey(v, descriptorKeys) {
				n++
			}
		}
		if n > bestN {
			best, bestN = d, n
		}
	}
	if best == nil {
		return nil
	}
	table, _ := p.EvalAt(best.Init, best.Site()).(*jsval.Object)
	out := map[string]*jsval.Object{}
	for _, k := range table.Keys() {
		desc, ok := table.Value(k).(*jsval.Object)
		if code := unitKey(k); ok && code != "" {
			out[code] = desc
		}
	}
	return out
}

func hasAnyKey(o *js.ObjectExpr, keys []string) bool {
	for i := range o.List {
		k, static := jsval.PropertyKey(&o.List[i])
		if !static {
			continue
		}
		for _, want := range keys {
			if k == want {
				return true
			}
		}
	}
	return false
}

// unitKey normalises a unit code to its integer text ("49"), "" when it is
// not an integer: numbers, integer-valued floats and numeric strings.
func unitKey(k string) string {
	f, ok := jsval.ParseNumber(strings.TrimSpace(k))
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return ""
	}
	return jsval.FormatNumber(f)
}

// tokenRE is the shape of a symbol (docs/spec.md A-1.4f).
var tokenRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)

// indexDefinitions finds inline definitions of the wanted symbols
// (docs/spec.md A-1.4f, A-4.4a): every property of the bundle keyed by the
// symbol whose value evaluates to an object that looks like a definition; a
// later one overrides an earlier one. The reference client's fallbacks to
// "inline candidate" and "root" objects are not copied: they hand a whole
// unrelated object to any symbol not found, while a symbol's own key is all
// this search needs.
func indexDefinitions(p *jsval.Program, wanted map[string]bool) map[string]*jsval.Object {
	out := map[string]*jsval.Object{}
	if len(wanted) == 0 {
		return out
	}
	p.WalkProperties(func(pr *js.Property, site jsval.Site) bool {
		k, static := jsval.PropertyKey(pr)
		if !static || !wanted[k] {
			return true
		}
		if o, ok := p.EvalAt(pr.Value, site).(*jsval.Object); ok && looksLikeDefinition(o, k) {
			out[k] = o
		}
		return true
	})
	return out
}
