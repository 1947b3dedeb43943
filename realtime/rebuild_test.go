package realtime

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// closeCounting counts the Close calls of the transport it wraps.
type closeCounting struct {
	transport.Transport
	closed *atomic.Int32
}

func (c closeCounting) Close() error {
	c.closed.Add(1)
	return c.Transport.Close()
}

// TestGatewayManagerRebuildDoesTheSessionWorkOfATransportRecycle: the
// manager rebuild and the transport recycle do the same session work here
// (one new transport, the old one closed, the session taken down with
// reason hard_reset, then reconnected and bound); what the rebuild adds is
// the ladder's (the rebuild count towards quarantine). The same zombie is
// driven to either step: after one hard restart the next escalation is a
// recycle (recycles-before-rebuild 0) or a rebuild (1).
func TestGatewayManagerRebuildDoesTheSessionWorkOfATransportRecycle(t *testing.T) {
	for _, tc := range []struct {
		step, other           ladder.Action
		recyclesBeforeRebuild int
		rebuilds              int
	}{
		{step: ladder.Recycle, other: ladder.Rebuild, recyclesBeforeRebuild: 0, rebuilds: 0},
		{step: ladder.Rebuild, other: ladder.Recycle, recyclesBeforeRebuild: 1, rebuilds: 1},
	} {
		t.Run(string(tc.step), func(t *testing.T) {
			var built, closed atomic.Int32
			h := startHarness(t, func(c *Config) {
				c.PollInterval = 30 * time.Millisecond
				c.Ladder.StaleAfter = 60 * time.Millisecond
				c.Ladder.ZombiePrimes = 1
				c.Ladder.HardRestartsBeforeRecycle = 1
				c.Ladder.RecyclesBeforeRebuild = tc.recyclesBeforeRebuild
				c.Ladder.RebuildsBeforeQuarantine = 0
				c.Ladder.CooldownBase = time.Hour // one step, then primes only
				c.Ladder.CooldownMax = time.Hour
				c.Ladder.ModuleOnlineDebounce = 0
				build := c.NewTransport
				c.NewTransport = func() (transport.Transport, error) {
					built.Add(1)
					tr, err := build()
					if err != nil {
						return nil, err
					}
					return closeCounting{Transport: tr, closed: &closed}, nil
				}
			})
			h.waitBound()
			devid := h.sim.Devids()[0]
			key := h.firstKey(devid)
			h.sim.SetParam(devid, key, 1.0)
			h.waitFor("push healthy", func(st *Status) bool { return st.Push.State == outage.PushHealthy })
			h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})

			st := h.waitFor(string(tc.step)+" finished and the session bound again", func(st *Status) bool {
				done := st.Ladder.Count(tc.step, ladder.OK) + st.Ladder.Count(tc.step, ladder.Failed)
				return done == 1 && st.Recovering == "" && bound(st) && st.Binding == 0
			})
			if n := st.Ladder.Count(ladder.HardRestart, ladder.OK) + st.Ladder.Count(ladder.HardRestart, ladder.Failed); n != 1 {
				t.Fatalf("%d hard restarts before the %s, want 1", n, tc.step)
			}
			if n := st.Ladder.Count(tc.other, ladder.OK) + st.Ladder.Count(tc.other, ladder.Failed); n != 0 {
				t.Fatalf("%s ran %d times", tc.other, n)
			}
			// Start built one transport; the hard restart reused it; the
			// step replaced it once.
			if n := built.Load(); n != 2 {
				t.Fatalf("%s: %d transports built, want 2 (start + one replacement)", tc.step, n)
			}
			h.waitUntil("the replaced transport closed", func() bool { return closed.Load() == 1 })
			if got := st.Session.Outages[outage.ReasonHardReset]; got != 1 {
				t.Fatalf("%s: session downs with reason hard_reset = %d, want 1 (%v)", tc.step, got, st.Session.Outages)
			}
			if got := st.Session.Outages[outage.ReasonForceReconnect]; got != 1 {
				t.Fatalf("%s: session downs with reason force_reconnect = %d, want 1 (%v)", tc.step, got, st.Session.Outages)
			}
			if st.Ladder.RebuildCount != tc.rebuilds {
				t.Fatalf("%s: rebuild count %d, want %d", tc.step, st.Ladder.RebuildCount, tc.rebuilds)
			}
			if n := built.Load(); n != 2 {
				t.Fatalf("%s: %d transports built after the step, want 2", tc.step, n)
			}
		})
	}
}
