package status

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

// The objects of the two-object account: Home is healthy throughout,
// Cottage is the one in trouble.
const (
	homeObj    = 1001
	cottageObj = 1002
)

// healthyObject is a watched object whose session is up, bound and primed,
// with live updates flowing and the ladder idle.
func healthyObject(id int, name string) collector.ObjectState {
	return collector.ObjectState{
		ID: id, Name: name,
		Session:   collector.SessionState{Up: true, OutagesByReason: map[string]uint64{}},
		Push:      collector.PushState{Known: true, Healthy: true, LastLiveUpdate: t0.Add(-5 * time.Second), LastUpdate: t0.Add(-5 * time.Second)},
		Recovery:  collector.RecoveryState{Actions: map[collector.ActionKey]uint64{}},
		Connected: true, Ready: true,
	}
}

func onlineModule(devid string, object int, name string) collector.ModuleState {
	return collector.ModuleState{Devid: devid, ObjectID: object, Name: name, OnlineKnown: true, Online: true,
		ConnectedAt: t0.Add(-time.Hour).Unix(), LastUpdate: t0.Add(-5 * time.Second), Params: 800, AlarmsKnown: true}
}

// twoObjects is an account of two objects, Home (two modules) and Cottage
// (one), with Cottage's session as trouble makes it; an episode of each.
func twoObjects(trouble func(*collector.ObjectState)) collector.Snapshot {
	cottage := healthyObject(cottageObj, "Cottage")
	trouble(&cottage)
	return collector.Snapshot{
		Now:     t0,
		Objects: []collector.ObjectState{healthyObject(homeObj, "Home"), cottage},
		Modules: []collector.ModuleState{
			onlineModule("HOMEBOILER", homeObj, "Boiler"),
			onlineModule("HOMEVALVE", homeObj, "Valves"),
			onlineModule("COTTAGE1", cottageObj, "Cottage boiler"),
		},
		TokenExpiry: t0.Add(50 * time.Minute),
		Episodes: []collector.Episode{
			{Layer: collector.LayerCloud, ObjectID: homeObj, Reason: "eio_close", ID: "cloud-00000001",
				StartedAt: t0.Add(-3 * time.Hour), EndedAt: t0.Add(-3*time.Hour + 42*time.Second), DownFor: 42 * time.Second},
			{Layer: collector.LayerModule, ObjectID: cottageObj, Devid: "COTTAGE1", Reason: "rest", ID: "module-00000002",
				StartedAt: t0.Add(-2 * time.Hour), EndedAt: t0.Add(-2*time.Hour + 8*time.Second), DownFor: 8 * time.Second},
		},
	}
}

// sessionDown: Cottage's session is down 95 s, reconnects refused, the
// ladder cooling down after two hard restarts.
func sessionDown(o *collector.ObjectState) {
	o.Session = collector.SessionState{
		Outage:           collector.Outage{Down: true, DownSince: t0.Add(-95 * time.Second), DownFor: 95 * time.Second, Reason: "handshake_503"},
		OutagesByReason:  map[string]uint64{"handshake_503": 1},
		ReconnectFailure: "handshake_503",
	}
	o.Push = collector.PushState{Known: true, Healthy: false, LastLiveUpdate: t0.Add(-100 * time.Second)}
	o.Connected, o.Ready = false, true
	o.Recovery = collector.RecoveryState{
		Actions:      map[collector.ActionKey]uint64{{Step: collector.StepHardRestart, Result: collector.ResultFailed}: 2},
		CooldownLeft: 75 * time.Second, HardRestartStreak: 2,
	}
	o.PollFailureStreak = 3
}

// zombie: Cottage's session is up and bound but silent for 20 min, the
// ladder running a hard restart.
func zombie(o *collector.ObjectState) {
	o.Push = collector.PushState{Known: true, Healthy: false, StaleFor: 20 * time.Minute, LastLiveUpdate: t0.Add(-20 * time.Minute)}
	o.Recovery = collector.RecoveryState{
		Actions:     map[collector.ActionKey]uint64{{Step: collector.StepZombiePrime, Result: collector.ResultOK}: 3},
		PrimeStreak: 3,
	}
	o.Recovering = collector.StepHardRestart
}

