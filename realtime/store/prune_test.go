package store

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/wire"
)

// keysOf lists a module's stored keys ("P4.v1") in key order.
func keysOf(s *Store, devid string) []string {
	var out []string
	for _, e := range s.Entries(devid) {
		out = append(out, e.Key.String())
	}
	return out
}

// exported lists what a scrape would see, in label order.
func exported(s *Store) []string {
	var out []string
	s.ForEachParamInLabelOrder(func(devid, pool, param string, _ float64, _ bool) {
		out = append(out, devid+"/"+pool+"."+param)
	})
	return out
}

func TestPrimeRemovesKeysTheCloudNoLongerReports(t *testing.T) {
	s := New()
	s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{
		upd("D1", "P4", 'v', 1, 1.0), upd("D1", "P4", 'v', 2, "text"), upd("D1", "P4", 'v', 3, 3.0), upd("D1", "P5", 's', 1, 1.0),
	}, t0)
	s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.5), upd("D1", "P5", 's', 1, 0.0)}, t0.Add(time.Minute))

	if got := keysOf(s, "D1"); !slices.Equal(got, []string{"P4.v1", "P5.s1"}) {
		t.Fatalf("stored keys = %v, want P4.v1 P5.s1 (P4.v2 and P4.v3 left the prime)", got)
	}
	if _, ok := s.Get("D1", Key{"P4", 'v', 3}); ok {
		t.Fatal("P4.v3 is still readable")
	}
	if st := s.Stats()["D1"]; st.Params != 2 || st.NonNumeric != 0 {
		t.Fatalf("stats = %+v, want 2 params and no non-numeric one (the removed text value)", st)
	}
	if got := exported(s); !slices.Equal(got, []string{"D1/P5.s1", "D1/P4.v1"}) {
		t.Fatalf("exported = %v", got)
	}
}

// The ordering rule still holds: what was written after the prime was
// requested is newer than the prime, including a key the prime does not know.
func TestPrimeKeepsKeysWrittenAfterItWasRequested(t *testing.T) {
	s := New()
	s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0), upd("D1", "P4", 'v', 2, 2.0), upd("D1", "P4", 'v', 3, 3.0)}, t0)
	mark := s.BeginPrime()
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 2, 20.0), upd("D1", "P4", 'v', 9, 9.0)}, SourceLive, t0.Add(time.Second))
	metaOnly := wire.ParamUpdate{Devid: "D1", Pool: "P6", Chan: 'u', Idx: 4, Meta: map[string]any{"storable": true}}
	s.ApplyLive([]wire.ParamUpdate{metaOnly}, SourceLive, t0.Add(time.Second))
	s.ApplyPrime(mark, []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0)}, t0.Add(2*time.Second))

	if got := keysOf(s, "D1"); !slices.Equal(got, []string{"P4.v1", "P4.v2", "P4.v9", "P6.u4"}) {
		t.Fatalf("stored keys = %v: P4.v3 must go, the keys written after the request must stay", got)
	}
	if e, _ := s.Get("D1", Key{"P4", 'v', 2}); e.Value != 20.0 {
		t.Fatalf("P4.v2 = %v, want the live 20", e.Value)
	}
	// The next prime that lacks them is newer than those writes: now they go.
	s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0)}, t0.Add(3*time.Second))
	if got := keysOf(s, "D1"); !slices.Equal(got, []string{"P4.v1"}) {
		t.Fatalf("stored keys = %v, want only P4.v1", got)
	}
}

// A prime of one module (event 22) says nothing about the others, and an
// older prime answered late removes nothing a later one wrote.
func TestPrimeRemovesOnlyInTheModulesItCarries(t *testing.T) {
	s := New()
	s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{
		upd("D1", "P4", 'v', 1, 1.0), upd("D1", "P4", 'v', 2, 2.0), upd("D2", "P4", 'v', 1, 1.0), upd("D2", "P4", 'v', 2, 2.0),
	}, t0)
	older := s.BeginPrime()
	newer := s.BeginPrime()
	s.ApplyPrime(newer, []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0), upd("D1", "P4", 'v', 5, 5.0)}, t0.Add(time.Second))
	s.ApplyPrime(older, []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0)}, t0.Add(2*time.Second))
	if got := keysOf(s, "D1"); !slices.Equal(got, []string{"P4.v1", "P4.v5"}) {
		t.Fatalf("D1 keys = %v, want P4.v1 and the later prime's P4.v5", got)
	}
	if got := keysOf(s, "D2"); !slices.Equal(got, []string{"P4.v1", "P4.v2"}) {
		t.Fatalf("D2 keys = %v: a prime without D2 removed some", got)
	}
	// An empty answer (204) names no module: nothing is removed.
	s.ApplyPrime(s.BeginPrime(), nil, t0.Add(3*time.Second))
	if len(keysOf(s, "D1")) != 2 || len(keysOf(s, "D2")) != 2 {
		t.Fatalf("an empty prime removed keys: D1=%v D2=%v", keysOf(s, "D1"), keysOf(s, "D2"))
	}
}

