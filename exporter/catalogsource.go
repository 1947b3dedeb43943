package exporter

import (
	"strings"
	"sync"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/collector"
)

// CatalogLoaderSource turns the catalog loader's published state into a
// CatalogState at scrape time. Each catalog is converted once: while the
// loader keeps the same catalog (a refresh that found nothing new), the
// same ModuleCatalog pointers come back, so the collector renders nothing
// again and every series stays as it was.
type CatalogLoaderSource struct {
	State func() *catalogload.State

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
	if st == s.lastIn && s.lastOut != nil {
		return s.lastOut
	}
	if st.Catalog != s.conv {
		s.conv, s.modules = st.Catalog, describeModules(st.Catalog)
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
		out.AlarmName = func(code, symbol string) (string, bool) {
			for _, k := range []string{code, symbol} {
				if n, ok := c.AlarmName(k); ok && k != "" {
					return n, true
				}
			}
			return "", false
		}
	}
	s.lastIn, s.lastOut = st, out
	return out
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
				Pool: a.Pool, Param: a.ChanIdx(), Symbol: p.Symbol, Name: p.Name, Unit: p.Unit,
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
