package outage

import "time"

// Record is the outage record of the interface spec ("Outage record" table):
// the current outage while down, the last finished one after a restore.
type Record struct {
	// Down is true while an outage window is open; DownSince, DownFor and
	// Reason are meaningful only then.
	Down      bool
	DownSince time.Time
	// DownFor is computed at read time from the now given to the snapshot.
	DownFor time.Duration
	Reason  string

	// HasLast is true once an outage has finished; LastDownFor and
	// LastReason describe it.
	HasLast     bool
	LastDownFor time.Duration
	LastReason  string
}

// window is the mutable form of a Record.
type window struct {
	down   bool
	since  time.Time
	reason string

	hasLast    bool
	lastFor    time.Duration
	lastReason string
}

func (w *window) open(since time.Time, reason string) {
	w.down = true
	w.since = since
	w.reason = reason
}

// close finishes the open window into last_* and returns its span.
func (w *window) close(now time.Time) (since time.Time, dur time.Duration, reason string) {
	since, reason = w.since, w.reason
	dur = nonNegative(now.Sub(since))
	w.hasLast = true
	w.lastFor = dur
	w.lastReason = reason
	w.drop()
	return since, dur, reason
}

// drop forgets the open window without touching last_*.
func (w *window) drop() {
	w.down = false
	w.since = time.Time{}
	w.reason = ""
}

func (w window) record(now time.Time) Record {
	r := Record{HasLast: w.hasLast, LastDownFor: w.lastFor, LastReason: w.lastReason}
	if w.down {
		r.Down = true
		r.DownSince = w.since
		r.DownFor = nonNegative(now.Sub(w.since))
		r.Reason = w.reason
	}
	return r
}

// nonNegative keeps durations sane when the caller's clock steps backwards.
func nonNegative(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

func copyCounts(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