// cardStates reads the cards of an element as label → state and label →
// class.
func cardStates(n *node) (state, class, detail map[string]string) {
	state, class, detail = map[string]string{}, map[string]string{}, map[string]string{}
	for _, c := range n.find(func(x *node) bool { return slices.Contains(strings.Fields(x.Attr["class"]), "card") }) {
		label := strings.TrimSpace(c.byClass("label").Text)
		state[label] = strings.TrimSpace(c.byClass("state").Text)
		class[label] = strings.TrimPrefix(c.Attr["class"], "card ")
		detail[label] = strings.TrimSpace(c.byClass("detail").Text)
	}
	return state, class, detail
}

// TestEachObjectShowsItsOwnState: with two objects, one healthy and one
// whose session is down or silent, each object's section shows its own
// session, push and ladder state and its own modules; the trouble of one
// does not reach the other's section, and the headline names the object in
// trouble and only it.
func TestEachObjectShowsItsOwnState(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trouble func(*collector.ObjectState)
		// Cottage's cards: session, push, recovery (state and class).
		session, push, recovery [2]string
		sessionText, pushText   []string // in Cottage's panels
		recoveryText            []string
		headline                map[string]string // headline label → detail naming Cottage
		ongoing                 string            // the layer of Cottage's ongoing bar
	}{
		{
			name: "session down", trouble: sessionDown,
			session: [2]string{"DOWN", classBad}, push: [2]string{"UNHEALTHY", classBad}, recovery: [2]string{"COOLDOWN", classWarn},
			sessionText:  []string{"current outage1m35s · reason handshake_503", "latest connect failurehandshake_503", "realtimenot open", "failed polls in a row3"},
			pushText:     []string{"UNHEALTHY", "last live update1m40s ago"},
			recoveryText: []string{"cooldown left1m15s"},
			headline: map[string]string{
				"Cloud sessions": "Cottage: down 1m35s · handshake_503",
				"Recovery":       "Cottage: 1m15s left",
			},
			ongoing: collector.LayerCloud,
		},
		{
			name: "zombie", trouble: zombie,
			session: [2]string{"UP", classOK}, push: [2]string{"UNHEALTHY", classBad}, recovery: [2]string{"RECOVERING", classWarn},
			sessionText:  []string{"UP", "realtimeopen · modules bound, parameters primed"},
			pushText:     []string{"no live update for20m00s"},
			recoveryText: []string{"running nowhard_restart"},
			headline: map[string]string{
				"Live push": "Cottage: no live update for 20m00s",
				"Recovery":  "Cottage: zombie_prime 3 in a row · hard_restart running",
			},
			ongoing: collector.LayerLiveStale,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := parsePage(t, render(t, twoObjects(tc.trouble), Options{}))
			homeSec, cottageSec := objectAnchor(homeObj), objectAnchor(cottageObj)

			// Home: every state as a healthy object has it, the panels folded.
			hs := part(t, doc, homeSec, "")
			if c := hs.Attr["class"]; c != "object ok" {
				t.Errorf("Home's section class %q, want object ok", c)
			}
			state, class, _ := cardStates(hs)
			for label, want := range map[string]string{"Cloud session": "UP", "Live push": "HEALTHY", "Modules": "2/2 online", "Recovery": "IDLE"} {
				if state[label] != want || class[label] != classOK {
					t.Errorf("Home's %s card: %q (%s), want %q (ok)", label, state[label], class[label], want)
				}
			}
			if d := hs.byClass("objdetails"); d == nil || d.Attr["open"] != "" {
				t.Errorf("Home's panels unfolded although Home is healthy: %v", d)
			}
			if txt := part(t, doc, homeSec, "session").Text; !strings.Contains(txt, "realtimeopen · modules bound, parameters primed") || strings.Contains(txt, "DOWN") {
				t.Errorf("Home's session panel: %q", txt)
			}
			if txt := part(t, doc, homeSec, "recovery").Text; !strings.Contains(txt, "cooldown left0s") || strings.Contains(txt, "running now") ||
				!strings.Contains(txt, "no recovery step has run since the exporter started") {
				t.Errorf("Home's recovery panel: %q", txt)
			}
			if part(t, doc, homeSec, "recovery").byClass("actions") != nil {
				t.Error("Home's recovery panel shows a table of zeros")
			}
			if part(t, doc, cottageSec, "recovery").byClass("actions") == nil {
				t.Error("Cottage's recovery panel has no table of its steps")
			}
			if strings.Contains(hs.Text, "Cottage") || strings.Contains(hs.Text, "COTTAGE1") {
				t.Errorf("Home's section shows Cottage's things: %q", hs.Text)
			}

			// Cottage: its own trouble, the panels unfolded.
			cs := part(t, doc, cottageSec, "")
			state, class, _ = cardStates(cs)
			for label, want := range map[string][2]string{"Cloud session": tc.session, "Live push": tc.push, "Recovery": tc.recovery} {
				if state[label] != want[0] || class[label] != want[1] {
					t.Errorf("Cottage's %s card: %q (%s), want %q (%s)", label, state[label], class[label], want[0], want[1])
				}
			}
			if d := cs.byClass("objdetails"); d == nil || d.Attr["open"] != "open" {
				t.Errorf("Cottage's panels folded although Cottage is in trouble")
			}
			for class, wants := range map[string][]string{"session": tc.sessionText, "push": tc.pushText, "recovery": tc.recoveryText} {
				txt := part(t, doc, cottageSec, class).Text
				for _, w := range wants {
					if !strings.Contains(txt, w) {
						t.Errorf("Cottage's %s panel lacks %q: %q", class, w, txt)
					}
				}
			}

			// Each object's modules in its own section.
			for sec, want := range map[string][]string{homeSec: {"HOMEBOILER", "HOMEVALVE"}, cottageSec: {"COTTAGE1"}} {
				var got []string
				for _, r := range moduleRows(t, doc, sec) {
					got = append(got, cellTexts(r)[0])
				}
				if !slices.Equal(got, want) {
					t.Errorf("section %s lists modules %q, want %q", sec, got, want)
				}
			}
			if doc.byID(otherAnchor) != nil {
				t.Error("an Other section although every module has its object")
			}

			// What needs attention first: Cottage's section before Home's.
			var order []string
			for _, sec := range doc.find(func(n *node) bool { return n.Name == "section" }) {
				order = append(order, sec.Attr["id"])
			}
			if !slices.Equal(order, []string{cottageSec, homeSec}) {
				t.Errorf("sections in order %q, want Cottage (in trouble) first", order)
			}

			// The headline names Cottage, never Home.
			headline := part(t, doc, "cards", "")
			_, hclass, hdetail := cardStates(headline)
			for label, want := range tc.headline {
				if hdetail[label] != want {
					t.Errorf("headline %s: %q, want %q", label, hdetail[label], want)
				}
				if hclass[label] == classOK {
					t.Errorf("headline %s is ok although Cottage is in trouble", label)
				}
			}
			if strings.Contains(headline.Text, "Home") {
				t.Errorf("the headline names Home, which is healthy: %q", headline.Text)
			}

			// The index: both objects, linking to their sections, each with
			// its own state.
			rows := part(t, doc, "objects", "").find(func(n *node) bool { return n.Name == "tr" && strings.HasPrefix(n.Attr["class"], "object ") })
			if len(rows) != 2 {
				t.Fatalf("index rows = %d, want 2", len(rows))
			}
			for _, r := range rows {
				a := r.find(tagged("a"))
				if len(a) != 1 || doc.byID(strings.TrimPrefix(a[0].Attr["href"], "#")) == nil {
					t.Errorf("index row %q does not link to a section: %v", cellTexts(r), a)
				}
			}
			if got := cellTexts(rows[1]); !slices.Equal(got, []string{"Home", fmt.Sprint(homeObj), "NONE", "UP", "HEALTHY", "2/2 online", "IDLE"}) {
				t.Errorf("Home's index row %q", got)
			}
			if got := cellTexts(rows[0]); got[0] != "Cottage" || got[2] != "NONE" || got[3] != tc.session[0] || got[4] != tc.push[0] || got[6] != tc.recovery[0] {
				t.Errorf("Cottage's index row %q", got)
			}

			// The ongoing bar is Cottage's, and says so.
			bars := part(t, doc, "timeline", "").find(func(n *node) bool {
				return n.Name == "rect" && strings.Contains(n.Attr["class"], "ongoing")
			})
			if len(bars) != 1 || bars[0].Attr["data-layer"] != tc.ongoing || bars[0].Attr["data-object"] != cottageSec ||
				!strings.Contains(bars[0].Text, "Cottage (object 1002)") {
				t.Errorf("ongoing bars %v, want one %s bar of Cottage", bars, tc.ongoing)
			}
		})
	}
}

