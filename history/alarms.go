package history

import (
	"maps"
	"slices"
	"time"
)

// Occurrence is one occurrence of a module's alarm.
type Occurrence struct {
	Code   string    // the alarm type code, e.g. "38"
	Symbol string    // the cloud's symbolic name, "" when none
	Start  time.Time // when it began
	End    time.Time // when it finished; zero while active or unknown
}

// Active is one alarm of the module's active alarm list.
type Active struct {
	Code   string
	Symbol string
	Start  time.Time // zero when the list gave none: then it cannot be told apart and is not tracked
}

type occKey struct {
	code  string
	start int64 // unix ns
}

type occ struct {
	Occurrence
	active  bool // in the last active list read
	closing bool // left the active list; its finished row not found yet
}

// Alarms tracks one module's alarm occurrences from its active alarm list
// and its alarm history. Counts only grow. Not safe for concurrent use.
type Alarms struct {
	cfg     Config
	since   time.Time // watch start, to the second
	known   map[occKey]*occ
	floor   time.Time // occurrences starting at or before it were forgotten
	counts  map[string]uint64
	lastDur map[string]time.Duration
	lastEnd map[string]time.Time
	recent  []Occurrence // newest start first, bounded by cfg.Recent
	dropped uint64
	// watermark is the newest start of a history row seen.
	watermark time.Time
	read      listRead[occKey]
}

// AlarmsSnapshot is what an Alarms tracker says, a copy the caller owns.
type AlarmsSnapshot struct {
	// Counts counts occurrences by code begun since the watch began; every
	// code the tracker knows of is present, from 0.
	Counts map[string]uint64
	// LastDuration is the length of the occurrence of each code that
	// finished last (rows from before the watch included: a length is
	// shown, not counted).
	LastDuration map[string]time.Duration
	Recent       []Occurrence // newest first
	Dropped      uint64       // history rows refused
}

// NewAlarms starts watching a module's alarms at since.
func NewAlarms(cfg Config, since time.Time) *Alarms {
	return &Alarms{cfg: cfg.withDefaults(), since: watchStart(since), known: map[occKey]*occ{},
		counts: map[string]uint64{}, lastDur: map[string]time.Duration{}, lastEnd: map[string]time.Time{}}
}

// ObserveActive applies the module's active alarm list read at now.
// Occurrences that left the list are closing: a read of the history looks
// for their finished rows (see Horizon).
func (a *Alarms) ObserveActive(now time.Time, list []Active) {
	in := make(map[occKey]bool, len(list))
	for _, x := range list {
		if x.Start.IsZero() || x.Start.After(now.Add(a.cfg.FutureSkew)) {
			continue
		}
		k := occKey{x.Code, x.Start.UnixNano()}
		in[k] = true
		e := a.learn(Occurrence{Code: x.Code, Symbol: x.Symbol, Start: x.Start})
		if e != nil {
			e.active, e.closing = true, false
		}
	}
	for k, e := range a.known {
		if e.active && !in[k] {
			e.active = false
			e.closing = e.End.IsZero()
		}
	}
	a.prune()
}

// learn records an occurrence first seen now and counts it when it began
// since the watch began; it returns the known entry (nil when the
// occurrence is older than what is remembered).
func (a *Alarms) learn(o Occurrence) *occ {
	k := occKey{o.Code, o.Start.UnixNano()}
	if e, ok := a.known[k]; ok {
		if e.Symbol == "" && o.Symbol != "" {
			e.Symbol = o.Symbol
			a.updateRecent(e.Occurrence)
		}
		return e
	}
	if _, ok := a.counts[o.Code]; !ok {
		a.counts[o.Code] = 0
	}
	if !o.Start.After(a.floor) && !a.floor.IsZero() {
		return nil
	}
	e := &occ{Occurrence: o}
	a.known[k] = e
	if !o.Start.Before(a.since) {
		a.counts[o.Code]++
	}
	a.insertRecent(o)
	return e
}

