package collector

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// bit reads bit n of a register; ok is false when it is not stored.
func bit(r store.Reader, pool, param string, n uint) (bool, bool) {
	v, ok := r(pool, param)
	if !ok {
		return false, false
	}
	return int64(v)&(1<<n) != 0, true
}

// testCatalog describes MOD1 and MOD2 alike: a plain temperature,
// a scaled power hidden while bit 0 of P4.s40 is clear, a pump state (enum)
// at P4.s40, a value composed of two registers at P5.v3 (P5.v4 is its high
// word and not stored: the composition uses what there is), a time of day
// at P6.v7 (raw n shows (n−1)×10 minutes, 0 shows "Off"), a register the
// store does not hold, and a description of P4.v1 repeated under another
// symbol (the first wins).
func testCatalog() *CatalogState {
	mc := &ModuleCatalog{Symbols: 6, Params: []ParamDescription{
		{Pool: "P4", Param: "v1", Symbol: "PARAM_P4_1", Name: "Room temperature", Unit: "°C", Menu: "Heating/Room"},
		{Pool: "P4", Param: "v8", Symbol: "PARAM_P4_8", Name: "Boiler power", Unit: "kW", Menu: "Boiler",
			Display: func(r store.Reader) (float64, string, bool) {
				v, ok := r("P4", "v8")
				return math.Round(v*0.1*10) / 10, "", ok
			},
			Visible: func(r store.Reader) bool {
				on, known := bit(r, "P4", "s40", 0)
				return !known || on
			}},
		{Pool: "P4", Param: "s40", Symbol: "STATUS_P4_40", Name: "Pump", Menu: "Boiler", States: []string{"Off", "On", "On"},
			Display: func(r store.Reader) (float64, string, bool) {
				on, ok := bit(r, "P4", "s40", 0)
				if !ok {
					return 0, "", false
				}
				if on {
					return 1, "On", true
				}
				return 0, "Off", true
			}},
		{Pool: "P5", Param: "v3", Symbol: "PARAM_P5_3", Name: "Fuel \"used\"\nin total", Unit: "kg", Menu: "Statistics", Role: "fuel_burned",
			Display: func(r store.Reader) (float64, string, bool) {
				lo, ok := r("P5", "v3")
				hi, _ := r("P5", "v4")
				return lo + hi*65536, "", ok
			}},
		{Pool: "P6", Param: "v7", Symbol: "PARAM_P6_7", Name: "Night setback start", Menu: "Boiler",
			Display: func(r store.Reader) (float64, string, bool) {
				v, ok := r("P6", "v7")
				if !ok {
					return 0, "", false
				}
				if v == 0 {
					return math.NaN(), "Off", true
				}
				m := int(v-1) * 10
				return math.NaN(), fmt.Sprintf("%02d:%02d", m/60, m%60), true
			}},
		{Pool: "P7", Param: "v1", Symbol: "PARAM_P7_1", Name: "Not stored", Menu: "Boiler"},
		{Pool: "P4", Param: "v1", Symbol: "PARAM_66", Name: "Second description of P4.v1", Menu: "Aaa"},
	}}
	return &CatalogState{
		Loaded: true, LoadedAt: t0.Add(-time.Hour), IndexAsset: "index-Ab12cd.js", Language: "en",
		Loads:       3,
		Failures:    map[string]uint64{"definition": 1, "discovery": 1},
		Stages:      []string{"discovery", "index", "menu", "definition", "i18n", "units"},
		AssetsKnown: true, AssetsUp: true,
		Modules: map[string]*ModuleCatalog{"MOD1": mc, "MOD2": mc},
		AlarmName: func(code, symbol string) (string, bool) {
			if code == "38" {
				return "No fuel", true
			}
			return "", false
		},
	}
}

