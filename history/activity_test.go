package history

import (
	"reflect"
	"testing"
	"time"
)

// actRow is a usable row of the activity log, as its decoder gives it.
func actRow(id int, t time.Duration, state string) ChangeRow {
	return ChangeRow{ID: int64(id), At: at(t), State: state, Fields: map[string]any{"id": float64(id), "devid": "D1",
		"name": "parameters.PARAM_66", "unit": float64(1), "value": float64(55), "prevValue": float64(50), "state": state,
		"created_at": at(t).Format(time.RFC3339), "user": "Owner"}}
}

// badAct is a row its decoder found a problem with.
func badAct(problem string, r ChangeRow) ChangeRow {
	r.Problem = problem
	return r
}

func readActivity(a *Activity, now time.Time, rows []ChangeRow) {
	a.BeginRead()
	a.ObservePage(now, rows)
	a.EndRead()
}

func TestActivityCounting(t *testing.T) {
	cases := []struct {
		name    string
		reads   [][]ChangeRow
		counts  map[string]uint64
		last    time.Time
		dropped uint64
		recent  []int64
	}{
		{
			name:   "changes since the watch counted by state, older ones shown",
			reads:  [][]ChangeRow{{actRow(4, 3*time.Minute, "failed"), actRow(3, 2*time.Minute, "success"), actRow(2, time.Minute, "success"), actRow(1, -time.Hour, "success")}},
			counts: map[string]uint64{"success": 2, "failed": 1}, last: at(3 * time.Minute), recent: []int64{4, 3, 2, 1},
		},
		{
			name:   "a row read again is not counted again",
			reads:  [][]ChangeRow{{actRow(2, time.Minute, "success")}, {actRow(3, 2*time.Minute, "success"), actRow(2, time.Minute, "success")}},
			counts: map[string]uint64{"success": 2}, last: at(2 * time.Minute), recent: []int64{3, 2},
		},
		{
			name:   "only rows from before the watch: last change known, nothing counted",
			reads:  [][]ChangeRow{{actRow(1, -time.Hour, "success")}},
			counts: map[string]uint64{"success": 0}, last: at(-time.Hour), recent: []int64{1},
		},
		{
			name: "bad, repeated and out-of-order rows cost only themselves",
			reads: [][]ChangeRow{{
				actRow(9, 5*time.Minute, "success"),
				// The decoder's verdict is the tracker's: a row with a
				// problem is dropped, whatever else it holds.
				badAct("row has no outcome (state)", actRow(8, 4*time.Minute, "")),
				badAct("row names no module (devid)", actRow(8, 4*time.Minute, "success")),
				badAct("row has no integer id", actRow(0, 4*time.Minute, "success")),
				badAct("row names no parameter (name or prev_value)", actRow(8, 4*time.Minute, "success")),
				badAct("created_at: missing", ChangeRow{ID: 8, State: "success"}),
				actRow(7, 2*time.Hour, "success"),           // in the future
				actRow(9, 5*time.Minute, "success"),         // repeated
				actRow(6, 6*time.Minute, "success"),         // out of order
				actRow(5, 3*time.Minute, "weird_new_state"), // unknown state: fine
			}},
			counts: map[string]uint64{"success": 1, "weird_new_state": 1}, last: at(5 * time.Minute), dropped: 8, recent: []int64{9, 5},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewActivity(Config{}, t0)
			for _, r := range c.reads {
				readActivity(a, at(10*time.Minute), r)
			}
			s := a.Snapshot()
			if !reflect.DeepEqual(s.ByState, c.counts) {
				t.Errorf("by state = %v, want %v", s.ByState, c.counts)
			}
			if !s.LastChange.Equal(c.last) {
				t.Errorf("last change = %v, want %v", s.LastChange, c.last)
			}
			if s.Dropped != c.dropped {
				t.Errorf("dropped = %d, want %d", s.Dropped, c.dropped)
			}
			var ids []int64
			for _, ch := range s.Recent {
				ids = append(ids, ch.ID)
			}
			if !reflect.DeepEqual(ids, c.recent) {
				t.Errorf("recent ids = %v, want %v", ids, c.recent)
			}
		})
	}
}

