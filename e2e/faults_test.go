package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// faultDeadline bounds every wait for a fault to show on /metrics. The
// gateway runs with 200 ms polls and a 1 s hysteresis, so each effect is due
// within about a second; the slack is for a loaded machine, and the observed
// delay is logged.
const faultDeadline = 15 * time.Second

// TestServeAgainstSimulate runs `serve` and `simulate` as two processes and
// switches faults on in the simulator over its control endpoint; each one
// must show on the exporter's /metrics.
func TestServeAgainstSimulate(t *testing.T) {
	t.Parallel()
	// Drift every 200 ms keeps live push healthy under the 1 s stale threshold.
	sim := startSimulate(t, "--drift-interval=200ms")
	exp := startServe(t, demoEnv, append([]string{"--cloud.url=" + sim.url}, fastHealth...)...)

	full := exp.waitFullScrape(t, sim.devids, 30*time.Second)
	for _, d := range sim.devids {
		if v, ok := full.value("bragerone_module_online", map[string]string{"devid": d}); !ok || v != 1 {
			t.Errorf("module %s: %s, want 1", d, full.show("bragerone_module_online"))
		}
	}
	exp.waitMetric(t, faultDeadline, "session up", valueIs("bragerone_session_up", nil, 1))

	t.Run("module offline", func(t *testing.T) {
		devid := sim.devids[0]
		sel := map[string]string{"devid": devid}
		began := time.Now()
		sim.ctl.module(t, devid, "offline")
		s := exp.waitMetric(t, faultDeadline, "module offline with an outage record", func(s scrape) (bool, string) {
			v, ok := s.value("bragerone_module_online", sel)
			outages := s.series("bragerone_module_outage_seconds", sel)
			return ok && v == 0 && len(outages) == 1, s.show("bragerone_module_online") + " | " + s.show("bragerone_module_outage_seconds")
		})
		t.Logf("module offline on /metrics %v after the control call", time.Since(began).Round(time.Millisecond))
		reason := labelsOf(s.series("bragerone_module_outage_seconds", sel)[0])["reason"]
		if reason != "ws" && reason != "rest" {
			t.Errorf("module outage reason %q, want ws or rest", reason)
		}
		if n, _ := s.value("bragerone_module_outages_total", map[string]string{"devid": devid, "reason": reason}); n != 1 {
			t.Errorf("bragerone_module_outages_total{reason=%q} = %g, want 1", reason, n)
		}
		for _, other := range sim.devids[1:] {
			if v, _ := s.value("bragerone_module_online", map[string]string{"devid": other}); v != 1 {
				t.Errorf("sibling %s went offline too: %s", other, s.show("bragerone_module_online"))
			}
			if len(s.series("bragerone_module_outage_seconds", map[string]string{"devid": other})) != 0 {
				t.Errorf("sibling %s has an outage: %s", other, s.show("bragerone_module_outage_seconds"))
			}
		}
		// Module link and session are separate signals.
		if v, _ := s.value("bragerone_session_up", nil); v != 1 {
			t.Errorf("a module going offline took the session down: %s", s.show("bragerone_session_up"))
		}

		sim.ctl.module(t, devid, "online")
		s = exp.waitMetric(t, faultDeadline, "module back online with its last outage", func(s scrape) (bool, string) {
			v, ok := s.value("bragerone_module_online", sel)
			last := s.series("bragerone_module_last_outage_seconds", sel)
			return ok && v == 1 && len(last) == 1 && len(s.series("bragerone_module_outage_seconds", sel)) == 0,
				s.show("bragerone_module_online") + " | " + s.show("bragerone_module_last_outage_seconds")
		})
		last := s.series("bragerone_module_last_outage_seconds", sel)[0]
		if got := labelsOf(last)["reason"]; got != reason {
			t.Errorf("last outage reason %q, want %q (the reason of the outage)", got, reason)
		}
		if sampleValue(last) <= 0 {
			t.Errorf("last outage lasted %gs, want > 0", sampleValue(last))
		}
	})

	t.Run("transport drop with a stalled handshake", func(t *testing.T) {
		before := exp.waitMetric(t, faultDeadline, "session up before the drop", valueIs("bragerone_session_up", nil, 1))
		stall := sim.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultStallHandshake})
		began := time.Now()
		sim.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
		s := exp.waitMetric(t, faultDeadline, "session down after the hysteresis", func(s scrape) (bool, string) {
			v, ok := s.value("bragerone_session_up", nil)
			return ok && v == 0 && len(s.series("bragerone_session_outage_seconds", nil)) == 1,
				s.show("bragerone_session_up") + " | " + s.show("bragerone_session_outage_seconds")
		})
		t.Logf("session down on /metrics %v after the drop (hysteresis 1s)", time.Since(began).Round(time.Millisecond))
		reason := labelsOf(s.series("bragerone_session_outage_seconds", nil)[0])["reason"]
		if reason == "" {
			t.Fatalf("session outage without a reason: %s", s.show("bragerone_session_outage_seconds"))
		}
		// A lost session is never a healthy push.
		if v, ok := s.value("bragerone_push_healthy", nil); !ok || v != 0 {
			t.Errorf("session down but %s, want 0", s.show("bragerone_push_healthy"))
		}
		// Nor does it take any module offline.
		for _, d := range sim.devids {
			if v, _ := s.value("bragerone_module_online", map[string]string{"devid": d}); v != 1 {
				t.Errorf("session loss took module %s offline: %s", d, s.show("bragerone_module_online"))
			}
		}

		sim.ctl.clear(t, stall)
		s = exp.waitMetric(t, faultDeadline, "session restored with its last outage", func(s scrape) (bool, string) {
			v, ok := s.value("bragerone_session_up", nil)
			return ok && v == 1 && len(s.series("bragerone_session_last_outage_seconds", nil)) == 1 &&
					len(s.series("bragerone_session_outage_seconds", nil)) == 0,
				s.show("bragerone_session_up") + " | " + s.show("bragerone_session_last_outage_seconds")
		})
		last := s.series("bragerone_session_last_outage_seconds", nil)[0]
		if got := labelsOf(last)["reason"]; got != reason {
			t.Errorf("last session outage reason %q, want %q", got, reason)
		}
		if sampleValue(last) < 1 {
			t.Errorf("last session outage lasted %gs, want at least the 1s hysteresis", sampleValue(last))
		}
		was, _ := before.value("bragerone_session_outages_total", map[string]string{"reason": reason})
		if n, _ := s.value("bragerone_session_outages_total", map[string]string{"reason": reason}); n != was+1 {
			t.Errorf("%s, want reason %q up by one from %g", s.show("bragerone_session_outages_total"), reason, was)
		}
		// After the reconnect the exporter re-primes: every parameter is still there.
		exp.waitFullScrape(t, sim.devids, faultDeadline)
	})

	t.Run("muted pushes", func(t *testing.T) {
		exp.waitMetric(t, faultDeadline, "push healthy before muting", valueIs("bragerone_push_healthy", nil, 1))
		primeOK := map[string]string{"step": "zombie_prime", "result": "ok"}
		before, ok := exp.mustScrape(t).value("bragerone_recovery_actions_total", primeOK)
		if !ok {
			t.Fatal("bragerone_recovery_actions_total{step=zombie_prime,result=ok} is not exported before any recovery")
		}
		mute := sim.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
		exp.waitMetric(t, faultDeadline, "push unhealthy", valueIs("bragerone_push_healthy", nil, 0))
		var seen []float64
		s := exp.waitMetric(t, faultDeadline, "zombie primes counted", func(s scrape) (bool, string) {
			v, _ := s.value("bragerone_recovery_actions_total", primeOK)
			if len(seen) == 0 || seen[len(seen)-1] != v {
				seen = append(seen, v)
			}
			return v >= before+2, fmt.Sprintf("zombie_prime ok went %v from %g", seen, before)
		})
		for i := 1; i < len(seen); i++ {
			if seen[i] < seen[i-1] {
				t.Errorf("counter went down: %v", seen)
			}
		}
		t.Logf("zombie_prime ok: %v (from %g); ladder: %s", seen, before, s.show("bragerone_recovery_actions_total"))

		sim.ctl.clear(t, mute)
		exp.waitMetric(t, faultDeadline, "push healthy and out of quarantine after unmuting", func(s scrape) (bool, string) {
			h, ok := s.value("bragerone_push_healthy", nil)
			q, _ := s.value("bragerone_recovery_quarantined", nil)
			return ok && h == 1 && q == 0, s.show("bragerone_push_healthy") + " | " + s.show("bragerone_recovery_quarantined")
		})
	})
}
