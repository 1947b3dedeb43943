package history

import (
	"reflect"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// alarmRow is a usable row of the alarm history, as its decoder gives it.
func alarmRow(code int, start time.Duration, end *time.Duration) AlarmRow {
	r := AlarmRow{Occurrence: Occurrence{Code: strconv.Itoa(code), Start: at(start)}}
	if end != nil {
		r.End = at(*end)
	}
	return r
}

// badAlarm is a row its decoder found a problem with.
func badAlarm(problem string, r AlarmRow) AlarmRow {
	r.Problem = problem
	return r
}

func dur(d time.Duration) *time.Duration { return &d }

// read feeds pages as one read.
func readAlarms(a *Alarms, now time.Time, pages ...[]AlarmRow) {
	a.BeginRead()
	for _, p := range pages {
		a.ObservePage(now, p)
	}
	a.EndRead(true)
}

func TestAlarmsCounting(t *testing.T) {
	type step struct {
		now     time.Duration
		active  []Active   // applied when non-nil or activeRead
		read    bool       // apply the active list (even empty)
		history []AlarmRow // one read of one page, when non-nil
	}
	cases := []struct {
		name    string
		since   time.Time
		steps   []step
		counts  map[string]uint64
		lastDur map[string]time.Duration
		dropped uint64
		recent  int
	}{
		{
			name:  "raised and cleared between two polls is counted once",
			since: t0,
			steps: []step{
				{now: time.Minute, read: true},
				{now: 2 * time.Minute, read: true, history: []AlarmRow{alarmRow(38, 70*time.Second, dur(100*time.Second))}},
				{now: 3 * time.Minute, read: true, history: []AlarmRow{alarmRow(38, 70*time.Second, dur(100*time.Second))}},
			},
			counts: map[string]uint64{"38": 1}, lastDur: map[string]time.Duration{"38": 30 * time.Second}, recent: 1,
		},
		{
			name:  "seen active, then finished, is counted once",
			since: t0,
			steps: []step{
				{now: time.Minute, read: true, active: []Active{{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Start: at(50 * time.Second)}}},
				{now: 2 * time.Minute, read: true, active: []Active{{Code: "38", Start: at(50 * time.Second)}}},
				{now: 3 * time.Minute, read: true, history: []AlarmRow{alarmRow(38, 50*time.Second, dur(150*time.Second))}},
			},
			counts: map[string]uint64{"38": 1}, lastDur: map[string]time.Duration{"38": 100 * time.Second}, recent: 1,
		},
		{
			name:  "two occurrences of one code are two",
			since: t0,
			steps: []step{
				{now: 5 * time.Minute, history: []AlarmRow{
					alarmRow(38, 3*time.Minute, dur(4*time.Minute)),
					alarmRow(38, time.Minute, dur(90*time.Second)),
				}},
			},
			counts: map[string]uint64{"38": 2}, lastDur: map[string]time.Duration{"38": time.Minute}, recent: 2,
		},
		{
			name:  "rows from before the watch are shown, never counted",
			since: t0,
			steps: []step{
				{now: time.Minute, read: true, active: []Active{{Code: "12", Start: at(-2 * time.Hour)}}, history: []AlarmRow{
					alarmRow(38, -time.Hour, dur(-50*time.Minute)),
				}},
			},
			counts: map[string]uint64{"38": 0, "12": 0}, lastDur: map[string]time.Duration{"38": 10 * time.Minute}, recent: 2,
		},
		{
			name:   "a row stamped in the second the watch began counts",
			since:  t0.Add(700 * time.Millisecond),
			steps:  []step{{now: time.Minute, history: []AlarmRow{alarmRow(38, 0, dur(time.Second))}}},
			counts: map[string]uint64{"38": 1}, lastDur: map[string]time.Duration{"38": time.Second}, recent: 1,
		},
		{
			name:   "an active alarm without a start is not tracked",
			since:  t0,
			steps:  []step{{now: time.Minute, read: true, active: []Active{{Code: "38"}}}},
			counts: map[string]uint64{}, lastDur: map[string]time.Duration{},
		},
		{
			name:  "bad rows cost only themselves",
			since: t0,
			steps: []step{{now: 10 * time.Minute, history: []AlarmRow{
				// The decoder's verdict is the tracker's: a row with a
				// problem is dropped, whatever else it holds.
				badAlarm("row names no module (devid)", alarmRow(7, 9*time.Minute, nil)),
				badAlarm("row has no integer alarm code (id)", AlarmRow{Occurrence: Occurrence{Start: at(9 * time.Minute)}}),
				badAlarm("row has no integer alarm code (id)", alarmRow(0, 9*time.Minute, nil)),
				badAlarm("created_at: not a timestamp", AlarmRow{Occurrence: Occurrence{Code: "7"}}),
				badAlarm(`created_at: unparseable timestamp "yesterday"`, AlarmRow{Occurrence: Occurrence{Code: "7"}}),
				badAlarm("created_at: missing", AlarmRow{Occurrence: Occurrence{Code: "7"}}),
				badAlarm("finished_at is before created_at", AlarmRow{Occurrence: Occurrence{Code: "7", Start: at(time.Minute), End: at(0)}}),
				badAlarm(`finished_at: unparseable timestamp "soon"`, alarmRow(7, time.Minute, nil)),
				badAlarm("row is not an object", AlarmRow{}),
				alarmRow(7, time.Hour, nil),                      // in the future
				alarmRow(7, time.Minute, dur(time.Hour)),         // ends in the future
				alarmRow(999, 2*time.Minute, dur(3*time.Minute)), // unknown code: fine
				alarmRow(38, time.Minute, nil),
			}}},
			counts: map[string]uint64{"999": 1, "38": 1}, lastDur: map[string]time.Duration{"999": time.Minute},
			dropped: 11, recent: 2,
		},
		{
			name:  "a row out of order costs that row",
			since: t0,
			steps: []step{{now: 10 * time.Minute, history: []AlarmRow{
				alarmRow(1, 5*time.Minute, nil),
				alarmRow(2, 7*time.Minute, nil),
				alarmRow(3, 2*time.Minute, nil),
			}}},
			counts: map[string]uint64{"1": 1, "3": 1}, lastDur: map[string]time.Duration{}, dropped: 1, recent: 2,
		},
		{
			name:  "a page that repeats costs its rows and counts nothing twice",
			since: t0,
			steps: []step{{now: 10 * time.Minute, history: append(
				[]AlarmRow{alarmRow(1, 5*time.Minute, nil), alarmRow(2, 4*time.Minute, nil)},
				alarmRow(1, 5*time.Minute, nil), alarmRow(2, 4*time.Minute, nil))}},
			counts: map[string]uint64{"1": 1, "2": 1}, lastDur: map[string]time.Duration{}, dropped: 2, recent: 2,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewAlarms(Config{}, c.since)
			for _, s := range c.steps {
				now := at(s.now)
				if s.read || s.active != nil {
					a.ObserveActive(now, s.active)
				}
				if s.history != nil {
					readAlarms(a, now, s.history)
				}
			}
			got := a.Snapshot()
			if !reflect.DeepEqual(got.Counts, c.counts) {
				t.Errorf("counts = %v, want %v", got.Counts, c.counts)
			}
			if !reflect.DeepEqual(got.LastDuration, c.lastDur) {
				t.Errorf("last durations = %v, want %v", got.LastDuration, c.lastDur)
			}
			if got.Dropped != c.dropped {
				t.Errorf("dropped = %d, want %d", got.Dropped, c.dropped)
			}
			if len(got.Recent) != c.recent {
				t.Errorf("recent = %v, want %d", got.Recent, c.recent)
			}
		})
	}
}

