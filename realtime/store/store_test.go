package store

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/wire"
)

var t0 = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

func upd(devid, pool string, ch byte, idx int, v any) wire.ParamUpdate {
	return wire.ParamUpdate{Devid: devid, Pool: pool, Chan: ch, Idx: idx, Value: v, HasValue: true}
}

func TestLiveUpdateStoresValueSourceAndTime(t *testing.T) {
	s := New()
	n := s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 8, 21.5)}, SourceLive, t0)
	if n != 1 {
		t.Fatalf("applied = %d, want 1", n)
	}
	e, ok := s.Get("D1", Key{"P4", 'v', 8})
	if !ok || e.Value != 21.5 || !e.IsNumeric || e.Numeric != 21.5 || e.Source != SourceLive || !e.UpdatedAt.Equal(t0) {
		t.Fatalf("entry = %+v", e)
	}
	if e.Param != "v8" || e.Key.String() != "P4.v8" {
		t.Fatalf("names = %q %q", e.Param, e.Key.String())
	}
	anyT, live := s.LastUpdate()
	if !anyT.Equal(t0) || !live.Equal(t0) {
		t.Fatalf("last update = %v %v", anyT, live)
	}
}

func TestPrimeDoesNotCountAsLive(t *testing.T) {
	s := New()
	m := s.BeginPrime()
	s.ApplyPrime(m, []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0)}, t0)
	anyT, live := s.LastUpdate()
	if !anyT.Equal(t0) || !live.IsZero() {
		t.Fatalf("last any=%v live=%v; a prime must not stamp live traffic", anyT, live)
	}
	if st := s.Stats()["D1"]; !st.LastLive.IsZero() || !st.LastUpdate.Equal(t0) {
		t.Fatalf("module stats = %+v", st)
	}
}

// The rule of the realtime core: a prime response never overwrites a value
// that a live update wrote after the prime was requested.
func TestPrimeNeverOverwritesNewerLiveValue(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 1, 10.0)}, SourceLive, t0)
	mark := s.BeginPrime()
	// While the prime is in flight a live delta arrives.
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 1, 30.0)}, SourceLive, t0.Add(time.Second))
	// The prime answer carries the value as of its request, plus another key.
	s.ApplyPrime(mark, []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 20.0), upd("D1", "P4", 'v', 2, 5.0)}, t0.Add(2*time.Second))
	if e, _ := s.Get("D1", Key{"P4", 'v', 1}); e.Value != 30.0 || e.Source != SourceLive {
		t.Fatalf("P4.v1 = %v from %v, want the newer live 30", e.Value, e.Source)
	}
	if e, _ := s.Get("D1", Key{"P4", 'v', 2}); e.Value != 5.0 || e.Source != SourcePrime {
		t.Fatalf("P4.v2 = %v from %v, want the primed 5", e.Value, e.Source)
	}
}

func TestPrimeOverwritesOlderLiveValue(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 1, 10.0)}, SourceLive, t0)
	mark := s.BeginPrime()
	s.ApplyPrime(mark, []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 20.0)}, t0.Add(time.Second))
	if e, _ := s.Get("D1", Key{"P4", 'v', 1}); e.Value != 20.0 {
		t.Fatalf("P4.v1 = %v, want the prime's 20 (it was requested after the live write)", e.Value)
	}
}

func TestOlderPrimeDoesNotOverwriteLaterPrime(t *testing.T) {
	s := New()
	older := s.BeginPrime()
	newer := s.BeginPrime()
	s.ApplyPrime(newer, []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 2.0)}, t0)
	s.ApplyPrime(older, []wire.ParamUpdate{upd("D1", "P4", 'v', 1, 1.0)}, t0.Add(time.Second))
	if e, _ := s.Get("D1", Key{"P4", 'v', 1}); e.Value != 2.0 {
		t.Fatalf("P4.v1 = %v, want 2 from the later-requested prime", e.Value)
	}
}

func TestMetaOnlyFrameKeepsValueAndMergesMeta(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 1, 7.0)}, SourceLive, t0)
	metaOnly := wire.ParamUpdate{Devid: "D1", Pool: "P4", Chan: 'v', Idx: 1, Meta: map[string]any{"storable": true}}
	if n := s.ApplyLive([]wire.ParamUpdate{metaOnly}, SourceLive, t0.Add(time.Second)); n != 0 {
		t.Fatalf("a meta-only frame counted as %d value updates", n)
	}
	mark := s.BeginPrime()
	s.ApplyPrime(mark, []wire.ParamUpdate{{Devid: "D1", Pool: "P4", Chan: 'v', Idx: 1, Meta: map[string]any{"expire": 5.0}}}, t0.Add(2*time.Second))
	e, _ := s.Get("D1", Key{"P4", 'v', 1})
	if e.Value != 7.0 || !e.HasValue || e.Meta["storable"] != true || e.Meta["expire"] != 5.0 || !e.UpdatedAt.Equal(t0) {
		t.Fatalf("entry = %+v", e)
	}
}

