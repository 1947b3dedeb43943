package history

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Lists are the lists a module's rows come from, the list label values of
// the dropped-rows counter.
const (
	ListAlarmHistory = "alarm_history"
	ListActivity     = "activity"
)

// Lists returns the list names in a fixed order.
func Lists() []string { return []string{ListAlarmHistory, ListActivity} }

// Defaults of the trackers.
const (
	// DefaultRecent bounds the recent occurrences and changes kept for
	// display.
	DefaultRecent = 50
	// DefaultRemember bounds the occurrences and changes remembered to
	// recognise a row read again.
	DefaultRemember = 1024
	// DefaultFutureSkew is how far into the future (by our clock) a row's
	// time may lie before the row is refused as bad: the cloud's clock and
	// ours differ a little.
	DefaultFutureSkew = 5 * time.Minute
)

// Config bounds a tracker; zero members take the defaults.
type Config struct {
	Recent     int
	Remember   int
	FutureSkew time.Duration
}

func (c Config) withDefaults() Config {
	if c.Recent <= 0 {
		c.Recent = DefaultRecent
	}
	if c.Remember <= 0 {
		c.Remember = DefaultRemember
	}
	if c.FutureSkew <= 0 {
		c.FutureSkew = DefaultFutureSkew
	}
	return c
}

// AlarmRow is one row of a module's alarm history as its decoder
// (package cloudclient's AlarmRow) read it. A row without a problem has a
// code and a start, and an end that is zero (active) or not before it.
type AlarmRow struct {
	Occurrence
	// Problem is why the row cannot be used, as its decoder judged it; ""
	// when it can. The decoder is the one judge of a row's fields: a row
	// with a problem is dropped, and nothing else is taken from it.
	Problem string
}

// ChangeRow is one row of a module's activity log as its decoder (package
// cloudclient's ActivityRow) read it. A row without a problem has an id, a
// time and an outcome.
type ChangeRow struct {
	ID      int64     // the row's id, which tells changes apart
	At      time.Time // when the change was made
	State   string    // its outcome token ("success", "failed", …)
	Problem string    // as AlarmRow's
	// Fields is the row as the cloud sent it (secrets masked): what a
	// change shows (register, parameter, old and new value, unit, who)
	// is read from it.
	Fields map[string]any
}

// watchStart is the instant rows are compared with: the cloud stamps rows
// to the second, so a row stamped in the second the watch began counts.
func watchStart(since time.Time) time.Time { return since.Truncate(time.Second) }

// rowInt reads an integral number (or a string holding one) of a row's
// shown fields; ok is false for anything else.
func rowInt(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	default:
		return 0, false
	}
}

// text renders a scalar row value as the cloud gave it; objects and lists
// give "" (ok false).
func text(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	default:
		return "", false
	}
}

// listRead is one read of a list, a page at a time: the keys of the rows
// seen in it and the time of the row accepted last.
type listRead[K comparable] struct {
	seen map[K]bool
	last time.Time
}

func (r *listRead[K]) begin() { *r = listRead[K]{seen: map[K]bool{}} }

func (r *listRead[K]) end() { *r = listRead[K]{} }

// observePage is what the trackers share of one page's rows, listed newest
// first: a row that cannot be used (judge says no: its decoder found a
// problem, or its time lies beyond the allowed skew) is dropped but is
// something fresh; a row repeated within the read is dropped and is not (a
// page that repeats); a row newer than the one accepted before it is
// dropped (out of order). Every other row is applied, and the oldest time
// among them is what the sweep is told.
func observePage[R any, K comparable](r *listRead[K], dropped *uint64, rows []R, judge func(R) (key K, at time.Time, ok bool), apply func(R)) PageResult {
	if r.seen == nil {
		r.begin()
	}
	var res PageResult
	for _, row := range rows {
		key, at, ok := judge(row)
		if !ok {
			*dropped++
			res.Fresh = true
			continue
		}
		if r.seen[key] {
			*dropped++ // a page that repeats
			continue
		}
		res.Fresh = true
		r.seen[key] = true
		if !r.last.IsZero() && at.After(r.last) {
			*dropped++ // out of order
			continue
		}
		r.last = at
		if res.Oldest.IsZero() || at.Before(res.Oldest) {
			res.Oldest = at
		}
		apply(row)
	}
	return res
}

// insertNewest inserts x into recent, ordered newest first as cmp orders a
// list's element against a target, and keeps at most bound of them.
func insertNewest[T any](recent []T, x T, bound int, cmp func(elem, target T) int) []T {
	i, _ := slices.BinarySearchFunc(recent, x, cmp)
	if i >= bound {
		return recent
	}
	recent = slices.Insert(recent, i, x)
	if len(recent) > bound {
		recent = recent[:bound]
	}
	return recent
}

// forget bounds what a tracker remembers: once known holds more than
// remember entries, the oldest quarter (by at) are forgotten and the floor
// is raised to the newest time forgotten.
func forget[K comparable, V any](known map[K]V, remember int, at func(V) time.Time, floor *time.Time) {
	if len(known) <= remember {
		return
	}
	times := make([]time.Time, 0, len(known))
	for _, v := range known {
		times = append(times, at(v))
	}
	slices.SortFunc(times, time.Time.Compare)
	cut := times[len(times)-remember*3/4-1]
	maps.DeleteFunc(known, func(_ K, v V) bool { return !at(v).After(cut) })
	if cut.After(*floor) {
		*floor = cut
	}
}
