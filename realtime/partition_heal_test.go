package realtime_test

import (
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
)

// A partition (nothing gets through, nothing is closed; TCP retransmits
// what was sent, at growing intervals: see partitionToxic) long enough for
// the exporter to find its session dead and dial again: the dial sent into
// the dead link is still waiting when the link comes back, its next
// retransmission 4 s away. The session must be up again within 2 s of the
// link's return, with the real connect timeout (20 s) and TCP's real
// retransmission timeout in place.
func TestTCPPartitionHealsWhileDialling(t *testing.T) {
	var chaos *chaosProxy
	s := startScenario(t, scenarioSetup{
		route: func(simURL string) string { chaos = newChaosProxy(t, simURL); return chaos.url },
		sim: func(o *cloudsim.Options) {
			o.PingInterval = 300 * time.Millisecond
			o.PingTimeout = 300 * time.Millisecond
		},
		client:         func(c *cloudclient.Config) { c.Timeout = time.Second },
		connectTimeout: 20 * time.Second,
		gw: func(c *realtime.Config) {
			c.SessionHysteresis = 200 * time.Millisecond
			c.SupervisorInterval = 200 * time.Millisecond
		},
	})
	s.waitUp()
	restore := chaos.partition()
	s.eventuallyWithin("the dead link noticed (session down)", 5*time.Second, func() bool { return s.is(0, "bragerone_session_up") })
	var dialled time.Time
	s.eventuallyWithin("a reconnect dial sent into the dead link", 5*time.Second, func() bool {
		var ok bool
		dialled, ok = chaos.link.heldSince("GET /socket.io/")
		return ok
	})
	// The link comes back just after the dial's second retransmission
	// (1 s and 3 s after it was sent): its next one is 4 s away.
	returnAt := dialled.Add(3*partitionRTO + 100*time.Millisecond)
	for time.Now().Before(returnAt) {
		if s.gw.Status().Connected {
			t.Fatalf("a session came up through a partitioned link:%s", s.dump())
		}
		time.Sleep(10 * time.Millisecond)
	}
	restore()
	back := time.Now()
	s.eventuallyWithin("the session up again", 25*time.Second, func() bool { return s.is(1, "bragerone_session_up") })
	healed := time.Since(back)
	t.Logf("session up %v after the link came back", healed.Round(time.Millisecond))
	if healed > 2*time.Second {
		t.Errorf("session up %v after the link came back, want within 2s", healed.Round(time.Millisecond))
	}
}
