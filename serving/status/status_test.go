package status

import (
	"bytes"
	"encoding/xml"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

var writeHTML = flag.String("html", "", "also write the rendered scenario page to this file, to look at in a browser")

var t0 = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

const hostileDevid = `<script>alert("x")</script>&"'` + "\x01"

// homeID is the object of the one-object scenario.
const homeID = 101

// scenario: one object, "Home", whose session is down for 95 s, one module
// offline with a last outage, one online, one not known yet, one with a
// hostile devid; episodes on every lane, one older than the window.
func scenario() collector.Snapshot {
	return collector.Snapshot{
		Now: t0,
		Objects: []collector.ObjectState{{
			ID: homeID, Name: "Home",
			Session: collector.SessionState{
				Up: false,
				Outage: collector.Outage{Down: true, DownSince: t0.Add(-95 * time.Second), DownFor: 95 * time.Second, Reason: "handshake_503",
					HasLast: true, LastDownFor: 42 * time.Second, LastReason: "eio_close"},
				OutagesByReason: map[string]uint64{"eio_close": 2, "handshake_503": 1},
				Blinks:          4,
			},
			Push: collector.PushState{Known: true, Healthy: false, StaleFor: 97 * time.Second,
				LastLiveUpdate: t0.Add(-97 * time.Second), LastUpdate: t0.Add(-40 * time.Second), LastResumedAfter: 190 * time.Second},
			Recovery: collector.RecoveryState{
				Actions: map[collector.ActionKey]uint64{
					{Step: collector.StepZombiePrime, Result: collector.ResultOK}:      6,
					{Step: collector.StepHardRestart, Result: collector.ResultFailed}:  2,
					{Step: collector.StepHardRestart, Result: collector.ResultAborted}: 1,
				},
				CooldownLeft: 75 * time.Second, PrimeStreak: 1, HardRestartStreak: 2,
			},
			PollFailureStreak: 1,
			PrimeFailures:     map[string]uint64{"bind": 0, "zombie": 3},
		}},
		Modules: []collector.ModuleState{
			{Devid: "MOD2", ObjectID: homeID, Name: "Garage", Title: "Garage boiler", Version: "3.1.4", GatewayVersion: "V2.08",
				OnlineKnown: true, Online: true, ConnectedAt: t0.Add(-26 * time.Hour).Unix(), LastUpdate: t0.Add(-40 * time.Second),
				Params: 812, NonNumeric: 12, AlarmsKnown: true},
			{Devid: "MOD1", ObjectID: homeID, Name: "Kitchen", Title: "Kitchen boiler", Version: "3.1.4",
				OnlineKnown: true, Online: false, ConnectedAt: 0, LastUpdate: t0.Add(-10 * time.Minute),
				Outage: collector.Outage{Down: true, DownSince: t0.Add(-10 * time.Minute), DownFor: 10 * time.Minute, Reason: "ws",
					HasLast: true, LastDownFor: 8 * time.Second, LastReason: "rest"},
				Params: 790, NonNumeric: 10, Alarms: 2, AlarmsKnown: true},
			{Devid: "MOD3", ObjectID: homeID, Name: "Cellar", Params: 0},
			{Devid: hostileDevid, ObjectID: homeID, Name: `<img src=x onerror=alert(1)>`, OnlineKnown: true, Online: true, ConnectedAt: t0.Add(-time.Hour).Unix()},
		},
		TokenExpiry: t0.Add(50 * time.Minute),
		Episodes: []collector.Episode{
			{Layer: collector.LayerCloud, ObjectID: homeID, Reason: "eio_close", ID: "cloud-00000001", StartedAt: t0.Add(-3 * time.Hour), EndedAt: t0.Add(-3*time.Hour + 42*time.Second), DownFor: 42 * time.Second},
			{Layer: collector.LayerModule, ObjectID: homeID, Devid: "MOD1", Reason: "rest", ID: "module-00000002", StartedAt: t0.Add(-2 * time.Hour), EndedAt: t0.Add(-2*time.Hour + 8*time.Second), DownFor: 8 * time.Second},
			{Layer: collector.LayerLiveStale, ObjectID: homeID, Reason: "live_stale", ID: "live_stale-00000003", StartedAt: t0.Add(-5 * time.Hour), EndedAt: t0.Add(-5*time.Hour + 190*time.Second), DownFor: 190 * time.Second},
			{Layer: collector.LayerModule, ObjectID: homeID, Devid: hostileDevid, Reason: "derived", ID: "module-00000004", StartedAt: t0.Add(-4 * time.Hour), EndedAt: t0.Add(-4*time.Hour + 30*time.Minute), DownFor: 30 * time.Minute},
			// Older than the 6 h window: not drawn.
			{Layer: collector.LayerCloud, ObjectID: homeID, Reason: "stop", ID: "cloud-00000005", StartedAt: t0.Add(-9 * time.Hour), EndedAt: t0.Add(-8 * time.Hour), DownFor: time.Hour},
		},
	}
}

// home is the scenario's one object, to change in a test.
func home(s *collector.Snapshot) *collector.ObjectState { return &s.Objects[0] }

// node is a parsed element of the page.
type node struct {
	Name     string
	Attr     map[string]string
	Children []*node
	Text     string // all text below the node
}

func (n *node) find(pred func(*node) bool) []*node {
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		if pred(x) {
			out = append(out, x)
		}
		for _, c := range x.Children {
			walk(c)
		}
	}
	walk(n)
	return out
}

