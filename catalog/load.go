package catalog

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

// fetchConcurrency is how many definition, menu and translation chunks are
// fetched and parsed at once (the asset client bounds requests in flight
// itself; this bounds parse work and memory held at once).
const fetchConcurrency = 4

// errBudget is the error of a fetch refused because the load's byte budget
// is spent.
var errBudget = errors.New("catalog: the load's byte budget is spent")

type loader struct {
	f   Fetcher
	opt Options

	mu       sync.Mutex
	total    int64
	failures map[Stage]int
}

func (l *loader) fail(s Stage, what string, err error) {
	l.mu.Lock()
	l.failures[s]++
	l.mu.Unlock()
	l.opt.Logger.Warn("catalog: asset failed", "stage", string(s), "asset", what, "err", err)
}

// fetch gets one asset within the byte bounds.
func (l *loader) fetch(ctx context.Context, p string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	spent := l.total >= l.opt.MaxTotalBytes
	l.mu.Unlock()
	if spent {
		return nil, errBudget
	}
	b, err := l.f.Asset(ctx, p)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > l.opt.MaxAssetBytes {
		return nil, fmt.Errorf("catalog: %s is %d bytes, over the %d-byte bound", p, len(b), l.opt.MaxAssetBytes)
	}
	l.mu.Lock()
	l.total += int64(len(b))
	over := l.total > l.opt.MaxTotalBytes
	l.mu.Unlock()
	if over {
		return nil, errBudget
	}
	return b, nil
}

