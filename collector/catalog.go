package collector

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// CatalogSource hands the collector the parameter catalog as it is at
// scrape time. Catalog returns nil when the catalog is switched off: no
// catalog series are exported then, and alarm names fall back to the
// cloud's symbols.
type CatalogSource interface {
	Catalog() *CatalogState
}

// CatalogSourceFunc adapts a function to CatalogSource.
type CatalogSourceFunc func() *CatalogState

// Catalog implements CatalogSource.
func (f CatalogSourceFunc) Catalog() *CatalogState { return f() }

// CatalogState is the catalog's health and content at one instant. The
// collector only reads it: a source hands out a new value when anything
// changes and never changes one it handed out, so the collector can keep
// what it derived from a ModuleCatalog for as long as the same pointer comes
// back.
type CatalogState struct {
	// Loaded is true while a catalog is in use (the last good one).
	Loaded bool
	// LoadedAt is when the catalog in use was loaded; zero before the first.
	LoadedAt time.Time
	// IndexAsset and Language name the catalog in use ("index-Ab12.js", "en").
	IndexAsset, Language string

	// Loads counts load attempts (the first load and every refresh).
	Loads uint64
	// Failures counts failures by stage since the start: a load that failed
	// counts once at the stage it failed in, and each asset that failed
	// inside a usable load counts once at its stage.
	Failures map[string]uint64
	// Stages are the stage names known in advance; each is exported from
	// the first scrape on (as 0).
	Stages []string

	// AssetsKnown is true once a load was attempted; AssetsUp says whether
	// the last attempt reached the assets site at all.
	AssetsKnown, AssetsUp bool

	// Modules are the described modules by devid.
	Modules map[string]*ModuleCatalog

	// AlarmName translates an alarm (code "38", symbol "ERROR_BRAK_PALIWA",
	// either may be "") where the catalog has a name for it; nil when
	// nothing is loaded.
	AlarmName func(code, symbol string) (string, bool)
}

// ModuleCatalog is what the catalog says about one module.
type ModuleCatalog struct {
	// Symbols is how many symbols the catalog describes for the module.
	Symbols int
	// Params are the described parameters, one per primary register, in
	// menu order. A register named by two entries is described by the first.
	Params []ParamDescription
}

// ParamDescription describes the parameter stored at one register.
type ParamDescription struct {
	Pool, Param string // the primary register: "P4", "v7"
	Symbol      string // "PARAM_P4_7"
	Name        string // translated label, e.g. "Boiler power"
	Unit        string // as displayed: "°C", "kW", ""
	// UnitFor is the unit as displayed for the module's values now (its
	// unit register, the u channel, as the module changes it); nil: Unit
	// always. The catalog source follows it (a ModuleCatalog is replaced
	// when a unit changes), so Unit is the unit now.
	UnitFor func(store.Reader) string
	Menu    string // panel path, e.g. "Boiler/Settings"
	// States are the labels of an enum-valued parameter in option order;
	// nil when the parameter is not an enum.
	States []string
	// Display gives the value as the app shows it (transform, composition,
	// computed value) and the label of it: an enum option, or the text the
	// app shows where the value is not a number (a time of day), value NaN
	// then. ok is false when nothing can be shown. Nil: the raw value is the
	// display value.
	Display func(store.Reader) (value float64, label string, ok bool)
	// Visible applies the catalog's visibility rules; nil: always visible.
	Visible func(store.Reader) bool
	// Role says what the register is for ("fuel_level", "fuel_burned",
	// "operating_hours", "ignitions"), exported as bragerone_parameter_role;
	// "" for most registers.
	Role string
}

// catalogDescs are the descriptors of the catalog and alarm families.
type catalogDescs struct {
	paramInfo, paramDisplay, paramState, paramText, paramRole *prometheus.Desc

	alarmActive, alarmSince *prometheus.Desc

	loaded, loadedAt, info, symbols, loads, failures, assetsUp *prometheus.Desc
}

// Names and help of the catalog families the /metrics handler may write
// itself (see DirectScrape), shared by both paths.
const (
	paramInfoName    = namespace + "_parameter_info"
	paramInfoHelp    = "Name, unit and menu of the parameter stored at <pool>.<param>, from the web app's catalog; always 1."
	paramDisplayName = namespace + "_parameter_display_value"
	paramDisplayHelp = "Value of <pool>.<param> as the app displays it (scaled, composed or computed), where that is numeric."
	paramStateName   = namespace + "_parameter_state"
	paramStateHelp   = "Enum-valued parameter: 1 for the state the parameter is in, 0 for its other states."
	paramTextName    = namespace + "_parameter_display_text"
	paramTextHelp    = "Value of <pool>.<param> as the app displays it where that is text, neither a number nor an enum state (e.g. a time of day), in the text label; always 1."
	paramRoleName    = namespace + "_parameter_role"
	paramRoleHelp    = "What the register <pool>.<param> is for (fuel_level, fuel_burned, operating_hours, ignitions), identified from the catalog or set by the overrides file; always 1."
)