func (n *node) byID(id string) *node {
	found := n.find(func(x *node) bool { return x.Attr["id"] == id })
	if len(found) != 1 {
		return nil
	}
	return found[0]
}

// byClass is the first element below n whose class list holds class.
func (n *node) byClass(class string) *node {
	found := n.find(func(x *node) bool { return slices.Contains(strings.Fields(x.Attr["class"]), class) })
	if len(found) == 0 {
		return nil
	}
	return found[0]
}

// part is the element of class class in the page's section id (an
// object's "object-<id>"), failing the test when either is missing.
func part(t *testing.T, doc *node, id, class string) *node {
	t.Helper()
	sec := doc.byID(id)
	if sec == nil {
		t.Fatalf("no section %q", id)
	}
	if class == "" {
		return sec
	}
	n := sec.byClass(class)
	if n == nil {
		t.Fatalf("section %q has no %q", id, class)
	}
	return n
}

// moduleRows are the module rows of a section.
func moduleRows(t *testing.T, doc *node, id string) []*node {
	t.Helper()
	return part(t, doc, id, "modules").find(func(n *node) bool { return n.Name == "tr" && strings.HasPrefix(n.Attr["class"], "module ") })
}

var homeSection = objectAnchor(homeID)

func tagged(name string) func(*node) bool { return func(x *node) bool { return x.Name == name } }

// parsePage parses the page strictly as XML: the page is written to be
// well-formed, so an unescaped value from the cloud breaks the parse.
func parsePage(t *testing.T, page []byte) *node {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	root := &node{Name: "#document", Attr: map[string]string{}}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page is not well-formed: %v\n%s", err, page)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &node{Name: tk.Name.Local, Attr: map[string]string{}}
			for _, a := range tk.Attr {
				n.Attr[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.Children = append(top.Children, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			for _, n := range stack {
				n.Text += string(tk)
			}
		}
	}
	if len(stack) != 1 {
		t.Fatalf("unbalanced page: %d elements left open", len(stack)-1)
	}
	return root
}

func render(t *testing.T, s collector.Snapshot, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, s, o); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return buf.Bytes()
}