// Load discovers the index, parses it and every chunk the modules' menus
// need, and resolves each module. One bad chunk costs that chunk only
// (counted in Failures). It returns an error only when nothing usable was
// built (no index bundle, or the context ended before one was read) or the
// language is not offered (*LanguageError).
func Load(ctx context.Context, f Fetcher, modules []ModuleSpec, opt Options) (*Catalog, error) {
	opt = opt.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	l := &loader{f: f, opt: opt, failures: map[Stage]int{}}

	idx, err := l.discover(ctx)
	if err != nil {
		return nil, err
	}
	if idx.parseErr {
		l.fail(StageIndex, idx.path, idx.prog.Err)
	}

	// Language (docs/spec.md ): asked for, else the default translation, else en.
	offered := idx.languages()
	lang := strings.ToLower(strings.TrimSpace(opt.Language))
	if lang == "" {
		lang = DefaultLanguage
		if idx.langs != nil && idx.langs.deflt != "" {
			lang = idx.langs.deflt
		}
	}
	if len(offered) > 0 && !contains(offered, lang) {
		return nil, &LanguageError{Language: lang, Offered: offered}
	}

	// Menus, once per deviceMenu (docs/spec.md ).
	menus := l.loadMenus(ctx, idx, modules)

	// What each module's menu shows under its permissions, and the
	// definitions of every symbol some module shows (docs/spec.md A-4.4a).
	shown := make(map[string][]visibleToken, len(modules))
	wanted := map[string]bool{}
	for _, spec := range modules {
		if _, dup := shown[spec.DevID]; dup {
			continue
		}
		vts := visibleTokens(filterRoutes(menus[spec.DeviceMenu], permissionSet(spec.Permissions)))
		shown[spec.DevID] = vts
		for _, vt := range vts {
			wanted[vt.symbol] = true
		}
	}
	defs := l.loadDefinitions(ctx, idx, wanted)
	if len(idx.units) == 0 && len(wanted) > 0 {
		l.fail(StageUnits, idx.path, errors.New("no unit descriptor table in the index"))
	}
	idx.prog = nil // the syntax tree is not needed any more

	// Translations: the namespaces names, units, enum labels and titles use.
	need := map[string]bool{"parameters": true, "units": true, "app": true, "routes": true, "menu": true, "alarms": true}
	for _, d := range defs {
		if ns := namespaceOf(d.nameToken); ns != "" {
			need[ns] = true
		}
	}
	for _, desc := range idx.units {
		if s, ok := desc.Value("text").(string); ok && namespaceOf(s) != "" {
			need[namespaceOf(s)] = true
		}
		if opts, ok := desc.Value("options").(*jsval.Object); ok {
			for _, k := range opts.Keys() {
				if s, ok := opts.Value(k).(string); ok && namespaceOf(s) != "" {
					need[namespaceOf(s)] = true
				}
			}
		}
	}
	for _, routes := range menus {
		titleNamespaces(routes, need)
	}
	tr := l.loadLabelled(ctx, idx, lang, need)
	alarms := alarmTranslations(tr)
	// An alarm the language has no name for is shown by the app in its
	// fallback language, whose alarm names are read too.
	if second := idx.secondLanguage(lang); second != "" {
		for code, name := range alarmTranslations(l.loadLabelled(ctx, idx, second, map[string]bool{"alarms": true, "app": true})) {
			if _, ok := alarms[code]; !ok {
				alarms[code] = name
			}
		}
	}

	rs := &resolver{defs: defs, tr: tr, units: &unitTable{desc: idx.units, tr: tr, memo: map[string]*unit{}}}
	for code := range idx.units {
		rs.units.get(code)
	}
	c := &Catalog{
		indexAsset: path.Base(idx.path),
		language:   lang,
		languages:  offered,
		modules:    map[string]*Module{},
		failures:   l.failures,
		alarms:     alarms,
		res:        rs,
	}
	for _, spec := range modules {
		if _, dup := c.modules[spec.DevID]; dup {
			continue
		}
		c.modules[spec.DevID] = rs.buildModule(spec, shown[spec.DevID])
		c.order = append(c.order, spec.DevID)
	}
	sort.Strings(c.order)
	rs.units.freeze()
	c.fingerprint = fingerprint(c.language, c.Modules(), rs.units, c.alarms)
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// languages offered: the language configuration's ids (development ones
// excluded); without a configuration, the languages of the import map.
func (d *indexData) languages() []string {
	var out []string
	if d.langs != nil && len(d.langs.offered) > 0 {
		out = append(out, d.langs.offered...)
	} else {
		for lang := range d.i18n {
			out = append(out, lang)
		}
	}
	sort.Strings(out)
	return out
}

// discover finds and reads the index bundle (docs/spec.md A-1.2a): every index named by
// the HTML of "/" and "/assets/" in order, then a previously known index,
// then index-main.js and index.js; the first that reads as an index wins.
func (l *loader) discover(ctx context.Context) (*indexData, error) {
	var cands []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			cands = append(cands, p)
		}
	}
	for _, page := range []string{"/", "/assets/"} {
		b, err := l.fetch(ctx, page)
		if err != nil {
			l.opt.Logger.Debug("catalog: page not read", "page", page, "err", err)
			continue
		}
		for _, m := range indexCandidateRE.FindAllSubmatch(b, -1) {
			add("/assets/" + string(m[1]))
		}
	}
	if k := strings.TrimSpace(l.opt.KnownIndex); k != "" {
		add("/assets/" + path.Base(k))
	}
	add("/assets/index-main.js")
	add("/assets/index.js")
	var tried []string
	for _, p := range cands {
		if err := ctx.Err(); err != nil {
			break
		}
		b, err := l.fetch(ctx, p)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		if looksLikeHTML(b) {
			tried = append(tried, p+": an HTML page, not a script")
			continue
		}
		d := buildIndex(b, p)
		if !d.usable() {
			tried = append(tried, p+": names no assets")
			continue
		}
		return d, nil
	}
	l.mu.Lock()
	l.failures[StageDiscovery]++
	l.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoIndex, err)
	}
	return nil, fmt.Errorf("%w (tried %s)", ErrNoIndex, strings.Join(tried, "; "))
}

func looksLikeHTML(b []byte) bool {
	s := strings.TrimSpace(string(b[:min(len(b), 512)]))
	return strings.HasPrefix(s, "<")
}