func TestAlarmsSymbolAndEndReachRecent(t *testing.T) {
	a := NewAlarms(Config{}, t0)
	a.ObserveActive(at(time.Minute), []Active{{Code: "38", Start: at(30 * time.Second)}})
	readAlarms(a, at(2*time.Minute), []AlarmRow{{Occurrence: Occurrence{Code: "38", Symbol: "ERROR_BRAK_PALIWA",
		Start: at(30 * time.Second), End: at(90 * time.Second)}}})
	want := []Occurrence{{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Start: at(30 * time.Second), End: at(90 * time.Second)}}
	if got := a.Snapshot().Recent; !reflect.DeepEqual(got, want) {
		t.Fatalf("recent = %v, want %v", got, want)
	}
}

func TestAlarmsRecentNewestFirstBounded(t *testing.T) {
	a := NewAlarms(Config{Recent: 3}, t0)
	a.BeginRead()
	// Two reads, the older rows second, as a continued sweep reads them.
	a.ObservePage(at(time.Hour), []AlarmRow{alarmRow(5, 50*time.Minute, nil), alarmRow(4, 40*time.Minute, nil)})
	a.EndRead(false)
	a.BeginRead()
	a.ObservePage(at(time.Hour), []AlarmRow{alarmRow(3, 30*time.Minute, nil), alarmRow(6, 55*time.Minute, nil)})
	a.EndRead(true)
	var codes []string
	for _, o := range a.Snapshot().Recent {
		codes = append(codes, o.Code)
	}
	// Code 6 arrived out of order in its read and was refused.
	if want := []string{"5", "4", "3"}; !reflect.DeepEqual(codes, want) {
		t.Fatalf("recent codes = %v, want %v", codes, want)
	}
	readAlarms(a, at(2*time.Hour), []AlarmRow{alarmRow(7, 70*time.Minute, nil)})
	codes = codes[:0]
	for _, o := range a.Snapshot().Recent {
		codes = append(codes, o.Code)
	}
	if want := []string{"7", "5", "4"}; !reflect.DeepEqual(codes, want) {
		t.Fatalf("recent codes = %v, want %v", codes, want)
	}
}