func TestScenarioPage(t *testing.T) {
	page := render(t, scenario(), Options{})
	if *writeHTML != "" {
		if err := os.WriteFile(*writeHTML, page, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := parsePage(t, page)

	cards := doc.byID("cards")
	if cards == nil {
		t.Fatal("no cards")
	}
	for _, want := range []string{"Cloud session", "DOWN", "Home: down 1m35s · handshake_503", "UNHEALTHY", "2/4 online", "1 offline · Home", "COOLDOWN", "Home: 1m15s left"} {
		if !strings.Contains(cards.Text, want) {
			t.Errorf("cards lack %q: %q", want, cards.Text)
		}
	}
	if sum := part(t, doc, "summary", "").Text; !strings.Contains(sum, "Watching 1 object of the account with 1 realtime session (0 open now)") ||
		!strings.Contains(sum, "2026-11-21 14:50:00 UTC (in 50m00s)") {
		t.Errorf("summary = %q", sum)
	}
	if doc.byID("objects") != nil {
		t.Error("an index of objects for one object")
	}
	if h := part(t, doc, homeSection, "objectname").Text; h != "Home object 101" {
		t.Errorf("section heading %q", h)
	}

	session := part(t, doc, homeSection, "session").Text
	for _, want := range []string{"DOWN", "1m35s", "handshake_503", "since 2026-11-21 13:58:25 UTC", "42s", "eio_close", "eio_close 2, handshake_503 1", "blinks absorbed4",
		"failed polls in a row1", "failed primeszombie 3", "realtimenot open"} {
		if !strings.Contains(session, want) {
			t.Errorf("session panel lacks %q: %q", want, session)
		}
	}
	push := part(t, doc, homeSection, "push").Text
	for _, want := range []string{"UNHEALTHY", "1m37s ago (2026-11-21 13:58:23 UTC)", "40s ago", "3m10s"} {
		if !strings.Contains(push, want) {
			t.Errorf("push panel lacks %q: %q", want, push)
		}
	}
	if strings.Contains(push, "no live update for") {
		t.Errorf("push panel shows a stale age while the session is down: %q", push)
	}

	actions := part(t, doc, homeSection, "actions").find(tagged("tr"))
	if len(actions) != 1+len(collector.RecoverySteps) {
		t.Fatalf("action rows = %d, want header + %d steps", len(actions), len(collector.RecoverySteps))
	}
	if got := cellTexts(actions[2]); strings.Join(got, "|") != "hard_restart|2|0|2|1" {
		t.Errorf("hard_restart row = %v", got)
	}

	rows := moduleRows(t, doc, homeSection)
	if len(rows) != 4 {
		t.Fatalf("module rows = %d, want 4", len(rows))
	}
	// Offline first, then unknown, then online (by devid).
	var order []string
	for _, r := range rows {
		order = append(order, cellTexts(r)[0])
	}
	if order[0] != "MOD1" || order[1] != "MOD3" || order[3] != "MOD2" {
		t.Errorf("module order %q, want MOD1 (offline), MOD3 (unknown), then online ones by devid", order)
	}
	mod1 := cellTexts(rows[0])
	for i, want := range []string{"MOD1", "Kitchen", "OFFLINE", "not connected", "down 10m00s", "10m00s ago", "790", "2"} {
		if !strings.Contains(mod1[i], want) {
			t.Errorf("MOD1 cell %d = %q, want it to contain %q", i, mod1[i], want)
		}
	}
	if !strings.Contains(mod1[4], "ws") || !strings.Contains(mod1[4], "last: 8s · rest") {
		t.Errorf("MOD1 outage cell %q lacks reason ws and last outage", mod1[4])
	}
	mod2 := cellTexts(rows[3])
	if !strings.Contains(mod2[2], "online") || !strings.Contains(mod2[3], "2026-11-20 12:00:00 UTC") || !strings.Contains(mod2[4], "none") {
		t.Errorf("MOD2 row = %q", mod2)
	}
	mod3 := cellTexts(rows[1])
	if !strings.Contains(mod3[2], "unknown") || mod3[3] != "—" || mod3[5] != "never" || mod3[7] != "—" {
		t.Errorf("MOD3 row = %q", mod3)
	}
}

// The recovery panel says each fact once: the streak the ladder climbs on
// sits in the step's row beside that step's results, not in a summary of
// its own that called one aborted hard restart "failed hard restarts 1"
// beside a table with 0 failed; the Recovery card reads the same row.
func TestRecoveryStreakAndResultsAreOneRecord(t *testing.T) {
	s := collector.Snapshot{
		Now: t0, Objects: []collector.ObjectState{{ID: homeID, Session: collector.SessionState{Up: true},
			Recovery: collector.RecoveryState{
				Actions: map[collector.ActionKey]uint64{
					{Step: collector.StepZombiePrime, Result: collector.ResultOK}:      2,
					{Step: collector.StepHardRestart, Result: collector.ResultAborted}: 1,
				},
				HardRestartStreak: 1,
			},
		}},
	}
	doc := parsePage(t, render(t, s, Options{}))
	panel := part(t, doc, homeSection, "recovery").Text
	if strings.Contains(panel, "failed hard restarts") || strings.Contains(panel, "failed recycles") || strings.Contains(panel, "streak") {
		t.Errorf("the recovery panel keeps a summary apart from the table: %q", panel)
	}
	rows := map[string]string{}
	for _, tr := range part(t, doc, homeSection, "actions").find(tagged("tr"))[1:] {
		cells := cellTexts(tr)
		rows[cells[0]] = strings.Join(cells[1:], "|")
	}
	for step, want := range map[string]string{
		collector.StepZombiePrime:      "0|2|0|0",
		collector.StepHardRestart:      "1|0|0|1",
		collector.StepTransportRecycle: "0|0|0|0",
		collector.StepManagerRebuild:   "0|0|0|0",
		collector.StepQuarantine:       "—|0|0|0",
	} {
		if rows[step] != want {
			t.Errorf("%s row (in a row|ok|failed|aborted) = %q, want %q", step, rows[step], want)
		}
	}
	if cards := doc.byID("cards").Text; !strings.Contains(cards, "RECOVERING") || !strings.Contains(cards, "object 101: hard_restart 1 in a row") {
		t.Errorf("the Recovery card does not read the table's row: %q", cards)
	}
}

// An offline module's "connected since" cell says what the app says ("Not
// connected"), not the wire's 0, and not the time of a connection it no
// longer has (a listing that left it out keeps its last connectedAt).
func TestOfflineModuleIsNotConnected(t *testing.T) {
	s := collector.Snapshot{Now: t0, Objects: []collector.ObjectState{{ID: homeID, Session: collector.SessionState{Up: true}}}, Modules: []collector.ModuleState{
		{Devid: "ZERO", ObjectID: homeID, OnlineKnown: true, Online: false, ConnectedAt: 0},
		{Devid: "KEPT", ObjectID: homeID, OnlineKnown: true, Online: false, ConnectedAt: t0.Add(-time.Hour).Unix()},
		{Devid: "UP", ObjectID: homeID, OnlineKnown: true, Online: true, ConnectedAt: t0.Add(-time.Hour).Unix()},
		{Devid: "NEW", ObjectID: homeID},
	}}
	doc := parsePage(t, render(t, s, Options{}))
	if h := cellTexts(part(t, doc, homeSection, "modules").find(tagged("tr"))[0]); h[3] != "connected since" {
		t.Errorf("header %q", h)
	}
	got := map[string]string{}
	for _, tr := range moduleRows(t, doc, homeSection) {
		c := cellTexts(tr)
		got[c[0]] = c[3]
	}
	want := map[string]string{"ZERO": "not connected", "KEPT": "not connected", "UP": "2026-11-21 13:00:00 UTC", "NEW": "—"}
	for d, w := range want {
		if got[d] != w {
			t.Errorf("%s: connected since %q, want %q", d, got[d], w)
		}
	}
}

func cellTexts(tr *node) []string {
	var out []string
	for _, c := range tr.Children {
		if c.Name == "td" || c.Name == "th" {
			out = append(out, strings.TrimSpace(c.Text))
		}
	}
	return out
}

func TestTimeline(t *testing.T) {
	doc := parsePage(t, render(t, scenario(), Options{}))
	svg := doc.byID("timeline")
	if svg == nil || svg.Name != "svg" {
		t.Fatal("no timeline svg")
	}
	lanes := svg.find(func(n *node) bool { return n.Name == "rect" && n.Attr["class"] == "lane" })
	if len(lanes) != 3 {
		t.Errorf("lanes = %d, want 3", len(lanes))
	}
	for _, want := range []string{"cloud session", "modules", "live push"} {
		if !strings.Contains(svg.Text, want) {
			t.Errorf("timeline lacks lane label %q", want)
		}
	}
	bars := svg.find(func(n *node) bool { return n.Name == "rect" && strings.HasPrefix(n.Attr["class"], "bar ") })
	perLayer := map[string]int{}
	ongoing := 0
	titles := ""
	for _, b := range bars {
		perLayer[b.Attr["data-layer"]]++
		if strings.Contains(b.Attr["class"], "ongoing") {
			ongoing++
		}
		x, _ := strconv.ParseFloat(b.Attr["x"], 64)
		w, _ := strconv.ParseFloat(b.Attr["width"], 64)
		if x < tlLabelWidth || x+w > tlWidth-tlRight+0.01 || w < tlMinBar {
			t.Errorf("bar %q out of the plot: x=%v w=%v", b.Text, x, w)
		}
		titles += b.Text + "\n"
	}
	// Finished episodes in the window: 1 cloud, 2 module, 1 live_stale; the
	// 9 h old one is not drawn. Ongoing: the session (down) and MOD1; no live
	// stale bar while the session is down.
	want := map[string]int{collector.LayerCloud: 2, collector.LayerModule: 3, collector.LayerLiveStale: 1}
	for layer, n := range want {
		if perLayer[layer] != n {
			t.Errorf("%s bars = %d, want %d (all: %v)", layer, perLayer[layer], n, perLayer)
		}
	}
	if ongoing != 2 {
		t.Errorf("ongoing bars = %d, want 2", ongoing)
	}
	for _, want := range []string{
		"cloud · Home (object 101) · eio_close · 11:00:00 → 11:00:42 · 42s",
		"module MOD1 · Home (object 101) · rest · 12:00:00 → 12:00:08 · 8s",
		"cloud · Home (object 101) · handshake_503 · 13:58:25 → now (ongoing) · 1m35s",
		"module MOD1 · Home (object 101) · ws · 13:50:00 → now (ongoing) · 10m00s",
		"live_stale · Home (object 101) · live_stale · 09:00:00 → 09:03:10 · 3m10s",
	} {
		if !strings.Contains(titles, want) {
			t.Errorf("no bar titled %q in:\n%s", want, titles)
		}
	}
	if strings.Contains(titles, "stop") {
		t.Errorf("episode older than the window drawn:\n%s", titles)
	}
	// The bar of an episode 3 h ago in a 6 h window sits in the middle.
	for _, b := range bars {
		if strings.Contains(b.Text, "eio_close · 11:00:00") {
			x, _ := strconv.ParseFloat(b.Attr["x"], 64)
			mid := float64(tlLabelWidth) + float64(tlWidth-tlRight-tlLabelWidth)/2
			if x < mid-1 || x > mid+1 {
				t.Errorf("3 h old bar at x=%v, want about %v", x, mid)
			}
		}
	}
	ticks := svg.find(func(n *node) bool { return n.Name == "text" && n.Attr["class"] == "ticklabel" })
	if len(ticks) != 6 {
		t.Errorf("tick labels = %d, want 6 hourly ticks (09:00 … 14:00)", len(ticks))
	}
}

func TestZombieDrawsOngoingLiveStale(t *testing.T) {
	s := scenario()
	home(&s).Session = collector.SessionState{Up: true}
	home(&s).Push = collector.PushState{Known: true, Healthy: false, StaleFor: 20 * time.Minute}
	doc := parsePage(t, render(t, s, Options{}))
	bars := doc.byID("timeline").find(func(n *node) bool {
		return n.Name == "rect" && n.Attr["data-layer"] == collector.LayerLiveStale && strings.Contains(n.Attr["class"], "ongoing")
	})
	if len(bars) != 1 || !strings.Contains(bars[0].Text, "13:40:00 → now (ongoing) · 20m00s") {
		t.Fatalf("ongoing live stale bars: %d %v", len(bars), bars)
	}
	if push := part(t, doc, homeSection, "push").Text; !strings.Contains(push, "no live update for20m00s") {
		t.Errorf("push panel lacks the stale age: %q", push)
	}
}

// TestEveryModuleOfflineHoldsBackTheZombie: with the session up and push
// unhealthy, a page whose modules are all offline says so instead of
// raising the zombie's alarm (the ladder's rule: a module not known yet counts
// as online); the near misses, one module online or one not known yet, keep
// the alarm.
func TestEveryModuleOfflineHoldsBackTheZombie(t *testing.T) {
	offline := func(devid string) collector.ModuleState {
		return collector.ModuleState{Devid: devid, ObjectID: homeID, OnlineKnown: true, Online: false,
			Outage: collector.Outage{Down: true, DownFor: 20 * time.Minute, Reason: "ws"}}
	}
	cases := []struct {
		name     string
		modules  []collector.ModuleState
		heldBack bool
	}{
		{"every module offline", []collector.ModuleState{offline("M1"), offline("M2")}, true},
		{"one module still online", []collector.ModuleState{offline("M1"), {Devid: "M2", ObjectID: homeID, OnlineKnown: true, Online: true}}, false},
		{"one module not known yet", []collector.ModuleState{offline("M1"), {Devid: "M2", ObjectID: homeID}}, false},
		{"no modules", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := scenario()
			home(&s).Session = collector.SessionState{Up: true}
			home(&s).Push = collector.PushState{Known: true, Healthy: false, StaleFor: 20 * time.Minute}
			s.Modules = tc.modules
			doc := parsePage(t, render(t, s, Options{}))
			push := part(t, doc, homeSection, "push")
			pill := push.find(func(n *node) bool { return strings.Contains(n.Attr["class"], "pill") })
			if len(pill) != 1 || !strings.Contains(pill[0].Text, "UNHEALTHY") {
				t.Fatalf("push pill = %v: the signal itself must stay unhealthy", pill)
			}
			alarmed := strings.Contains(pill[0].Attr["class"], classBad)
			cards := doc.byID("cards").Text
			if tc.heldBack {
				if alarmed {
					t.Errorf("push pill raises the zombie's alarm while every module is offline: class %q", pill[0].Attr["class"])
				}
				if !strings.Contains(push.Text, "every module of this object is offline") {
					t.Errorf("push panel does not say why: %q", push.Text)
				}
				if !strings.Contains(cards, "no live update for 20m00s · every module offline") {
					t.Errorf("cards = %q", cards)
				}
				return
			}
			if !alarmed {
				t.Errorf("push pill class %q: a zombie with a module not known offline must alarm", pill[0].Attr["class"])
			}
			if strings.Contains(push.Text, "every module") || strings.Contains(cards, "every module") {
				t.Errorf("page holds back although not every module is offline: %q / %q", push.Text, cards)
			}
		})
	}
}

// TestSessionPanelSaysWhyStillDown: while the session is down the panel
// shows the latest connect failure beside the outage, and also when the
// session has not come up since start (no outage then: the Cloud session
// card says it too); never while up.
func TestSessionPanelSaysWhyStillDown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		session collector.SessionState
		want    string // "" = no connect failure shown
	}{
		{"down, reconnects refused", collector.SessionState{Outage: collector.Outage{Down: true, DownFor: time.Minute, Reason: "disconnect"}, ReconnectFailure: "handshake_503"}, "latest connect failurehandshake_503"},
		{"not up since start", collector.SessionState{ReconnectFailure: "login_unreachable"}, "latest connect failurelogin_unreachable"},
		{"down, no attempt failed yet", collector.SessionState{Outage: collector.Outage{Down: true, DownFor: time.Minute, Reason: "disconnect"}}, ""},
		{"up", collector.SessionState{Up: true, ReconnectFailure: "handshake_503"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scenario()
			home(&s).Session = tc.session
			doc := parsePage(t, render(t, s, Options{}))
			session := part(t, doc, homeSection, "session").Text
			if cards := doc.byID("cards").Text; !tc.session.Up && !tc.session.Outage.Down && !strings.Contains(cards, "not up yet · "+tc.session.ReconnectFailure) {
				t.Errorf("the Cloud session card does not say why the session never came up: %q", cards)
			}
			if tc.want == "" {
				if strings.Contains(session, "connect failure") {
					t.Fatalf("session panel shows a connect failure: %q", session)
				}
				return
			}
			if !strings.Contains(session, tc.want) {
				t.Fatalf("session panel lacks %q: %q", tc.want, session)
			}
		})
	}
}

