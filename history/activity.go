package history

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Change is one entry of a module's activity (change) log.
type Change struct {
	ID       int64
	At       time.Time
	Register string // "P6.v219" when the row names one, else ""
	Symbol   string // the row's name token's key ("PARAM_66"), "" when none
	Old, New string // the values as the row gives them, as text; "" when absent
	Unit     int    // the row's unit code; 0 when none
	User     string // who made it, as the cloud names them
	State    string // outcome token ("success", "failed", …)
}

// Activity tracks one module's activity log. Counts only grow. Not safe
// for concurrent use.
type Activity struct {
	cfg       Config
	since     time.Time
	known     map[int64]time.Time // row id -> its time
	floor     time.Time           // rows at or before it were forgotten
	counts    map[string]uint64
	last      time.Time
	recent    []Change // newest first
	dropped   uint64
	watermark time.Time
	read      listRead[int64]
}

// ActivitySnapshot is what an Activity tracker says, a copy the caller owns.
type ActivitySnapshot struct {
	// ByState counts changes made since the watch began by outcome; every
	// outcome seen is present, from 0.
	ByState    map[string]uint64
	LastChange time.Time // the newest change known (from before the watch too); zero if none
	Recent     []Change  // newest first
	Dropped    uint64    // activity rows refused
}

// NewActivity starts watching a module's activity log at since.
func NewActivity(cfg Config, since time.Time) *Activity {
	return &Activity{cfg: cfg.withDefaults(), since: watchStart(since), known: map[int64]time.Time{}, counts: map[string]uint64{}}
}

// BeginRead starts a read of the activity log (see Alarms.BeginRead).
func (a *Activity) BeginRead() { a.read.begin() }

// EndRead ends a read.
func (a *Activity) EndRead() { a.read.end() }

// ObservePage applies the module's rows of one page of its activity log,
// newest first as listed, read at now. A row its decoder found a problem
// with, or one made beyond the allowed skew into the future, is dropped.
func (a *Activity) ObservePage(now time.Time, rows []ChangeRow) PageResult {
	limit := now.Add(a.cfg.FutureSkew)
	res := observePage(&a.read, &a.dropped, rows, func(r ChangeRow) (int64, time.Time, bool) {
		return r.ID, r.At, r.Problem == "" && !r.At.After(limit)
	}, func(r ChangeRow) { a.apply(changeOf(r)) })
	a.prune()
	return res
}

func (a *Activity) apply(c Change) {
	if c.At.After(a.watermark) {
		a.watermark = c.At
	}
	if c.At.After(a.last) {
		a.last = c.At
	}
	if _, ok := a.counts[c.State]; !ok {
		a.counts[c.State] = 0
	}
	if _, ok := a.known[c.ID]; ok || (!a.floor.IsZero() && !c.At.After(a.floor)) {
		return
	}
	a.known[c.ID] = c.At
	if !c.At.Before(a.since) {
		a.counts[c.State]++
	}
	a.recent = insertNewest(a.recent, c, a.cfg.Recent, func(x, t Change) int {
		if n := t.At.Compare(x.At); n != 0 {
			return n
		}
		return int(t.ID - x.ID)
	})
}

// Horizon is how far back a new read of the log must page: to the newest
// row already seen, and no further back than the watch's start.
func (a *Activity) Horizon() time.Time {
	if a.watermark.Before(a.since) {
		return a.since
	}
	return a.watermark
}

func (a *Activity) prune() {
	forget(a.known, a.cfg.Remember, func(at time.Time) time.Time { return at }, &a.floor)
}

// Snapshot returns a copy of what the tracker says.
func (a *Activity) Snapshot() ActivitySnapshot {
	return ActivitySnapshot{ByState: maps.Clone(a.counts), LastChange: a.last, Recent: slices.Clone(a.recent), Dropped: a.dropped}
}

// registerKey is a register as the cloud names it in a token: P<pool>.<channel><index>.
var registerKey = regexp.MustCompile(`^P[0-9]+\.[a-z]+[0-9]+$`)

// changeOf is the change a usable row describes: its id, time and outcome
// as its decoder read them, and what it shows read from the row as sent.
func changeOf(r ChangeRow) Change {
	c := Change{ID: r.ID, At: r.At, State: r.State}
	f := r.Fields
	if name, ok := f["name"].(string); ok {
		key := strings.TrimSpace(name)
		if i := strings.IndexByte(key, '.'); i >= 0 && !registerKey.MatchString(key) {
			key = key[i+1:] // "parameters.PARAM_66" -> "PARAM_66"
		}
		if registerKey.MatchString(key) {
			c.Register = key
		} else {
			c.Symbol = key
		}
	}
	if u, ok := rowInt(f["unit"]); ok {
		c.Unit = int(u)
	}
	value := f["value"]
	if m, ok := value.(map[string]any); ok {
		value = m["value"]
	}
	c.New, _ = text(value)
	c.Old, _ = text(f["prevValue"])
	if reg, old, ok := snapshotRegister(f["prev_value"]); ok {
		if c.Register == "" {
			c.Register = reg
		}
		if _, has := f["prevValue"]; !has || f["prevValue"] == nil {
			c.Old = old
		}
	}
	switch u := f["user"].(type) {
	case string:
		c.User = u
	case map[string]any:
		c.User, _ = u["name"].(string)
	}
	return c
}

// snapshotRegister reads the register a prev_value snapshot names, the
// nested form {"P6":{"219":{"v":2,"u":38}}}: one pool holding one index;
// its value is the "v" channel's.
func snapshotRegister(v any) (reg, old string, ok bool) {
	pools, isMap := v.(map[string]any)
	if !isMap || len(pools) != 1 {
		return "", "", false
	}
	for pool, inner := range pools {
		idxs, isMap := inner.(map[string]any)
		if !isMap || len(idxs) != 1 || len(pool) < 2 || pool[0] != 'P' {
			return "", "", false
		}
		if _, err := strconv.Atoi(pool[1:]); err != nil {
			return "", "", false
		}
		for idx, chans := range idxs {
			if _, err := strconv.Atoi(idx); err != nil {
				return "", "", false
			}
			// The channel is the snapshot's one letter other than the
			// unit's u ("v" for a value, "s" for a setting word); v when
			// it names none or several.
			channel := "v"
			if ch, isMap := chans.(map[string]any); isMap {
				var letters []string
				for k := range ch {
					if len(k) == 1 && k[0] >= 'a' && k[0] <= 'z' && k != "u" {
						letters = append(letters, k)
					}
				}
				if len(letters) == 1 {
					channel = letters[0]
				}
				old, _ = text(ch[channel])
			}
			return pool + "." + channel + idx, old, true
		}
	}
	return "", "", false
}
