package realtime

import (
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// TestDegradedRowKeepsTheModulesNameAndVersions: a degraded row (gateway
// {}, null strings) takes the module offline but keeps its last known name,
// title, version and gateway version, which module_info's labels carry.
func TestDegradedRowKeepsTheModulesNameAndVersions(t *testing.T) {
	h := startHarness(t, nil)
	h.waitBound()
	devid := h.sim.Devids()[1]
	before := h.waitFor("names known", func(st *Status) bool {
		m, ok := moduleOf(st, devid)
		return ok && m.Name != "" && m.Version != "" && m.Gateway.Version != "" && allOnline(st)
	})
	was, _ := moduleOf(before, devid)
	h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultDegradedRow, Devid: devid})
	st := h.waitFor("degraded module offline", func(st *Status) bool { m, _ := moduleOf(st, devid); return !m.Online })
	m, _ := moduleOf(st, devid)
	if m.Name != was.Name || m.Title != was.Title || m.Version != was.Version || m.Gateway.Version != was.Gateway.Version {
		t.Errorf("after a degraded row: name %q title %q version %q gateway %q; before: %q %q %q %q",
			m.Name, m.Title, m.Version, m.Gateway.Version, was.Name, was.Title, was.Version, was.Gateway.Version)
	}
}
