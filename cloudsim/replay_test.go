package cloudsim

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/traffic"
)

var replayT0 = time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)

// restRec is a recorded REST exchange at t0+at.
func restRec(at time.Duration, endpoint, path string, request any, status int, body any) traffic.Record {
	method, _, _ := strings.Cut(endpoint, " ")
	r := traffic.Record{At: replayT0.Add(at), Kind: traffic.KindREST, Method: method, Endpoint: endpoint, Path: path, Status: status}
	if request != nil {
		r.Request = json.RawMessage(mustJSON(request))
	}
	switch b := body.(type) {
	case nil:
	case string:
		r.BodyText = b
	default:
		r.Body = json.RawMessage(mustJSON(b))
	}
	return r
}

func eventRec(at time.Duration, object int, name string, payload any) traffic.Record {
	return traffic.Record{At: replayT0.Add(at), Kind: traffic.KindEvent, Object: object, Event: name, SID: "recorded-sid", Payload: json.RawMessage(mustJSON(payload))}
}

// twoObjectRecording is a small field run: objects 101 (module DEVA) and
// 202 (module DEVB), their lists and primes, and DEVA's prime answered
// 503 at +30s, 12 at +60s and no answer at all at +90s.
func twoObjectRecording() []traffic.Record {
	objects := []any{map[string]any{"id": 101, "name": "Home"}, map[string]any{"id": 202, "name": "Cottage"}}
	row := func(devid string) map[string]any {
		return map[string]any{"devid": devid, "name": "Boiler " + devid, "connectedAt": 1763625600, "deviceMenu": 0, "permissions": []string{}}
	}
	params := cloudapi.EndpointParameters
	return []traffic.Record{
		restRec(0, cloudapi.EndpointLogin, "/v1/auth/user", nil, 200, map[string]any{"type": "bearer", "user": map[string]any{"id": 7}, "objects": objects}),
		restRec(100*time.Millisecond, cloudapi.EndpointModules, "/v1/modules?page=1&limit=999&group_id=101", nil, 200, map[string]any{"data": []any{row("DEVA")}}),
		restRec(110*time.Millisecond, cloudapi.EndpointModules, "/v1/modules?page=1&limit=999&group_id=202", nil, 200, map[string]any{"data": []any{row("DEVB")}}),
		restRec(time.Second, params, "/v1/modules/parameters", map[string]any{"modules": []string{"DEVA"}}, 200, map[string]any{"DEVA": map[string]any{"P4": map[string]any{"v1": map[string]any{"value": 11}}}}),
		restRec(time.Second, params, "/v1/modules/parameters", map[string]any{"modules": []string{"DEVB"}}, 200, map[string]any{"DEVB": map[string]any{"P4": map[string]any{"v1": map[string]any{"value": 22}}}}),
		func() traffic.Record {
			r := restRec(30*time.Second, params, "/v1/modules/parameters", map[string]any{"modules": []string{"DEVA"}}, 503, "<html><body><h1>503 Service Unavailable</h1></body></html>")
			r.Headers = map[string]string{"Retry-After": "7", "Content-Type": "text/html"}
			return r
		}(),
		restRec(60*time.Second, params, "/v1/modules/parameters", map[string]any{"modules": []string{"DEVA"}}, 200, map[string]any{"DEVA": map[string]any{"P4": map[string]any{"v1": map[string]any{"value": 12}}}}),
		func() traffic.Record {
			r := restRec(90*time.Second, params, "/v1/modules/parameters", map[string]any{"modules": []string{"DEVA"}}, 0, nil)
			r.Error = "read tcp: connection reset by peer"
			return r
		}(),
	}
}

func startReplay(t *testing.T, recs []traffic.Record, opts ReplayOptions, clock *fakeClock) *Cloud {
	t.Helper()
	rp, err := NewReplay(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Replay: rp, Modules: 1, ParamsPerModule: 5}
	if clock != nil {
		o.Now = clock.Now
	}
	return startCloud(t, o)
}

// replayLogin logs in with credentials the simulated cloud does not know:
// a replay accepts any.
func replayLogin(t *testing.T, c *Cloud) (string, map[string]any) {
	t.Helper()
	r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": "field@example.com", "password": "whatever"})
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	m := r.json(t)
	tok, _ := m["accessToken"].(string)
	if tok == "" {
		t.Fatalf("login without accessToken: %s", r.body)
	}
	return tok, m
}