// TestSummarySaysHowManySessionsAndWhy: the page says how many objects and
// realtime sessions the exporter holds, how many are open, and why one
// session per object.
func TestSummarySaysHowManySessionsAndWhy(t *testing.T) {
	s := twoObjects(sessionDown)
	s.ObjectListFailureStreak = 2
	doc := parsePage(t, render(t, s, Options{}))
	sum := part(t, doc, "summary", "").Text
	for _, want := range []string{
		"Watching 2 objects of the account with 2 realtime sessions (1 open now), one per object",
		"binds a Socket.IO session to the modules of one object (its group_id)",
		"the login and its access token are shared by all",
		"access token (shared): 2026-11-21 14:50:00 UTC (in 50m00s)",
		"object listing failed 2 in a row",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q: %q", want, sum)
		}
	}
	s.ObjectListFailureStreak = 0
	if sum := part(t, parsePage(t, render(t, s, Options{})), "summary", "").Text; strings.Contains(sum, "object listing") {
		t.Errorf("summary reports a failed object listing at streak 0: %q", sum)
	}
}

// TestHealthyAccountIsAllGreen: with every object's session up and pushing,
// every headline card and every section is ok, and nothing reads down; the
// page takes each session's state from its object alone.
func TestHealthyAccountIsAllGreen(t *testing.T) {
	doc := parsePage(t, render(t, twoObjects(func(*collector.ObjectState) {}), Options{}))
	state, class, _ := cardStates(part(t, doc, "cards", ""))
	for label, want := range map[string]string{"Cloud sessions": "UP", "Live push": "HEALTHY", "Modules": "3/3 online", "Recovery": "IDLE"} {
		if state[label] != want || class[label] != classOK {
			t.Errorf("headline %s: %q (%s), want %q (ok)", label, state[label], class[label], want)
		}
	}
	for _, id := range []int{homeObj, cottageObj} {
		sec := part(t, doc, objectAnchor(id), "")
		if c := sec.Attr["class"]; c != "object ok" {
			t.Errorf("section of object %d: class %q", id, c)
		}
		if strings.Contains(sec.Text, "DOWN") || strings.Contains(sec.Text, "UNHEALTHY") {
			t.Errorf("section of object %d reads down: %q", id, sec.Text)
		}
	}
}