// menuPathFor picks a device menu's chunk (docs/spec.md ): the deviceMenu
// map's stem when the asset table has it, else the module.menu asset, else
// the 0 asset.
func menuPathFor(idx *indexData, deviceMenu int) (string, bool) {
	if stem, ok := idx.menus[deviceMenu]; ok {
		if r, ok := idx.assets.lookupName(stem); ok {
			return r.path, true
		}
		return joinAsset(idx.path, "./"+stem+".js"), true
	}
	for _, base := range []string{"module.menu", "0"} {
		if r, ok := idx.assets.lookup(base); ok {
			return r.path, true
		}
	}
	return "", false
}

func (l *loader) loadMenus(ctx context.Context, idx *indexData, modules []ModuleSpec) map[int][]*route {
	menus := map[int][]*route{}
	var dms []int
	for _, m := range modules {
		if _, seen := menus[m.DeviceMenu]; !seen {
			menus[m.DeviceMenu] = nil
			dms = append(dms, m.DeviceMenu)
		}
	}
	var mu sync.Mutex
	parallel(dms, func(dm int) {
		p, ok := menuPathFor(idx, dm)
		if !ok {
			l.fail(StageMenu, fmt.Sprintf("deviceMenu %d", dm), errors.New("no menu chunk for this deviceMenu"))
			return
		}
		b, err := l.fetch(ctx, p)
		if err != nil {
			l.fail(StageMenu, p, err)
			return
		}
		routes, ok := parseMenu(b)
		if !ok {
			l.fail(StageMenu, p, errors.New("no route list in the menu chunk"))
			return
		}
		mu.Lock()
		menus[dm] = routes
		mu.Unlock()
	})
	return menus
}

// loadDefinitions resolves each wanted symbol (docs/spec.md A-4.4a): a chunk
// whose base is the symbol, else the index's inline definitions. A chunk that cannot be
// fetched or parsed is counted and the symbol falls back to the index.
func (l *loader) loadDefinitions(ctx context.Context, idx *indexData, wanted map[string]bool) map[string]*definition {
	defs := map[string]*definition{}
	var chunked []string
	for tok := range wanted {
		if _, ok := idx.assets.lookup(tok); ok {
			chunked = append(chunked, tok)
		}
	}
	sort.Strings(chunked)
	var mu sync.Mutex
	parallel(chunked, func(tok string) {
		r, _ := idx.assets.lookup(tok)
		b, err := l.fetch(ctx, r.path)
		if err != nil {
			l.fail(StageDefinition, r.path, err)
			return
		}
		o, ok := parseDefinitionChunk(b)
		if !ok || !looksLikeDefinition(o, tok) {
			l.fail(StageDefinition, r.path, errors.New("no definition object in the chunk"))
			return
		}
		d := newDefinition(tok, "asset:"+r.path, o)
		mu.Lock()
		defs[tok] = d
		mu.Unlock()
	})
	rest := map[string]bool{}
	for tok := range wanted {
		if defs[tok] == nil {
			rest[tok] = true
		}
	}
	if idx.prog != nil {
		for tok, o := range indexDefinitions(idx.prog, rest) {
			defs[tok] = newDefinition(tok, "inline:index", o)
		}
	}
	return defs
}

// parseDefinitionChunk finds a chunk's definition object (docs/spec.md ): the
// default export (through its binding), else the largest literal. An array
// is not a definition.
func parseDefinitionChunk(src []byte) (*jsval.Object, bool) {
	p := jsval.Parse(src, jsval.Limits{})
	if v, _, ok := p.Export(); ok {
		if o, ok := v.(*jsval.Object); ok {
			return o, true
		}
	}
	v, _ := p.LargestLiteral()
	o, ok := v.(*jsval.Object)
	return o, ok
}

