package collector

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/exposition"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

func catalogCollector(t testing.TB, s Snapshot, params ParamSource, cs func() *CatalogState, opts Options) *Collector {
	t.Helper()
	opts.Catalog = CatalogSourceFunc(cs)
	return newTestCollector(t, s, params, opts)
}

// The info family covers exactly the stored registers the catalog
// describes, each once (the first description wins), and says whether the
// app shows it.
func TestParameterInfoCoversStoredDescribedRegisters(t *testing.T) {
	c := catalogCollector(t, catalogSnapshot(), catalogParams(), testCatalog, Options{})
	info := gather(t, c)[paramInfoName]
	want := map[string]bool{
		"MOD1 P4 v1 PARAM_P4_1 Room temperature °C true":        true,
		"MOD1 P4 v8 PARAM_P4_8 Boiler power kW true":            true,
		"MOD1 P4 s40 STATUS_P4_40 Pump  true":                   true,
		"MOD1 P5 v3 PARAM_P5_3 Fuel \"used\"\nin total kg true": true,
		"MOD2 P4 v1 PARAM_P4_1 Room temperature °C true":        true,
		// Bit 0 of MOD2's P4.s40 is clear: the power is hidden, and still named.
		"MOD2 P4 v8 PARAM_P4_8 Boiler power kW false":           true,
		"MOD2 P4 s40 STATUS_P4_40 Pump  true":                   true,
		"MOD2 P5 v3 PARAM_P5_3 Fuel \"used\"\nin total kg true": true,
		"MOD1 P6 v7 PARAM_P6_7 Night setback start  true":       true,
		"MOD2 P6 v7 PARAM_P6_7 Night setback start  true":       true,
	}
	got := map[string]bool{}
	for key := range info {
		l := labelMap(key)
		got[strings.Join([]string{l["devid"], l["pool"], l["param"], l["symbol"], l["name"], l["unit"], l["visible"]}, " ")] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("info series:\n got %q\nwant %q", keys(got), keys(want))
	}
}