// BeginRead starts a read of the alarm history: rows repeated within it and
// rows out of order (newer than the row before) are refused.
func (a *Alarms) BeginRead() { a.read.begin() }

// PageResult is what one page told the tracker, for Sweep.Next.
type PageResult struct {
	Oldest time.Time // the oldest time among the rows accepted; zero if none
	Fresh  bool      // some row was not a repeat within this read
}

// Merge combines the results of the modules of one page.
func (p PageResult) Merge(q PageResult) PageResult {
	if !q.Oldest.IsZero() && (p.Oldest.IsZero() || q.Oldest.Before(p.Oldest)) {
		p.Oldest = q.Oldest
	}
	p.Fresh = p.Fresh || q.Fresh
	return p
}

// ObservePage applies the module's rows of one page of its alarm history,
// in the order the cloud listed them (newest first), read at now. A row
// its decoder found a problem with, or one that begins or ends beyond the
// allowed skew into the future, is dropped.
func (a *Alarms) ObservePage(now time.Time, rows []AlarmRow) PageResult {
	limit := now.Add(a.cfg.FutureSkew)
	res := observePage(&a.read, &a.dropped, rows, func(r AlarmRow) (occKey, time.Time, bool) {
		return occKey{r.Code, r.Start.UnixNano()}, r.Start, r.Problem == "" && !r.Start.After(limit) && !r.End.After(limit)
	}, func(r AlarmRow) { a.applyRow(r.Occurrence) })
	a.prune()
	return res
}

// EndRead ends a read; complete says the sweep reached its horizon, so a
// closing occurrence whose finished row was not found is given up on.
func (a *Alarms) EndRead(complete bool) {
	a.read.end()
	if !complete {
		return
	}
	for _, e := range a.known {
		e.closing = false
	}
}

func (a *Alarms) applyRow(o Occurrence) {
	if o.Start.After(a.watermark) {
		a.watermark = o.Start
	}
	e := a.learn(o)
	if o.End.IsZero() {
		return
	}
	if e != nil && e.End.IsZero() {
		e.End, e.active, e.closing = o.End, false, false
		a.updateRecent(e.Occurrence)
	}
	if last, ok := a.lastEnd[o.Code]; !ok || o.End.After(last) {
		a.lastEnd[o.Code] = o.End
		a.lastDur[o.Code] = o.End.Sub(o.Start)
	}
}

// Horizon is how far back a new read of the history must page: to the
// newest row already seen (rows start no earlier than the watch to count),
// and further back to the start of any occurrence that left the active list
// without its finished row being found yet.
func (a *Alarms) Horizon() time.Time {
	h := a.watermark
	if h.Before(a.since) {
		h = a.since
	}
	for _, e := range a.known {
		if e.closing && e.Start.Before(h) {
			h = e.Start
		}
	}
	return h
}

func (a *Alarms) insertRecent(o Occurrence) {
	a.recent = insertNewest(a.recent, o, a.cfg.Recent, func(x, t Occurrence) int { return t.Start.Compare(x.Start) })
}

func (a *Alarms) updateRecent(o Occurrence) {
	for i := range a.recent {
		if a.recent[i].Code == o.Code && a.recent[i].Start.Equal(o.Start) {
			a.recent[i] = o
			return
		}
	}
}

// prune forgets the oldest quarter of the remembered occurrences once there
// are more than cfg.Remember, raising the floor to the newest forgotten.
func (a *Alarms) prune() {
	forget(a.known, a.cfg.Remember, func(e *occ) time.Time { return e.Start }, &a.floor)
}

// Snapshot returns a copy of what the tracker says.
func (a *Alarms) Snapshot() AlarmsSnapshot {
	return AlarmsSnapshot{Counts: maps.Clone(a.counts), LastDuration: maps.Clone(a.lastDur),
		Recent: slices.Clone(a.recent), Dropped: a.dropped}
}
