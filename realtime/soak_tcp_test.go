package realtime_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSoakTCPChurn is the fault-churn soak at the TCP level: the exporter
// talks to the simulated cloud through the chaos proxy of the TCP fault
// suite, with the suite's durations (the field's divided by tcpTimeScale),
// while a seeded schedule switches the link's faults on and off (latency
// with jitter, a trickle, resets, sliced segments, partitions, connections
// cut after N bytes, a refused port), one or two at a time, with parameters
// drifting throughout. The rules are the fault-churn soak's: goroutines,
// heap in use and open descriptors must not grow without bound (the chaos
// proxy's own goroutines and descriptors left out), and once the churn
// ends the exporter must recover completely.
//
// Run it with:
//
//	go test ./realtime -run SoakTCP -soak=5m -v -timeout 15m
//
// (-soak.seed, -soak.sample and -soak.stacks as for TestSoakFaultChurn.)
func TestSoakTCPChurn(t *testing.T) {
	if *soak <= 0 {
		t.Skip("the TCP churn soak is opt-in: go test ./realtime -run SoakTCP -soak=5m -v")
	}
	if *soakInterval <= 0 {
		t.Fatalf("-soak.sample must be positive, got %v", *soakInterval)
	}
	s, chaos := startTCPFaultScenario(t)
	s.waitUp()

	rng := rand.New(rand.NewPCG(*soakSeed, 0x7c9))
	endDrift := startDrift(s.sim)
	defer func() { endDrift() }()

	ms := func(lo, hi time.Duration) int64 {
		return (lo + time.Duration(rng.Int64N(int64(hi-lo)+1))).Milliseconds()
	}
	streams := []string{"upstream", "downstream"}
	pickStream := func() string { return streams[rng.IntN(2)] }
	faults := []func() (string, func()){
		func() (string, func()) {
			return "latency", chaos.add(both("latency", map[string]any{
				"latency": ms(0, 4*time.Second/tcpTimeScale), "jitter": ms(0, 2*time.Second/tcpTimeScale),
			})...)
		},
		func() (string, func()) {
			return "bandwidth", chaos.add(toxic{Type: "bandwidth", Stream: pickStream(), Attributes: map[string]any{"rate": 1 + rng.IntN(4*tcpTimeScale)}})
		},
		func() (string, func()) {
			return "reset_peer", chaos.add(toxic{Type: "reset_peer", Stream: pickStream(), Attributes: map[string]any{"timeout": ms(0, tcpPingInterval)}})
		},
		func() (string, func()) {
			return "slicer", chaos.add(both("slicer", map[string]any{"average_size": 4, "size_variation": 3, "delay": 50})...)
		},
		func() (string, func()) { return "partition", chaos.partition() },
		func() (string, func()) {
			return "limit_data", chaos.add(toxic{Type: "limit_data", Stream: pickStream(), Attributes: map[string]any{"bytes": 1 + rng.IntN(8000)}})
		},
		func() (string, func()) { return "refused", chaos.refuse() },
	}

	start := time.Now()
	var samples []soakSample
	rounds := 0
	kinds := map[string]int{}
	sample := func() {
		sm := takeSoakSample(t, time.Since(start).Round(time.Second), s.sim.URL(), chaos.url)
		sm.rounds = rounds
		sm.sioRequests = s.sim.Requests("GET /socket.io/")
		sm.recoveries = s.sum("bragerone_recovery_actions_total")
		samples = append(samples, sm)
	}
	sample()
	nextSample := start.Add(*soakInterval)
	for time.Since(start) < *soak {
		rounds++
		var offs []func()
		var names []string
		for range 1 + rng.IntN(2) {
			name, off := faults[rng.IntN(len(faults))]()
			if slices.Contains(names, name) {
				off()
				continue
			}
			names = append(names, name)
			offs = append(offs, off)
			kinds[name]++
		}
		// Holding a fault is the schedule, not a wait for a condition:
		// from well inside the hysteresis to several ping timeouts.
		time.Sleep(time.Duration(ms(tcpHysteresis/4, 4*tcpPingTimeout)) * time.Millisecond)
		for _, off := range offs {
			off()
		}
		chaos.clear()
		time.Sleep(time.Duration(ms(0, tcpHysteresis)) * time.Millisecond)
		if time.Now().After(nextSample) {
			sample()
			nextSample = nextSample.Add(*soakInterval)
		}
	}

	endDrift()
	chaos.clear()
	churned := time.Since(start)
	recoveredIn := soakRecover(t, s, func() { endDrift = startDrift(s.sim) })
	endDrift()
	s.eventuallyWithin("the proxy to deliver what the partitions held", recoveryDeadline, chaos.link.empty)
	sample()

	t.Logf("TCP soak: seed %d, %v of churn, %d rounds, recovered in %v after the churn ended", *soakSeed, churned.Round(time.Second), rounds, recoveredIn.Round(time.Millisecond))
	t.Logf("fault rounds by kind: %v", kinds)
	t.Logf("outages published: %g, blinks: %g, sessions: %d; recovery actions: %s",
		s.sum("bragerone_session_outages_total"), s.sum("bragerone_session_blinks_total"), len(s.sim.Sessions()), soakRecoveryCounts(s))
	t.Logf("\n%s", soakTable(samples))
	if len(samples) < 6 {
		t.Logf("only %d samples: too few to judge growth (run longer or sample more often)", len(samples))
		return
	}
	checkNoGrowth(t, samples, s, chaos)
	if *soakStacks {
		t.Logf("goroutines at the end, by where they wait and who started them:\n%s", goroutineSummary())
		t.Logf("open files at the end:\n%s", openFiles(s.sim.URL(), chaos.url))
	}
}
