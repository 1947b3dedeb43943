package history

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func actRow(id int, t time.Duration, state string) map[string]any {
	return map[string]any{"id": float64(id), "devid": "D1", "name": "parameters.PARAM_66", "unit": float64(1),
		"value": float64(55), "prevValue": float64(50), "state": state, "created_at": ts(t), "user": "Owner"}
}

func readActivity(a *Activity, now time.Time, rows []map[string]any) {
	a.BeginRead()
	a.ObservePage(now, rows)
	a.EndRead()
}

func TestActivityCounting(t *testing.T) {
	cases := []struct {
		name    string
		reads   [][]map[string]any
		counts  map[string]uint64
		last    time.Time
		dropped uint64
		recent  []int64
	}{
		{
			name:   "changes since the watch counted by state, older ones shown",
			reads:  [][]map[string]any{{actRow(4, 3*time.Minute, "failed"), actRow(3, 2*time.Minute, "success"), actRow(2, time.Minute, "success"), actRow(1, -time.Hour, "success")}},
			counts: map[string]uint64{"success": 2, "failed": 1}, last: at(3 * time.Minute), recent: []int64{4, 3, 2, 1},
		},
		{
			name:   "a row read again is not counted again",
			reads:  [][]map[string]any{{actRow(2, time.Minute, "success")}, {actRow(3, 2*time.Minute, "success"), actRow(2, time.Minute, "success")}},
			counts: map[string]uint64{"success": 2}, last: at(2 * time.Minute), recent: []int64{3, 2},
		},
		{
			name:   "only rows from before the watch: last change known, nothing counted",
			reads:  [][]map[string]any{{actRow(1, -time.Hour, "success")}},
			counts: map[string]uint64{"success": 0}, last: at(-time.Hour), recent: []int64{1},
		},
		{
			name: "bad, repeated and out-of-order rows cost only themselves",
			reads: [][]map[string]any{{
				actRow(9, 5*time.Minute, "success"),
				{"id": float64(8), "created_at": ts(4 * time.Minute)},                  // no state
				{"id": float64(8), "created_at": ts(4 * time.Minute), "state": 3.0},    // state not text
				{"created_at": ts(4 * time.Minute), "state": "success"},                // no id
				{"id": "eight", "created_at": ts(4 * time.Minute), "state": "success"}, // id not a number
				{"id": float64(8), "created_at": "", "state": "success"},               // no time
				actRow(7, 2*time.Hour, "success"),                                      // in the future
				actRow(9, 5*time.Minute, "success"),                                    // repeated
				actRow(6, 6*time.Minute, "success"),                                    // out of order
				actRow(5, 3*time.Minute, "weird_new_state"),                            // unknown state: fine
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
		row  map[string]any
		want Change
	}{
		{
			name: "token, scalar values, user name",
			row:  actRow(1, time.Minute, "success"),
			want: Change{ID: 1, At: at(time.Minute), Symbol: "PARAM_66", Old: "50", New: "55", Unit: 1, User: "Owner", State: "success"},
		},
		{
			name: "register and old value from the prev_value snapshot, wrapped value, user object",
			row: map[string]any{"id": float64(2), "name": "parameters.PARAM_1", "unit": float64(38), "value": map[string]any{"value": 2.5},
				"prev_value": map[string]any{"P6": map[string]any{"219": map[string]any{"v": float64(2), "u": float64(38)}}},
				"state":      "failed", "created_at": ts(time.Minute), "user": map[string]any{"name": "Installer", "id": float64(7)}},
			want: Change{ID: 2, At: at(time.Minute), Register: "P6.v219", Symbol: "PARAM_1", Old: "2", New: "2.5", Unit: 38, User: "Installer", State: "failed"},
		},
		{
			name: "a token naming a register",
			row:  map[string]any{"id": float64(3), "name": "P4.v8", "value": "on", "state": "success", "created_at": ts(time.Minute)},
			want: Change{ID: 3, At: at(time.Minute), Register: "P4.v8", New: "on", State: "success"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewActivity(Config{}, t0)
			readActivity(a, at(time.Hour), []map[string]any{c.row})
			got := a.Snapshot().Recent
			if len(got) != 1 || !reflect.DeepEqual(got[0], c.want) {
				t.Fatalf("change = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestActivityHorizon(t *testing.T) {
	a := NewActivity(Config{}, t0)
	readActivity(a, at(time.Hour), []map[string]any{actRow(1, -time.Hour, "success")})
	if got := a.Horizon(); !got.Equal(t0) {
		t.Fatalf("horizon = %v, want the watch start", got)
	}
	readActivity(a, at(time.Hour), []map[string]any{actRow(2, 5*time.Minute, "success")})
	if got := a.Horizon(); !got.Equal(at(5 * time.Minute)) {
		t.Fatalf("horizon = %v, want the newest row", got)
	}
}

func FuzzActivityIntake(f *testing.F) {
	f.Add([]byte(`[{"id":2,"name":"parameters.PARAM_1","value":{"value":3},"prevValue":2,"state":"success","created_at":"2026-03-01T12:01:00Z","user":{"name":"x"}}]`))
	f.Add([]byte(`[{"id":1,"prev_value":{"P6":{"219":{"v":2}}},"state":"failed","created_at":1772366500},{"id":1,"state":"","created_at":null}]`))
	f.Fuzz(func(t *testing.T, p []byte) {
		var rows []map[string]any
		if json.Unmarshal(p, &rows) != nil {
			return
		}
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
