package realtime

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// simClock is the simulator's clock: real time moved by an offset a test
// sets, so rows can be stamped in a past the gateway's watch never saw.
type simClock struct{ offset atomic.Int64 }

func (c *simClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func moduleHistoryOf(st *Status, devid string) *History {
	for _, m := range st.Modules {
		if m.Devid == devid {
			return m.History
		}
	}
	return nil
}

// waitHistory waits until the module's published history satisfies cond.
func (h *harness) waitHistory(what, devid string, cond func(*History) bool) *History {
	h.t.Helper()
	st := h.waitFor(what, func(st *Status) bool {
		hist := moduleHistoryOf(st, devid)
		return hist != nil && cond(hist)
	})
	return moduleHistoryOf(st, devid)
}

// historyRead reports that the alarm history was read since the simulator
// had served n history requests.
func (h *harness) historyReadSince(n int) bool {
	return h.sim.Requests("POST /v1/modules/alarms/history") > n
}

func (h *harness) mustRaise(devid string, code int) {
	h.t.Helper()
	if err := h.sim.RaiseAlarm(devid, code); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) mustClear(devid string, code int) {
	h.t.Helper()
	if err := h.sim.ClearAlarm(devid, code); err != nil {
		h.t.Fatal(err)
	}
}

// An alarm that began and finished between two reads of the active list is
// counted once, from the history; rows from before the watch are shown and
// not counted.
func TestGatewayCountsAlarmRaisedAndClearedBetweenPolls(t *testing.T) {
	h := startHarness(t, nil)
	devid := h.sim.Devids()[0]
	first := h.waitHistory("history read", devid, func(hist *History) bool { return len(hist.Alarms.Recent) > 0 })
	for code, n := range first.Alarms.Counts {
		if n != 0 {
			t.Fatalf("alarm %s counted %d times from rows older than the watch", code, n)
		}
	}
	// The active list cannot see the alarm: it fails while the alarm lives.
	id := h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/alarms", Status: 503})
	h.mustRaise(devid, 57)
	h.mustClear(devid, 57)
	h.waitHistory("the occurrence counted", devid, func(hist *History) bool { return hist.Alarms.Counts["57"] > 0 })
	h.sim.Clear(id)
	n, active := h.sim.Requests("POST /v1/modules/alarms/history"), h.sim.Requests("POST /v1/modules/alarms")
	h.waitUntil("two more reads of both lists", func() bool {
		return h.historyReadSince(n+1) && h.sim.Requests("POST /v1/modules/alarms") > active+1
	})
	hist := moduleHistoryOf(h.gw.Status(), devid)
	if got := hist.Alarms.Counts["57"]; got != 1 {
		t.Fatalf("alarm 57 counted %d times, want 1", got)
	}
	if _, ok := hist.Alarms.LastDuration["57"]; !ok {
		t.Errorf("no last duration for alarm 57: %v", hist.Alarms.LastDuration)
	}
	if o := hist.Alarms.Recent[0]; o.Code != "57" || o.End.IsZero() || o.Symbol != "ERROR_NIEUDANE_ROZPALANIE" {
		t.Errorf("newest occurrence = %+v, want 57, finished, named", o)
	}
}

// An alarm seen active and later found finished in the history is one
// occurrence, and its length is its finished row's.
func TestGatewayCountsAlarmSeenActiveThenFinishedOnce(t *testing.T) {
	clock := &simClock{}
	h := startHarness(t, nil, func(o *cloudsim.Options) { o.Now = clock.now })
	devid := h.sim.Devids()[0]
	h.waitHistory("history read", devid, func(*History) bool { return true })
	h.mustRaise(devid, 57)
	h.waitFor("alarm 57 active", func(st *Status) bool {
		hist := moduleHistoryOf(st, devid)
		if hist == nil || hist.Alarms.Counts["57"] != 1 {
			return false
		}
		for _, m := range st.Modules {
			for _, a := range m.ActiveAlarms {
				if m.Devid == devid && a.Code == 57 {
					return true
				}
			}
		}
		return false
	})
	clock.offset.Store(int64(3 * time.Second)) // it lasts 3 s by the cloud's clock
	h.mustClear(devid, 57)
	hist := h.waitHistory("alarm 57 finished", devid, func(hist *History) bool { return hist.Alarms.LastDuration["57"] > 0 })
	if got := hist.Alarms.Counts["57"]; got != 1 {
		t.Fatalf("alarm 57 counted %d times, want 1", got)
	}
	if d := hist.Alarms.LastDuration["57"]; d < 2*time.Second || d > 4*time.Second {
		t.Errorf("last duration = %v, want about 3 s", d)
	}
}

// A fresh start of the exporter (a new gateway on the same cloud) counts
// nothing of the history it finds, and counts what happens after it.
func TestGatewayRestartDoesNotCountOldHistory(t *testing.T) {
	clock := &simClock{}
	// Rows of the first run are stamped 10 s early, so none shares the
	// second the second run's watch begins in.
	clock.offset.Store(int64(-10 * time.Second))
	h := startHarness(t, nil, func(o *cloudsim.Options) { o.Now = clock.now })
	devid := h.sim.Devids()[0]
	h.waitHistory("history read", devid, func(*History) bool { return true })
	for i := 0; i < 3; i++ {
		h.mustRaise(devid, 57)
		clock.offset.Add(int64(time.Second))
		h.mustClear(devid, 57)
	}
	h.waitUntil("three finished rows", func() bool { return len(h.sim.AlarmHistory(devid)) >= 4 })
	h.stop()
	clock.offset.Store(0)

	h2 := startHarnessOn(t, h.sim, nil, nil)
	hist := h2.waitHistory("old history read", devid, func(hist *History) bool { return hist.Alarms.LastDuration["57"] > 0 })
	if got := hist.Alarms.Counts["57"]; got != 0 {
		t.Fatalf("the new start counted alarm 57 %d times from old history, want 0", got)
	}
	h2.mustRaise(devid, 57)
	h2.mustClear(devid, 57)
	h2.waitHistory("the new occurrence counted", devid, func(hist *History) bool { return hist.Alarms.Counts["57"] > 0 })
	n := h2.sim.Requests("POST /v1/modules/alarms/history")
	h2.waitUntil("two more history reads", func() bool { return h2.historyReadSince(n + 1) })
	if got := moduleHistoryOf(h2.gw.Status(), devid).Alarms.Counts["57"]; got != 1 {
		t.Fatalf("alarm 57 counted %d times after one new occurrence, want 1", got)
	}
}

// A command write shows in the change log with its parameter, old and new
// values, who made it and its outcome, and is counted by outcome.
func TestGatewayCommandWriteIsAChange(t *testing.T) {
	h := startHarness(t, nil)
	devid := h.sim.Devids()[0]
	before := h.waitHistory("activity read", devid, func(hist *History) bool { return len(hist.Activity.Recent) > 0 })
	if n := before.Activity.ByState["success"]; n != 0 {
		t.Fatalf("%d changes counted from rows older than the watch", n)
	}
	if before.Activity.LastChange.IsZero() {
		t.Fatal("no last change time from the rows read")
	}
	key := h.firstKey(devid)
	pool, param, _ := cut(key)
	old := h.sim.Params(devid)[key]
	if _, err := h.client.Command(context.Background(), cloudclient.Command{Devid: devid, Pool: pool, Parameter: param, Value: 61, ParameterName: "PARAM_66"}); err != nil {
		t.Fatal(err)
	}
	hist := h.waitHistory("the change counted", devid, func(hist *History) bool { return hist.Activity.ByState["success"] == 1 })
	c := hist.Activity.Recent[0]
	if c.Symbol != "PARAM_66" || c.New != "61" || c.Old != fmt.Sprint(old) || c.State != "success" || c.User == "" {
		t.Fatalf("newest change = %+v, want PARAM_66 %v -> 61 by a user, success", c, old)
	}
	if !c.At.After(before.Activity.LastChange) || !hist.Activity.LastChange.Equal(c.At) {
		t.Errorf("last change = %v, change at %v, before %v", hist.Activity.LastChange, c.At, before.Activity.LastChange)
	}
}

func cut(key string) (pool, param string, ok bool) {
	for i := range key {
		if key[i] == '.' {
			return key[:i], key[i+1:], true
		}
	}
	return key, "", false
}

// A history list answering 503 with an HTML page, or 404, costs those
// reads only: the counts stay, nothing of the module or session is
// touched, and reads resume when the list answers again.
func TestGatewayHistoryListFailureCostsTheReadOnly(t *testing.T) {
	clock := &simClock{}
	h := startHarness(t, nil, func(o *cloudsim.Options) { o.Now = clock.now })
	devid := h.sim.Devids()[0]
	h.waitHistory("history read", devid, func(*History) bool { return true })
	h.mustRaise(devid, 57)
	h.mustClear(devid, 57)
	hist := h.waitHistory("alarm 57 counted", devid, func(hist *History) bool { return hist.Alarms.Counts["57"] == 1 && len(hist.Activity.Recent) > 0 })
	h.waitBound()
	want := hist.Alarms.Counts["57"]
	for _, status := range []int{503, 404} {
		for _, path := range []string{"POST /v1/modules/alarms/history", "POST /v1/modules/activity"} {
			id := h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: path, Status: status})
			n := h.sim.Requests(path)
			h.waitUntil(fmt.Sprintf("three failed reads of %s (%d)", path, status), func() bool { return h.sim.Requests(path) >= n+3 })
			st := h.gw.Status()
			got := moduleHistoryOf(st, devid)
			if got.Alarms.Counts["57"] != want || len(got.Activity.Recent) == 0 {
				t.Fatalf("%d on %s changed the history: counts %v, %d changes", status, path, got.Alarms.Counts, len(got.Activity.Recent))
			}
			if !allOnline(st) || st.PollFailureStreak != 0 || !st.Session.Up {
				t.Fatalf("%d on %s touched module or session health: %+v", status, path, st.Session)
			}
			h.sim.Clear(id)
		}
	}
	clock.offset.Store(int64(2 * time.Second)) // a later start: another occurrence
	h.mustRaise(devid, 57)
	h.mustClear(devid, 57)
	h.waitHistory("a new occurrence counted after the failures", devid, func(hist *History) bool { return hist.Alarms.Counts["57"] == want+1 })
}

