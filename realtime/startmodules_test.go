package realtime

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// runResult waits for Run to return on its own and hands its error over;
// the harness's stop then finds nil.
func (h *harness) runResult(within time.Duration) (error, bool) {
	select {
	case err := <-h.runErr:
		h.runErr <- nil
		return err, true
	case <-time.After(within):
		return nil, false
	}
}

// A devid of Modules that the object's module list lacks fails the start
// with the devids the object offers, before any session is opened: a typo
// is a configuration mistake, not a module to wait for.
func TestGatewayStartRefusesADevidTheListLacks(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.Modules = []string{"NOSUCHDEV", h0Devid} })
	err, returned := h.runResult(10 * time.Second)
	var me *cloudclient.MissingModulesError
	if !returned || !errors.As(err, &me) {
		t.Fatalf("Run = %v (returned %v), want a MissingModulesError", err, returned)
	}
	listed := slices.Sorted(slices.Values(h.sim.Devids()))
	if !slices.Equal(me.Missing, []string{"NOSUCHDEV"}) || !slices.Equal(me.Listed, listed) || me.ObjectID != h.sim.ObjectID() {
		t.Fatalf("error %+v, want NOSUCHDEV missing from %v of object %d", me, listed, h.sim.ObjectID())
	}
	want := fmt.Sprintf("module NOSUCHDEV is not in the module list of object %d (it lists %s, %s)", h.sim.ObjectID(), listed[0], listed[1])
	if err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if n := h.sim.Requests("POST /v1/modules/connect") + h.sim.Requests("POST /v1/modules/parameters"); n != 0 {
		t.Fatalf("a refused start still bound or primed modules: %v", h.sim.RequestCounts())
	}
	select {
	case <-h.gw.Ready():
		t.Fatal("a refused start became ready")
	default:
	}
}

// h0Devid is the first simulated devid of the harness's seed, which every
// cloudsim world with the same options produces.
var h0Devid = func() string {
	sim := cloudsim.New(cloudsim.Options{Modules: 2, ParamsPerModule: 40, Seed: 7})
	return sim.Devids()[0]
}()

// A module list the cloud cannot give at start is no evidence against a
// devid: the start retries, and refuses the devid only once a list is read.
func TestGatewayStartRetriesAnUnreadableListBeforeJudgingDevids(t *testing.T) {
	const failures = 3
	h := startHarnessWithFaults(t, func(c *Config) { c.Modules = []string{"NOSUCHDEV"} },
		[]cloudsim.Fault{{Kind: cloudsim.FaultHTTPStatus, Status: 503, Path: "GET /v1/modules", Count: failures}})
	err, returned := h.runResult(20 * time.Second)
	var me *cloudclient.MissingModulesError
	if !returned || !errors.As(err, &me) {
		t.Fatalf("Run = %v (returned %v), want a MissingModulesError once the list was read", err, returned)
	}
	if n := h.sim.Requests("GET /v1/modules"); n != failures+1 {
		t.Fatalf("%d module listings, want %d failed ones and the one that was read", n, failures)
	}
}

// A listing that dropped a row it could not read, or an empty one, proves
// nothing about a devid: the start goes on (the devid may be the dropped
// row), and a devid missing from later listings does not stop the gateway.
func TestGatewayStartAcceptsADevidAnIncompleteListLacks(t *testing.T) {
	for name, body := range map[string]string{
		"dropped row": fmt.Sprintf(`{"data":[{"devid":%q,"connectedAt":1700000000},{"devid":7}]}`, h0Devid),
		"empty":       `{"data":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			h := startHarnessWithFaults(t, func(c *Config) { c.Modules = []string{h0Devid, "GONE"} },
				[]cloudsim.Fault{{Kind: cloudsim.FaultListing, Path: "GET /v1/modules", Body: body, Count: 1}})
			select {
			case <-h.gw.Ready():
			case err := <-h.runErr:
				h.runErr <- nil
				t.Fatalf("Run = %v, want a start", err)
			case <-time.After(10 * time.Second):
				t.Fatal("not ready")
			}
			// Later listings (the simulator's own) lack GONE too.
			h.waitFor("two more module listings", func(*Status) bool { return h.sim.Requests("GET /v1/modules") >= 3 })
			if err, returned := h.runResult(0); returned {
				t.Fatalf("Run returned %v after a later listing", err)
			}
		})
	}
}