// TestModuleOfNoWatchedObjectStillShows: a module whose object is not among
// the watched ones is listed under Other modules, and said to be there;
// it never disappears silently, and counts in the headline.
func TestModuleOfNoWatchedObjectStillShows(t *testing.T) {
	s := twoObjects(func(*collector.ObjectState) {})
	orphan := onlineModule("ORPHAN", 4242, "Barn")
	orphan.Online = false
	s.Modules = append(s.Modules, orphan)
	doc := parsePage(t, render(t, s, Options{}))

	other := part(t, doc, otherAnchor, "")
	rows := moduleRows(t, doc, otherAnchor)
	if len(rows) != 1 || cellTexts(rows[0])[0] != "ORPHAN" {
		t.Fatalf("Other section rows %v, want ORPHAN", rows)
	}
	if !strings.Contains(other.Text, "Other modules") || !strings.Contains(other.Text, "belong to no watched object") {
		t.Errorf("Other section does not say what it is: %q", other.Text)
	}
	if other.byClass("objdetails") != nil {
		t.Error("the Other section shows a session of its own")
	}
	if sum := part(t, doc, "summary", "").Text; !strings.Contains(sum, "1 module belongs to no watched object") {
		t.Errorf("summary = %q", sum)
	}
	state, class, detail := cardStates(part(t, doc, "cards", ""))
	if state["Modules"] != "3/4 online" || class["Modules"] != classBad || !strings.Contains(detail["Modules"], "Other modules") {
		t.Errorf("headline Modules card %q (%s) %q", state["Modules"], class["Modules"], detail["Modules"])
	}
	// The sections of the watched objects are untouched by it.
	for _, id := range []int{homeObj, cottageObj} {
		if c := part(t, doc, objectAnchor(id), "").Attr["class"]; c != "object ok" {
			t.Errorf("section of object %d: class %q", id, c)
		}
	}
	// Even with no object watched at all.
	s.Objects = nil
	doc = parsePage(t, render(t, s, Options{}))
	if rows := moduleRows(t, doc, otherAnchor); len(rows) != 4 {
		t.Errorf("with no object watched, Other lists %d modules, want 4", len(rows))
	}
}