// labelsOf parses gather's "a=1,b=2" keys (values without commas or '=').
func labelMap(key string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(key, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Display values apply the catalog's transform and composition; enum states
// mark the current option; the raw family is untouched by the catalog.
func TestDisplayValuesStatesAndRawValues(t *testing.T) {
	with := gather(t, catalogCollector(t, catalogSnapshot(), catalogParams(), testCatalog, Options{}))
	without := gather(t, newTestCollector(t, catalogSnapshot(), catalogParams(), Options{}))
	if !maps.Equal(with[paramValueName], without[paramValueName]) {
		t.Errorf("the catalog changed bragerone_parameter_value:\n%v\n%v", with[paramValueName], without[paramValueName])
	}
	for _, name := range []string{paramInfoName, paramDisplayName, paramStateName, paramTextName} {
		if len(without[name]) != 0 {
			t.Errorf("%s without a catalog: %v", name, without[name])
		}
	}
	display := with[paramDisplayName]
	for key, want := range map[string]float64{
		"devid=MOD1,param=v8,pool=P4":  5.5,             // 55 × 0.1
		"devid=MOD1,param=v3,pool=P5":  -4.25 + 2*65536, // low word + high word
		"devid=MOD1,param=v1,pool=P4":  21.5,            // no transform: the raw value
		"devid=MOD2,param=s40,pool=P4": 0,
	} {
		if got, ok := display[key]; !ok || got != want {
			t.Errorf("display %s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	if _, ok := display["devid=MOD1,param=v1,pool=P7"]; ok {
		t.Error("a display value for a register the store does not hold")
	}
	state := with[paramStateName]
	want := map[string]float64{
		"devid=MOD1,param=s40,pool=P4,state=Off": 0, "devid=MOD1,param=s40,pool=P4,state=On": 1,
		"devid=MOD2,param=s40,pool=P4,state=Off": 1, "devid=MOD2,param=s40,pool=P4,state=On": 0,
	}
	if !maps.Equal(state, want) {
		t.Errorf("states %v, want %v (a label listed twice is one series)", state, want)
	}
}

// What the app shows as text (a time of day) is in the text label of
// bragerone_parameter_display_text, and has no display value; numbers and
// enums have no text series.
func TestDisplayText(t *testing.T) {
	got := gather(t, catalogCollector(t, catalogSnapshot(), catalogParams(), testCatalog, Options{}))
	want := map[string]float64{
		"devid=MOD1,param=v7,pool=P6,text=22:00": 1, // raw 133: (133−1)×10 minutes
		"devid=MOD2,param=v7,pool=P6,text=Off":   1,
	}
	if !maps.Equal(got[paramTextName], want) {
		t.Errorf("text series %v, want %v", got[paramTextName], want)
	}
	for key := range got[paramDisplayName] {
		if strings.Contains(key, "pool=P6") {
			t.Errorf("a display value for a time of day: %s", key)
		}
	}
}

// A register with a role has one role series, keyed as the display value
// is, so that a rule joins the two on (devid, pool, param); registers
// without a role have none.
func TestParameterRole(t *testing.T) {
	got := gather(t, catalogCollector(t, catalogSnapshot(), catalogParams(), testCatalog, Options{}))
	want := map[string]float64{
		"devid=MOD1,param=v3,pool=P5,role=fuel_burned": 1,
		"devid=MOD2,param=v3,pool=P5,role=fuel_burned": 1,
	}
	if !maps.Equal(got[paramRoleName], want) {
		t.Errorf("role series %v, want %v", got[paramRoleName], want)
	}
	for key := range want {
		display := strings.TrimSuffix(key, ",role=fuel_burned")
		if _, ok := got[paramDisplayName][display]; !ok {
			t.Errorf("no display value %s to join the role with", display)
		}
	}
	if without := gather(t, newTestCollector(t, catalogSnapshot(), catalogParams(), Options{})); len(without[paramRoleName]) != 0 {
		t.Errorf("role series without a catalog: %v", without[paramRoleName])
	}
}

// The filters select the catalog's series by register, but the catalog's
// rules still read every stored register.
func TestCatalogSeriesFollowFiltersButReadEveryRegister(t *testing.T) {
	c := catalogCollector(t, catalogSnapshot(), catalogParams(), testCatalog, Options{Include: []string{"P5.v3"}})
	got := gather(t, c)
	if len(got[paramInfoName]) != 2 || len(got[paramStateName]) != 0 {
		t.Errorf("filtered: info %v, states %v; want P5.v3 of two modules only", got[paramInfoName], got[paramStateName])
	}
	if v := got[paramDisplayName]["devid=MOD1,param=v3,pool=P5"]; v != -4.25+2*65536 {
		t.Errorf("composed value %v: the excluded high word P5.v4 was not read", v)
	}
}

// A new catalog is rendered afresh; the same one is not rendered again; a
// catalog that describes nothing (not loaded) exports no parameter series.
func TestCatalogChangesReplaceSeries(t *testing.T) {
	cs := testCatalog()
	src := cs
	c := catalogCollector(t, catalogSnapshot(), catalogParams(), func() *CatalogState { return src }, Options{})
	gather(t, c)
	first := c.renders["MOD1"]
	gather(t, c)
	if c.renders["MOD1"] != first {
		t.Error("an unchanged catalog was rendered again")
	}

	renamed := *cs
	mc := *cs.Modules["MOD1"]
	mc.Params = append([]ParamDescription(nil), mc.Params...)
	mc.Params[0].Name = "Living room"
	renamed.Modules = map[string]*ModuleCatalog{"MOD1": &mc}
	src = &renamed
	got := gather(t, c)
	var names []string
	for key := range got[paramInfoName] {
		names = append(names, labelMap(key)["devid"]+":"+labelMap(key)["name"])
	}
	joined := strings.Join(names, ";")
	if !strings.Contains(joined, "MOD1:Living room") || strings.Contains(joined, "MOD1:Room temperature") || strings.Contains(joined, "MOD2:") {
		t.Errorf("after the catalog changed: %v", names)
	}

	src = &CatalogState{Loads: 4, Stages: cs.Stages}
	got = gather(t, c)
	for _, name := range []string{paramInfoName, paramDisplayName, paramStateName, paramTextName, "bragerone_catalog_info"} {
		if len(got[name]) != 0 {
			t.Errorf("%s without a loaded catalog: %v", name, got[name])
		}
	}
	if got["bragerone_catalog_loaded"][""] != 0 || got["bragerone_catalog_loads_total"][""] != 4 {
		t.Errorf("health without a catalog: loaded %v loads %v", got["bragerone_catalog_loaded"], got["bragerone_catalog_loads_total"])
	}
	if len(c.renders) != 0 {
		t.Errorf("%d renders kept without a catalog", len(c.renders))
	}
}

// With the catalog switched off there is no catalog family at all, and
// alarms are named by the cloud's symbol (else their code).
func TestCatalogDisabled(t *testing.T) {
	c := catalogCollector(t, catalogSnapshot(), catalogParams(), func() *CatalogState { return nil }, Options{})
	got := gather(t, c)
	for name := range got {
		if strings.HasPrefix(name, "bragerone_catalog_") || name == paramInfoName || name == paramDisplayName || name == paramStateName || name == paramTextName {
			t.Errorf("%s exported with the catalog off", name)
		}
	}
	want := map[string]float64{
		"code=38,devid=MOD1,name=ERROR_BRAK_PALIWA": 1,
		"code=12,devid=MOD1,name=ERROR_CZUJNIK_CO":  1,
		"code=7,devid=MOD1,name=7":                  1,
	}
	if !maps.Equal(got["bragerone_module_alarm_active"], want) {
		t.Errorf("alarms %v, want %v", got["bragerone_module_alarm_active"], want)
	}
}

// Alarm names come from the catalog where it has one; an alarm's start is
// exported when known; a module listed twice exports its alarms once.
func TestAlarmSeries(t *testing.T) {
	s := catalogSnapshot()
	s.Modules = append(s.Modules, s.Modules[0]) // MOD1 twice
	s.Modules[0].ActiveAlarms = append(s.Modules[0].ActiveAlarms, Alarm{Code: "38", Symbol: "again"})
	got := gather(t, catalogCollector(t, s, catalogParams(), testCatalog, Options{}))
	want := map[string]float64{
		"code=38,devid=MOD1,name=No fuel":          1,
		"code=12,devid=MOD1,name=ERROR_CZUJNIK_CO": 1,
		"code=7,devid=MOD1,name=7":                 1,
	}
	if !maps.Equal(got["bragerone_module_alarm_active"], want) {
		t.Errorf("alarms %v, want %v", got["bragerone_module_alarm_active"], want)
	}
	since := got["bragerone_module_alarm_since_timestamp_seconds"]
	if len(since) != 2 || since["code=38,devid=MOD1"] != float64(t0.Unix()-1800) {
		t.Errorf("alarm starts %v", since)
	}
}

// catalogBench describes perModule of every module's parameters: every
// second one with a ×0.1 transform, every tenth an enum with three states,
// every fifth hidden while its status register is even.
func catalogBench(devids []string, pools, params []string, perModule int) *CatalogState {
	mc := &ModuleCatalog{Symbols: perModule}
	for i := 0; i < perModule && i < len(params); i++ {
		pool, param := pools[i], params[i]
		d := ParamDescription{Pool: pool, Param: param, Symbol: fmt.Sprintf("PARAM_%s_%d", pool, i),
			Name: fmt.Sprintf("Parameter number %d", i), Unit: "°C", Menu: "Boiler/Settings"}
		if i%2 == 0 {
			d.Display = func(r store.Reader) (float64, string, bool) {
				v, ok := r(pool, param)
				return v * 0.1, "", ok
			}
		}
		if i%10 == 0 {
			d.States = []string{"Off", "Heating", "Standby"}
			d.Display = func(r store.Reader) (float64, string, bool) {
				v, ok := r(pool, param)
				return v, d.States[int(v)%3], ok
			}
		}
		if i%5 == 0 {
			d.Visible = func(r store.Reader) bool {
				v, ok := r(pool, "s1")
				return !ok || int(v)%2 == 1
			}
		}
		mc.Params = append(mc.Params, d)
	}
	cs := &CatalogState{Loaded: true, Modules: map[string]*ModuleCatalog{}}
	for _, d := range devids {
		cs.Modules[d] = mc
	}
	return cs
}

// TestCatalogAllocationsDoNotGrowPerSeries: the catalog pass allocates a few
// slabs per scrape, not objects per series, on both paths.
func TestCatalogAllocationsDoNotGrowPerSeries(t *testing.T) {
	store, snap := newBenchStore(10, 1000)
	cs := catalogBench(store.devids, store.pools, store.params, 500)
	base := newTestCollector(t, snap, store, Options{})
	c := catalogCollector(t, snap, store, func() *CatalogState { return cs }, Options{})
	ch := make(chan prometheus.Metric, 40000)
	scrape := func(c *Collector) func() {
		return func() {
			c.Collect(ch)
			for len(ch) > 0 {
				<-ch
			}
		}
	}
	scrape(c)() // render once
	without := fewestAllocs(3, scrape(base))
	with := fewestAllocs(3, scrape(c))
	t.Logf("allocations per scrape: %v without the catalog, %v with (about 7 000 more series)", without, with)
	if with-without > 300 {
		t.Fatalf("the catalog's series cost %v allocations per scrape", with-without)
	}

	var buf bytes.Buffer
	d := directSeries{}
	c.collect(make(chan prometheus.Metric, 1000), &d)
	if n := len(d.catalog.info) + len(d.catalog.display) + len(d.catalog.state); n < 7000 {
		t.Fatalf("only %d catalog series: the benchmark catalog is not what it should be", n)
	}
	allocs := fewestAllocs(3, func() {
		buf.Reset()
		for _, f := range directCatalogFamilies(&d.catalog) {
			if err := f.Write(&buf, exposition.Format{OpenMetrics: true}); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs > 20 {
		t.Errorf("writing the catalog families allocates %v times", allocs)
	}
}

// A computed state with a label and no number has a state set and no
// display value.
func TestComputedStateWithoutNumber(t *testing.T) {
	cs := &CatalogState{Loaded: true, Modules: map[string]*ModuleCatalog{"MOD1": {Params: []ParamDescription{
		{Pool: "P4", Param: "s40", Symbol: "STATUS_P4_40", Name: "Burner", States: []string{"Off", "Firing"},
			Display: func(r store.Reader) (float64, string, bool) { return math.NaN(), "Firing", true }},
	}}}}
	got := gather(t, catalogCollector(t, catalogSnapshot(), catalogParams(), func() *CatalogState { return cs }, Options{}))
	if len(got[paramDisplayName]) != 0 {
		t.Errorf("display values %v for a value that is not a number", got[paramDisplayName])
	}
	want := map[string]float64{"devid=MOD1,param=s40,pool=P4,state=Firing": 1, "devid=MOD1,param=s40,pool=P4,state=Off": 0}
	if !maps.Equal(got[paramStateName], want) {
		t.Errorf("states %v, want %v", got[paramStateName], want)
	}
	if len(got[paramTextName]) != 0 {
		t.Errorf("text series %v for a state of the state set", got[paramTextName])
	}

	// A label that is none of the states is what the app shows: all
	// states 0, and the label as text.
	cs.Modules["MOD1"].Params[0].Display = func(r store.Reader) (float64, string, bool) { return math.NaN(), "Cleaning", true }
	got = gather(t, catalogCollector(t, catalogSnapshot(), catalogParams(), func() *CatalogState { return cs }, Options{}))
	want = map[string]float64{"devid=MOD1,param=s40,pool=P4,state=Firing": 0, "devid=MOD1,param=s40,pool=P4,state=Off": 0}
	if !maps.Equal(got[paramStateName], want) {
		t.Errorf("states %v, want %v", got[paramStateName], want)
	}
	if text := map[string]float64{"devid=MOD1,param=s40,pool=P4,text=Cleaning": 1}; !maps.Equal(got[paramTextName], text) {
		t.Errorf("text series %v, want %v", got[paramTextName], text)
	}
}

// The catalog reads a module's registers while the store's walk is in the
// module, one module at a time. A source that does not report a module's
// registers together (the walk leaves a described module and comes back)
// gets the same series, read by walking again; a source that does (the
// store) is walked once per scrape.
func TestCatalogSeriesDoNotDependOnTheSourceOrder(t *testing.T) {
	interleaved := catalogParams() // MOD1, MOD2, then MOD1 and MOD2 again
	grouped := slices.Clone(interleaved)
	slices.SortStableFunc(grouped, func(a, b storedParam) int { return strings.Compare(a.devid, b.devid) })
	reversed := slices.Clone(grouped)
	slices.Reverse(reversed)
	families := []string{paramInfoName, paramDisplayName, paramStateName, paramTextName, paramValueName}
	var want map[string]map[string]float64
	for _, tc := range []struct {
		name   string
		params paramList
		walks  int
	}{
		{"grouped", grouped, 1},
		{"interleaved", interleaved, 3}, // once, then once per described module
		{"grouped, modules in reverse", reversed, 1},
	} {
		walks := 0
		src := ParamSourceFunc(func(fn func(devid, pool, param string, value float64, numeric bool)) {
			walks++
			tc.params.ForEachParam(fn)
		})
		got := gather(t, catalogCollector(t, catalogSnapshot(), src, testCatalog, Options{}))
		if walks != tc.walks {
			t.Errorf("%s: the source was walked %d times for one scrape, want %d", tc.name, walks, tc.walks)
		}
		if want == nil {
			want = got
			if len(want[paramInfoName]) == 0 || len(want[paramStateName]) == 0 || len(want[paramTextName]) == 0 {
				t.Fatalf("the fixture has no catalog series: %v", want)
			}
			continue
		}
		for _, f := range families {
			if !maps.Equal(got[f], want[f]) {
				t.Errorf("%s: %s = %v\nwant %v", tc.name, f, got[f], want[f])
			}
		}
	}
}