func newCatalogDescs() catalogDescs {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
	}
	return catalogDescs{
		paramInfo:    prometheus.NewDesc(paramInfoName, paramInfoHelp, infoLabelNames, nil),
		paramDisplay: prometheus.NewDesc(paramDisplayName, paramDisplayHelp, []string{"devid", "param", "pool"}, nil),
		paramState:   prometheus.NewDesc(paramStateName, paramStateHelp, []string{"devid", "param", "pool", "state"}, nil),
		paramText:    prometheus.NewDesc(paramTextName, paramTextHelp, []string{"devid", "param", "pool", "text"}, nil),
		paramRole:    prometheus.NewDesc(paramRoleName, paramRoleHelp, []string{"devid", "param", "pool", "role"}, nil),

		alarmActive: d("module_alarm_active", "Active alarm of the module from the cloud's alarm list; always 1.", "devid", "code", "name"),
		alarmSince:  d("module_alarm_since_timestamp_seconds", "When the active alarm began, seconds since the epoch.", "devid", "code"),

		loaded:   d("catalog_loaded", "1 while a parameter catalog is in use, 0 before the first one loaded."),
		loadedAt: d("catalog_load_timestamp_seconds", "When the parameter catalog in use was loaded, seconds since the epoch."),
		info:     d("catalog_info", "The parameter catalog in use: its index asset and language; always 1.", "index_asset", "language"),
		symbols:  d("catalog_symbols", "Symbols the parameter catalog describes for the module.", "devid"),
		loads:    d("catalog_loads_total", "Parameter catalog load attempts (the first load and every refresh)."),
		failures: d("catalog_load_failures_total", "Parameter catalog failures by stage: failed loads, and assets that failed inside a usable load.", "stage"),
		assetsUp: d("catalog_assets_up", "1 when the last catalog load reached the web app's assets site, 0 when it did not."),
	}
}

func (d *catalogDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.paramInfo, d.paramDisplay, d.paramState, d.paramText, d.paramRole, d.alarmActive, d.alarmSince,
		d.loaded, d.loadedAt, d.info, d.symbols, d.loads, d.failures, d.assetsUp,
	}
}

// collectCatalogHealth exports the catalog's own state; nothing when the
// catalog is switched off.
func (c *Collector) collectCatalogHealth(e *emitter, cs *CatalogState, mods map[string]*exportedModule) {
	if cs == nil {
		return
	}
	e.emit(c.cat.loaded, prometheus.GaugeValue, boolValue(cs.Loaded))
	if cs.Loaded {
		e.emit(c.cat.info, prometheus.GaugeValue, 1, LabelValue(cs.IndexAsset), LabelValue(cs.Language))
	}
	if !cs.LoadedAt.IsZero() {
		e.emit(c.cat.loadedAt, prometheus.GaugeValue, unixSeconds(cs.LoadedAt))
	}
	e.emit(c.cat.loads, prometheus.CounterValue, float64(cs.Loads))
	emitByReason(e, c.cat.failures, cs.Stages, cs.Failures)
	if cs.AssetsKnown {
		e.emit(c.cat.assetsUp, prometheus.GaugeValue, boolValue(cs.AssetsUp))
	}
	for _, m := range sortedModules(mods) {
		if mc := cs.Modules[m.devid]; mc != nil {
			e.emit(c.cat.symbols, prometheus.GaugeValue, float64(mc.Symbols), m.label)
		}
	}
}

// collectAlarms exports the active alarms of the modules of the snapshot.
// An alarm's name is the catalog's translation, else the cloud's symbol,
// else its code.
func (c *Collector) collectAlarms(e *emitter, modules []ModuleState, mods map[string]*exportedModule, cs *CatalogState) {
	done := make(map[*exportedModule]bool, len(mods))
	for i := range modules {
		m := &modules[i]
		em := mods[m.Devid]
		if em == nil || done[em] || !m.ActiveAlarmsKnown {
			continue // a repeated devid is exported from its first entry only
		}
		done[em] = true
		seen := make(map[string]bool, len(m.ActiveAlarms))
		for _, a := range m.ActiveAlarms {
			code := LabelValue(a.Code)
			if seen[code] {
				continue
			}
			seen[code] = true
			e.emit(c.cat.alarmActive, prometheus.GaugeValue, 1, em.label, code, LabelValue(alarmName(cs, a.Code, a.Symbol)))
			if !a.Since.IsZero() {
				e.emit(c.cat.alarmSince, prometheus.GaugeValue, unixSeconds(a.Since), em.label, code)
			}
		}
	}
}

// alarmName is an alarm's name label: the catalog's translation, else the
// cloud's symbol, else its code.
func alarmName(cs *CatalogState, code, symbol string) string {
	if cs != nil && cs.AlarmName != nil {
		if n, ok := cs.AlarmName(code, symbol); ok && n != "" {
			return n
		}
	}
	if symbol == "" {
		return code
	}
	return symbol
}

// sortedModules returns the exported modules in order of their devid label,
// the order of every per-module family in the exposition.
func sortedModules(mods map[string]*exportedModule) []*exportedModule {
	out := make([]*exportedModule, 0, len(mods))
	for _, m := range mods {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *exportedModule) int { return cmp.Compare(a.label, b.label) })
	return out
}
