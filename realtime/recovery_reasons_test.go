package realtime_test

import (
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
)

// docs/spec.md W-3.4d: a reconnect the ladder forces ends the session with
// force_reconnect (hard restart), a transport recycle with hard_reset. With
// no down-hysteresis each end is a published outage with that reason.
func TestRecoveryForcedReconnectReasons(t *testing.T) {
	s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) {
		zombieLadder(c)
		c.SessionHysteresis = 0
		c.Ladder.HardRestartsBeforeRecycle = 1
	}})
	s.waitUp()
	d := s.sim.Devids()[0]
	s.nudgeLive(d, s.vKey(d, 0), 1)
	mute := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
	s.eventually("a hard restart and a transport recycle", func() bool {
		return s.recoveries("hard_restart") >= 1 && s.recoveries("transport_recycle") >= 1
	})
	for _, reason := range []string{outage.ReasonForceReconnect, outage.ReasonHardReset} {
		if n, _ := s.metric("bragerone_session_outages_total", "reason", reason); n < 1 {
			t.Errorf("no session outage with reason %s; outages: %s", reason, s.dump())
		}
	}
	s.sim.Clear(mute)
	s.nudgeLive(d, s.vKey(d, 1), 1)
	s.nothingLost()
}
