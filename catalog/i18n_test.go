package catalog

import (
	"context"
	"strings"
	"testing"
)

// docs/spec.md A-3.3a: the chunk forms of a translation namespace.
func TestNamespaceForms(t *testing.T) {
	cases := []struct {
		name, src, key, want string
		ok                   bool
	}{
		{"export default object", `export default {'a':'A'}`, "a", "A", true},
		{"export through binding, hex escapes", `const PARAM_P4_7='Moc\x20kot\u0142a',p={'PARAM_P4_7':PARAM_P4_7};export{p as default};`, "PARAM_P4_7", "Moc kotła", true},
		{"largest literal", `const a={'x':'1'},b={'a':'A','b':'B'};`, "a", "A", true},
		{"named string export", `const MAINMENU_X='Menu X';export{MAINMENU_X as default}`, "MAINMENU_X", "Menu X", true},
		{"anonymous string export", `export default 'Menu Y'`, "__default__", "Menu Y", true},
		{"unicode kept exactly", `export default {'k':'Zażółć 中文 😀','units':{'0':'\x20'}}`, "k", "Zażółć 中文 😀", true},
		{"syntax error", `export default {'a':`, "a", "", false},
		{"number export", `export default 5`, "a", "", false},
		{"empty file", ``, "a", "", true},
	}
	for _, c := range cases {
		ns, ok := parseNamespace([]byte(c.src))
		got, _ := ns.Value(c.key).(string)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %q ok=%v, want %q ok=%v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// docs/spec.md: a label token is resolved in its namespace along a dotted path;
// a label that is itself a token is resolved again, at most 4 more times;
// only loaded namespaces are consulted.
func TestLabelResolution(t *testing.T) {
	tr := translations{
		"parameters": jsObj(t, `{'PARAM_66':'Boiler setpoint','CHAIN':'parameters.H1','H1':'parameters.H2','H2':'parameters.H3','H3':'parameters.H4','H4':'parameters.H5','H5':'parameters.H6','H6':'end','VER':'ver.2'}`),
		"app":        jsObj(t, `{'one':{'parameters':{'URUCHOMIENIE_KOTLA':'Start the boiler'},'boilerStatus':{'name':'Boiler status'}}}`),
		"units":      jsObj(t, `{'17':{'0':'Off'},'17.5':'dotted key'}`),
	}
	cases := map[string]string{
		"parameters.PARAM_66":                   "Boiler setpoint",
		"app.one.parameters.URUCHOMIENIE_KOTLA": "Start the boiler",
		"app.one.boilerStatus.name":             "Boiler status",
		"units.17.0":                            "Off",
		"units.17.5":                            "dotted key",
		"parameters.CHAIN":                      "parameters.H5", // 1 + 4 hops
		"parameters.VER":                        "ver.2",         // "ver" is not a namespace: unchanged
		"parameters.MISSING":                    "",
		"nope.x":                                "",
		"9bad.x":                                "",
		"app.one":                               "", // not a string
	}
	for tok, want := range cases {
		got, _ := tr.resolve(tok)
		if got != want {
			t.Errorf("resolve(%q) = %q, want %q", tok, got, want)
		}
	}
	// End to end: PARAM_66's label is an alias resolved one hop further; a
	// definition without a label is named by its symbol.
	c, f := loadSite(t, Options{}, modC)
	m := c.Module("MOD-C")
	if got := m.BySymbol("PARAM_66").Name; got != "Boiler setpoint" {
		t.Fatalf("PARAM_66 %q", got)
	}
	if got := m.BySymbol("PARAM_P4_9").Name; got != "PARAM_P4_9" {
		t.Fatalf("unlabelled %q", got)
	}
	if got := m.BySymbol("PARAM_P4_20").Name; got != "Boiler status" {
		t.Fatalf("app label %q", got)
	}
	for _, p := range []string{"/assets/ver.js", "/assets/ver-1.js"} {
		if f.fetched(p) != 0 {
			t.Fatal("a label's text caused a fetch")
		}
	}
}

// docs/spec.md: a translation namespace that cannot be fetched or parsed is counted
// and left empty; names then fall back to the symbol, the rest is built.
func TestTranslationFailure(t *testing.T) {
	f := siteFetcher(t)
	f.set("/assets/parameters-Pe1.js", `export default {'PARAM_P4_7':`)
	f.fail("/assets/routes-Ro1.js", notFound{"/assets/routes-Ro1.js"})
	c, err := Load(context.Background(), f, []ModuleSpec{modA}, Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Module("MOD-A").BySymbol("PARAM_P4_7")
	if p.Name != "PARAM_P4_7" || c.Failures()[StageI18n] != 2 {
		t.Fatalf("name %q failures %v", p.Name, c.Failures())
	}
	if got := c.Module("MOD-A").BySymbol("PARAM_P4_20").Name; got != "Boiler status" {
		t.Fatalf("other namespaces lost: %q", got)
	}
}

// Alarm names come from the alarms namespace where the assets carry one.
func TestAlarmName(t *testing.T) {
	c, _ := loadSite(t, Options{}, modA)
	if n, ok := c.AlarmName("38", ""); !ok || n != "No fuel" {
		t.Fatalf("38 → %q %v", n, ok)
	}
	if _, ok := c.AlarmName("99", ""); ok {
		t.Fatal("unknown alarm named")
	}
	c, _ = loadSite(t, Options{Language: "pl"}, modA) // pl has no alarms namespace, and no fallback
	if _, ok := c.AlarmName("38", "ERROR_BRAK_PALIWA"); ok {
		t.Fatal("pl alarm name out of nothing")
	}
}

// An alarm is named wherever the web app's translations carry a name for it:
// under its code or its symbol, in the alarms namespace or an "alarms"
// object of the app namespace, through a label that is a token, and in the
// app's fallback language when the chosen one has none.
func TestAlarmNamesWhereverTheAssetsCarryThem(t *testing.T) {
	const (
		index = "/assets/index-Q1w2E3r4.js"
		enApp = "/assets/app-Ap1.js"
	)
	site := func(t *testing.T, fallback bool) *memFetcher {
		f := siteFetcher(t)
		if fallback {
			src := string(f.files[index])
			withFallback := strings.Replace(src, "'defaultTranslation':'pl'", "'defaultTranslation':'pl','fallbackLocale':'en'", 1)
			if withFallback == src {
				t.Fatal("the fixture's language configuration moved")
			}
			f.set(index, withFallback)
		}
		f.set("/assets/alarms-Al1.js", `export default {'38':'No fuel','21':'app.one.alarms.overheat','ERROR_X':{'name':'Pump fault'},'40':{'id':4}};`)
		f.set(enApp, `export default {'one':{'boilerStatus':{'name':'Boiler status'},'alarms':{'overheat':'Boiler overheated','ERROR_Y':'Ignition failed'}},`+
			`'alarms':{'57':'Flue sensor fault','38':'Not this one'}};`)
		f.set("/assets/app-Apl2.js", `export default {'one':{'boilerStatus':{'name':'Status kotła'},'alarms':{'38':'Brak paliwa'}}};`)
		return f
	}
	load := func(t *testing.T, f *memFetcher, lang string) *Catalog {
		c, err := Load(context.Background(), f, []ModuleSpec{modA}, Options{Language: lang})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	type want struct {
		code, symbol, name string // name "" = no name
	}
	check := func(t *testing.T, c *Catalog, cases []want) {
		t.Helper()
		for _, w := range cases {
			n, ok := c.AlarmName(w.code, w.symbol)
			if w.name == "" && ok || w.name != "" && (!ok || n != w.name) {
				t.Errorf("%s: AlarmName(%q, %q) = %q %v, want %q", c.Language(), w.code, w.symbol, n, ok, w.name)
			}
		}
	}
	en := load(t, site(t, true), "en")
	check(t, en, []want{
		{"38", "", "No fuel"},                                  // the alarms namespace wins over app.alarms
		{"21", "", "Boiler overheated"},                        // a label that is a token, resolved
		{"12", "ERROR_X", "Pump fault"},                        // by symbol, an object's name
		{"57", "ERROR_Z", "Flue sensor fault"},                 // app.alarms, by code
		{"99", "ERROR_Y", "Ignition failed"},                   // app.one.alarms, by symbol
		{" 38 ", "", "No fuel"},                                // trimmed
		{"40", "", ""}, {"99", "ERROR_NONE", ""}, {"", "", ""}, // an object without a name; unknown; nothing
	})
	pl := load(t, site(t, true), "pl")
	check(t, pl, []want{
		{"38", "", "Brak paliwa"},       // its own language first
		{"21", "", "Boiler overheated"}, // the app's fallback language
		{"99", "ERROR_Y", "Ignition failed"},
	})
	// Without a fallbackLocale the app shows nothing else, and nor do we.
	plAlone := load(t, site(t, false), "pl")
	check(t, plAlone, []want{{"38", "", "Brak paliwa"}, {"21", "", ""}, {"99", "ERROR_Y", ""}})
}

// docs/spec.md A-5b: strings that still hold escapes after decoding are "escape leaks".
func TestEscapeLeaks(t *testing.T) {
	ns, _ := parseNamespace([]byte(`export default {'a':'Moc\x20kot\u0142a','b':{'c':'twice \\x20 escaped','d':'\\u{1F600}'},'e':'\\u00'}`))
	budget := walkBudget(maxWalkNodes)
	if n := escapeLeaks(ns, 0, &budget); n != 2 {
		t.Fatalf("%d leaks, want 2 (b.c and b.d; a is decoded, e is not an escape)", n)
	}
}

// docs/spec.md end to end: a label that is a token of a namespace nothing
// else needs makes Load fetch that namespace, hop after hop; a namespace
// the import map does not offer is never fetched.
func TestLabelHopsLoadNamespaces(t *testing.T) {
	f := siteFetcher(t)
	idx := strings.Replace(string(f.files["/assets/index-Q1w2E3r4.js"]), `Ir={`,
		`Ir={"../../resources/languages/en/extra.json":()=>q(()=>import("./extra-Ex1.js"),[]),"../../resources/languages/en/more.json":()=>q(()=>import("./more-Mo1.js"),[]),`, 1)
	f.set("/assets/index-Q1w2E3r4.js", idx)
	f.set("/assets/parameters-Pe1.js", strings.Replace(string(f.files["/assets/parameters-Pe1.js"]), "'Boiler temperature'", "'extra.hop1'", 1))
	f.set("/assets/extra-Ex1.js", `export default {'hop1':'more.hop2','other':'nowhere.x'}`)
	f.set("/assets/more-Mo1.js", `export default {'hop2':'Flow temperature'}`)
	c, err := Load(context.Background(), f, []ModuleSpec{modA}, Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Module("MOD-A").BySymbol("PARAM_P4_1").Name; got != "Flow temperature" {
		t.Fatalf("name %q", got)
	}
	for _, p := range f.log {
		if strings.Contains(p, "nowhere") {
			t.Fatalf("fetched %s", p)
		}
	}
}
