package cloudclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/redact"
)

// rowSecret is what the row tests' cloud echoes into rows.
const rowSecret = "hunter2-row-secret"

func rowSecrets() *redact.Set {
	s := redact.NewSet()
	s.Add(rowSecret)
	return s
}

func oneActivity(t *testing.T, row string) cloudclient.ActivityRow {
	t.Helper()
	rows, err := cloudclient.DecodeActivity([]byte(`{"activities":[`+row+`]}`), rowSecrets())
	if err != nil || len(rows) != 1 {
		t.Fatalf("%s: %d rows, %v", row, len(rows), err)
	}
	return rows[0]
}

func oneAlarm(t *testing.T, row string) cloudclient.AlarmRow {
	t.Helper()
	rows, err := cloudclient.DecodeAlarmRows([]byte(`{"alarms":[`+row+`]}`), rowSecrets())
	if err != nil || len(rows) != 1 {
		t.Fatalf("%s: %d rows, %v", row, len(rows), err)
	}
	return rows[0]
}

// Each field of an activity row in every form docs/spec.md W-2.7 gives, and the rows
// that cannot be used saying why.
func TestActivityRowFields(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, row string
		check     func(a cloudclient.ActivityRow) bool
		problem   string // a prefix; "" for a usable row
	}{
		{"full row, the simulator's form", `{"id":4,"devid":"D1","module_id":7,"name":"parameters.PARAM_3","unit":1,"value":51,"prevValue":50,
			"prev_value":{"P6":{"219":{"v":50,"u":1}}},"state":"success","created_at":"2026-03-01T10:30:00Z","user":{"name":"Jan","id":3},"user_id":3}`,
			func(a cloudclient.ActivityRow) bool {
				return a.ID == 4 && a.Devid == "D1" && a.ModuleID == 7 && a.Symbol() == "PARAM_3" && a.Unit == 1 && a.Value == 51.0 &&
					a.Old() == 50.0 && a.Register() == "P6.v219" && a.State == "success" && a.At.Equal(at) && a.User == "Jan" && a.UserID == 3
			}, ""},
		{"devid nested in module", `{"id":1,"state":"success","module":{"devid":"D2","id":9},"name":"parameters.X","created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool { return a.Devid == "D2" && a.ModuleID == 9 }, ""},
		{"value wrapped, prevValue wrapped", `{"id":1,"state":"success","devid":"D1","name":"p.X","value":{"value":"on"},"prevValue":{"value":"off"},"created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool { return a.Value == "on" && a.Old() == "off" }, ""},
		{"old value only in the snapshot", `{"id":1,"state":"success","devid":"D1","name":"p.X","value":2,"prev_value":{"P6":{"219":{"v":2,"u":38}},"P4":{"8":{"u":1}}},"created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool {
				return a.PrevValue == nil && a.Old() == 2.0 && a.Register() == "P6.v219" && len(a.Snapshot) == 2 &&
					a.Snapshot[0].Pool == "P4" && a.Snapshot[1].Index == 219 && a.Snapshot[1].Channels["u"] == 38.0
			}, ""},
		{"snapshot entries of other shapes are left out", `{"id":1,"state":"success","devid":"D1","name":"p.X","prev_value":{"X1":{"1":{"v":1}},"P":{"1":{"v":1}},"P2":{"a":{"v":1},"3":5},"P3":[1]},"created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool {
				return len(a.Snapshot) == 0 && a.Register() == "" && a.Old() == nil
			}, ""},
		{"user as a string", `{"id":1,"state":"success","devid":"D1","name":"p.X","user":" Ola ","created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool { return a.User == "Ola" && a.UserID == 0 }, ""},
		{"user of a wrong type", `{"id":1,"state":"success","devid":"D1","name":"p.X","user":17,"created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool { return a.User == "" }, ""},
		{"wrong-typed unit reads as zero", `{"id":1,"state":"success","unit":[1],"devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool { return a.Unit == 0 }, ""},
		{"an id beyond 32 bits", `{"id":1099511627776,"state":"success","devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool { return a.ID == 1<<40 }, ""},
		{"numeric text id", `{"state":"success","id":"12","devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool { return a.ID == 12 }, ""},
		{"time with fraction and offset (the card's form)", `{"id":1,"state":"success","devid":"D1","name":"p.X","created_at":"2026-03-01T11:30:00.000+01:00"}`,
			func(a cloudclient.ActivityRow) bool { return a.At.Equal(at) && a.At.Location() == time.UTC }, ""},
		{"time in the SQL form is UTC", `{"id":1,"state":"success","devid":"D1","name":"p.X","created_at":"2026-03-01 10:30:00"}`,
			func(a cloudclient.ActivityRow) bool { return a.At.Equal(at) }, ""},
		{"time as epoch seconds", fmt.Sprintf(`{"id":1,"state":"success","devid":"D1","name":"p.X","created_at":%d}`, at.Unix()),
			func(a cloudclient.ActivityRow) bool { return a.At.Equal(at) }, ""},
		{"time as epoch milliseconds", fmt.Sprintf(`{"id":1,"state":"success","devid":"D1","name":"p.X","created_at":%d}`, at.UnixMilli()),
			func(a cloudclient.ActivityRow) bool { return a.At.Equal(at) }, ""},
		{"no time", `{"devid":"D1","name":"p.X"}`, func(a cloudclient.ActivityRow) bool { return a.At.IsZero() }, "created_at: missing"},
		{"time unreadable", `{"devid":"D1","name":"p.X","created_at":"yesterday"}`,
			func(a cloudclient.ActivityRow) bool { return a.At.IsZero() && a.CreatedAt == "yesterday" }, `created_at: unparseable timestamp "yesterday"`},
		{"time of a wrong type", `{"devid":"D1","name":"p.X","created_at":{"t":1}}`, nil, "created_at: "},
		{"no devid", `{"name":"p.X","created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoDevid},
		{"devid of a wrong type", `{"devid":42,"name":"p.X","created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoDevid},
		{"no parameter named", `{"devid":"D1","value":1,"created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoParameter},
		// The id tells the log's changes apart and the state is the
		// outcome they are counted by: without either a change cannot be
		// counted, once or at all (docs/spec.md W-2.7c).
		{"no id", `{"state":"success","devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoID},
		{"id of a wrong type", `{"id":"x","state":"success","devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoID},
		{"fractional id", `{"id":2.5,"state":"success","devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoID},
		{"no state", `{"id":1,"devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoState},
		{"blank state", `{"id":1,"state":" ","devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoState},
		{"state of a wrong type", `{"id":1,"state":3,"devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`, nil, cloudclient.ProblemNoState},
		{"a register names the parameter", `{"id":1,"state":"success","devid":"D1","prev_value":{"P6":{"219":{"v":2}}},"created_at":"2026-03-01T10:30:00Z"}`,
			func(a cloudclient.ActivityRow) bool { return a.Register() == "P6.v219" }, ""},
		{"not an object", `7`, nil, cloudclient.ProblemNotObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := oneActivity(t, tc.row)
			if tc.problem == "" && a.Problem != "" || !strings.HasPrefix(a.Problem, tc.problem) {
				t.Fatalf("problem %q, want %q", a.Problem, tc.problem)
			}
			if tc.check != nil && !tc.check(a) {
				t.Fatalf("row %+v", a)
			}
		})
	}
}

func TestAlarmRowFields(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, row string
		check     func(a cloudclient.AlarmRow) bool
		problem   string
	}{
		{"active", `{"id":38,"name":"ERROR_BRAK_PALIWA","devid":"D1","created_at":"2026-03-01T10:00:00Z","finished_at":null}`,
			func(a cloudclient.AlarmRow) bool {
				return a.ID == 38 && a.Symbol == "ERROR_BRAK_PALIWA" && a.Active() && a.Start.Equal(start) && a.End.IsZero()
			}, ""},
		{"finished", `{"id":12,"devid":"D1","created_at":"2026-03-01T10:00:00Z","finished_at":"2026-03-01T10:15:00.000+00:00"}`,
			func(a cloudclient.AlarmRow) bool { return !a.Active() && a.End.Sub(a.Start) == 15*time.Minute }, ""},
		{"finished as epoch seconds", fmt.Sprintf(`{"id":12,"devid":"D1","created_at":"2026-03-01T10:00:00Z","finished_at":%d}`, start.Add(time.Minute).Unix()),
			func(a cloudclient.AlarmRow) bool { return !a.Active() && a.End.Equal(start.Add(time.Minute)) }, ""},
		{"no finished_at member is active", `{"id":12,"devid":"D1","created_at":"2026-03-01T10:00:00Z"}`,
			func(a cloudclient.AlarmRow) bool { return a.Active() }, ""},
		// A blank finished_at carries no end, as null: the alarm is active.
		{"empty finished_at is active", `{"id":12,"devid":"D1","created_at":"2026-03-01T10:00:00Z","finished_at":""}`,
			func(a cloudclient.AlarmRow) bool { return a.Active() && a.End.IsZero() }, ""},
		{"blank finished_at is active", `{"id":12,"devid":"D1","created_at":"2026-03-01T10:00:00Z","finished_at":" "}`,
			func(a cloudclient.AlarmRow) bool { return a.Active() && a.FinishedAt == "" && a.End.IsZero() }, ""},
		{"code as numeric text", `{"id":"38","devid":"D1","created_at":"2026-03-01T10:00:00Z"}`,
			func(a cloudclient.AlarmRow) bool { return a.ID == 38 }, ""},
		{"devid nested in module", `{"id":3,"module":{"devid":"D9"},"created_at":"2026-03-01T10:00:00Z"}`,
			func(a cloudclient.AlarmRow) bool { return a.Devid == "D9" }, ""},
		{"no code", `{"devid":"D1","created_at":"2026-03-01T10:00:00Z"}`, nil, cloudclient.ProblemNoCode},
		{"code of a wrong type", `{"id":"ERR","devid":"D1","created_at":"2026-03-01T10:00:00Z"}`, nil, cloudclient.ProblemNoCode},
		{"fractional code", `{"id":3.5,"devid":"D1","created_at":"2026-03-01T10:00:00Z"}`, nil, cloudclient.ProblemNoCode},
		{"negative code", `{"id":-1,"devid":"D1","created_at":"2026-03-01T10:00:00Z"}`, nil, cloudclient.ProblemNoCode},
		{"no devid", `{"id":3,"created_at":"2026-03-01T10:00:00Z"}`, nil, cloudclient.ProblemNoDevid},
		{"no start", `{"id":3,"devid":"D1","finished_at":"2026-03-01T10:00:00Z"}`, nil, "created_at: missing"},
		{"start unreadable", `{"id":3,"devid":"D1","created_at":"soon"}`, nil, `created_at: unparseable timestamp "soon"`},
		{"end unreadable", `{"id":3,"devid":"D1","created_at":"2026-03-01T10:00:00Z","finished_at":"later"}`,
			func(a cloudclient.AlarmRow) bool { return !a.Active() }, `finished_at: unparseable timestamp "later"`},
		{"end before start", `{"id":3,"devid":"D1","created_at":"2026-03-01T10:00:00Z","finished_at":"2026-03-01T09:00:00Z"}`, nil, "finished_at is before created_at"},
		{"not an object", `"38"`, nil, cloudclient.ProblemNotObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := oneAlarm(t, tc.row)
			if tc.problem == "" && a.Problem != "" || !strings.HasPrefix(a.Problem, tc.problem) {
				t.Fatalf("problem %q, want %q", a.Problem, tc.problem)
			}
			if tc.check != nil && !tc.check(a) {
				t.Fatalf("row %+v", a)
			}
		})
	}
}

// Both response shapes of each list, a null list, and bodies that hold no
// list: an error, never an empty list that would pass for "nothing
// happened".
func TestListShapes(t *testing.T) {
	const act = `{"devid":"D1","name":"p.X","created_at":"2026-03-01T10:30:00Z"}`
	const alarm = `{"id":1,"devid":"D1","created_at":"2026-03-01T10:30:00Z"}`
	for _, tc := range []struct {
		body    string
		rows    int
		wantErr bool
	}{
		{`{"status":true,"activities":{"data":[` + act + `,` + act + `]}}`, 2, false},
		{`{"activities":[` + act + `]}`, 1, false},
		{`{"data":[` + act + `]}`, 1, false},
		{`[` + act + `,1]`, 2, false},
		{`{"activities":null}`, 0, false},
		{`{"activities":{"data":[]}}`, 0, false},
		{`{"status":false,"message":"nope"}`, 0, true},
		{`{"activities":{"rows":[]}}`, 0, true},
		{`{"activities":"none"}`, 0, true},
		{`"text"`, 0, true},
		{`42`, 0, true},
	} {
		rows, err := cloudclient.DecodeActivity([]byte(tc.body), nil)
		if (err != nil) != tc.wantErr || len(rows) != tc.rows {
			t.Errorf("activity %s: %d rows, %v", tc.body, len(rows), err)
		}
	}
	for _, tc := range []struct {
		body    string
		rows    int
		wantErr bool
	}{
		{`{"status":true,"alarms":[` + alarm + `]}`, 1, false},
		{`{"status":true,"alarms":{"data":[` + alarm + `,` + alarm + `]}}`, 2, false},
		{`{"alarms":[]}`, 0, false},
		{`{"status":true}`, 0, true},
		{`{"alarms":{"data":{}}}`, 0, true},
		{`{"alarms":{}}`, 0, true},
	} {
		rows, err := cloudclient.DecodeAlarmRows([]byte(tc.body), nil)
		if (err != nil) != tc.wantErr || len(rows) != tc.rows {
			t.Errorf("alarms %s: %d rows, %v", tc.body, len(rows), err)
		}
	}
}

// Answers that are not a list are errors of the call: an HTML page on 200,
// 404 and 5xx (the HTML never quoted), a JSON object without the list. A 204
// is an empty page.
func TestListAnswersThatAreErrors(t *testing.T) {
	fc := newFakeCloud(t)
	c, _ := newClient(t, fc)
	ctx := ctxT(t)
	html := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			io.WriteString(w, "<html><body>Service Unavailable</body></html>")
		}
	}
	calls := map[string]func() (int, error){
		"POST /v1/modules/activity": func() (int, error) {
			r, err := c.Activity(ctx, cloudclient.ListRequest{Modules: []string{"D1"}})
			return len(r), err
		},
		"POST /v1/modules/alarms/history": func() (int, error) {
			r, err := c.AlarmHistory(ctx, cloudclient.ListRequest{Modules: []string{"D1"}})
			return len(r), err
		},
		"POST /v1/modules/alarms": func() (int, error) {
			r, err := c.Alarms(ctx, cloudclient.ListRequest{Modules: []string{"D1"}})
			return len(r), err
		},
	}
	for route, call := range calls {
		for _, status := range []int{200, 404, 500, 503} {
			fc.handle(route, html(status))
			n, err := call()
			if err == nil || n != 0 || strings.Contains(err.Error(), "<html") {
				t.Errorf("%s HTML %d: %d rows, %v", route, status, n, err)
			}
			var api *cloudclient.APIError
			var dec *cloudclient.DecodeError
			if status == 200 && !errors.As(err, &dec) || status != 200 && (!errors.As(err, &api) || api.Status != status) {
				t.Errorf("%s HTML %d: error %T %v", route, status, err, err)
			}
		}
		fc.handleJSON(route, 404, `{"message":"Not found"}`)
		if _, err := call(); err == nil || !strings.Contains(err.Error(), "HTTP 404: Not found") {
			t.Errorf("%s 404: %v", route, err)
		}
		fc.handleJSON(route, 200, `{"status":false,"message":"x"}`)
		if n, err := call(); err == nil || n != 0 || !strings.Contains(err.Error(), "no list of rows") {
			t.Errorf("%s without a list: %d rows, %v", route, n, err)
		}
		fc.handle(route, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })
		if n, err := call(); err != nil || n != 0 {
			t.Errorf("%s 204: %d rows, %v", route, n, err)
		}
	}
}

// A secret the cloud echoes into any text of a row (the user, the token,
// the values, the snapshot, a timestamp that fails) is masked; identities
// and numbers stay.
func TestRowsMaskSecrets(t *testing.T) {
	s := rowSecret
	act := oneActivity(t, fmt.Sprintf(`{"id":5,"devid":"D1","name":"parameters.%[1]s","value":{"value":"a %[1]s"},"prevValue":"b %[1]s",
		"prev_value":{"P6":{"219":{"v":"c %[1]s"}}},"state":"%[1]s","user":{"name":"Jan %[1]s"},"created_at":"%[1]s","note":"%[1]s"}`, s))
	alarm := oneAlarm(t, fmt.Sprintf(`{"id":38,"devid":"D1","name":"%[1]s","created_at":"2026-03-01T10:00:00Z","finished_at":"%[1]s","text":"%[1]s"}`, s))
	for _, v := range []any{act, alarm} {
		b, _ := json.Marshal(v)
		text := fmt.Sprintf("%+v %s", v, b)
		if strings.Contains(text, s) {
			t.Errorf("row carries the secret: %s", text)
		}
		if !strings.Contains(text, redact.Mask) {
			t.Errorf("row lost the echoing text instead of masking it: %s", text)
		}
	}
	if act.ID != 5 || act.Devid != "D1" || act.User != "Jan "+redact.Mask || act.Old() != "b "+redact.Mask || act.Snapshot[0].Channels["v"] != "c "+redact.Mask {
		t.Errorf("activity row %+v", act)
	}
	if alarm.ID != 38 || alarm.Problem == "" {
		t.Errorf("alarm row %+v", alarm)
	}
}

// rowsIn counts the elements of the list a body holds, as docs/spec.md W-2.7 places it.
func rowsIn(body []byte, key string) (int, bool) {
	var v json.RawMessage
	if json.Unmarshal(body, &v) != nil {
		return 0, false
	}
	for range 2 {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || m == nil {
			break
		}
		inner, ok := m[key]
		if !ok {
			inner = m["data"]
		}
		key, v = "data", inner
	}
	if v == nil || string(v) == "null" {
		return 0, true
	}
	var l []json.RawMessage
	if json.Unmarshal(v, &l) != nil {
		return 0, false
	}
	return len(l), true
}

func fuzzSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
}

func FuzzDecodeActivity(f *testing.F) {
	fuzzSeeds(f,
		`{"status":true,"activities":{"data":[{"id":1,"devid":"D1","name":"parameters.PARAM_1","unit":1,"value":{"value":21},"prevValue":20,"prev_value":{"P6":{"219":{"v":2,"u":38}}},"state":"success","created_at":"2026-03-01T10:30:00Z","user":{"name":"Jan","id":3}}]}}`,
		`{"activities":[{"module":{"devid":"D2"},"user":"`+rowSecret+`","created_at":1700000000,"value":"`+rowSecret+`"}]}`,
		``, `[1,null,"x",{"prev_value":{"P1":{"2":[]}}}]`, `{"activities":null}`, `<html>502</html>`, `{"data":{}}`,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := cloudclient.DecodeActivity(data, rowSecrets())
		if err != nil {
			return
		}
		if n, ok := rowsIn(data, "activities"); !ok || n != len(rows) {
			t.Fatalf("%q: %d rows decoded, the body holds %d (list %v)", data, len(rows), n, ok)
		}
		for _, a := range rows {
			b, _ := json.Marshal(a)
			if strings.Contains(fmt.Sprintf("%+v %s", a, b), rowSecret) {
				t.Fatalf("unmasked secret in %+v", a)
			}
			if a.Problem == "" && (a.Devid == "" || a.At.IsZero() || a.Name == "" && a.Register() == "" || a.State == "") {
				t.Fatalf("unusable row without a problem: %+v", a)
			}
			_ = a.Old()
			_ = a.Symbol()
		}
	})
}

func FuzzDecodeAlarmRows(f *testing.F) {
	fuzzSeeds(f,
		`{"status":true,"alarms":[{"id":38,"devid":"D1","created_at":"2026-01-01T00:00:00Z","finished_at":null}]}`,
		`{"status":true,"alarms":{"data":[{"id":"12","devid":"D1","name":"`+rowSecret+`","created_at":"2026-01-01 00:00:00","finished_at":"2026-01-01 00:15:00"}]}}`,
		`{"alarms":[7,{"id":1e400},{"id":-3,"devid":""}]}`, `{"alarms":{}}`, `null`, ``,
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := cloudclient.DecodeAlarmRows(data, rowSecrets())
		if err != nil {
			return
		}
		if n, ok := rowsIn(data, "alarms"); !ok || n != len(rows) {
			t.Fatalf("%q: %d rows decoded, the body holds %d (list %v)", data, len(rows), n, ok)
		}
		for _, a := range rows {
			b, _ := json.Marshal(a)
			if strings.Contains(fmt.Sprintf("%+v %s", a, b), rowSecret) {
				t.Fatalf("unmasked secret in %+v", a)
			}
			if a.Problem == "" && (a.Devid == "" || a.Start.IsZero() || !a.Active() && a.End.Before(a.Start) || a.Active() != a.End.IsZero()) {
				t.Fatalf("unusable row without a problem: %+v", a)
			}
		}
	})
}