func TestHostileValuesAreEscaped(t *testing.T) {
	page := render(t, scenario(), Options{})
	for _, bad := range []string{"<script", "<img", "\x01"} {
		if bytes.Contains(page, []byte(bad)) {
			t.Errorf("page contains raw %q", bad)
		}
	}
	doc := parsePage(t, page)
	if n := doc.find(tagged("script")); len(n) != 0 {
		t.Errorf("page has %d script elements", len(n))
	}
	if n := doc.find(tagged("img")); len(n) != 0 {
		t.Errorf("page has %d img elements", len(n))
	}
	// The value is shown, as text.
	rows := moduleRows(t, doc, homeSection)
	var last []string
	for _, r := range rows {
		if c := cellTexts(r); strings.HasPrefix(c[0], "<script>") {
			last = c
		}
	}
	if last == nil {
		t.Fatal("no row shows the hostile devid")
	}
	if last[0] != `<script>alert("x")</script>&"'`+"\uFFFD" {
		t.Errorf("hostile devid shown as %q", last[0])
	}
	if last[1] != `<img src=x onerror=alert(1)>` {
		t.Errorf("hostile name shown as %q", last[1])
	}
}

func TestLongDevidIsShortened(t *testing.T) {
	s := scenario()
	long := strings.Repeat("D", 10*1024)
	s.Modules = []collector.ModuleState{{Devid: long, ObjectID: homeID, OnlineKnown: true, Online: true}}
	page := render(t, s, Options{})
	if len(page) > 40*1024 {
		t.Errorf("page is %d bytes for one module", len(page))
	}
	doc := parsePage(t, page)
	rows := moduleRows(t, doc, homeSection)
	cell := cellTexts(rows[0])[0]
	if !strings.HasSuffix(cell, "…") || len([]rune(cell)) != maxShown {
		t.Errorf("long devid shown as %d runes %q…", len([]rune(cell)), cell[:10])
	}
	if title := rows[0].Attr["title"]; len(title) > maxTitle+len("…") {
		t.Errorf("title attribute of %d bytes", len(title))
	}
}

