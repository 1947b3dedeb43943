package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// simAlarms is what the simulator lists as active, per devid, as codes.
func (h *harness) simAlarms() map[string][]int {
	h.t.Helper()
	rows, err := h.client.Alarms(context.Background(), cloudclient.ListRequest{Modules: h.sim.Devids(), Limit: 100})
	if err != nil {
		h.t.Fatalf("simulator alarm list: %v", err)
	}
	out := map[string][]int{}
	for _, r := range rows {
		if !slices.Contains(out[r.Devid], r.ID) {
			out[r.Devid] = append(out[r.Devid], r.ID)
		}
	}
	for _, codes := range out {
		slices.Sort(codes)
	}
	return out
}

func publishedAlarms(st *Status) (map[string][]int, bool) {
	out := map[string][]int{}
	for _, m := range st.Modules {
		if !m.ActiveAlarmsKnown {
			return nil, false
		}
		for _, a := range m.ActiveAlarms {
			out[m.Devid] = append(out[m.Devid], a.Code)
		}
	}
	return out, len(st.Modules) > 0
}

// The active alarm list is read with the module-list poll and published per
// module; a failing alarm list keeps the last one and changes nothing of the
// module, session or push state.
func TestGatewayPublishesActiveAlarmsAndSurvivesTheirFailure(t *testing.T) {
	h := startHarness(t, nil, func(o *cloudsim.Options) { o.Modules = 6 })
	want := h.simAlarms()
	if len(want) == 0 {
		t.Fatal("the simulator lists no active alarm: the test would prove nothing")
	}
	st := h.waitFor("active alarms published", func(st *Status) bool {
		got, ok := publishedAlarms(st)
		return ok && fmt.Sprint(got) == fmt.Sprint(want)
	})
	for _, m := range st.Modules {
		for _, a := range m.ActiveAlarms {
			if a.Since.IsZero() || a.Symbol == "" {
				t.Errorf("%s alarm %d: since %v, symbol %q; want both from the row", m.Devid, a.Code, a.Since, a.Symbol)
			}
		}
	}
	h.waitBound()
	h.waitFor("modules online", allOnline)

	id := h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/alarms", Status: 503})
	before := h.sim.Requests("POST /v1/modules/alarms")
	h.waitUntil("three failed alarm polls", func() bool { return h.sim.Requests("POST /v1/modules/alarms") >= before+3 })
	st = h.gw.Status()
	if got, _ := publishedAlarms(st); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a failing alarm list changed the published alarms: %v, want %v", got, want)
	}
	if !allOnline(st) || st.PollFailureStreak != 0 || !st.Session.Up || !bound(st) {
		t.Errorf("a failing alarm list touched module or session health: online=%v streak=%d session=%+v connected=%v",
			allOnline(st), st.PollFailureStreak, st.Session, st.Connected)
	}
	h.sim.Clear(id)
}

// alarmServer answers POST /v1/modules/alarms with the given pages (1-based)
// and counts the requests.
func alarmServer(t *testing.T, pages [][]map[string]any) (*cloudclient.Client, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/modules/alarms" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		var body struct{ Page int }
		_ = json.NewDecoder(r.Body).Decode(&body)
		rows := []map[string]any{}
		if body.Page >= 1 && body.Page <= len(pages) {
			rows = pages[body.Page-1]
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": true, "alarms": rows})
	}))
	t.Cleanup(srv.Close)
	c, err := cloudclient.New(cloudclient.Config{BaseURL: srv.URL, AssetsURL: srv.URL, Timeout: time.Second, Logger: testLogger(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: "a@b", Password: "x"})})
	if err != nil {
		t.Fatal(err)
	}
	// An unexpired token, so the list calls need no login.
	c.SetToken(cloudclient.Token{AccessToken: "t"})
	return c, &calls
}

func offlineGateway(t *testing.T, c *cloudclient.Client, subscribed ...string) *Gateway {
	t.Helper()
	cfg := fastConfig()
	cfg.Client, cfg.Store, cfg.Logger = c, store.New(), testLogger()
	cfg.NewTransport = func() (transport.Transport, error) { return nil, fmt.Errorf("not used") }
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.subscribed = subscribed
	return g
}

