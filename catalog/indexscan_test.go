package catalog

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// docs/spec.md A-1.4a: every <base>-<hash>.js literal, base normalised to its last path
// part, lazy base (a hyphenated name splits at its first hyphen), hashes
// holding or ending in "-", duplicates skipped, the last entry of a base
// wins; docs/spec.md.
func TestScanAssets(t *testing.T) {
	text := `import("./PARAM_66-Ab12Cd.js");["assets/module.menu-BNvCCsxi.js","../parameters/write/FOO-x1.js"];` +
		`q(()=>import("./info-Bpu026-3.js"));import('./tariff-Db9Vj8s-.js');"./0-r9AwvEAY.js";"./201-DKEZsk-M.js";` +
		`"./PARAM_66-Ab12Cd.js";"./PARAM_66-Zz99.js";"../../resources/languages/pl/diode-state.json"` +
		strings.Repeat(" ", 50_000) + `"./units-Ab12.js"`
	tab := scanAssets(text, "/assets/index-Q1.js")
	want := map[string]string{ // base → path of the newest entry
		"PARAM_66":    "/assets/PARAM_66-Zz99.js",
		"module.menu": "/assets/module.menu-BNvCCsxi.js",
		"FOO":         "/parameters/write/FOO-x1.js",
		"info":        "/assets/info-Bpu026-3.js",
		"tariff":      "/assets/tariff-Db9Vj8s-.js",
		"0":           "/assets/0-r9AwvEAY.js",
		"201":         "/assets/201-DKEZsk-M.js",
		"units":       "/assets/units-Ab12.js", // past the reference client's 50 000-character cut
	}
	got := map[string]string{}
	for base := range tab.byBase {
		r, _ := tab.lookup(base)
		got[base] = r.path
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("asset table\n got %v\nwant %v", got, want)
	}
	if n := len(tab.byBase["PARAM_66"]); n != 2 {
		t.Fatalf("PARAM_66 has %d entries, want 2 (the duplicate skipped)", n)
	}
	if r, ok := tab.lookupName("info-Bpu026-3"); !ok || r.hash != "Bpu026-3" {
		t.Fatalf("lookup by full name: %+v %v", r, ok)
	}
	if _, ok := tab.lookupName("PARAM_66-Ab12Cd.js"); !ok {
		t.Fatal("lookup by file name failed")
	}
	if _, ok := tab.lookup("diode"); ok {
		t.Fatal("a .json path was read as a chunk")
	}
}

// docs/spec.md: relative join onto the index path, a leading assets/
// dropped when the index sits under /assets/.
func TestJoinAsset(t *testing.T) {
	cases := []struct{ index, raw, want string }{
		{"/assets/index-Q1.js", "./PARAM_66-Ab.js", "/assets/PARAM_66-Ab.js"},
		{"/assets/index-Q1.js", "assets/PARAM_66-Ab.js", "/assets/PARAM_66-Ab.js"},
		{"/index-Q1.js", "assets/PARAM_66-Ab.js", "/assets/PARAM_66-Ab.js"},
		{"/assets/index-Q1.js", "../x/FOO-1.js", "/x/FOO-1.js"},
		{"/assets/index-Q1.js", "/static/a-1.js", "/static/a-1.js"},
		{"/assets/index-Q1.js", "//cdn.example/assets/a-1.js", "/assets/a-1.js"},
		{"/assets/index-Q1.js", "../../../../etc/x-1.js", "/etc/x-1.js"},
	}
	for _, c := range cases {
		if got := joinAsset(c.index, c.raw); got != c.want {
			t.Errorf("joinAsset(%q, %q) = %q, want %q", c.index, c.raw, got, c.want)
		}
	}
}

// docs/spec.md A-1.4b: the router map in its three spellings; variant 0 wins, else the
// first variant.
func TestScanMenuMap(t *testing.T) {
	text := `{"../config/router/deviceMenu/7/module.menu.ts":()=>h(()=>import("./module.menu-Xy12.js"),__vite__mapDeps([3])),
	 "/src/config/router/deviceMenu/0/0.ts":()=>q(()=>import("./0-Zz99.js"),[]),
	 "../../config/router/deviceMenu/153/101.ts":()=>q(()=>import("./101-Qw-3.js"),[]),
	 "../../config/router/deviceMenu/153/0.ts":()=>q(()=>import("./0-Zz99.js"),[]),
	 '../../config/router/deviceMenu/2190/a.ts' : () => $h ( () => import ( './a-1.js' ) ),
	 '../../config/router/deviceMenu/2190/b.ts':()=>q(()=>import('./b-2.js')),
	 "config/router/deviceMenu/9/x.ts":()=>q(()=>import("./x-9.js"))}`
	got := scanMenuMap(text)
	want := map[int]string{7: "module.menu-Xy12", 0: "0-Zz99", 153: "0-Zz99", 2190: "a-1"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("menu map %v, want %v", got, want)
	}
}

