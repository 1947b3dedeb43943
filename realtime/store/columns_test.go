package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/wire"
)

// storeOps is what the differential test drives: the Store and the
// reference (the store as it was, a map of entry structs) alike.
type storeOps interface {
	BeginPrime() PrimeMark
	ApplyLive([]wire.ParamUpdate, Source, time.Time) int
	ApplyPrime(PrimeMark, []wire.ParamUpdate, time.Time) int
	Retain([]string)
	Forget([]string)
	CountRefused(string, int)
	Get(string, Key) (Entry, bool)
	Entries(string) []Entry
	Devids() []string
	Stats() map[string]ModuleStats
	LastUpdate() (time.Time, time.Time)
	ForEachParam(func(devid, pool, param string, value float64, numeric bool))
	ForEachParamInLabelOrder(func(devid, pool, param string, value float64, numeric bool))
}

// opGen makes random but reproducible store traffic: live deltas, primes
// (answered in or out of order, whole or for some modules), meta-only
// frames, nulls, values of every kind, keys that do not pack, pools that
// arrive out of order, modules leaving.
type opGen struct {
	r       *rand.Rand
	devids  []string
	pools   []string
	idxs    []int
	metaKey func() string
	now     time.Time
}

func (g *opGen) value() any {
	switch g.r.IntN(12) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2:
		return fmt.Sprintf("%d.5", g.r.IntN(100))
	case 3:
		return []string{"ON", "", "CELSIUS", "a much longer text value than the others"}[g.r.IntN(4)]
	case 4:
		return map[string]any{"a": float64(g.r.IntN(3))}
	case 5:
		return []any{1.0, "x"}
	case 6:
		return g.r.IntN(50)
	case 7:
		return int64(g.r.IntN(50))
	}
	return float64(g.r.IntN(1000)) / 4
}

func (g *opGen) update(devid string) wire.ParamUpdate {
	u := wire.ParamUpdate{
		Devid: devid, Pool: g.pools[g.r.IntN(len(g.pools))],
		Chan: "vsun"[g.r.IntN(4)], Idx: g.idxs[g.r.IntN(len(g.idxs))],
	}
	if g.r.IntN(6) != 0 {
		u.Value, u.HasValue = g.value(), true
	}
	if n := g.r.IntN(4); n > 0 || !u.HasValue && g.r.IntN(2) == 0 {
		u.Meta = map[string]any{}
		for range n {
			u.Meta[g.metaKey()] = g.value()
		}
	}
	return u
}

