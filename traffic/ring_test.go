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
