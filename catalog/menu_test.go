package catalog

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func tokensOf(routes []*route) []string {
	var out []string
	for _, vt := range visibleTokens(routes) {
		out = append(out, vt.symbol)
	}
	return out
}

func mustMenu(t *testing.T, src string) []*route {
	t.Helper()
	r, ok := parseMenu([]byte(src))
	if !ok {
		t.Fatalf("no menu in %q", src)
	}
	return r
}

// docs/spec.md: the export shapes of a menu chunk.
func TestMenuExportShapes(t *testing.T) {
	route := `{path:'a',name:'modules.menu.a',meta:{parameters:{read:['PARAM_1']}}}`
	for name, src := range map[string]string{
		"default list":          `export default [` + route + `]`,
		"deviceMenu.menu":       `export default {deviceMenu:{menu:[` + route + `]}}`,
		"binding with priority": `const m={'priority':0x64,'deviceMenu':[` + route + `]};export default m;`,
		"routes under any key":  `export default {x:1,y:{z:{items:[1,'s',` + route + `]}}}`,
		"no export":             `const m={'routes':[` + route + `]}`,
	} {
		r, ok := parseMenu([]byte(src))
		if !ok || !reflect.DeepEqual(tokensOf(r), []string{"PARAM_1"}) {
			t.Errorf("%s: %v %v", name, ok, tokensOf(r))
		}
	}
	if _, ok := parseMenu([]byte(`export default {a:{b:{c:{d:{e:{f:{g:[{path:'x'}]}}}}}}}`)); ok {
		t.Error("a route list deeper than 5 levels was found")
	}
}

// docs/spec.md: entries as objects or strings, helper calls in the obfuscated and
// readable spellings, generated write lists (evaluated, and recovered from
// text when the evaluator cannot expand them), sections in meta or on the
// route, non-list children, redirect-only nodes pruned.
func TestMenuEntries(t *testing.T) {
	src := `const m=[{'path':'boiler','name':'modules.menu.boiler','meta':{'parameters':{
	  'read':[{'permissionModule':_0x521864['DISPLAY_PARAMETER_LEVEL_1'],'parameter':_0x3e8c51(_0x1cc358['READ'],'PARAM_P30_2')},
	          {'permissionModule':A.X,'parameter':E(A.WRITE,'URUCHOMIENIE_KOTLA')},'PARAM_RAW',{'parameter':42}],
	  'write':['PARAM_45','PARAM_34']['map'](x=>({permissionModule:'DISPLAY_PARAMETER_LEVEL_MAX',parameter:_0xab(_0xcd['WRITE'],x)})),
	  'status':['STATUS_P5_1']['map'](unknownHelper),
	  'special':[],'other':['PARAM_IGNORED']}},
	  'parameters':{'read':['PARAM_ROUTE_LEVEL']},'children':someIdentifier},
	  {'redirect':{'name':'modules.menu.boiler'}},{'path':'','name':''},
	  {'path':'x','children':[{'path':'y','meta':{'parameters':{'write':["PARAM_A","WRITE",'DISPLAY_X']['map'](f)}}}]}];export default m`
	r := mustMenu(t, src)
	want := []string{"PARAM_P30_2", "URUCHOMIENIE_KOTLA", "PARAM_RAW", "PARAM_45", "PARAM_34", "STATUS_P5_1", "PARAM_ROUTE_LEVEL", "PARAM_A"}
	if got := tokensOf(r); !reflect.DeepEqual(got, want) {
		t.Fatalf("tokens\n got %v\nwant %v", got, want)
	}
	if len(r) != 2 || r[0].children != nil {
		t.Fatalf("routes %d (redirects must be pruned), children %v", len(r), r[0].children)
	}
	e := r[0].meta[0][0]
	if e.permission != "DISPLAY_PARAMETER_LEVEL_1" || !e.gated {
		t.Fatalf("entry %+v", e)
	}
	if p := r[0].meta[0][1].permission; p != "X" {
		t.Fatalf("readable permission %q", p)
	}
	if vt := visibleTokens(r); !vt[3].writable || vt[0].writable {
		t.Fatalf("write section not marked: %+v", vt)
	}
}