// TestEpisodesNameTheirObject: the list of recent outages under the
// timeline names each outage's object and links to its section; an object
// that is no longer watched is named by its id.
func TestEpisodesNameTheirObject(t *testing.T) {
	s := twoObjects(func(*collector.ObjectState) {})
	s.Episodes = append(s.Episodes, collector.Episode{Layer: collector.LayerCloud, ObjectID: 777, Reason: "disconnect", ID: "cloud-00000003",
		StartedAt: t0.Add(-time.Hour), EndedAt: t0.Add(-time.Hour + time.Minute), DownFor: time.Minute})
	doc := parsePage(t, render(t, s, Options{}))
	var got [][]string
	var links []string
	for _, r := range part(t, doc, "episodes", "").find(func(n *node) bool { return n.Name == "tr" && n.Attr["class"] == "episode" }) {
		got = append(got, cellTexts(r))
		href := ""
		if a := r.find(tagged("a")); len(a) == 1 {
			href = a[0].Attr["href"]
		}
		links = append(links, href)
	}
	want := [][]string{
		{"2026-11-21 13:01:00 UTC", "cloud", "object 777 (not watched)", "", "disconnect", "1m00s"},
		{"2026-11-21 12:00:08 UTC", "module", "Cottage (object 1002)", "COTTAGE1", "rest", "8s"},
		{"2026-11-21 11:00:42 UTC", "cloud", "Home (object 1001)", "", "eio_close", "42s"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("episodes\n got %q\nwant %q", got, want)
	}
	if wantLinks := []string{"", "#" + objectAnchor(cottageObj), "#" + objectAnchor(homeObj)}; !slices.Equal(links, wantLinks) {
		t.Errorf("episode links %q, want %q", links, wantLinks)
	}
	var titles []string
	for _, b := range part(t, doc, "timeline", "").find(func(n *node) bool { return n.Name == "rect" && strings.HasPrefix(n.Attr["class"], "bar ") }) {
		titles = append(titles, b.Attr["data-object"]+" "+strings.TrimSpace(b.Text))
	}
	slices.Sort(titles)
	wantTitles := []string{
		" cloud · object 777 (not watched) · disconnect · 13:00:00 → 13:01:00 · 1m00s",
		objectAnchor(homeObj) + " cloud · Home (object 1001) · eio_close · 11:00:00 → 11:00:42 · 42s",
		objectAnchor(cottageObj) + " module COTTAGE1 · Cottage (object 1002) · rest · 12:00:00 → 12:00:08 · 8s",
	}
	slices.Sort(wantTitles)
	if !slices.Equal(titles, wantTitles) {
		t.Errorf("bars\n got %q\nwant %q", titles, wantTitles)
	}
}

// TestEpisodeListIsBounded: the list under the timeline keeps the newest
// outages and says how many more the window holds.
func TestEpisodeListIsBounded(t *testing.T) {
	s := twoObjects(func(*collector.ObjectState) {})
	s.Episodes = nil
	for i := range maxEpisodeRows + 7 {
		end := t0.Add(-time.Duration(i+1) * time.Minute)
		s.Episodes = append(s.Episodes, collector.Episode{Layer: collector.LayerCloud, ObjectID: homeObj, Reason: "disconnect",
			ID: fmt.Sprintf("cloud-%08x", i), StartedAt: end.Add(-time.Second), EndedAt: end, DownFor: time.Second})
	}
	doc := parsePage(t, render(t, s, Options{}))
	rows := part(t, doc, "episodes", "").find(func(n *node) bool { return n.Name == "tr" && n.Attr["class"] == "episode" })
	if len(rows) != maxEpisodeRows || cellTexts(rows[0])[0] != "2026-11-21 13:59:00 UTC" {
		t.Errorf("%d rows, first %q: want the newest %d", len(rows), cellTexts(rows[0]), maxEpisodeRows)
	}
	if txt := part(t, doc, "episodes", "").Text; !strings.Contains(txt, "and 7 older outages in the window") {
		t.Errorf("the list does not say what it left out: %q", txt)
	}
}

// TestHeadlineNamesAFewObjects: with many objects down the headline names
// the first few and counts the rest; the one up is not named. A headline
// over objects in different states of one class shows each state.
func TestHeadlineNamesAFewObjects(t *testing.T) {
	s := collector.Snapshot{Now: t0}
	for i := range 6 {
		o := healthyObject(2000+i, fmt.Sprintf("House %d", i))
		if i < 5 {
			sessionDown(&o)
		} else {
			zombie(&o)
		}
		s.Objects = append(s.Objects, o)
	}
	state, class, detail := cardStates(part(t, parsePage(t, render(t, s, Options{})), "cards", ""))
	if state["Cloud sessions"] != "5/6 DOWN" || class["Cloud sessions"] != classBad {
		t.Errorf("Cloud sessions card %q (%s), want 5/6 DOWN", state["Cloud sessions"], class["Cloud sessions"])
	}
	d := detail["Cloud sessions"]
	if !strings.HasPrefix(d, "House 0: down 1m35s · handshake_503; House 1: ") || !strings.HasSuffix(d, "; and 2 more") || strings.Contains(d, "House 5") {
		t.Errorf("Cloud sessions detail %q", d)
	}
	if state["Recovery"] != "COOLDOWN · RECOVERING" || class["Recovery"] != classWarn {
		t.Errorf("Recovery card %q (%s), want both states of the warning class", state["Recovery"], class["Recovery"])
	}
}

// TestHostileObjectNameIsEscaped: an object's name comes from the account;
// it is shown as text, cleaned of control characters and shortened,
// wherever the page names the object.
func TestHostileObjectNameIsEscaped(t *testing.T) {
	hostile := `<script>alert("o")</script>` + "\x07" + strings.Repeat("x", 200)
	s := twoObjects(sessionDown)
	s.Objects[1].Name = hostile
	page := render(t, s, Options{})
	if strings.Contains(string(page), "<script") || strings.Contains(string(page), "\x07") {
		t.Fatal("the object's name is in the page raw")
	}
	doc := parsePage(t, page)
	want := clean(hostile, maxShown)
	if !strings.HasPrefix(want, `<script>alert("o")</script>`+"\uFFFD") || !strings.HasSuffix(want, "…") {
		t.Fatalf("clean gave %q", want)
	}
	if h := strings.TrimSpace(part(t, doc, objectAnchor(cottageObj), "objectname").Text); !strings.HasPrefix(h, want) {
		t.Errorf("section heading %q", h)
	}
	if d := part(t, doc, "cards", "").Text; !strings.Contains(d, want+": down 1m35s") {
		t.Errorf("headline %q", d)
	}
	var buf strings.Builder
	if found, err := RenderModule(&buf, s, nil, "COTTAGE1", Options{}); !found || err != nil {
		t.Fatal(found, err)
	}
	if a := parsePage(t, []byte(buf.String())).byID("object"); a == nil || strings.TrimSpace(a.Text) != want {
		t.Errorf("module page names the object %v", a)
	}
}

// TestOverlappingOutagesAreOneBar: outages that overlap on the plot of one
// lane (the cloud dropping every object's session at once) are drawn as one
// bar whose hover text names every object, up to a bound; outages apart stay
// apart, and a bar of one object keeps its link to the object's section.
func TestOverlappingOutagesAreOneBar(t *testing.T) {
	s := twoObjects(func(*collector.ObjectState) {})
	s.Episodes = nil
	at := t0.Add(-2 * time.Hour)
	for i := range tlMaxTitleLines + 3 {
		id := homeObj
		if i%2 == 1 {
			id = cottageObj
		}
		start := at.Add(time.Duration(i) * time.Second)
		s.Episodes = append(s.Episodes, collector.Episode{Layer: collector.LayerCloud, ObjectID: id, Reason: "eio_close",
			ID: fmt.Sprintf("cloud-%08x", i), StartedAt: start, EndedAt: start.Add(30 * time.Second), DownFor: 30 * time.Second})
	}
	// An hour later, Home alone.
	s.Episodes = append(s.Episodes, collector.Episode{Layer: collector.LayerCloud, ObjectID: homeObj, Reason: "disconnect", ID: "cloud-000000ff",
		StartedAt: at.Add(time.Hour), EndedAt: at.Add(time.Hour + time.Minute), DownFor: time.Minute})
	doc := parsePage(t, render(t, s, Options{}))
	bars := part(t, doc, "timeline", "").find(func(n *node) bool { return n.Name == "rect" && n.Attr["data-layer"] == collector.LayerCloud })
	if len(bars) != 2 {
		t.Fatalf("%d cloud bars, want 2: the overlapping outages as one, the later one apart", len(bars))
	}
	merged, alone := bars[0], bars[1]
	title := strings.TrimSpace(merged.Text)
	lines := strings.Split(title, "\n")
	if lines[0] != fmt.Sprintf("%d outages", tlMaxTitleLines+3) || len(lines) != 1+tlMaxTitleLines+1 || lines[len(lines)-1] != "… and 3 more" {
		t.Errorf("merged bar's title:\n%s", title)
	}
	if !strings.Contains(title, "Home (object 1001)") || !strings.Contains(title, "Cottage (object 1002)") {
		t.Errorf("merged bar's title does not name both objects:\n%s", title)
	}
	if _, ok := merged.Attr["data-object"]; ok {
		t.Errorf("a bar of two objects links to one: %q", merged.Attr["data-object"])
	}
	if w, _ := strconv.ParseFloat(merged.Attr["width"], 64); w < tlMinBar {
		t.Errorf("merged bar width %v", w)
	}
	if alone.Attr["data-object"] != objectAnchor(homeObj) || !strings.HasPrefix(strings.TrimSpace(alone.Text), "cloud · Home (object 1001) · disconnect") {
		t.Errorf("the later bar: %v %q", alone.Attr, alone.Text)
	}
	// The list under the timeline keeps every outage apart.
	if rows := part(t, doc, "episodes", "").find(func(n *node) bool { return n.Attr["class"] == "episode" }); len(rows) != tlMaxTitleLines+4 {
		t.Errorf("%d rows in the list, want %d", len(rows), tlMaxTitleLines+4)
	}
}