// The null rule: an explicit null removes the value, in a live update as in
// a prime; the entry keeps its meta, stops being exported and counts as
// non-numeric.
func TestExplicitNullRemovesTheValue(t *testing.T) {
	null := func(meta map[string]any) wire.ParamUpdate {
		return wire.ParamUpdate{Devid: "D1", Pool: "P4", Chan: 'v', Idx: 5, HasValue: true, Value: nil, Meta: meta}
	}
	exported := func(s *Store) map[string]float64 {
		out := map[string]float64{}
		s.ForEachParam(func(_, pool, param string, v float64, numeric bool) {
			if numeric {
				out[pool+"."+param] = v
			}
		})
		return out
	}
	for _, tc := range []struct {
		name  string
		apply func(s *Store, u wire.ParamUpdate, now time.Time) int
	}{
		{"live", func(s *Store, u wire.ParamUpdate, now time.Time) int {
			return s.ApplyLive([]wire.ParamUpdate{u}, SourceLive, now)
		}},
		{"prime", func(s *Store, u wire.ParamUpdate, now time.Time) int {
			// The prime carries the module's other key too: it is the whole truth.
			return s.ApplyPrime(s.BeginPrime(), []wire.ParamUpdate{u, upd("D1", "P4", 'v', 6, 1.0)}, now)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 5, 21.5), upd("D1", "P4", 'v', 6, 1.0)}, SourceLive, t0)
			if got := exported(s); got["P4.v5"] != 21.5 {
				t.Fatalf("before: exported %v", got)
			}
			if n := tc.apply(s, null(map[string]any{"updatedAt": 1.0}), t0.Add(time.Second)); n == 0 {
				t.Errorf("the null write was not counted as a write")
			}
			e, ok := s.Get("D1", Key{"P4", 'v', 5})
			if !ok {
				t.Fatal("the null removed the entry; only its value should go")
			}
			if e.HasValue || e.Value != nil || e.IsNumeric || e.Meta["updatedAt"] != 1.0 || !e.UpdatedAt.Equal(t0.Add(time.Second)) {
				t.Fatalf("entry after null = %+v", e)
			}
			if got := exported(s); len(got) != 1 || got["P4.v6"] != 1.0 {
				t.Fatalf("after null: exported %v, want only P4.v6", got)
			}
			if st := s.Stats()["D1"]; st.Params != 2 || st.NonNumeric != 1 {
				t.Fatalf("stats = %+v, want 2 parameters, 1 of them non-numeric", st)
			}
			// A value comes back.
			s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 5, 22.0)}, SourceLive, t0.Add(2*time.Second))
			if got := exported(s); got["P4.v5"] != 22.0 {
				t.Fatalf("after a new value: exported %v", got)
			}
			if st := s.Stats()["D1"]; st.NonNumeric != 0 {
				t.Fatalf("stats = %+v, want no non-numeric parameter", st)
			}
		})
	}
}

// A null follows the ordering rule like any value: a prime requested before a
// live value does not remove it, and a live null written after a prime was
// requested is not undone by the prime's older number.
func TestExplicitNullFollowsTheOrderingRule(t *testing.T) {
	null := wire.ParamUpdate{Devid: "D1", Pool: "P4", Chan: 'v', Idx: 5, HasValue: true}
	s := New()
	mark := s.BeginPrime()
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 5, 30.0)}, SourceLive, t0)
	s.ApplyPrime(mark, []wire.ParamUpdate{null}, t0.Add(time.Second))
	if e, _ := s.Get("D1", Key{"P4", 'v', 5}); e.Value != 30.0 {
		t.Fatalf("an older prime's null removed a newer live value: %+v", e)
	}
	mark = s.BeginPrime()
	s.ApplyLive([]wire.ParamUpdate{null}, SourceLive, t0.Add(2*time.Second))
	s.ApplyPrime(mark, []wire.ParamUpdate{upd("D1", "P4", 'v', 5, 30.0)}, t0.Add(3*time.Second))
	if e, _ := s.Get("D1", Key{"P4", 'v', 5}); e.HasValue {
		t.Fatalf("an older prime's number undid a newer live null: %+v", e)
	}
}

func TestMetaOnlyFrameForUnknownKeyCreatesFamily(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{{Devid: "D1", Pool: "P6", Chan: 'u', Idx: 13, Meta: map[string]any{"storable": 1.0}}}, SourcePrime, t0)
	e, ok := s.Get("D1", Key{"P6", 'u', 13})
	if !ok || e.HasValue || e.Meta["storable"] != 1.0 {
		t.Fatalf("entry = %+v ok=%v", e, ok)
	}
	var seen int
	s.ForEachParam(func(string, string, string, float64, bool) { seen++ })
	if seen != 0 {
		t.Fatalf("a family without a value was exported %d times", seen)
	}
}

