package exporter

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// CatalogLoaderSource turns the catalog loader's published state into a
// CatalogState at scrape time. Each catalog is converted once: while the
// loader keeps the same catalog (a refresh that found nothing new), the
// same ModuleCatalog pointers come back, so the collector renders nothing
// again and every series stays as it was.
type CatalogLoaderSource struct {
	State func() *catalogload.State
	// Values reads a module's stored raw values. With it a parameter's unit
	// follows the module's unit register (the u channel) as the module
	// changes it (spec: the unit code comes from the u channel): a module
	// whose units changed gets a new ModuleCatalog with them, which the
	// collector renders afresh. Nil: the units as at load.
	Values func(devid string) store.Reader

	mu      sync.Mutex
	lastIn  *catalogload.State
	lastOut *collector.CatalogState
	conv    *catalog.Catalog
	modules map[string]*collector.ModuleCatalog
}

// Catalog implements collector.CatalogSource.
func (s *CatalogLoaderSource) Catalog() *collector.CatalogState {
	st := s.State()
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.Catalog != s.conv {
		s.conv, s.modules = st.Catalog, describeModules(st.Catalog)
		s.lastOut = nil
	}
	if s.followUnits() {
		s.lastOut = nil
	}
	if st == s.lastIn && s.lastOut != nil {
		return s.lastOut
	}
	out := &collector.CatalogState{
		Loaded: st.Catalog != nil, LoadedAt: st.LoadedAt, Loads: st.Loads,
		Failures:    make(map[string]uint64, len(st.Failures)),
		AssetsKnown: st.AssetsKnown, AssetsUp: st.AssetsUp,
		Modules: s.modules,
	}
	for _, stage := range catalogload.Stages {
		out.Stages = append(out.Stages, string(stage))
	}
	for stage, n := range st.Failures {
		out.Failures[string(stage)] = n
	}
	if c := st.Catalog; c != nil {
		out.IndexAsset, out.Language = st.IndexAsset, st.Language
		out.AlarmName = c.AlarmName
	}
	s.lastIn, s.lastOut = st, out
	return out
}

// followUnits replaces, in a new map, each module whose parameters' units
// changed with the module's unit registers, and reports whether any did.
// The map and the ModuleCatalogs handed out before are never changed:
// a scrape may be reading them.
func (s *CatalogLoaderSource) followUnits() bool {
	if s.Values == nil || len(s.modules) == 0 {
		return false
	}
	var next map[string]*collector.ModuleCatalog
	for devid, mc := range s.modules {
		var r store.Reader
		var fresh *collector.ModuleCatalog
		for i := range mc.Params {
			d := &mc.Params[i]
			if d.UnitFor == nil {
				continue
			}
			if r == nil {
				r = s.Values(devid)
			}
			if u := d.UnitFor(r); u != d.Unit {
				if fresh == nil {
					fresh = &collector.ModuleCatalog{Symbols: mc.Symbols, Params: slices.Clone(mc.Params)}
				}
				fresh.Params[i].Unit = u
			}
		}
		if fresh == nil {
			continue
		}
		if next == nil {
			next = maps.Clone(s.modules)
		}
		next[devid] = fresh
	}
	if next == nil {
		return false
	}
	s.modules = next
	return true
}

// describeModules converts a catalog's modules: one description per primary
// register, the one the catalog's inverse index answers for it.
func describeModules(c *catalog.Catalog) map[string]*collector.ModuleCatalog {
	if c == nil {
		return nil
	}
	out := map[string]*collector.ModuleCatalog{}
	for _, m := range c.Modules() {
		params := m.Params()
		mc := &collector.ModuleCatalog{Symbols: len(params), Params: make([]collector.ParamDescription, 0, len(params))}
		for _, p := range params {
			a := p.Address
			if a.IsZero() || m.Lookup(a.Pool, a.ChanIdx()) != p {
				continue
			}
			d := collector.ParamDescription{
				Pool: a.Pool, Param: a.ChanIdx(), Symbol: p.Symbol, Name: p.Name, Unit: p.Unit, UnitFor: p.UnitFor,
				Menu:    strings.Join(p.Menu, "/"),
				Display: p.Display,
				Visible: p.Visible,
				Role:    string(p.Role),
			}
			// Every option, also those of computed states (keyed by a state
			// name, which Enum cannot hold).
			d.States = p.StateLabels()
			mc.Params = append(mc.Params, d)
		}
		out[m.DevID()] = mc
	}
	return out
}