// loadTranslations fetches the wanted namespaces of one language that the
// import map offers (docs/spec.md A-1.4c, A-3.3a); a namespace the map lacks is simply
// absent.
func (l *loader) loadTranslations(ctx context.Context, idx *indexData, lang string, want map[string]bool) translations {
	tr := translations{}
	imports := idx.i18n[lang]
	var names []string
	for ns := range want {
		if _, ok := imports[ns]; ok {
			names = append(names, ns)
		}
	}
	sort.Strings(names)
	var mu sync.Mutex
	parallel(names, func(ns string) {
		p := i18nPath(idx.assets, idx.path, imports[ns])
		b, err := l.fetch(ctx, p)
		if err != nil {
			l.fail(StageI18n, p, err)
			return
		}
		obj, ok := parseNamespace(b)
		if !ok {
			l.fail(StageI18n, p, errors.New("the namespace parsed to nothing"))
			return
		}
		budget := walkBudget(maxWalkNodes)
		if n := escapeLeaks(obj, 0, &budget); n > 0 {
			l.opt.Logger.Warn("catalog: translations still hold escape sequences", "asset", p, "strings", n)
		}
		mu.Lock()
		tr[ns] = obj
		mu.Unlock()
	})
	return tr
}

// collectTokenNamespaces gathers the namespaces of labels that are tokens
// themselves ("app.one.x").
func collectTokenNamespaces(v jsval.Value, into map[string]bool, depth int, budget *walkBudget) {
	if depth > 8 || !budget.spend() {
		return
	}
	switch v := v.(type) {
	case string:
		if ns := namespaceOf(v); ns != "" && !strings.ContainsAny(v, " \t\n") {
			into[ns] = true
		}
	case *jsval.Object:
		for _, k := range v.Keys() {
			collectTokenNamespaces(v.Value(k), into, depth+1, budget)
		}
	}
}

// loadLabelled loads the namespaces need names in one language, and then
// the namespaces their labels are tokens of (docs/spec.md ), as many rounds as
// a label may hop.
func (l *loader) loadLabelled(ctx context.Context, idx *indexData, lang string, need map[string]bool) translations {
	tr := l.loadTranslations(ctx, idx, lang, need)
	fresh := tr
	for hop := 0; hop < maxLabelHops && len(fresh) > 0; hop++ {
		more := map[string]bool{}
		for _, obj := range fresh {
			budget := walkBudget(maxWalkNodes)
			collectTokenNamespaces(obj, more, 0, &budget)
		}
		for ns := range more {
			if tr[ns] != nil || need[ns] {
				delete(more, ns)
			}
			need[ns] = true
		}
		fresh = l.loadTranslations(ctx, idx, lang, more)
		for ns, obj := range fresh {
			tr[ns] = obj
		}
	}
	return tr
}

// alarmTranslations gathers the names the translations give alarms, by the
// key they file them under (the alarm's code, "38", or its symbol,
// "ERROR_BRAK_PALIWA"): the "alarms" namespace first, then every object
// named "alarms" in the "app" namespace ("app.one.alarms"). A name that is
// itself a token is resolved as a label is (docs/spec.md ); a name may be an
// object's "name".
func alarmTranslations(tr translations) map[string]string {
	out := map[string]string{}
	add := func(table *jsval.Object) {
		for _, k := range table.Keys() {
			code := strings.TrimSpace(k)
			if _, seen := out[code]; seen || code == "" {
				continue
			}
			v := table.Value(k)
			if o, ok := v.(*jsval.Object); ok {
				v = o.Value("name")
			}
			s, ok := v.(string)
			if !ok {
				continue
			}
			if resolved, ok := tr.resolve(s); ok {
				s = resolved
			}
			if s = strings.TrimSpace(s); s != "" {
				out[code] = s
			}
		}
	}
	if ns := tr["alarms"]; ns != nil {
		add(ns)
	}
	budget := walkBudget(maxWalkNodes)
	var walk func(o *jsval.Object, depth int)
	walk = func(o *jsval.Object, depth int) {
		if depth > 4 || !budget.spend() {
			return
		}
		for _, k := range o.Keys() {
			child, ok := o.Value(k).(*jsval.Object)
			if !ok {
				continue
			}
			if strings.EqualFold(k, "alarms") {
				add(child)
				continue
			}
			walk(child, depth+1)
		}
	}
	if app := tr["app"]; app != nil {
		walk(app, 0)
	}
	return out
}

// parallel runs fn over items, fetchConcurrency at a time.
func parallel[T any](items []T, fn func(T)) {
	sem := make(chan struct{}, fetchConcurrency)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(it)
		}()
	}
	wg.Wait()
}
