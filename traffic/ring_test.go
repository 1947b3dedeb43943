package traffic

import (
	"strings"
	"testing"
)

// The ring keeps the newest records within its bound, whole: a record
// larger than the bound is dropped and counted, older ones leave for newer.
func TestRingBoundWholeRecords(t *testing.T) {
	body := func(n int) Record { return Record{Kind: KindREST, BodyText: strings.Repeat("x", n)} }
	r := body(1000)
	one := r.Size()
	g := NewRing(3 * one)
	for range 5 {
		if !g.Add(body(1000)) {
			t.Fatal("a record within the bound was not kept")
		}
	}
	st := g.Stats()
	if st.Records != 3 || st.Used != 3*one || st.Evicted != 2 {
		t.Fatalf("stats %+v, want 3 records using %d bytes, 2 evicted", st, 3*one)
	}
	recs := g.Records()
	if recs[0].Seq != 3 || recs[2].Seq != 5 {
		t.Errorf("kept seqs %d..%d, want the newest, 3..5", recs[0].Seq, recs[2].Seq)
	}
	if g.Add(body(4 * one)) {
		t.Fatal("a record larger than the bound was kept")
	}
	if st := g.Stats(); st.Dropped != 1 || st.Records != 3 {
		t.Errorf("after a too large record: %+v, want it dropped and the others kept", st)
	}
	var off *Ring
	if off.Add(body(1)) || NewRing(0).Add(body(1)) {
		t.Error("a ring that is off kept a record")
	}
}

// FuzzRingBound floods a ring with events of fuzzed sizes: its use never
// passes its bound, every record it keeps is whole, the newest record that
// fits is always kept, and kept + dropped + evicted accounts for them all.
func FuzzRingBound(f *testing.F) {
	f.Add(uint16(4096), []byte{1, 200, 17, 255, 3, 90})
	f.Add(uint16(300), []byte{255, 255, 0, 1})
	f.Add(uint16(0), []byte{5})
	f.Fuzz(func(t *testing.T, limit uint16, sizes []byte) {
		g := NewRing(int(limit) * 4)
		for i, s := range sizes {
			n := int(s) * int(s) / 8 // 0 to 8 KB
			r := Record{Kind: KindEvent, Event: "app:modules:parameters:change", Payload: []byte(strings.Repeat("7", n))}
			kept := g.Add(r)
			st := g.Stats()
			if st.Used > st.Limit {
				t.Fatalf("after %d records: %d bytes used, bound %d", i+1, st.Used, st.Limit)
			}
			if fits := r.Size() <= st.Limit; kept != fits {
				t.Fatalf("record of %d bytes, bound %d: kept %v", r.Size(), st.Limit, kept)
			}
			if uint64(st.Records)+st.Dropped+st.Evicted != uint64(i+1) {
				t.Fatalf("%+v does not account for %d records", st, i+1)
			}
		}
		used := 0
		for _, r := range g.Records() {
			if r.Kind != KindEvent || len(r.Payload) > 0 && r.Payload[len(r.Payload)-1] != '7' {
				t.Fatal("a kept record is not whole")
			}
			used += r.Size()
		}
		if st := g.Stats(); used != st.Used {
			t.Fatalf("records sum to %d bytes, the ring says %d", used, st.Used)
		}
	})
}

// A flood of events far larger than the bound keeps the ring within it.
func TestRingFloodOfEvents(t *testing.T) {
	g := NewRing(64 << 10)
	for i := range 100_000 {
		n := (i * 7919) % 3000
		g.Add(Record{Kind: KindEvent, Payload: []byte(strings.Repeat("1", n))})
	}
	st := g.Stats()
	if st.Used > 64<<10 || st.Records == 0 || st.Dropped != 0 {
		t.Fatalf("after the flood: %+v", st)
	}
	g.SetLimit(1 << 10)
	if st := g.Stats(); st.Used > 1<<10 {
		t.Fatalf("after shrinking: %+v", st)
	}
}

// The log ring keeps the newest whole lines within its bound.
func TestLogRing(t *testing.T) {
	l := NewLogRing(100)
	for i := range 10 {
		fmt := strings.Repeat(string(rune('a'+i)), 30) + "\n"
		l.Write([]byte(fmt))
	}
	l.Write([]byte(strings.Repeat("z", 101)))
	got := string(l.Lines())
	want := strings.Repeat("h", 30) + "\n" + strings.Repeat("i", 30) + "\n" + strings.Repeat("j", 30) + "\n"
	if got != want || l.Dropped() != 1 {
		t.Errorf("lines %q (dropped %d), want %q and 1 dropped", got, l.Dropped(), want)
	}
}