func TestNumericConversion(t *testing.T) {
	cases := []struct {
		v       any
		want    float64
		numeric bool
	}{
		{21.5, 21.5, true},
		{true, 1, true},
		{false, 0, true},
		{"42", 42, true},
		{"-3.5", -3.5, true},
		{"21.5", 21.5, true},
		{"1e5", 100000, true}, // one rule for text (wire.NumberText): exponents too
		{" 7 ", 7, true},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1e400", 0, false},
		{"0x1p-2", 0, false},
		{"ON", 0, false},
		{"", 0, false},
		{nil, 0, false},
		{map[string]any{"a": 1.0}, 0, false},
		{[]any{1.0}, 0, false},
	}
	for _, c := range cases {
		got, ok := numeric(c.v)
		if ok != c.numeric || got != c.want {
			t.Errorf("numeric(%#v) = %v,%v want %v,%v", c.v, got, ok, c.want, c.numeric)
		}
	}
}

func TestNonNumericCountFollowsValueChanges(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'u', 1, "CELSIUS"), upd("D1", "P4", 'v', 1, 1.0)}, SourceLive, t0)
	if st := s.Stats()["D1"]; st.Params != 2 || st.NonNumeric != 1 {
		t.Fatalf("stats = %+v", st)
	}
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'u', 1, 3.0)}, SourceLive, t0)
	if st := s.Stats()["D1"]; st.NonNumeric != 0 {
		t.Fatalf("after the string became a number: stats = %+v", st)
	}
	s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', 1, "ERR")}, SourceLive, t0)
	if st := s.Stats()["D1"]; st.NonNumeric != 1 {
		t.Fatalf("after the number became a string: stats = %+v", st)
	}
}

func TestForEachParamOrderAndRetain(t *testing.T) {
	s := New()
	s.ApplyLive([]wire.ParamUpdate{
		upd("D2", "P5", 'v', 1, 1.0), upd("D1", "P10", 'v', 1, 1.0), upd("D1", "P4", 'v', 10, 1.0),
		upd("D1", "P4", 'v', 2, 1.0), upd("D1", "P4", 's', 40, 1.0), upd("D1", "P4", 'u', 1, "x"),
	}, SourceLive, t0)
	var got []string
	s.ForEachParam(func(devid, pool, param string, _ float64, numeric bool) {
		got = append(got, fmt.Sprintf("%s/%s.%s/%v", devid, pool, param, numeric))
	})
	want := []string{"D1/P4.s40/true", "D1/P4.u1/false", "D1/P4.v2/true", "D1/P4.v10/true", "D1/P10.v1/true", "D2/P5.v1/true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order = %v\nwant    %v", got, want)
	}
	s.Retain([]string{"D2"})
	if d := s.Devids(); len(d) != 1 || d[0] != "D2" {
		t.Fatalf("after Retain: %v", d)
	}
}

func TestParseKey(t *testing.T) {
	for in, want := range map[string]Key{"P4.v8": {"P4", 'v', 8}, "P12.s40": {"P12", 's', 40}} {
		if k, ok := ParseKey(in); !ok || k != want {
			t.Errorf("ParseKey(%q) = %v,%v", in, k, ok)
		}
	}
	for _, bad := range []string{"", "P4", "P4.", "P4.v", "X4.v1", "P.v1", "P4.vX", "Px.v1"} {
		if _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

// Concurrent scrapes while the gateway writes: run under -race.
func TestConcurrentReadersAndWriter(t *testing.T) {
	s := New()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.ForEachParam(func(string, string, string, float64, bool) {})
				s.Stats()
				s.Entries("D1")
			}
		}()
	}
	for i := 0; i < 2000; i++ {
		s.ApplyLive([]wire.ParamUpdate{upd("D1", "P4", 'v', i%300, float64(i))}, SourceLive, t0)
	}
	close(stop)
	wg.Wait()
	if st := s.Stats()["D1"]; st.Params != 300 {
		t.Fatalf("params = %d, want 300", st.Params)
	}
}

func BenchmarkApplyLive(b *testing.B) {
	s := New()
	batch := make([]wire.ParamUpdate, 0, 800)
	for i := 0; i < 800; i++ {
		batch = append(batch, upd("D1", "P4", 'v', i, float64(i)))
	}
	s.ApplyLive(batch, SourceLive, t0)
	one := batch[:1]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one[0].Value = float64(i)
		s.ApplyLive(one, SourceLive, t0)
	}
}