// Forgetting bounds memory without counting a forgotten occurrence again.
func TestAlarmsForgetBelowFloor(t *testing.T) {
	a := NewAlarms(Config{Remember: 4}, t0)
	var rows []AlarmRow
	for i := 10; i >= 1; i-- {
		rows = append(rows, alarmRow(38, time.Duration(i)*time.Minute, dur(time.Duration(i)*time.Minute+time.Second)))
	}
	readAlarms(a, at(time.Hour), rows)
	readAlarms(a, at(time.Hour), rows)
	if got := a.Snapshot().Counts["38"]; got != 10 {
		t.Fatalf("count = %d after reading 10 occurrences twice, want 10", got)
	}
	if n := len(a.known); n > 4 {
		t.Fatalf("remembers %d occurrences, bound 4", n)
	}
}

func TestAlarmsHorizon(t *testing.T) {
	a := NewAlarms(Config{}, t0)
	if got := a.Horizon(); !got.Equal(t0) {
		t.Fatalf("horizon before any row = %v, want the watch start", got)
	}
	readAlarms(a, at(time.Hour), []AlarmRow{alarmRow(38, 30*time.Minute, dur(31*time.Minute))})
	if got := a.Horizon(); !got.Equal(at(30 * time.Minute)) {
		t.Fatalf("horizon = %v, want the newest row's start", got)
	}
	// An alarm active since before the watch leaves the active list: the
	// next read looks back to its start, until a complete read gives up.
	a.ObserveActive(at(time.Hour), []Active{{Code: "12", Start: at(-3 * time.Hour)}})
	if got := a.Horizon(); !got.Equal(at(30 * time.Minute)) {
		t.Fatalf("horizon with the alarm still active = %v", got)
	}
	a.ObserveActive(at(61*time.Minute), nil)
	if got := a.Horizon(); !got.Equal(at(-3 * time.Hour)) {
		t.Fatalf("horizon with a closing alarm = %v, want its start", got)
	}
	a.BeginRead()
	a.EndRead(false)
	if got := a.Horizon(); !got.Equal(at(-3 * time.Hour)) {
		t.Fatalf("an incomplete read gave up on the closing alarm: horizon %v", got)
	}
	a.BeginRead()
	a.EndRead(true)
	if got := a.Horizon(); !got.Equal(at(30 * time.Minute)) {
		t.Fatalf("horizon after a complete read = %v", got)
	}
}

// fuzzAlarmRows reads fuzz bytes as rows the decoder could give, four bytes
// a row: the code (0-7), the start in minutes around t0 (-128 to 127), the
// length in seconds (0: active), and whether the row has a problem (then
// its fields are whatever the bytes say, as a bad row's may be).
func fuzzAlarmRows(b []byte) []AlarmRow {
	var rows []AlarmRow
	for ; len(b) >= 4; b = b[4:] {
		r := alarmRow(int(b[0]%8), time.Duration(int8(b[1]))*time.Minute, nil)
		if b[2] != 0 {
			r.End = r.Start.Add(time.Duration(b[2]) * time.Second)
		}
		if b[3]&1 == 1 {
			r.Problem = "created_at: missing"
			r.End = r.Start.Add(-time.Duration(b[2]) * time.Second)
		}
		rows = append(rows, r)
	}
	return rows
}

// Counts never fall and what is counted never exceeds what was offered,
// whatever the rows.
func FuzzAlarmsIntake(f *testing.F) {
	f.Add([]byte{38, 1, 60, 0}, []byte{38, 1, 0, 0})                                // seen finished, then active
	f.Add([]byte{7, 2, 0, 0, 1, 0, 0, 1, 38, 1, 0, 1}, []byte{38, 0, 0xff, 1})      // bad rows among good
	f.Add([]byte{1, 5, 0, 0, 2, 9, 0, 0, 1, 5, 0, 0}, []byte{})                     // out of order, repeated
	f.Add([]byte{3, 0x80, 10, 0, 3, 0x7f, 10, 0}, []byte{3, 70, 0, 0, 3, 61, 5, 0}) // before the watch, in the future
	f.Fuzz(func(t *testing.T, p1, p2 []byte) {
		a := NewAlarms(Config{Recent: 5, Remember: 8}, t0)
		prev := map[string]uint64{}
		offered := 0
		for _, p := range [][]byte{p1, p2, p1} {
			rows := fuzzAlarmRows(p)
			offered += len(rows)
			a.BeginRead()
			a.ObservePage(at(time.Hour), rows)
			a.EndRead(true)
			s := a.Snapshot()
			var total uint64
			for code, n := range s.Counts {
				if n < prev[code] {
					t.Fatalf("count of %s fell from %d to %d", code, prev[code], n)
				}
				total += n
			}
			if total+s.Dropped > uint64(offered) {
				t.Fatalf("counted %d and dropped %d of %d rows offered", total, s.Dropped, offered)
			}
			if len(s.Recent) > 5 {
				t.Fatalf("recent holds %d, bound 5", len(s.Recent))
			}
			for i := 1; i < len(s.Recent); i++ {
				if s.Recent[i].Start.After(s.Recent[i-1].Start) {
					t.Fatalf("recent not newest first: %v", s.Recent)
				}
			}
			for _, d := range s.LastDuration {
				if d < 0 {
					t.Fatalf("negative duration %v", d)
				}
			}
			prev = s.Counts
		}
	})
}