func TestActivityChangeFields(t *testing.T) {
	cases := []struct {
		name string
		row  map[string]any // the row as sent
		want Change
	}{
		{
			name: "token, scalar values, user name",
			row:  actRow(1, time.Minute, "success").Fields,
			want: Change{ID: 1, At: at(time.Minute), Symbol: "PARAM_66", Old: "50", New: "55", Unit: 1, User: "Owner", State: "success"},
		},
		{
			name: "register and old value from the prev_value snapshot, wrapped value, user object",
			row: map[string]any{"id": float64(2), "name": "parameters.PARAM_1", "unit": float64(38), "value": map[string]any{"value": 2.5},
				"prev_value": map[string]any{"P6": map[string]any{"219": map[string]any{"v": float64(2), "u": float64(38)}}},
				"state":      "failed", "created_at": at(time.Minute).Format(time.RFC3339), "user": map[string]any{"name": "Installer", "id": float64(7)}},
			want: Change{ID: 2, At: at(time.Minute), Register: "P6.v219", Symbol: "PARAM_1", Old: "2", New: "2.5", Unit: 38, User: "Installer", State: "failed"},
		},
		{
			name: "a token naming a register",
			row:  map[string]any{"id": float64(3), "name": "P4.v8", "value": "on", "state": "success", "created_at": at(time.Minute).Format(time.RFC3339)},
			want: Change{ID: 3, At: at(time.Minute), Register: "P4.v8", New: "on", State: "success"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewActivity(Config{}, t0)
			row := ChangeRow{ID: c.want.ID, At: c.want.At, State: c.want.State, Fields: c.row}
			readActivity(a, at(time.Hour), []ChangeRow{row})
			got := a.Snapshot().Recent
			if len(got) != 1 || !reflect.DeepEqual(got[0], c.want) {
				t.Fatalf("change = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestActivityHorizon(t *testing.T) {
	a := NewActivity(Config{}, t0)
	readActivity(a, at(time.Hour), []ChangeRow{actRow(1, -time.Hour, "success")})
	if got := a.Horizon(); !got.Equal(t0) {
		t.Fatalf("horizon = %v, want the watch start", got)
	}
	readActivity(a, at(time.Hour), []ChangeRow{actRow(2, 5*time.Minute, "success")})
	if got := a.Horizon(); !got.Equal(at(5 * time.Minute)) {
		t.Fatalf("horizon = %v, want the newest row", got)
	}
}

// fuzzChangeRows reads fuzz bytes as rows the decoder could give, three
// bytes a row: the id (0-15), the time in minutes around t0 (-128 to 127)
// and the outcome (success, failed, a problem).
func fuzzChangeRows(b []byte) []ChangeRow {
	var rows []ChangeRow
	for ; len(b) >= 3; b = b[3:] {
		switch b[2] % 3 {
		case 0:
			rows = append(rows, actRow(int(b[0]%16), time.Duration(int8(b[1]))*time.Minute, "success"))
		case 1:
			rows = append(rows, actRow(int(b[0]%16), time.Duration(int8(b[1]))*time.Minute, "failed"))
		default:
			rows = append(rows, badAct("row has no outcome (state)", actRow(int(b[0]%16), time.Duration(int8(b[1]))*time.Minute, "")))
		}
	}
	return rows
}

func FuzzActivityIntake(f *testing.F) {
	f.Add([]byte{2, 1, 0, 1, 0x80, 1})
	f.Add([]byte{1, 3, 2, 1, 3, 0, 2, 5, 0, 1, 3, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		rows := fuzzChangeRows(p)
		a := NewActivity(Config{Recent: 4, Remember: 8}, t0)
		prev := map[string]uint64{}
		for i := 0; i < 3; i++ {
			readActivity(a, at(time.Hour), rows)
			s := a.Snapshot()
			var total uint64
			for st, n := range s.ByState {
				if n < prev[st] {
					t.Fatalf("count of %s fell", st)
				}
				total += n
			}
			if total > uint64(len(rows)) {
				t.Fatalf("counted %d changes of %d rows", total, len(rows))
			}
			if len(s.Recent) > 4 {
				t.Fatalf("recent holds %d", len(s.Recent))
			}
			prev = s.ByState
		}
	})
}