// catalogSnapshot is healthySnapshot with active alarms: MOD1 has one the
// catalog names, one it does not (the cloud's symbol is used) and one
// without a symbol or start; MOD2 has none; MOD3 (not described, nothing
// stored) has a list that was never read: no alarm series.
func catalogSnapshot() Snapshot {
	s := healthySnapshot()
	s.Modules[0].ActiveAlarmsKnown = true
	s.Modules[0].ActiveAlarms = []Alarm{
		{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Since: t0.Add(-30 * time.Minute)},
		{Code: "12", Symbol: "ERROR_CZUJNIK_CO", Since: t0.Add(-5 * time.Minute)},
		{Code: "7"},
	}
	s.Modules[1].ActiveAlarmsKnown = true
	s.Modules = append(s.Modules, onlineModule("MOD3", "Attic"))
	s.Modules[0].History = mod1History()
	s.Modules[1].History = &ModuleHistory{
		AlarmCounts: map[string]uint64{}, AlarmLastDuration: map[string]time.Duration{},
		ChangesByState: map[string]uint64{"success": 0}, LastChange: t0.Add(-26 * time.Hour),
		RowsDropped: map[string]uint64{"activity": 1},
	}
	return s
}

// mod1History: code 38 (the catalog names it) began twice since the watch,
// 12 once (the cloud's symbol names it), 91 only before the watch and
// without a symbol (its code names it); two changes and a failed one.
func mod1History() *ModuleHistory {
	return &ModuleHistory{
		AlarmCounts:       map[string]uint64{"38": 2, "12": 1, "91": 0},
		AlarmLastDuration: map[string]time.Duration{"38": 90 * time.Second, "91": 15 * time.Minute},
		Alarms: []AlarmOccurrence{
			{Code: "12", Symbol: "ERROR_CZUJNIK_CO", Start: t0.Add(-5 * time.Minute)},
			{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Start: t0.Add(-10 * time.Minute), End: t0.Add(-510 * time.Second)},
			{Code: "91", Start: t0.Add(-72 * time.Hour), End: t0.Add(-72*time.Hour + 15*time.Minute)},
		},
		ChangesByState: map[string]uint64{"success": 2, "failed": 1},
		LastChange:     t0.Add(-2 * time.Minute),
		Changes:        []Change{{At: t0.Add(-2 * time.Minute), Symbol: "PARAM_66", Old: "50", New: "55", User: "Jan", State: "success"}},
		RowsDropped:    map[string]uint64{"alarm_history": 3},
	}
}

func catalogOpts(cs *CatalogState) Options {
	return Options{Catalog: CatalogSourceFunc(func() *CatalogState { return cs })}
}

// catalogParams are healthyParams with the high word of MOD1's composed
// value stored, and the time of day of both modules: 22:00 and off.
func catalogParams() paramList {
	return append(healthyParams(), num("MOD1", "P5.v4", 2), num("MOD1", "P6.v7", 133), num("MOD2", "P6.v7", 0))
}

// hostileCatalog describes every hostile module with label values that need
// escaping, repairing or shortening, enum states that collapse into one
// label value once repaired, and a register shown as text that needs
// escaping.
func hostileCatalog() *CatalogState {
	long := strings.Repeat("ł", 300)
	mc := &ModuleCatalog{Symbols: 2, Params: []ParamDescription{
		{Pool: "P4", Param: "v1", Symbol: "PARAM_\"1\"", Name: hostileQuote, Unit: "\\°C\n", Menu: long,
			States: []string{"a\xffb", "a\xfeb", hostileQuote, "", long},
			Display: func(r store.Reader) (float64, string, bool) {
				v, ok := r("P4", "v1")
				return v, hostileQuote, ok
			}},
		{Pool: "P4\n\"", Param: strings.Repeat("v", 500), Symbol: "S", Name: "bad\xffname", Unit: "u", Menu: "m", Role: "fuel\xff\"level\n",
			Display: func(r store.Reader) (float64, string, bool) { return math.NaN(), hostileQuote + long, true }},
	}}
	mods := map[string]*ModuleCatalog{}
	for _, d := range []string{hostileQuote, hostileLongA, hostileLongB, hostileUTF8A, hostileUTF8B} {
		mods[d] = mc
	}
	return &CatalogState{Loaded: true, IndexAsset: hostileQuote, Language: "p\xffl", Modules: mods,
		Failures: map[string]uint64{"weird\nstage": 2}}
}
