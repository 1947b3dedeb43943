package traffic

import "sync"

// Ring keeps the most recent Records within a byte bound (Record.Size). A
// record is kept whole or not at all: one larger than the bound is dropped
// and counted, never cut; older records leave to make room for a new one.
// Safe for concurrent use. A nil *Ring or one with a bound of 0 keeps
// nothing (the ring is off).
type Ring struct {
	mu      sync.Mutex
	limit   int
	used    int
	seq     uint64
	recs    []Record // oldest first
	dropped uint64   // records too large to keep
	evicted uint64   // records pushed out by newer ones
}

// NewRing returns a ring bounded to limit bytes; limit ≤ 0 keeps nothing.
func NewRing(limit int) *Ring { return &Ring{limit: max(limit, 0)} }

// Add numbers r (unless the caller numbered it) and keeps it, pushing out the oldest records as needed. It
// reports whether r was kept.
func (g *Ring) Add(r Record) bool {
	if g == nil {
		return false
	}
	size := r.Size()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	if r.Seq == 0 {
		r.Seq = g.seq
	}
	if size > g.limit {
		g.dropped++
		return false
	}
	for g.used+size > g.limit && len(g.recs) > 0 {
		g.used -= g.recs[0].Size()
		g.recs[0] = Record{}
		g.recs = g.recs[1:]
		g.evicted++
	}
	g.recs = append(g.recs, r)
	g.used += size
	return true
}

// Stats is the ring's account of itself.
type Stats struct {
	Limit, Used      int
	Records          int
	Dropped, Evicted uint64
}

// Stats returns the ring's figures now.
func (g *Ring) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{Limit: g.limit, Used: g.used, Records: len(g.recs), Dropped: g.dropped, Evicted: g.evicted}
}

// Records returns a copy of the records kept, oldest first.
func (g *Ring) Records() []Record {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Record(nil), g.recs...)
}

// SetLimit changes the bound, pushing out the oldest records as needed (a
// ring sized by the account it watches grows as modules are found).
func (g *Ring) SetLimit(limit int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit = max(limit, 0)
	for g.used > g.limit && len(g.recs) > 0 {
		g.used -= g.recs[0].Size()
		g.recs[0] = Record{}
		g.recs = g.recs[1:]
		g.evicted++
	}
}