// batch is a payload's updates: grouped and sorted as decoded, or in any
// order with repeats (callers of the API may pass anything).
func (g *opGen) batch(devids []string) []wire.ParamUpdate {
	var out []wire.ParamUpdate
	for _, d := range devids {
		for range g.r.IntN(12) {
			out = append(out, g.update(d))
		}
	}
	switch g.r.IntN(3) {
	case 0:
		slices.SortStableFunc(out, func(a, b wire.ParamUpdate) int {
			if a.Devid != b.Devid {
				if a.Devid < b.Devid {
					return -1
				}
				return 1
			}
			return compareKeys(Key{a.Pool, a.Chan, a.Idx}, Key{b.Pool, b.Chan, b.Idx})
		})
	case 1:
		g.r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

func (g *opGen) someDevids() []string {
	var out []string
	for _, d := range g.devids {
		if g.r.IntN(2) == 0 {
			out = append(out, d)
		}
	}
	return out
}

// TestColumnsMatchReference drives the store and the reference with the
// same random traffic and compares everything a reader can see after every
// step: the columns keep every rule of the store (the ordering rule, a
// prime as a module's whole truth, the key bound, the null rule, meta
// merging, both orders) exactly as the entry structs did.
func TestColumnsMatchReference(t *testing.T) {
	configs := []struct {
		name    string
		maxKeys int
		pools   []string
		idxs    []int
		metaKey func(r *rand.Rand) string
	}{
		{"plain", 0, []string{"P4", "P5", "P6"}, []int{0, 1, 2, 3, 5, 8, 10, 13, 21, 40}, nil},
		{"bounded", 12, []string{"P4", "P5"}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, nil},
		{"odd keys and pools out of order", 0, []string{"P10", "P4", "P1", "P99", "Q", "P5"},
			[]int{0, 7, -1, 1 << 39, 1<<39 - 1, -(1 << 39), -(1 << 39) - 1, 1 << 40, 1<<41 + 3}, nil},
		{"many meta keys", 40, []string{"P4", "P6"}, []int{1, 2, 3, 4},
			func(r *rand.Rand) string { return fmt.Sprintf("k%d", r.IntN(400)) }},
	}
	for _, cfg := range configs {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/seed=%d", cfg.name, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 23))
				g := &opGen{r: r, devids: []string{"D1", "D2", "D3"}, pools: cfg.pools, idxs: cfg.idxs,
					now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
				g.metaKey = func() string { return []string{"storable", "updatedAt", "expire", "average"}[r.IntN(4)] }
				if cfg.metaKey != nil {
					g.metaKey = func() string { return cfg.metaKey(r) }
				}
				got, want := storeOps(NewLimited(cfg.maxKeys)), storeOps(newRefStore(cfg.maxKeys))
				var marks []PrimeMark
				for step := range 250 {
					g.now = g.now.Add(time.Duration(r.IntN(3)) * time.Second)
					var what string
					switch op := r.IntN(20); {
					case op < 8:
						b, src := g.batch(g.someDevids()), Source(r.IntN(3))
						what = fmt.Sprintf("ApplyLive(%v, %v)", b, src)
						if n, w := got.ApplyLive(b, src, g.now), want.ApplyLive(b, src, g.now); n != w {
							t.Fatalf("step %d: %s = %d, reference %d", step, what, n, w)
						}
					case op < 11:
						m, w := got.BeginPrime(), want.BeginPrime()
						if m != w {
							t.Fatalf("step %d: BeginPrime = %d, reference %d", step, m, w)
						}
						marks = append(marks, m)
						what = "BeginPrime"
					case op < 17 && len(marks) > 0:
						i := r.IntN(len(marks))
						m := marks[i]
						marks = slices.Delete(marks, i, i+1)
						b := g.batch(g.someDevids())
						what = fmt.Sprintf("ApplyPrime(%d, %v)", m, b)
						if n, w := got.ApplyPrime(m, b, g.now), want.ApplyPrime(m, b, g.now); n != w {
							t.Fatalf("step %d: %s = %d, reference %d", step, what, n, w)
						}
					case op == 17:
						d := g.someDevids()
						what = fmt.Sprintf("Retain(%v)", d)
						got.Retain(d)
						want.Retain(d)
					case op == 18:
						d := g.someDevids()
						what = fmt.Sprintf("Forget(%v)", d)
						got.Forget(d)
						want.Forget(d)
					default:
						d, n := g.devids[r.IntN(len(g.devids))], r.IntN(3)
						what = fmt.Sprintf("CountRefused(%s, %d)", d, n)
						got.CountRefused(d, n)
						want.CountRefused(d, n)
					}
					if diff := compareStores(got, want, g); diff != "" {
						t.Fatalf("step %d, after %s:\n%s", step, what, diff)
					}
				}
			})
		}
	}
}

// compareStores reports the first difference a reader could see.
func compareStores(got, want storeOps, g *opGen) string {
	if a, b := got.Devids(), want.Devids(); !slices.Equal(a, b) {
		return fmt.Sprintf("Devids = %v, reference %v", a, b)
	}
	if a, b := got.Stats(), want.Stats(); !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("Stats = %+v\nreference %+v", a, b)
	}
	ga, gl := got.LastUpdate()
	wa, wl := want.LastUpdate()
	if !ga.Equal(wa) || !gl.Equal(wl) {
		return fmt.Sprintf("LastUpdate = %v %v, reference %v %v", ga, gl, wa, wl)
	}
	for _, d := range got.Devids() {
		a, b := got.Entries(d), want.Entries(d)
		if len(a) != len(b) {
			return fmt.Sprintf("Entries(%s): %d entries, reference %d:\n%+v\n%+v", d, len(a), len(b), a, b)
		}
		for i := range a {
			if diff := compareEntries(a[i], b[i]); diff != "" {
				return fmt.Sprintf("Entries(%s)[%d]: %s", d, i, diff)
			}
			e, ok := got.Get(d, a[i].Key)
			if !ok {
				return fmt.Sprintf("Get(%s, %v) found nothing", d, a[i].Key)
			}
			if diff := compareEntries(e, b[i]); diff != "" {
				return fmt.Sprintf("Get(%s, %v): %s", d, a[i].Key, diff)
			}
		}
		for range 4 {
			k := Key{g.pools[g.r.IntN(len(g.pools))], "vsun"[g.r.IntN(4)], g.idxs[g.r.IntN(len(g.idxs))]}
			a, aok := got.Get(d, k)
			b, bok := want.Get(d, k)
			if aok != bok {
				return fmt.Sprintf("Get(%s, %v) found %v, reference %v", d, k, aok, bok)
			}
			if diff := compareEntries(a, b); diff != "" {
				return fmt.Sprintf("Get(%s, %v): %s", d, k, diff)
			}
		}
	}
	walk := func(s storeOps, byLabel bool) []string {
		var out []string
		fn := func(devid, pool, param string, v float64, numeric bool) {
			out = append(out, fmt.Sprintf("%s/%s.%s=%v/%v", devid, pool, param, v, numeric))
		}
		if byLabel {
			s.ForEachParamInLabelOrder(fn)
		} else {
			s.ForEachParam(fn)
		}
		return out
	}
	for _, byLabel := range []bool{false, true} {
		if a, b := walk(got, byLabel), walk(want, byLabel); !slices.Equal(a, b) {
			return fmt.Sprintf("walk (label order %v) = %v\nreference %v", byLabel, a, b)
		}
	}
	return ""
}