// TestReplayAnswersByRequestAndClock: each request gets the latest answer
// recorded for the same request (the module list by its group_id, the prime
// by its module list) at or before the replay clock: the earliest before
// the clock reaches it, the recorded 503 (with its Retry-After) at its
// time, the later prime after it, a reset connection where the recording
// got no answer; a request never recorded is 404.
func TestReplayAnswersByRequestAndClock(t *testing.T) {
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := startReplay(t, twoObjectRecording(), ReplayOptions{}, clock)
	if st, _ := c.ReplayState(); st.Started {
		t.Fatal("the replay clock runs before the first login")
	}
	tok, login := replayLogin(t, c)
	if objs, _ := login["objects"].([]any); len(objs) != 2 || login["user"] == nil {
		t.Errorf("login answer %v lacks the recorded user and objects", login)
	}
	if r := call(t, c, "GET", "/v1/user/permissions", "", nil); r.status != 401 {
		t.Errorf("a request without the token = %d, want 401", r.status)
	}

	prime := func(devid string) resp {
		return call(t, c, "POST", "/v1/modules/parameters", tok, map[string]any{"modules": []string{devid}})
	}
	for devid, want := range map[string]string{"DEVA": `{"DEVA":{"P4":{"v1":{"value":11}}}}`, "DEVB": `{"DEVB":{"P4":{"v1":{"value":22}}}}`} {
		if r := prime(devid); r.status != 200 || string(r.body) != want {
			t.Errorf("prime of %s = %d %s, want %s", devid, r.status, r.body, want)
		}
	}
	for group, want := range map[string]string{"101": "DEVA", "202": "DEVB"} {
		r := call(t, c, "GET", "/v1/modules?group_id="+group+"&limit=999&page=1", tok, nil)
		if r.status != 200 || !strings.Contains(string(r.body), want) || strings.Count(string(r.body), `"devid"`) != 1 {
			t.Errorf("module list of %s = %d %s, want %s's row only", group, r.status, r.body, want)
		}
	}
	if r := prime("DEVC"); r.status != 404 {
		t.Errorf("a prime never recorded = %d %s, want 404", r.status, r.body)
	}

	clock.Add(30 * time.Second)
	if r := prime("DEVA"); r.status != 503 || r.header.Get("Retry-After") != "7" || !strings.Contains(string(r.body), "503") {
		t.Errorf("prime at +30s = %d %v %s, want the recorded 503 with Retry-After 7", r.status, r.header, r.body)
	}
	if r := prime("DEVB"); r.status != 200 {
		t.Errorf("DEVB's prime at +30s = %d, want its own recorded 200", r.status)
	}
	clock.Add(30 * time.Second)
	if r := prime("DEVA"); r.status != 200 || !strings.Contains(string(r.body), `"value":12`) {
		t.Errorf("prime at +60s = %d %s, want the later recorded answer", r.status, r.body)
	}
	clock.Add(30 * time.Second)
	req, _ := http.NewRequest("POST", c.URL()+"/v1/modules/parameters", strings.NewReader(`{"modules":["DEVA"]}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	if res, err := testHTTP.Do(req); err == nil {
		res.Body.Close()
		t.Errorf("prime at +90s answered %d, want the connection dropped as recorded", res.StatusCode)
	}
	if st, _ := c.ReplayState(); !st.Started || st.ClockSeconds != 90 {
		t.Errorf("replay state %+v, want started at clock 90s", st)
	}
}

// TestReplaySpeedCompressesTheSchedule: the recorded events of an object
// reach the session bound to it on their recorded schedule, ten times
// faster at speed 10, in order; a recorded session_down closes the
// session at its time, and what was recorded after it waits for the
// client's next session. Measured by the replay clock on an injected clock.
func TestReplaySpeedCompressesTheSchedule(t *testing.T) {
	recs := twoObjectRecording()[:5]
	for i := 1; i <= 10; i++ {
		recs = append(recs, eventRec(time.Duration(i)*time.Second, 101, cloudapi.WireParamsChange, map[string]any{"DEVA": map[string]any{"P4": map[string]any{"v1": map[string]any{"value": i}}}}))
	}
	recs = append(recs, eventRec(5500*time.Millisecond, 202, "22", map[string]any{"devid": "DEVB"}))
	recs = append(recs, traffic.Record{At: replayT0.Add(12 * time.Second), Kind: traffic.KindTransition, Object: 101, What: "session_down", Detail: map[string]string{"reason": "transport close"}})
	recs = append(recs, eventRec(12500*time.Millisecond, 101, cloudapi.WireAlarmsQuantity, map[string]any{"alarmsQuantity": map[string]any{"DEVA": 1}}))

	for _, tc := range []struct {
		speed     float64
		wantAfter []int // events of object 101 due after 0.5s, then after 1s, of the injected clock
	}{{1, []int{0, 1}}, {10, []int{5, 10}}} {
		t.Run(fmt.Sprintf("speed=%v", tc.speed), func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
			c := startReplay(t, recs, ReplayOptions{Speed: tc.speed}, clock)
			tok, _ := replayLogin(t, c)
			home := connected(t, c, tok)
			bind(t, c, tok, "wsid", home.SID(), []string{"DEVA"})
			if s, _ := sessionBySID(c, home.SID()); s.ObjectID != 101 {
				t.Fatalf("session bound to object %d, want 101 (DEVA's in the recorded list)", s.ObjectID)
			}
			seen := 0
			for step, want := range tc.wantAfter {
				clock.Add(500 * time.Millisecond)
				c.pumpReplay()
				st, _ := c.ReplayState()
				if got, wantClock := st.ClockSeconds, float64(step+1)*0.5*tc.speed; got != wantClock {
					t.Errorf("replay clock %vs, want %vs", got, wantClock)
				}
				for ; seen < want; seen++ {
					ev := home.next(cloudapi.WireParamsChange)
					if got := ev.payload["DEVA"].(map[string]any)["P4"].(map[string]any)["v1"].(map[string]any)["value"]; got != float64(seen+1) {
						t.Fatalf("event %d carries %v: out of order", seen+1, got)
					}
				}
				// Cottage's event 22 waits for a session of its object.
				if st.Delivered != want || (tc.speed == 10 && step == 1 && st.Pending != 1) {
					t.Errorf("after %v: delivered %d pending %d, want %d delivered", clock.Now().Sub(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)), st.Delivered, st.Pending, want)
				}
			}
			if tc.speed != 10 {
				return
			}
			if names := home.drainNames(); len(names) != 0 {
				t.Errorf("Home's session got %v beyond its schedule (Cottage's event 22 must not reach it)", names)
			}
			cottage := connected(t, c, tok)
			bind(t, c, tok, "wsid", cottage.SID(), []string{"DEVB"})
			c.pumpReplay()
			if ev := cottage.nextAny(); ev.name != "22" || !ev.numeric || ev.payload["devid"] != "DEVB" {
				t.Errorf("Cottage got %+v, want the numeric event 22 for DEVB", ev)
			}
			clock.Add(200 * time.Millisecond) // 12s recorded: Home's session_down
			c.pumpReplay()
			eventually(t, "Home's session closed by the recorded session_down", func() bool {
				s, _ := sessionBySID(c, home.SID())
				return !s.Connected
			})
			if s, _ := sessionBySID(c, cottage.SID()); !s.Connected {
				t.Error("Cottage's session closed by Home's session_down")
			}
			// The event recorded after the session_down reached the
			// recorded client's next session: it waits for the replayed
			// client's.
			clock.Add(100 * time.Millisecond)
			c.pumpReplay()
			if st, _ := c.ReplayState(); st.Finished || st.Pending != 1 || st.SessionsClosed != 1 {
				t.Errorf("replay state %+v, want one session closed and the last event waiting", st)
			}
			again := connected(t, c, tok)
			bind(t, c, tok, "wsid", again.SID(), []string{"DEVA"})
			c.pumpReplay()
			if ev := again.nextAny(); ev.name != cloudapi.WireAlarmsQuantity {
				t.Errorf("Home's next session got %+v, want the alarm quantity recorded after the session_down", ev)
			}
			if st, _ := c.ReplayState(); !st.Finished || st.Pending != 0 {
				t.Errorf("replay state %+v, want finished", st)
			}
		})
	}
}

// TestReplayRefusesABrokenRecording: a malformed line or a truncated last
// line refuses the whole file with the line's number, in a plain capture,
// a gzipped one and a bundle's archive alike; nothing is returned to serve.
func TestReplayRefusesABrokenRecording(t *testing.T) {
	var good bytes.Buffer
	w, err := traffic.NewWriter(&good, traffic.NewHeader(replayT0, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range twoObjectRecording()[:3] {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.SplitAfter(good.String(), "\n")
	malformed := lines[0] + lines[1] + `{"kind":"rest","at":` + "\n" + lines[3]
	truncated := strings.TrimSuffix(good.String(), "\n")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gz := func(data []byte) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(data)
		_ = zw.Close()
		return b.Bytes()
	}
	bundle := func(data []byte) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, m := range []struct {
			name string
			body []byte
		}{{"bundle/meta.json", []byte("{}")}, {"bundle/logs.jsonl", []byte(`{"msg":"a log line"}` + "\n")}, {"bundle/traffic.jsonl", data}} {
			_ = tw.WriteHeader(&tar.Header{Name: m.name, Mode: 0o600, Size: int64(len(m.body)), Typeflag: tar.TypeReg})
			_, _ = tw.Write(m.body)
		}
		_ = tw.Close()
		return gz(b.Bytes())
	}
	for _, tc := range []struct {
		name, file string
		wantLine   int
	}{
		{"malformed", write("bad.jsonl", []byte(malformed)), 3},
		{"truncated", write("cut.jsonl", []byte(truncated)), 4},
		{"gzipped truncated", write("cut.jsonl.gz", gz([]byte(truncated))), 4},
		{"bundle malformed", write("bundle.tar.gz", bundle([]byte(malformed))), 3},
		{"no header", write("nohead.jsonl", []byte(lines[1])), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, _, err := LoadReplay(tc.file, ReplayOptions{})
			var le *traffic.LineError
			if rp != nil || !errors.As(err, &le) || le.Line != tc.wantLine || !strings.Contains(err.Error(), fmt.Sprintf("line %d", tc.wantLine)) {
				t.Fatalf("LoadReplay = %v, %v; want refused at line %d", rp != nil, err, tc.wantLine)
			}
		})
	}
	for name, data := range map[string][]byte{"good.jsonl": good.Bytes(), "good.tar.gz": bundle(good.Bytes()), "good.jsonl.gz": gz(good.Bytes())} {
		rp, h, err := LoadReplay(write(name, data), ReplayOptions{Speed: 2})
		if err != nil || rp == nil || h.Format != traffic.Format || rp.records != 3 {
			t.Errorf("LoadReplay(%s) = %v, %+v, %v; want 3 records", name, rp != nil, h, err)
		}
	}
	if _, err := NewReplay(nil, ReplayOptions{}); err == nil {
		t.Error("an empty recording was accepted")
	}
	if _, err := NewReplay(twoObjectRecording(), ReplayOptions{Speed: -1}); err == nil {
		t.Error("a negative speed was accepted")
	}
}

// TestReplayScheduleRunsFromTheBind: an object's events run on its own
// schedule, from its first bind as the recorded one ran from its recorded
// session_up, however late the replayed client binds; a request it makes
// in answer to an event gets the answer recorded after that event (a 503),
// however late it asks, and its retry what the recorded retry got.
func TestReplayScheduleRunsFromTheBind(t *testing.T) {
	prime := func(at time.Duration, v int) traffic.Record {
		return restRec(at, cloudapi.EndpointParameters, "/v1/modules/parameters", map[string]any{"modules": []string{"DEVA"}}, 200,
			map[string]any{"DEVA": map[string]any{"P4": map[string]any{"v1": map[string]any{"value": v}}}})
	}
	recs := append(twoObjectRecording()[:3],
		traffic.Record{At: replayT0.Add(time.Second), Kind: traffic.KindTransition, Object: 101, What: "session_up"},
		eventRec(time.Second, 101, "connect", nil), // the client library's, not the cloud's
		prime(1200*time.Millisecond, 1),
		eventRec(1500*time.Millisecond, 101, "22", map[string]any{"devid": "DEVA"}),
		restRec(1510*time.Millisecond, cloudapi.EndpointParameters, "/v1/modules/parameters", map[string]any{"modules": []string{"DEVA"}}, 503, "<html>503</html>"),
		prime(1800*time.Millisecond, 2),
		traffic.Record{At: replayT0.Add(3 * time.Second), Kind: traffic.KindTransition, Object: 101, What: "session_down", Detail: map[string]string{"reason": "stop", "abort": "false"}},
	)
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := startReplay(t, recs, ReplayOptions{}, clock)
	tok, _ := replayLogin(t, c)
	clock.Add(5 * time.Second) // the replayed client binds 4s later than the recorded one did
	home := connected(t, c, tok)
	bind(t, c, tok, "wsid", home.SID(), []string{"DEVA"})
	c.pumpReplay()
	st, _ := c.ReplayState()
	if len(st.Objects) != 1 || st.Objects[0].ShiftSeconds != 4 || st.Delivered != 0 || st.Scheduled != 1 {
		t.Fatalf("replay state %+v, want object 101's schedule 4s late, nothing played yet, the event scheduled (not the recorded client's own shutdown)", st)
	}
	primeOf := func() string {
		r := call(t, c, "POST", "/v1/modules/parameters", tok, map[string]any{"modules": []string{"DEVA"}})
		return fmt.Sprint(r.status, " ", string(r.body))
	}
	if got := primeOf(); !strings.Contains(got, `"value":1`) {
		t.Errorf("prime before the event = %s, want the first recorded", got)
	}
	clock.Add(500 * time.Millisecond)
	c.pumpReplay()
	if ev := home.nextAny(); ev.name != "22" {
		t.Errorf("event %+v, want 22", ev)
	}
	clock.Add(time.Second) // past the recorded retry: the recorded answer to the event comes first all the same
	if got := primeOf(); !strings.HasPrefix(got, "503 ") {
		t.Errorf("prime after event 22 = %s, want the 503 the recorded client got for it", got)
	}
	if got := primeOf(); !strings.Contains(got, `"value":2`) {
		t.Errorf("prime retried = %s, want what the recorded client's retry got", got)
	}
	if got := primeOf(); !strings.Contains(got, `"value":2`) {
		t.Errorf("prime asked again = %s, want the latest, never an older one", got)
	}
	clock.Add(time.Second)
	c.pumpReplay()
	if st, _ := c.ReplayState(); !st.Finished || st.SessionsClosed != 0 {
		t.Errorf("replay state %+v: the recorded client's own shutdown must not close the session", st)
	}
	if s, _ := sessionBySID(c, home.SID()); !s.Connected {
		t.Error("the session was closed")
	}
}

// A recorded event waits for the replayed client to have made the requests
// the recorded client made between its bind and the event, so the event
// follows their answers as it did in the field however slow the replayed
// client is; a client that never makes them holds it askHold at most. And
// while an event waits, no request gets an answer recorded after it.
func TestReplayEventWaitsForTheRequestsBeforeIt(t *testing.T) {
	offline := map[string]any{"DEVA": map[string]any{"connectedAt": 0}}
	prime := func(at time.Duration, v int) traffic.Record {
		return restRec(at, cloudapi.EndpointParameters, "/v1/modules/parameters", map[string]any{"modules": []string{"DEVA"}}, 200,
			map[string]any{"DEVA": map[string]any{"P4": map[string]any{"v1": map[string]any{"value": v}}}})
	}
	recs := append(twoObjectRecording()[:3],
		traffic.Record{At: replayT0.Add(time.Second), Kind: traffic.KindTransition, Object: 101, What: "session_up"},
		prime(1200*time.Millisecond, 1),
		eventRec(1500*time.Millisecond, 101, cloudapi.WireConnectionStatus, offline),
		prime(1550*time.Millisecond, 2),
		eventRec(1600*time.Millisecond, 101, cloudapi.WireConnectionStatus, offline),
	)
	for _, asks := range []bool{true, false} {
		clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		c := startReplay(t, recs, ReplayOptions{}, clock)
		tok, _ := replayLogin(t, c)
		clock.Add(time.Second)
		home := connected(t, c, tok)
		bind(t, c, tok, "wsid", home.SID(), []string{"DEVA"})
		clock.Add(time.Second) // past both events and both primes
		c.pumpReplay()
		if st, _ := c.ReplayState(); st.Delivered != 0 {
			t.Fatalf("asks %v: %d events delivered before the prime the recorded client made first", asks, st.Delivered)
		}
		primeOf := func() string {
			r := call(t, c, "POST", "/v1/modules/parameters", tok, map[string]any{"modules": []string{"DEVA"}})
			return fmt.Sprint(r.status, " ", string(r.body))
		}
		if asks {
			if got := primeOf(); !strings.Contains(got, `"value":1`) {
				t.Errorf("prime while the first event waits = %s, want the one recorded before it", got)
			}
			c.pumpReplay()
			if st, _ := c.ReplayState(); st.Delivered != 1 {
				t.Fatalf("replay state %+v, want the first event delivered, the second waiting for the second prime", st)
			}
			if got := primeOf(); !strings.Contains(got, `"value":2`) {
				t.Errorf("prime after the first event = %s, want the one recorded after it", got)
			}
		} else {
			clock.Add(askHold)
		}
		c.pumpReplay()
		if st, _ := c.ReplayState(); st.Delivered != 2 || !st.Finished {
			t.Errorf("asks %v: replay state %+v, want both events delivered", asks, st)
		}
		for range 2 {
			if ev := home.nextAny(); ev.name != cloudapi.WireConnectionStatus {
				t.Errorf("asks %v: event %+v", asks, ev)
			}
		}
	}
}
