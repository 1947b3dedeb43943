package store

import (
	"fmt"
	"testing"

	"github.com/bragerone/bragerone_exporter/wire"
)

// The exposition order sorts by param label, then pool, as byte strings:
// "s40" < "u1" < "v10" < "v2", and "P10" < "P4". Keys added after a scrape
// take their place at the next one.
func TestForEachParamInLabelOrder(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{
		upd("D2", "P5", 'v', 1, 1.0), upd("D1", "P10", 'v', 1, 1.0), upd("D1", "P4", 'v', 10, 1.0),
		upd("D1", "P4", 'v', 2, 1.0), upd("D1", "P4", 's', 40, 1.0), upd("D1", "P4", 'u', 1, "x"),
		upd("D1", "P4", 'v', 1, 1.0),
		{Devid: "D1", Pool: "P4", Chan: 'n', Idx: 1, Meta: map[string]any{"storable": true}}, // no value: not visited
	}, SourceLive, t0)
	collect := func() []string {
		var got []string
		s.ForEachParamInLabelOrder(func(devid, pool, param string, _ float64, numeric bool) {
			got = append(got, fmt.Sprintf("%s/%s.%s/%v", devid, pool, param, numeric))
		})
		return got
	}
	want := []string{"D1/P4.s40/true", "D1/P4.u1/false", "D1/P10.v1/true", "D1/P4.v1/true", "D1/P4.v10/true", "D1/P4.v2/true", "D2/P5.v1/true"}
	if got := collect(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order = %v\nwant    %v", got, want)
	}

	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'a', 7, 2.0), upd("D1", "P5", 's', 40, 3.0)}, SourceLive, t0)
	want = append([]string{"D1/P4.a7/true", "D1/P4.s40/true", "D1/P5.s40/true"}, want[1:]...)
	if got := collect(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after new keys, order = %v\nwant    %v", got, want)
	}

	// Both orders visit the same parameters with the same values.
	seen := map[string]float64{}
	s.ForEachParam(func(devid, pool, param string, v float64, _ bool) { seen[devid+"/"+pool+"."+param] = v })
	n := 0
	s.ForEachParamInLabelOrder(func(devid, pool, param string, v float64, _ bool) {
		n++
		if w, ok := seen[devid+"/"+pool+"."+param]; !ok || w != v {
			t.Errorf("%s/%s.%s = %v; ForEachParam has %v (present %v)", devid, pool, param, v, w, ok)
		}
	})
	if n != len(seen) {
		t.Fatalf("label order visited %d, key order %d", n, len(seen))
	}
}

// Meta keys are merged per key (a later frame's value replaces the earlier
// one) and readers get a copy they may change.
func TestMetaMergeReplacesKeysAndReadersGetCopies(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{{Devid: "D1", Pool: "P4", Chan: 'v', Idx: 1, HasValue: true, Value: 1.0,
		Meta: map[string]any{"storable": true, "updatedAt": 10.0}}}, SourceLive, t0)
	s.ApplyLive([]wire.ParamUpdate{{Devid: "D1", Pool: "P4", Chan: 'v', Idx: 1, HasValue: true, Value: 2.0,
		Meta: map[string]any{"updatedAt": 20.0, "expire": 5.0}}}, SourceLive, t0)
	e, ok := s.Get("D1", Key{"P4", 'v', 1})
	if !ok || len(e.Meta) != 3 || e.Meta["storable"] != true || e.Meta["updatedAt"] != 20.0 || e.Meta["expire"] != 5.0 {
		t.Fatalf("meta = %v", e.Meta)
	}
	e.Meta["updatedAt"] = 99.0
	delete(e.Meta, "storable")
	if again, _ := s.Get("D1", Key{"P4", 'v', 1}); again.Meta["updatedAt"] != 20.0 || again.Meta["storable"] != true {
		t.Fatalf("a reader's change reached the store: %v", again.Meta)
	}
	if es := s.Entries("D1"); len(es) != 1 || es[0].Meta["updatedAt"] != 20.0 || es[0].Value != 2.0 {
		t.Fatalf("entries = %+v", es)
	}
	if e, _ := s.Get("D1", Key{"P4", 'v', 1}); e.Meta == nil {
		t.Fatal("meta lost")
	}
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 2, 1.0)}, SourceLive, t0)
	if e, _ := s.Get("D1", Key{"P4", 'v', 2}); e.Meta != nil {
		t.Fatalf("an entry without meta reads meta %v", e.Meta)
	}
}

// Keys whose index does not fit the packed form (negative, or 2^40 and
// above) are stored and found like any other, and never collide with
// packed ones.
func TestUnpackableKeysAreStoredApart(t *testing.T) {
	s := New()
	keys := []Key{{"P4", 'v', 1}, {"P4", 'v', -1}, {"P4", 'v', 1 << 40}, {"P4", 'v', 1<<40 + 1}, {"P5", 'v', 1}, {"P4", 's', 1}}
	var ups []wire.ParamUpdate
	for i, k := range keys {
		ups = append(ups, upd("D1", k.Pool, k.Chan, k.Idx, float64(i)))
	}
	if n := s.ApplyLive(ups, SourceLive, t0); n != len(keys) {
		t.Fatalf("applied %d", n)
	}
	for i, k := range keys {
		if e, ok := s.Get("D1", k); !ok || e.Value != float64(i) || e.Key != k {
			t.Errorf("Get(%v) = %+v, %v", k, e, ok)
		}
	}
	if _, ok := s.Get("D1", Key{"P6", 'v', 1}); ok {
		t.Error("a key of an unknown pool was found")
	}
	if _, ok := s.Get("D1", Key{"P4", 'v', 2}); ok {
		t.Error("an absent key was found")
	}
	if st := s.Stats()["D1"]; st.Params != len(keys) {
		t.Fatalf("stats count %d params, want %d", st.Params, len(keys))
	}
	n := 0
	s.ForEachParam(func(string, string, string, float64, bool) { n++ })
	if n != len(keys) || len(s.Entries("D1")) != len(keys) {
		t.Fatalf("visited %d, entries %d, want %d", n, len(s.Entries("D1")), len(keys))
	}
}