// listProxy stands between the gateway's REST client and the simulator: it
// answers the first read of the alarm history and of the activity log
// with the rows a test gives (their times from the first read on, so they
// count as begun within the watch) and every later read with an empty
// page; everything else goes to the simulator.
func listProxy(t *testing.T, sim *cloudsim.Cloud, alarms, activity func(base time.Time) []string) *httptest.Server {
	t.Helper()
	target, err := url.Parse(sim.URL())
	if err != nil {
		t.Fatal(err)
	}
	next := httputil.NewSingleHostReverseProxy(target)
	next.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) }
	var mu sync.Mutex
	var base time.Time
	served := map[string]bool{}
	lists := map[string]struct {
		key  string
		rows func(time.Time) []string
	}{
		"/v1/modules/alarms/history": {"alarms", alarms},
		"/v1/modules/activity":       {"activities", activity},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l, ok := lists[r.URL.Path]
		if !ok || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		if base.IsZero() {
			base = time.Now().UTC().Truncate(time.Second)
		}
		var rows []string
		if !served[r.URL.Path] {
			served[r.URL.Path], rows = true, l.rows(base)
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":true,%q:{"data":[%s]}}`, l.key, strings.Join(rows, ","))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Whether a row of the alarm history or the activity log can be used is
// its decoder's verdict alone (docs/spec.md W-2.7c): rows the decoder reads
// (a time with an offset after a space, epoch milliseconds) are counted,
// and rows it refuses (no module named, even read for one module; a time
// that is digits in a string; an alarm code beyond 32 bits; a change of no
// parameter, without an id or an outcome) are dropped and counted as such.
func TestGatewayHistoryTakesTheDecodersVerdict(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{Modules: 1, ParamsPerModule: 40, Seed: 7, Logger: testLogger()})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	devid := sim.Devids()[0]
	at := func(base time.Time, s int) time.Time { return base.Add(time.Duration(s) * time.Second) }
	spaced := func(t time.Time) string { return t.Format("2006-01-02 15:04:05-07:00") }
	alarms := func(b time.Time) []string {
		return []string{ // newest first
			fmt.Sprintf(`{"id":1,"devid":%q,"created_at":%q,"finished_at":null}`, devid, spaced(at(b, 10))),
			fmt.Sprintf(`{"id":2,"devid":%q,"created_at":%d,"finished_at":null}`, devid, at(b, 9).UnixMilli()),
			fmt.Sprintf(`{"id":3,"devid":%q,"created_at":"%d","finished_at":null}`, devid, at(b, 8).Unix()),
			fmt.Sprintf(`{"id":4,"created_at":%q,"finished_at":null}`, at(b, 7).Format(time.RFC3339)),
			fmt.Sprintf(`{"id":2147483648,"devid":%q,"created_at":%q,"finished_at":null}`, devid, at(b, 6).Format(time.RFC3339)),
			fmt.Sprintf(`{"id":6,"devid":%q,"created_at":%q,"finished_at":""}`, devid, at(b, 5).Format(time.RFC3339)),
		}
	}
	activity := func(b time.Time) []string {
		row := func(fields string, s int) string {
			return fmt.Sprintf(`{"devid":%q,"name":"parameters.PARAM_1","value":2,"prevValue":1,"user":"Jan",%s,"created_at":%q}`,
				devid, fields, at(b, s).Format(time.RFC3339))
		}
		return []string{ // newest first
			fmt.Sprintf(`{"id":10,"devid":%q,"name":"parameters.PARAM_1","state":"success","created_at":%q}`, devid, spaced(at(b, 10))),
			fmt.Sprintf(`{"id":9,"devid":%q,"name":"parameters.PARAM_1","state":"success","created_at":%d}`, devid, at(b, 9).UnixMilli()),
			fmt.Sprintf(`{"id":8,"devid":%q,"value":2,"state":"success","created_at":%q}`, devid, at(b, 8).Format(time.RFC3339)),
			fmt.Sprintf(`{"id":7,"devid":%q,"name":"parameters.PARAM_1","state":"success","created_at":"%d"}`, devid, at(b, 7).Unix()),
			fmt.Sprintf(`{"id":6,"name":"parameters.PARAM_1","state":"success","created_at":%q}`, at(b, 6).Format(time.RFC3339)),
			row(`"state":"success"`, 5),
			row(`"id":4`, 4),
		}
	}
	proxy := listProxy(t, sim, alarms, activity)
	h := startHarnessOn(t, sim, nil, func(c *cloudclient.Config) { c.BaseURL = proxy.URL })
	hist := h.waitHistory("both lists read", devid, func(hist *History) bool {
		return hist.Alarms.Dropped > 0 && hist.Activity.Dropped > 0
	})
	for code, want := range map[string]uint64{"1": 1, "2": 1, "3": 0, "4": 0, "2147483648": 0, "6": 1} {
		if got := hist.Alarms.Counts[code]; got != want {
			t.Errorf("alarm %s counted %d times, want %d (counts %v)", code, got, want, hist.Alarms.Counts)
		}
	}
	if hist.Alarms.Dropped != 3 {
		t.Errorf("%d alarm history rows dropped, want 3 (the digits time, no module, the code beyond 32 bits)", hist.Alarms.Dropped)
	}
	if got := hist.Activity.ByState; !maps.Equal(got, map[string]uint64{"success": 2}) {
		t.Errorf("changes by state %v, want 2 successes (ids 10 and 9)", got)
	}
	var ids []int64
	for _, c := range hist.Activity.Recent {
		ids = append(ids, c.ID)
	}
	if !slices.Equal(ids, []int64{10, 9}) {
		t.Errorf("recent changes %v, want 10 and 9", ids)
	}
	if hist.Activity.Dropped != 5 {
		t.Errorf("%d activity rows dropped, want 5 (no parameter, the digits time, no module, no id, no outcome)", hist.Activity.Dropped)
	}
}