// docs/spec.md A-1.4c: the i18n import map for every language, namespaces compared
// without case, whatever follows import(…) ignored; chunk resolution order.
func TestScanI18nMap(t *testing.T) {
	text := `const L={"../../resources/languages/pl/units.json":()=>q(()=>import("./units-K9p-.js"),[])['then'](m=>m.default),
	"../../resources/languages/en/parameters.json":()=>q(()=>import('./parameters-Tt41.js'),[]),
	"../../resources/languages/EN/diodeState.json":()=>q(()=>import("./diodeState-D1.js"),!0?[]:void 0x0),
	"../../../resources/languages/de/app.json":()=>$q(()=>import("./app-De.js"),[]),
	"../../resources/languages/en/tariff.json":()=>q(()=>import("./tariff-Db9Vj8s-.js"),[]),
	"../../resources/languages/en/info.json":()=>q(()=>import("./info.js"),[]),
	"../../resources/languages/en/menu.json":()=>q(()=>import("./other-9.js"),[])};
	import("./units-K9p-.js");import("./tariff-Db9Vj8s-.js");import("./info-Bpu026-3.js");`
	m := scanI18nMap(text)
	if m["pl"]["units"].file != "units-K9p-.js" || m["en"]["parameters"].file != "parameters-Tt41.js" {
		t.Fatalf("map %v", m)
	}
	if m["en"]["diodestate"].namespace != "diodeState" {
		t.Fatalf("upper-case language directory or camel namespace lost: %v", m["en"])
	}
	if m["de"]["app"].file != "app-De.js" {
		t.Fatalf("three ../ and a $ helper not accepted: %v", m["de"])
	}
	tab := scanAssets(text, "/assets/index-Q1.js")
	cases := []struct {
		lang, ns, want string
	}{
		{"pl", "units", "/assets/units-K9p-.js"},           // full name in the table
		{"en", "tariff", "/assets/tariff-Db9Vj8s-.js"},     // hash ending in -
		{"en", "info", "/assets/info-Bpu026-3.js"},         // unhashed file: any entry of its base
		{"en", "parameters", "/assets/parameters-Tt41.js"}, // not in the table: joined onto the index
		{"en", "menu", "/assets/other-9.js"},               // stem not starting with the namespace
	}
	for _, c := range cases {
		if got := i18nPath(tab, "/assets/index-Q1.js", m[c.lang][c.ns]); got != c.want {
			t.Errorf("%s/%s → %q, want %q", c.lang, c.ns, got, c.want)
		}
	}
}