func row(devid string, id int, name, created string) map[string]any {
	return map[string]any{"id": id, "devid": devid, "name": name, "created_at": created, "finished_at": nil}
}

// Every page is read until a short one; a type listed twice counts once with
// its earliest start; modules not watched are ignored; a watched module
// without rows has an empty, known list.
func TestFetchAlarmsPagesAndMerges(t *testing.T) {
	full := make([]map[string]any, cloudclient.DefaultListLimit)
	for i := range full {
		full[i] = row("A", 100+i, "ERR", "2026-01-01T00:00:00Z")
	}
	pages := [][]map[string]any{
		full,
		{row("A", 38, "ERROR_BRAK_PALIWA", "2026-01-02T10:00:00Z"), row("A", 38, "", "2026-01-02 09:00:00"),
			row("X", 5, "ERR", "2026-01-01T00:00:00Z"), row("A", 7, "", "garbage")},
	}
	c, calls := alarmServer(t, pages)
	g := offlineGateway(t, c, "A", "B")
	rows, err := g.fetchAlarms(context.Background(), []string{"A", "B"})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("read %d pages, want 2 (a full page, then a short one)", calls.Load())
	}
	g.setActiveAlarms([]string{"A", "B"}, rows)
	a := g.activeAlarms["A"]
	if len(a) != cloudclient.DefaultListLimit+2 {
		t.Fatalf("A has %d alarms, want %d", len(a), cloudclient.DefaultListLimit+2)
	}
	if a[0].Code != 7 || !a[0].Since.IsZero() {
		t.Errorf("unreadable created_at: %+v, want code 7 with no start", a[0])
	}
	if a[1].Code != 38 || a[1].Symbol != "ERROR_BRAK_PALIWA" || !a[1].Since.Equal(time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("code 38 listed twice: %+v, want one alarm with the earliest start and the symbol", a[1])
	}
	if b, ok := g.activeAlarms["B"]; !ok || len(b) != 0 {
		t.Errorf("B: %v (known %v), want known and empty", b, ok)
	}
	if _, ok := g.activeAlarms["X"]; ok {
		t.Error("a module not watched got alarms")
	}
}

// A cloud that answers full pages forever costs a bounded number of requests.
func TestFetchAlarmsIsBounded(t *testing.T) {
	full := make([]map[string]any, cloudclient.DefaultListLimit)
	for i := range full {
		full[i] = row("A", i, "", "")
	}
	pages := make([][]map[string]any, 100)
	for i := range pages {
		pages[i] = full
	}
	c, calls := alarmServer(t, pages)
	g := offlineGateway(t, c, "A")
	if _, err := g.fetchAlarms(context.Background(), []string{"A"}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != maxAlarmPages {
		t.Errorf("%d requests, want %d", calls.Load(), maxAlarmPages)
	}
}

// The active list reads its rows as the decoder does (docs/spec.md
// W-2.7c): a start the decoder reads (an epoch number) is the alarm's, a
// row without an alarm code names no alarm and is not listed as code 0,
// and a start nobody can read leaves the alarm active with no start.
func TestActiveAlarmsTakeTheDecodersReading(t *testing.T) {
	epoch := row("A", 38, "ERROR_BRAK_PALIWA", "")
	epoch["created_at"] = 1772366400
	noCode := row("A", 0, "ERR", "2026-01-02T10:00:00Z")
	delete(noCode, "id")
	c, _ := alarmServer(t, [][]map[string]any{{epoch, noCode, row("A", 7, "", "garbage")}})
	g := offlineGateway(t, c, "A")
	rows, err := g.fetchAlarms(context.Background(), []string{"A"})
	if err != nil {
		t.Fatal(err)
	}
	g.setActiveAlarms([]string{"A"}, rows)
	want := []Alarm{{Code: 7}, {Code: 38, Symbol: "ERROR_BRAK_PALIWA", Since: time.Unix(1772366400, 0).UTC()}}
	if got := g.activeAlarms["A"]; !slices.EqualFunc(got, want, func(a, b Alarm) bool {
		return a.Code == b.Code && a.Symbol == b.Symbol && a.Since.Equal(b.Since)
	}) {
		t.Errorf("active alarms %+v, want %+v", got, want)
	}
}