func compareEntries(a, b Entry) string {
	at, bt := a.UpdatedAt, b.UpdatedAt
	a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	if !at.Equal(bt) || !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("%+v (at %v)\nreference %+v (at %v)", a, at, b, bt)
	}
	return ""
}

// A module whose keys, pools and text keep changing (a hostile or broken
// cloud inventing keys in every prime) must not grow the store's side
// tables: label names, pool names, keys that do not pack, the arena of meta
// keys and text, and the columns' spare room are all reclaimed. The
// reference sees the same traffic and every reader's view must match it.
func TestChurnKeepsTablesBounded(t *testing.T) {
	s, ref := New(), newRefStore(DefaultMaxKeysPerModule)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	const perRound, rounds, last = 300, 60, 30
	for round := range rounds + 1 {
		n := perRound
		if round == rounds {
			n = last // the module shrinks
		}
		var ups []wire.ParamUpdate
		for i := range n {
			u := wire.ParamUpdate{Devid: "D1", Pool: fmt.Sprintf("P%d", 4+round*3+i%3), Chan: 'v', Idx: round*perRound + i,
				HasValue: true, Value: float64(i)}
			switch i % 5 {
			case 1:
				u.Value = strings.Repeat("x", (round+i)%37)
			case 2:
				u.Meta = map[string]any{"updatedAt": float64(round), "text": strings.Repeat("y", round%23), "obj": []any{round}}
			case 3:
				u.Idx = 1<<41 + round*perRound + i // does not pack
			}
			ups = append(ups, u)
		}
		// Live traffic between primes rewrites meta of other lengths.
		m, w := s.BeginPrime(), ref.BeginPrime()
		if m != w {
			t.Fatalf("marks %d and %d", m, w)
		}
		if a, b := s.ApplyPrime(m, ups, now), ref.ApplyPrime(w, ups, now); a != b {
			t.Fatalf("round %d: prime applied %d, reference %d", round, a, b)
		}
		for i := 2; i < n; i += 5 {
			live := []wire.ParamUpdate{{Devid: "D1", Pool: ups[i].Pool, Chan: 'v', Idx: ups[i].Idx,
				Meta: map[string]any{"text": strings.Repeat("z", (round*7+i)%29)}}}
			s.ApplyLive(live, SourceLive, now)
			ref.ApplyLive(live, SourceLive, now)
		}
	}
	g := &opGen{r: rand.New(rand.NewPCG(1, 2)), pools: []string{"P4"}, idxs: []int{0}}
	if diff := compareStores(s, ref, g); diff != "" {
		t.Fatal(diff)
	}
	m := s.modules["D1"]
	live := len(m.keys)
	if live != last {
		t.Fatalf("%d keys stored, want the last prime's %d", live, last)
	}
	liveArena := 0
	liveOthers := 0
	for _, off := range m.extra {
		liveArena += m.recordLen(off)
		for _, f := range decodeRecord(m.arena, off, nil) {
			if f.kind == vOther {
				liveOthers++
			}
		}
	}
	for _, c := range []struct {
		what        string
		size, limit int
	}{
		{"label names", len(s.names.strs), 4*live + 1024},
		{"pool names", len(m.pools), 2*3 + 16},
		{"keys that do not pack", len(m.odd), 2*live/5 + 16},
		{"arena bytes", len(m.arena), 2*liveArena + 4096},
		{"others", len(m.others), 2*liveOthers + 16},
		{"column capacity", cap(m.keys), 2*live + 64},
		{"label order capacity", cap(m.byLabel), 2*live + 64},
	} {
		if c.size > c.limit {
			t.Errorf("%s: %d, more than %d for %d live keys", c.what, c.size, c.limit, live)
		}
	}
	s.Forget([]string{"D1"})
	s.ApplyLive([]wire.ParamUpdate{upd("D2", "P4", 'v', 1, 1.0)}, SourceLive, now)
	s.Forget([]string{"D2"})
	if len(s.names.strs) > 1024 {
		t.Errorf("label names after every module left: %d", len(s.names.strs))
	}
}