// docs/spec.md A-1.2a: candidates from "/" then "/assets/", de-duplicated in order; a
// candidate that fails, or is an HTML page, gives way to the next; then
// index-main.js and index.js; nothing → ErrNoIndex, counted.
func TestDiscovery(t *testing.T) {
	idx := siteFetcher(t).files["/assets/index-Q1w2E3r4.js"]
	t.Run("first working candidate in page order", func(t *testing.T) {
		f := &memFetcher{files: map[string][]byte{
			"/index.html":            []byte(`<script src="/assets/index-Old1.js"></script><script src="/assets/index-New2.js"></script>`),
			"/assets/":               []byte(`<a href="/assets/index-New2.js">x</a><a href="/assets/index-Third.js">`),
			"/assets/index-New2.js":  idx,
			"/assets/index-Third.js": idx,
			"/assets/index-Old1.js":  []byte(`<!doctype html><html>SPA fallback</html>`),
		}}
		c, err := Load(context.Background(), f, nil, Options{Language: "en"})
		if err != nil {
			t.Fatal(err)
		}
		if c.IndexAsset() != "index-New2.js" {
			t.Fatalf("index %q", c.IndexAsset())
		}
		if f.fetched("/assets/index-Third.js") != 0 || f.fetched("/assets/index-Old1.js") != 1 {
			t.Fatalf("fetch log %v", f.log)
		}
	})
	t.Run("fallbacks after the pages", func(t *testing.T) {
		f := &memFetcher{files: map[string][]byte{"/assets/index.js": idx}}
		c, err := Load(context.Background(), f, nil, Options{Language: "en"})
		if err != nil || c.IndexAsset() != "index.js" {
			t.Fatalf("index %v, %v", c, err)
		}
		want := []string{"/", "/assets/", "/assets/index-main.js", "/assets/index.js"}
		if !reflect.DeepEqual(f.log[:4], want) {
			t.Fatalf("order %v, want %v", f.log, want)
		}
	})
	t.Run("known index when the pages fail", func(t *testing.T) {
		f := &memFetcher{files: map[string][]byte{"/assets/index-Prev.js": idx}}
		c, err := Load(context.Background(), f, nil, Options{Language: "en", KnownIndex: "index-Prev.js"})
		if err != nil || c.IndexAsset() != "index-Prev.js" {
			t.Fatalf("index %v, %v", c, err)
		}
	})
	t.Run("nothing found", func(t *testing.T) {
		f := &memFetcher{files: map[string][]byte{"/index.html": []byte(`<script src="/assets/index-Gone.js">`)}}
		_, err := Load(context.Background(), f, []ModuleSpec{modA}, Options{})
		if !errors.Is(err, ErrNoIndex) || !strings.Contains(err.Error(), "index-Gone.js") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("a script that names no assets is not an index", func(t *testing.T) {
		f := &memFetcher{files: map[string][]byte{"/assets/index.js": []byte(`console.log(1)`)}}
		if _, err := Load(context.Background(), f, nil, Options{}); !errors.Is(err, ErrNoIndex) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		f := &memFetcher{files: map[string][]byte{}}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Load(ctx, f, nil, Options{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
	})
}

// FuzzIndexScan feeds arbitrary text to the index reader (text scans and
// syntax tree): no panic, bounded time, and 50 000-level nesting survives.
func FuzzIndexScan(f *testing.F) {
	for _, s := range []string{
		string(siteFetcherSeed()),
		`"../config/router/deviceMenu/7/module.menu.ts":()=>h(()=>import("./module.menu-Xy12.js"))`,
		`"../../resources/languages/pl/units.json":()=>q(()=>import("./units-K9p-.js"),[])`,
		"const U={0x31:{'text':'units.31','value':k=>k*0.1}};export default " + strings.Repeat("[", 50_000),
		"window.c={'translations':[{'id':'PL','flag':'pl'}],'defaultTranslation':'pl'}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		start := time.Now()
		checkAssetScan(t, string(src))
		d := buildIndex(src, "/assets/index-F.js")
		indexDefinitions(d.prog, map[string]bool{"PARAM_P4_1": true, "PARAM_66": true})
		d.languages()
		for _, dm := range []int{0, 7, 153} {
			menuPathFor(d, dm)
		}
		for lang, nss := range d.i18n {
			for ns := range nss {
				i18nPath(d.assets, d.path, d.i18n[lang][ns])
			}
		}
		// The same bytes as the other kinds of asset.
		if routes, ok := parseMenu(src); ok {
			visibleTokens(filterRoutes(routes, map[string]bool{"DISPLAY_PARAMETER_LEVEL_1": true}))
		}
		parseNamespace(src)
		if o, ok := parseDefinitionChunk(src); ok && looksLikeDefinition(o, "PARAM_P4_1") {
			d := newDefinition("PARAM_P4_1", "fuzz", o)
			d.primaryAddress()
			d.visibility(values(map[string]float64{"P4.s1": 128}), newRuleContext("D", 1))
			d.computedValue(values(nil), nil)
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("%d bytes took %v", len(src), time.Since(start))
		}
	})
}

func siteFetcherSeed() []byte {
	return []byte(`import{_ as _0x1f2e}from"./vendor-Xx9.js";const Lr={"../config/router/deviceMenu/7/module.menu.ts":()=>h(()=>import("./module.menu-BNvCCsxi.js"),__vite__mapDeps([3]))},` +
		`Ux={0x31:{'text':'units.31','value':_0x4f=>Number(_0x4f*0.1)['toFixed'](0x1)}},_0xT={'PARAM_P4_1':mk({'id':0x1,'number':0x1})};`)
}

// The index's language list: configuration ids, lower case, sorted, the
// development language left out.
func TestIndexLanguages(t *testing.T) {
	c, _ := loadSite(t, Options{})
	if got := c.Languages(); !reflect.DeepEqual(got, []string{"en", "pl"}) {
		t.Fatalf("languages %v", got)
	}
}

// checkAssetScan holds forEachAssetName to the pattern of docs/spec.md A-1.4a: the same
// names in the same order (for names within maxAssetName).
func checkAssetScan(t *testing.T, text string) {
	run := 0
	for i := 0; i < len(text); i++ {
		if isNameByte(text[i]) {
			if run++; run > maxAssetName-8 {
				return
			}
		} else {
			run = 0
		}
	}
	var want, got []string
	for _, m := range assetRE.FindAllStringSubmatch(text, -1) {
		want = append(want, m[0]+"|"+m[1]+"|"+m[2])
	}
	forEachAssetName(text, func(raw, base, hash string) { got = append(got, raw+"|"+base+"|"+hash) })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("asset scan of %q\n got %q\nwant %q", text, got, want)
	}
}

func TestAssetScanMatchesPattern(t *testing.T) {
	for _, s := range []string{
		string(siteFetcher(t).files["/assets/index-Q1w2E3r4.js"]),
		"a.js-b.js", "x-1.js-2.js", "a-b.jsx-c.js", "a-1.js/b-2.js", "-a-.js", "a--.js", "a-.js", "--x.js", ".-x.js",
		"x-y.json z-w.js", "p/q-r/s-t.js", "A-B.js_", "A-B.js.js", "é-1.js", "a-1.jsé",
	} {
		checkAssetScan(t, s)
	}
}
