package catalog

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

// docs/spec.md A-1.4d, A-5.38: the language configuration is found wherever it
// sits, with bare or quoted keys.
func TestSpecFormsInCatalogRow38ConfigPlacement(t *testing.T) {
	cfg := `{'translations':[{'id':'PL','flag':'pl'},{id:'EN',flag:'gb'}],defaultTranslation:'pl'}`
	for name, src := range map[string]string{
		"var":            `var c=` + cfg,
		"const":          `const c=` + cfg,
		"let":            `let c=` + cfg,
		"window.X":       `window.LANG=` + cfg,
		"window['X']":    `window['LANG']=` + cfg,
		"nested":         `const app={'settings':{'i18n':` + cfg + `}}`,
		"IIFE":           `(function(){const c=` + cfg + `;window.c=c})()`,
		"arrow IIFE":     `(()=>{return ` + cfg + `})()`,
		"export default": `export default ` + cfg,
		"in a call":      `createI18n(` + cfg + `)`,
	} {
		lc := findLanguageConfig(jsval.Parse([]byte(src), jsval.Limits{}))
		if lc == nil || lc.deflt != "pl" || !reflect.DeepEqual(lc.offered, []string{"pl", "en"}) {
			t.Errorf("%s: %+v", name, lc)
		}
	}
}

// docs/spec.md A-1.4d: at least 70 % of the object elements carry id and flag; the
// default translation is a string literal; empty lists are "not found";
// syntax errors give "not found" without failing (docs/spec.md ).
func TestLanguageConfigShape(t *testing.T) {
	for name, c := range map[string]struct {
		src  string
		want string // default translation, "" for not found
	}{
		"70 percent":          {`x={translations:[{id:'PL',flag:'pl'},{id:'EN',flag:'gb'},{id:'DE',flag:'de'},{id:'X'},'str'],defaultTranslation:'en'}`, "en"},
		"below 70":            {`x={translations:[{id:'PL',flag:'pl'},{id:'EN'},{id:'DE'}],defaultTranslation:'en'}`, ""},
		"no objects":          {`x={translations:['pl','en'],defaultTranslation:'en'}`, ""},
		"not literal default": {`const d='pl';x={translations:[{id:'PL',flag:'pl'}],defaultTranslation:d}`, ""},
		"empty default":       {`x={translations:[{id:'PL',flag:'pl'}],defaultTranslation:''}`, ""},
		"first of two":        {`a={translations:[{id:'PL',flag:'pl'}],defaultTranslation:'pl'};b={translations:[{id:'EN',flag:'gb'}],defaultTranslation:'en'}`, "pl"},
		"syntax error":        {`x={translations:[{id:'PL',flag:'pl'}],defaultTranslation:'pl'`, ""},
		"empty file":          {``, ""},
	} {
		lc := findLanguageConfig(jsval.Parse([]byte(c.src), jsval.Limits{}))
		got := ""
		if lc != nil {
			got = lc.deflt
		}
		if got != c.want {
			t.Errorf("%s: default %q, want %q", name, got, c.want)
		}
	}
}

// docs/spec.md A-1.4d, A-4.1: the language asked for, else the default translation,
// else en; a language not offered is a LanguageError listing the offered
// ones; a development language is not offered.
func TestLanguageChoice(t *testing.T) {
	c, _ := loadSite(t, Options{Language: "PL"}, modA)
	if c.Language() != "pl" || c.Module("MOD-A").Lookup("P4", "v7").Name != "Moc kotła" {
		t.Fatalf("pl: %q %q", c.Language(), c.Module("MOD-A").Lookup("P4", "v7").Name)
	}
	f := siteFetcher(t)
	c, err := Load(t.Context(), f, []ModuleSpec{modA}, Options{})
	if err != nil || c.Language() != "pl" {
		t.Fatalf("default translation: %v %v", c.Language(), err)
	}
	for _, lang := range []string{"de", "dev"} {
		_, err = Load(t.Context(), f, []ModuleSpec{modA}, Options{Language: lang})
		le, ok := err.(*LanguageError)
		if !ok || le.Language != lang || !reflect.DeepEqual(le.Offered, []string{"en", "pl"}) ||
			!strings.Contains(err.Error(), "offered: en, pl") {
			t.Fatalf("%s: %v", lang, err)
		}
	}
	// Without a configuration: en, and the import map's languages are offered.
	noCfg := strings.Replace(string(f.files["/assets/index-Q1w2E3r4.js"]), "'defaultTranslation'", "'defaultLang'", 1)
	f.set("/assets/index-Q1w2E3r4.js", noCfg)
	c, err = Load(t.Context(), f, []ModuleSpec{modA}, Options{})
	if err != nil || c.Language() != "en" || !reflect.DeepEqual(c.Languages(), []string{"en", "pl"}) {
		t.Fatalf("no configuration: %v %v %v", c.Language(), c.Languages(), err)
	}
}

// docs/spec.md A-1.4e: top-level object declarations; entries with text/options/value/
// valuePrepare under integer keys (hex keys normalised: 0x31 is 49); the one
// with most entries wins, the first on ties.
func TestUnitTable(t *testing.T) {
	src := `const A={'a':{'text':'units.1'},'b':{'text':'units.2'},'c':{'text':'units.3'}},
	B={0x31:{'text':'units.31'},'47':{'value':k=>k-0x7f},2.0:{'options':{0:'x'}}},
	C={0x1:{'text':'units.1'},0x2:{'text':'units.2'},0x3:{'colors':{}}},
	D={1:{text:'first tie'},2:{text:'x'},3:{text:'y'}};
	function f(){const E={1:{'text':'a'},2:{'text':'b'},3:{'text':'c'},4:{'text':'d'}}}`
	got := findUnitTable(jsval.Parse([]byte(src), jsval.Limits{}))
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"2", "47", "49"}) {
		t.Fatalf("unit table keys %v (want B's: non-numeric A and nested E ignored, B beats tie D)", keys)
	}
	if s, _ := got["49"].Value("text").(string); s != "units.31" {
		t.Fatalf("49 → %v", got["49"])
	}
	if findUnitTable(jsval.Parse([]byte(`const X={'a':1}`), jsval.Limits{})) != nil {
		t.Fatal("a table without descriptors was taken")
	}
}

// docs/spec.md A-1.4f, A-4.4a: inline definitions under a symbol's key, built by
// builders, the last occurrence winning; a non-definition object under the
// key (an empty one, a permission table) does not count.
func TestIndexDefinitions(t *testing.T) {
	src := `const mk=({number:n})=>({'name':'parameters.PARAM_P6_'+n,'value':[{'group':'P6','number':n,'use':'v'}]}),
	a={'PARAM_P6_1':mk({'number':0x1}),'PARAM_P6_2':{}},
	b={"PARAM_P6_1":mk({'number':0x2}),'PARAM_P6_3':'text',PARAM_P6_2:{'read':1}};`
	defs := indexDefinitions(jsval.Parse([]byte(src), jsval.Limits{}), map[string]bool{"PARAM_P6_1": true, "PARAM_P6_2": true, "PARAM_P6_3": true})
	if len(defs) != 1 {
		t.Fatalf("defs %v", defs)
	}
	d := newDefinition("PARAM_P6_1", "inline", defs["PARAM_P6_1"])
	if a, _, _ := d.primaryAddress(); a.String() != "P6.v2" || d.nameToken != "parameters.PARAM_P6_2" {
		t.Fatalf("later occurrence did not win: %v %q", a, d.nameToken)
	}
}
