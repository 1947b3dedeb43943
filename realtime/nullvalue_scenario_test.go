package realtime_test

import (
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// A register the cloud reports as null stops being exported, whether the
// null is pushed live or read in a prime (the store's null rule); the entry
// keeps its meta, and a value set later is exported again.
func TestScenarioNullValueLeavesTheSeries(t *testing.T) {
	nulled := func(s *scenario, devid, key string, wantSource store.Source) {
		s.t.Helper()
		s.eventually(devid+" "+key+" no longer exported", func() bool {
			_, ok := s.exported(devid, key)
			return !ok
		})
		k, _ := store.ParseKey(key)
		e, ok := s.store.Get(devid, k)
		if !ok || e.HasValue || e.Value != nil || e.Source != wantSource {
			s.t.Fatalf("stored entry after the null = %+v (present %v), want no value from %v", e, ok, wantSource)
		}
		if _, ok := e.Meta["updatedAt"]; !ok {
			s.t.Fatalf("the null took the entry's meta with it: %+v", e)
		}
		s.nothingLost()
	}

	t.Run("live", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{})
		s.waitUp()
		d := s.sim.Devids()[0]
		key := s.vKey(d, 0)
		s.nudgeLive(d, key, 2150)
		s.sim.SetParam(d, key, nil) // pushed as {"value":null,"updatedAt":…}
		nulled(s, d, key, store.SourceLive)
		s.nudgeLive(d, key, 2160)
		s.exportedIs(d, key, 2160)
	})

	t.Run("prime", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{})
		s.waitUp()
		d := s.sim.Devids()[1]
		key := s.vKey(d, 0)
		s.nudgeLive(d, key, 2150)
		// The null reaches the exporter only through the prime that event 22 asks for.
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, Devid: d, Count: 1})
		s.sim.SetParam(d, key, nil)
		if len(s.sim.Faults()) != 0 {
			t.Fatalf("the mute fault was not consumed: %+v", s.sim.Faults())
		}
		primes := s.sim.Requests("POST /v1/modules/parameters")
		s.sim.EmitMemoryUpdated(d)
		nulled(s, d, key, store.SourcePrime)
		if s.sim.Requests("POST /v1/modules/parameters") <= primes {
			t.Fatal("the null came without a prime")
		}
		s.nudgeLive(d, key, 2160)
		s.exportedIs(d, key, 2160)
	})
}