// docs/spec.md A-4.3a: permission names normalised.
func TestPermissionName(t *testing.T) {
	for in, want := range map[string]string{
		"DISPLAY_MENU_DHW":                  "DISPLAY_MENU_DHW",
		"A.DISPLAY_MENU_HEATING":            "DISPLAY_MENU_HEATING",
		"_0x521864['DISPLAY_MENU_DHW']":     "DISPLAY_MENU_DHW",
		"Permissions[\"DISPLAY_MENU_DHW\"]": "DISPLAY_MENU_DHW",
		"[ab.DISPLAY_X]":                    "DISPLAY_X",
		"":                                  "",
	} {
		if got := permissionName(in); got != want {
			t.Errorf("permissionName(%q) = %q, want %q", in, got, want)
		}
	}
}

// docs/spec.md A-4.3b: the example of the spec — {DISPLAY_MENU_DHW, LEVEL_1} leaves only
// PARAM_P30_2; no permission set leaves both; no level hierarchy (MAX does
// not imply 1); string entries are kept; a route failing its own
// requirement survives only with children or route-level entries.
func TestPermissionFilter(t *testing.T) {
	src := `export default [{path:'dhw',name:'modules.menu.dhw',meta:{displayName:'MAINMENU_USTAWIENIA_CWU',icon:'a.dhw',
	  permissionModule:_0x1['DISPLAY_MENU_DHW'],isVisibleOnSideMenu:!1,displayDropdown:'1',
	  parameters:{read:[{permissionModule:'DISPLAY_PARAMETER_LEVEL_1',parameter:'PARAM_P30_2'}],
	              write:[{permissionModule:'DISPLAY_PARAMETER_LEVEL_MAX',parameter:'PARAM_P32_184'}],status:[],special:[]}}},
	 {path:'svc',name:'modules.menu.svc',meta:{permissionModule:'DISPLAY_MENU_SERVICE',parameters:{read:['PARAM_SVC']}}},
	 {path:'par',name:'modules.menu.par',meta:{permissionModule:'DISPLAY_MENU_SERVICE',parameters:{read:['PARAM_PARENT']}},
	  children:[{path:'kid',name:'modules.menu.kid',meta:{parameters:{read:[{permissionModule:'DISPLAY_PARAMETER_LEVEL_1',parameter:'PARAM_KID'}]}}}]},
	 {path:'old',name:'modules.menu.old',permissionModule:'DISPLAY_MENU_SERVICE',parameters:{read:['PARAM_OLD']}},
	 {path:'old2',name:'modules.menu.old2',permissionModule:'DISPLAY_MENU_SERVICE',parameters:{read:[{permissionModule:'NOPE',parameter:'PARAM_OLD2'}]}}]`
	r := mustMenu(t, src)
	perms := map[string]bool{"DISPLAY_MENU_DHW": true, "DISPLAY_PARAMETER_LEVEL_1": true}
	got := tokensOf(filterRoutes(r, perms))
	want := []string{"PARAM_P30_2", "PARAM_PARENT", "PARAM_KID", "PARAM_OLD"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("filtered\n got %v\nwant %v", got, want)
	}
	all := tokensOf(filterRoutes(r, nil))
	if !reflect.DeepEqual(all, []string{"PARAM_P30_2", "PARAM_P32_184", "PARAM_SVC", "PARAM_PARENT", "PARAM_KID", "PARAM_OLD", "PARAM_OLD2"}) {
		t.Fatalf("unfiltered %v", all)
	}
	max := tokensOf(filterRoutes(r, map[string]bool{"DISPLAY_MENU_DHW": true, "DISPLAY_PARAMETER_LEVEL_MAX": true}))
	if contains(max, "PARAM_P30_2") || !contains(max, "PARAM_P32_184") {
		t.Fatalf("LEVEL_MAX must not imply LEVEL_1: %v", max)
	}
	if got := tokensOf(filterRoutes(r, map[string]bool{})); contains(got, "PARAM_P30_2") || !contains(got, "PARAM_OLD") {
		t.Fatalf("empty permission set %v", got)
	}
}