// Keys whose index does not pack live in a second map; they are removed
// the same way.
func TestPrimeRemovesUnpackedKeys(t *testing.T) {
	s := New()
	huge := 1 << 41
	s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{upd("D1", "P4", 'v', huge, 1.0), upd("D1", "P4", 'v', 1, 1.0)}, t0)
	s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0)}, t0)
	if _, ok := s.Get("D1", Key{"P4", 'v', huge}); ok {
		t.Fatal("an unpacked key survived a prime that lacks it")
	}
	if st := s.Stats()["D1"]; st.Params != 1 {
		t.Fatalf("params = %d, want 1", st.Params)
	}
}

func TestStoreRefusesKeysOverTheBound(t *testing.T) {
	s := NewLimited(3)
	var burst []wire.ParamUpdate
	for i := range 5 {
		burst = append(burst, upd("D1", "P4", 'v', i, float64(i)))
	}
	if n := s.ApplyLive(burst, SourceLive, t0); n != 3 {
		t.Fatalf("applied = %d, want 3", n)
	}
	st := s.Stats()["D1"]
	if st.Params != 3 || st.Refused != 2 {
		t.Fatalf("stats = %+v, want 3 params and 2 refused", st)
	}
	// Keys already held are still updated at the bound.
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 0, 42.0)}, SourceLive, t0)
	if e, _ := s.Get("D1", Key{"P4", 'v', 0}); e.Value != 42.0 {
		t.Fatalf("P4.v0 = %v, want 42", e.Value)
	}
	// A prime removes what it lacks before it adds, so the real keys fit.
	s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{upd("D1", "P5", 'v', 1, 1.0), upd("D1", "P5", 'v', 2, 2.0)}, t0)
	if got := keysOf(s, "D1"); !slices.Equal(got, []string{"P5.v1", "P5.v2"}) {
		t.Fatalf("keys after the prime = %v", got)
	}
	s.CountRefused("D1", 7)
	if st := s.Stats()["D1"]; st.Refused != 9 {
		t.Fatalf("refused = %d, want 9 (2 by the store, 7 cut by a writer)", st.Refused)
	}
	s.Retain(nil)
	if len(s.Stats()) != 0 {
		t.Fatalf("stats after the module left: %+v", s.Stats())
	}
}

func TestNewStoreIsBounded(t *testing.T) {
	if got := New().MaxKeysPerModule(); got != DefaultMaxKeysPerModule || got <= 0 {
		t.Fatalf("New().MaxKeysPerModule() = %d, want DefaultMaxKeysPerModule (%d)", got, DefaultMaxKeysPerModule)
	}
}

// Removal happens under the write lock while scrapes walk the store: no
// race, and a scrape sees either the old or the new set of a module.
func TestPruneWhileScraping(t *testing.T) {
	s := New()
	full := make([]wire.ParamUpdate, 0, 200)
	for i := range 200 {
		full = append(full, upd("D1", fmt.Sprintf("P%d", 4+i%3), 'v', i, float64(i)))
	}
	half := full[:100]
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := len(exported(s))
			if n != 0 && n != 100 && n != 200 {
				t.Errorf("a scrape saw %d series, want 0, 100 or 200", n)
				return
			}
		}
	}()
	for i := range 200 {
		batch := full
		if i%2 == 1 {
			batch = half
		}
		s.ApplyPrime(s.BeginPrime(), batch, t0)
	}
	close(stop)
	wg.Wait()
}

// A scrape's callback runs without the store's lock: the gateway writes
// while a slow client holds up the scrape, and the callback may read the
// store. Each module is still seen whole, as it was between two writes.
func TestWalkHoldsNoLockWhileCallingBack(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0), upd("D1", "P4", 'v', 2, 2.0), upd("D2", "P4", 'v', 1, 5.0)}, SourceLive, t0)
	for _, walk := range []func(func(devid, pool, param string, value float64, numeric bool)){s.ForEachParam, s.ForEachParamInLabelOrder} {
		var seen []string
		first := true
		walk(func(devid, pool, param string, v float64, _ bool) {
			seen = append(seen, fmt.Sprintf("%s/%s.%s=%v", devid, pool, param, v))
			if !first {
				return
			}
			first = false
			done := make(chan int)
			go func() {
				done <- s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 2, 20.0), upd("D2", "P4", 'v', 1, 50.0)}, SourceLive, t0)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("a write waited for the scrape's callback")
			}
			if e, ok := s.Get("D1", Key{"P4", 'v', 2}); !ok || e.Value != 20.0 {
				t.Fatalf("read back in the callback: %+v", e)
			}
		})
		// D1 was copied before the write, D2 after it.
		if want := []string{"D1/P4.v1=1", "D1/P4.v2=2", "D2/P4.v1=50"}; !slices.Equal(seen, want) {
			t.Fatalf("walk saw %v, want %v", seen, want)
		}
		s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 2, 2.0), upd("D2", "P4", 'v', 1, 5.0)}, SourceLive, t0)
	}
}