func TestEmptySnapshotRenders(t *testing.T) {
	doc := parsePage(t, render(t, collector.Snapshot{Now: t0}, Options{Window: time.Hour, Refresh: -1}))
	if n := doc.byID("noobjects"); n == nil || !strings.Contains(n.Text, "No object and no module") {
		t.Error("an empty page not explained")
	}
	if sum := part(t, doc, "summary", "").Text; !strings.Contains(sum, "No object of the account is watched yet") {
		t.Errorf("summary = %q", sum)
	}
	if len(doc.find(func(n *node) bool { return n.Name == "meta" && n.Attr["http-equiv"] == "refresh" })) != 0 {
		t.Error("refresh present although disabled")
	}
	if cards := doc.byID("cards").Text; !strings.Contains(cards, "NONE") || !strings.Contains(cards, "no object watched") || !strings.Contains(cards, "no modules") {
		t.Errorf("cards = %q", cards)
	}
	if ticks := doc.byID("timeline").find(func(n *node) bool { return n.Attr["class"] == "ticklabel" }); len(ticks) != 4 {
		t.Errorf("a 1 h window has %d ticks, want 4 (quarter hours)", len(ticks))
	}
}

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(Handler(collector.SnapshotFunc(scenario), Options{Refresh: 15 * time.Second}))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("content type %q", ct)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("cache control %q", cc)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("content security policy %q", csp)
	}
	doc := parsePage(t, body)
	metas := doc.find(func(n *node) bool { return n.Name == "meta" && n.Attr["http-equiv"] == "refresh" })
	if len(metas) != 1 || metas[0].Attr["content"] != "15" {
		t.Errorf("refresh meta = %v", metas)
	}

	resp, err = http.Post(srv.URL+"/status", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: status %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}

	req, _ := http.NewRequest(http.MethodHead, srv.URL+"/status", nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 0 {
		t.Errorf("HEAD: status %d, %d body bytes", resp.StatusCode, len(body))
	}
}

func TestFmtDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 1500 * time.Millisecond: "2s", 59 * time.Second: "59s", 95 * time.Second: "1m35s",
		time.Hour: "1h00m", 47*time.Hour + 59*time.Minute: "47h59m", 50 * time.Hour: "2d2h", -time.Second: "0s",
	} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