// docs/spec.md: a deviceMenu without a map entry falls back to module.menu, then 0;
// with neither, the module has an empty menu and the failure is counted; a
// menu chunk that cannot be fetched costs that menu only.
func TestMenuSelection(t *testing.T) {
	// deviceMenu 5 is not in the map: module.menu, fetched and parsed once
	// for the two modules that share it, filtered for each.
	modD := ModuleSpec{DevID: "MOD-D", DeviceMenu: 5, Permissions: []string{}}
	c, f := loadSite(t, Options{}, modC, modD)
	if len(c.Module("MOD-C").Params()) == 0 || f.fetched("/assets/module.menu-BNvCCsxi.js") != 1 {
		t.Fatal("no fallback to module.menu, or fetched twice")
	}
	if got := tokensOfParams(c.Module("MOD-D")); !reflect.DeepEqual(got, []string{"STATUS_P5_10"}) {
		t.Fatalf("an empty permission set shows %v (only ungated entries)", got)
	}
	idx := &indexData{path: "/assets/index-Q1.js", menus: map[int]string{}, assets: scanAssets(`"./0-r9AwvEAY.js"`, "/assets/index-Q1.js")}
	if p, ok := menuPathFor(idx, 5); !ok || p != "/assets/0-r9AwvEAY.js" {
		t.Fatalf("fallback to 0: %q %v", p, ok)
	}
	idx.menus[9] = "m9-Abc"
	if p, _ := menuPathFor(idx, 9); p != "/assets/m9-Abc.js" {
		t.Fatalf("mapped stem missing from the table: %q", p)
	}
	if _, ok := menuPathFor(&indexData{path: "/assets/i.js", menus: map[int]string{}, assets: scanAssets("", "/assets/i.js")}, 5); ok {
		t.Fatal("a menu out of nothing")
	}

	f = siteFetcher(t)
	f.fail("/assets/m153-Qw-3.js", errors.New("503"))
	c, err := Load(context.Background(), f, []ModuleSpec{modA, modB}, Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Module("MOD-B").Params()) != 0 || len(c.Module("MOD-A").Params()) == 0 || c.Failures()[StageMenu] != 1 {
		t.Fatalf("B %d params, A %d, failures %v", len(c.Module("MOD-B").Params()), len(c.Module("MOD-A").Params()), c.Failures())
	}
}

// docs/spec.md: panel titles through the overlay (routes.X, a flat menu key, a
// title token's own namespace), the route name, other translations, then
// raw text; ancestors joined, "-" skipped.
func TestMenuPath(t *testing.T) {
	tr := translations{
		"routes":                   jsObj(t, `{modules:{menu:{boiler:'Boiler settings',valves:'Valves',valve1:'Valve 1'}}}`),
		"menu":                     jsObj(t, `{'MAINMENU_MENU_BUFOR':'Buffer menu'}`),
		"mainmenu_menu_termostatu": jsObj(t, `{'__default__':'Thermostats'}`),
		"menuserwis_x":             jsObj(t, `{'only':'Service X'}`),
		"app":                      jsObj(t, `{'one':{'title':'From app'}}`),
	}
	cases := []struct {
		r    route
		want string
	}{
		{route{displayName: "routes.modules.menu.boiler", name: "zzz"}, "Boiler settings"},
		{route{displayName: "MAINMENU_MENU_BUFOR"}, "Buffer menu"},
		{route{displayName: "MAINMENU_MENU_TERMOSTATU"}, "Thermostats"},
		{route{name: "MENUSERWIS_X"}, "Service X"},
		{route{displayName: "Plain text", name: "modules.menu.valves"}, "Valves"},
		{route{displayName: "app.one.title"}, "From app"},
		{route{displayName: "routes.modules.menu.nope", name: "nope.nope"}, "routes.modules.menu.nope"},
		{route{path: "p"}, "p"},
		{route{}, "-"},
	}
	for _, c := range cases {
		if got := routeTitle(&c.r, tr); got != c.want {
			t.Errorf("%+v → %q, want %q", c.r, got, c.want)
		}
	}
	path := []*route{{name: "modules.menu.valves"}, {}, {name: "modules.menu.valve1"}}
	if got := strings.Join(menuPath(path, tr), "/"); got != "Valves/Valve 1" {
		t.Fatalf("path %q", got)
	}
	// End to end: the fixture's thermostat pump sits under a title token.
	c, _ := loadSite(t, Options{}, modA)
	if got := c.Module("MOD-A").BySymbol("PARAM_P4_2").Menu; !reflect.DeepEqual(got, []string{"Thermostats", "Pump"}) {
		t.Fatalf("menu %q", got)
	}
}

func tokensOfParams(m *Module) []string {
	var out []string
	for _, p := range m.Params() {
		out = append(out, p.Symbol)
	}
	return out
}
