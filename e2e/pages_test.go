package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// waitModulesListed waits until /status lists every module of the
// simulated cloud (the first module-list poll is done).
func waitModulesListed(t *testing.T, exp *exporter) {
	t.Helper()
	waitFor(t, 30*time.Second, "/status lists every module", func() (bool, string) {
		code, body := httpGet(t, nil, exp.url+"/status")
		if code != http.StatusOK {
			return false, fmt.Sprintf("HTTP %d", code)
		}
		for _, d := range exp.devids {
			if !strings.Contains(body, ">"+d+"<") {
				return false, "missing " + d
			}
		}
		return true, ""
	})
}

// TestStatusPageInBrowser loads /status from `serve --simulate` in chromium
// and reads the module table and the health cards as rendered.
func TestStatusPageInBrowser(t *testing.T) {
	t.Parallel()
	exp := startServeSimulate(t)
	waitModulesListed(t, exp)

	b := newBrowser(t)
	b.open("status", exp.url+"/status")

	if got := b.texts("h1"); !slices.Equal(got, []string{"bragerone_exporter status"}) {
		t.Errorf("heading %q", got)
	}
	devids := b.texts("table.modules tr.module td.devid")
	slices.Sort(devids)
	if !slices.Equal(devids, exp.devids) {
		t.Errorf("module rows show devids %q, want %q", devids, exp.devids)
	}
	names := b.texts("table.modules tr.module td:nth-child(2)")
	for i := range exp.devids {
		want := fmt.Sprintf("Boiler room %d", i+1)
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no module row named %q; names %q", want, names)
		}
	}
	labels := b.texts("#cards .card .label")
	for _, want := range []string{"boiler alarms", "cloud sessions", "live push", "modules", "recovery"} {
		if !slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, want) }) {
			t.Errorf("no %q card; cards %q", want, labels)
		}
	}
	b.noConsoleErrors()
}

// noFavicon keeps the browser from asking the fixture server for
// /favicon.ico, whose 404 would be a console error of its own.
const noFavicon = `<link rel="icon" href="data:,">`

// TestBrowserReportsConsoleErrors proves the console check can fail: a page
// that logs an error and throws is reported, one that does neither is not.
func TestBrowserReportsConsoleErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/bad":
			fmt.Fprint(w, `<!DOCTYPE html><title>bad</title>`+noFavicon+`<p>bad</p>`+
				`<script>console.error("broken widget"); null.boom;</script>`)
		case "/good":
			fmt.Fprint(w, `<!DOCTYPE html><title>good</title>`+noFavicon+`<p>fine</p><script>console.log("hello")</script>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	b := newBrowser(t)
	b.open("bad", srv.URL+"/bad")
	problems := b.consoleProblems()
	if len(problems) != 2 || !strings.Contains(problems[0], "broken widget") || !strings.Contains(problems[1], "null") {
		t.Errorf("console problems of a broken page = %q, want the error and the exception", problems)
	}
	b.open("good", srv.URL+"/good")
	if problems := b.consoleProblems(); len(problems) != 0 {
		t.Errorf("console problems of a clean page = %q, want none", problems)
	}
}

// A missing browser is an error naming what to install, so the browser
// tests fail rather than skip.
func TestMissingChromiumIsAnError(t *testing.T) {
	t.Setenv(chromiumEnv, "/nonexistent/chromium")
	if _, err := chromiumPath(); err == nil {
		t.Fatal("a browser path that does not exist was accepted")
	}
	t.Setenv(chromiumEnv, "")
	t.Setenv("PATH", t.TempDir())
	_, err := chromiumPath()
	if err == nil || !strings.Contains(err.Error(), `Debian package "chromium"`) {
		t.Fatalf("err = %v, want one naming the Debian package", err)
	}
}

// waitCatalogLoaded waits until the exporter has read the parameter catalog.
func waitCatalogLoaded(t *testing.T, exp *exporter) {
	t.Helper()
	exp.waitMetric(t, 60*time.Second, "bragerone_catalog_loaded 1", valueIs("bragerone_catalog_loaded", nil, 1))
}

// TestModulePagesInBrowser follows the module links of /status in chromium
// to each module's page and reads its parameters as rendered: grouped by the
// menus of the controller's app, with names, displayed values and units.
func TestModulePagesInBrowser(t *testing.T) {
	t.Parallel()
	exp := startServeSimulate(t)
	waitModulesListed(t, exp)
	waitCatalogLoaded(t, exp)

	// Once the exporter reads the modules' past, their pages show it: the
	// simulator's log holds three changes and its alarm history one
	// finished occurrence of every module. Until then (or without it) the
	// sections say it was not read yet.
	historyRead := false
	deadline := time.Now().Add(15 * time.Second)
	for !historyRead && time.Now().Before(deadline) {
		if s, _ := exp.scrapeOrErr(); s != nil && len(s.series("bragerone_module_changes_total", nil)) > 0 {
			historyRead = true
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	b := newBrowser(t)
	b.open("status", exp.url+"/status")
	b.noConsoleErrors()

	// The simulator's first module is a boiler seen by an installer, its
	// third a mixing-valve controller.
	for _, m := range []struct {
		name   string
		menus  []string
		rows   map[string]string // parameter name → unit
		state  string            // a parameter shown by a state's label
		alarms []string          // active alarms by name (the code where the web app has none)
	}{
		{"Boiler room 1", []string{"Boiler", "Hot water", "Service parameters › Burner", "Information"},
			map[string]string{"Boiler temperature": "°C", "Boiler power": "kW", "Water pressure": "bar", "Boiler set temperature": "°C"},
			"Boiler state", []string{"Out of fuel"}},
		{"Boiler room 3", []string{"Valve 1", "Thermostats"},
			map[string]string{"Valve 1 temperature": "°C", "Room temperature": "°C", "Room set temperature": "°C"},
			"Valve 1 pump", []string{"ERROR_MODUL_ROZSZERZEN\ncode 91, no translation in en"}},
	} {
		links := b.attrs("table.modules tr.module td.name a", "href")
		names := b.texts("table.modules tr.module td.name a")
		i := slices.Index(names, m.name)
		if i < 0 {
			t.Fatalf("no module link named %q on /status: %q", m.name, names)
		}
		b.click(strings.ReplaceAll(m.name, " ", "-"), fmt.Sprintf(`table.modules tr.module td.name a[href=%q]`, links[i]))
		if loc := b.location(); !strings.Contains(loc, "/status/modules/") {
			t.Fatalf("%s: the link led to %s", m.name, loc)
		}
		if h := b.texts("h1"); !slices.Equal(h, []string{m.name}) {
			t.Errorf("%s: heading %q", m.name, h)
		}
		if got := b.texts("section.menu h2"); !slices.Equal(got, m.menus) {
			t.Errorf("%s: menu sections %q, want %q", m.name, got, m.menus)
		}
		params := b.texts("section.menu tr.param td.name")
		values := b.texts("section.menu tr.param td.value")
		units := b.texts("section.menu tr.param td.unit")
		if len(params) != len(values) || len(params) != len(units) {
			t.Fatalf("%s: %d names, %d values, %d units", m.name, len(params), len(values), len(units))
		}
		for name, unit := range m.rows {
			j := slices.Index(params, name)
			if j < 0 {
				t.Errorf("%s: no row %q among %q", m.name, name, params)
				continue
			}
			if units[j] != unit {
				t.Errorf("%s: %s unit %q, want %q", m.name, name, units[j], unit)
			}
			if _, err := strconv.ParseFloat(values[j], 64); err != nil {
				t.Errorf("%s: %s shows %q, want a number", m.name, name, values[j])
			}
		}
		if j := slices.Index(params, m.state); j < 0 || values[j] == "" || values[j] == "—" || units[j] != "" {
			t.Errorf("%s: %s row: value %q unit %q, want a state's label", m.name, m.state, values, units)
		}
		if got := b.texts("#alarms tr.alarm td:first-child"); !slices.Equal(got, m.alarms) {
			t.Errorf("%s: active alarms %q, want %q", m.name, got, m.alarms)
		}
		checkHistorySections(t, b, m.name, historyRead)
		b.noConsoleErrors()
		b.click(strings.ReplaceAll(m.name, " ", "-")+"-back", "#back")
		if h := b.texts("h1"); !slices.Equal(h, []string{"bragerone_exporter status"}) {
			t.Fatalf("the back link led to %q", h)
		}
	}
}

// checkHistorySections reads a module page's "Recent changes" and "Alarm
// history": with the module's history read, the simulator's changes (by
// its demo user, each with its outcome) and its finished alarm (code 12,
// a quarter of an hour); else the note that it was not read yet.
func checkHistorySections(t *testing.T, b *browser, name string, read bool) {
	t.Helper()
	if got := b.texts("#changes-heading"); !slices.Equal(got, []string{"Recent changes"}) {
		t.Errorf("%s: changes heading %q", name, got)
	}
	if got := b.texts("#alarmhistory-heading"); !slices.Equal(got, []string{"Alarm history"}) {
		t.Errorf("%s: alarm history heading %q", name, got)
	}
	if !read {
		for _, id := range []string{"#changes-none", "#alarmhistory-none"} {
			if got := b.texts(id); len(got) != 1 || !strings.Contains(got[0], "not read yet") {
				t.Errorf("%s: %s reads %q", name, id, got)
			}
		}
		return
	}
	users := b.texts("#changes tr.change td.user")
	states := b.texts("#changes tr.change td.state")
	values := b.texts("#changes tr.change td.values")
	if len(users) < 3 || len(states) != len(users) || len(values) != len(users) {
		t.Fatalf("%s: changes: users %q, states %q, values %q", name, users, states, values)
	}
	for i := range users {
		if users[i] != "Demo User" || states[i] != "success" || !strings.Contains(values[i], " → ") {
			t.Errorf("%s: change %d: %q %q %q", name, i, users[i], values[i], states[i])
		}
	}
	codes := b.texts("#alarmhistory tr.pastalarm td:nth-child(2)")
	durations := b.texts("#alarmhistory tr.pastalarm td:nth-child(5)")
	if i := slices.IndexFunc(codes, func(c string) bool { return strings.HasSuffix(c, " 12") }); i < 0 || durations[i] != "15m00s" {
		t.Errorf("%s: alarm history codes %q durations %q: no finished code 12 of 15m00s", name, codes, durations)
	}
}

// objectSection is the HTML of one object's section of /status ("" when
// the page has none).
func objectSection(page string, id int) string {
	for _, part := range strings.Split(page, "<section ")[1:] {
		tag, _, _ := strings.Cut(part, ">")
		if strings.Contains(tag, fmt.Sprintf(`id="object-%d"`, id)) {
			sec, _, _ := strings.Cut(part, "</section>")
			return sec
		}
	}
	return ""
}

// cardState is how a section's card of label reads in the page's HTML.
func cardState(label, state string) string {
	return `<div class="label">` + label + `</div><div class="state">` + state + `</div>`
}

// TestStatusPageTwoObjectsInBrowser runs `serve --simulate` with the demo's
// two objects, Home (two modules) and Cottage (one), mutes Cottage's pushes
// alone (a zombie session) and reads /status in chromium: one section per
// object, each with its own session, push and ladder state and its own
// modules; Cottage's trouble leaves Home's section green, and the headline
// names Cottage only. Cottage's module page names its object and links back
// to its section.
func TestStatusPageTwoObjectsInBrowser(t *testing.T) {
	t.Parallel()
	// Drift pushes every 2 s: a 10 s stale threshold keeps Home healthy on a
	// busy machine; a 10 min cooldown holds Cottage's ladder after its first
	// step, so the page is steady while the browser reads it.
	exp := startServeSimulate(t, "--simulate.objects=2", "--poll.interval=200ms", "--session.supervisor-interval=200ms",
		"--push.stale-after=10s", "--recovery.cooldown=10m", "--recovery.cooldown-max=10m")
	waitModulesListed(t, exp)
	objects := exp.sim.state(t).Objects
	if len(objects) != 2 || objects[0].Name != "Home" || objects[1].Name != "Cottage" {
		t.Fatalf("the simulated account holds %+v, want Home and Cottage", objects)
	}
	home, cottage := objects[0], objects[1]

	exp.sim.inject(t, cloudsim.Fault{Kind: cloudsim.FaultMutePushes, ObjectID: cottage.ID})
	waitFor(t, 60*time.Second, "/status shows Cottage silent and Home healthy", func() (bool, string) {
		code, page := httpGet(t, nil, exp.url+"/status")
		if code != http.StatusOK {
			return false, fmt.Sprintf("HTTP %d", code)
		}
		h, c := objectSection(page, home.ID), objectSection(page, cottage.ID)
		return strings.Contains(h, cardState("Live push", "HEALTHY")) && strings.Contains(c, cardState("Live push", "UNHEALTHY")),
			"Home: " + h + "\nCottage: " + c
	})

	b := newBrowser(t)
	b.open("status", exp.url+"/status")
	b.noConsoleErrors()

	homeSec, cottageSec := fmt.Sprintf("object-%d", home.ID), fmt.Sprintf("object-%d", cottage.ID)
	// The simulator's boilers report an alarm in each object ("Out of
	// fuel" in Home, code 91 in Cottage): both sections are drawn in the
	// alarm colour, and Cottage, whose health is in trouble too, leads.
	if got := b.attrs("section.object", "id"); !slices.Equal(got, []string{cottageSec, homeSec}) {
		t.Errorf("sections %q, want Cottage's then Home's", got)
	}
	if got := b.texts("section.object h2.objectname"); !slices.Equal(got, []string{fmt.Sprintf("Cottage object %d", cottage.ID), fmt.Sprintf("Home object %d", home.ID)}) {
		t.Errorf("section headings %q", got)
	}
	for _, sec := range []string{homeSec, cottageSec} {
		if got := b.attrs("#"+sec, "class"); !slices.Equal(got, []string{"object alarm"}) {
			t.Errorf("section %s is %q, want the alarm colour of its boiler's alarm", sec, got)
		}
	}
	// Cottage's trouble does not reach Home's health cards.
	homeCards := b.texts("#" + homeSec + " .objcards .card .state")
	if !slices.Equal(homeCards, []string{"1 ACTIVE", "UP", "HEALTHY", "2/2 online", "IDLE"}) {
		t.Errorf("Home's cards %q, want 1 ACTIVE, UP, HEALTHY, 2/2 online, IDLE", homeCards)
	}
	cottageCards := b.texts("#" + cottageSec + " .objcards .card .state")
	if len(cottageCards) != 5 || cottageCards[0] != "1 ACTIVE" || cottageCards[1] != "UP" || cottageCards[2] != "UNHEALTHY" || cottageCards[3] != "1/1 online" {
		t.Errorf("Cottage's cards %q, want 1 ACTIVE, UP, UNHEALTHY, 1/1 online (a zombie: up and silent)", cottageCards)
	}
	// Each object's modules in its own section.
	for sec, want := range map[string][]string{homeSec: home.Devids, cottageSec: cottage.Devids} {
		got := b.texts("#" + sec + " table.modules tr.module td.devid")
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("section %s lists %q, want %q", sec, got, want)
		}
	}
	// Home's panels are folded, Cottage's open; the text of each says its own.
	if got := b.attrs("section.object details.objdetails", "open"); !slices.Equal(got, []string{"open", ""}) {
		t.Errorf("details open attributes %q, want Cottage's open and Home's folded", got)
	}
	if push := b.texts("#" + cottageSec + " .panel.push"); len(push) != 1 || !strings.Contains(push[0], "no live update for") {
		t.Errorf("Cottage's push panel %q", push)
	}
	// The health headline names Cottage, never Home; the alarm card names
	// both alarms with their modules and objects.
	headline := strings.Join(b.texts("#cards .card:not(.alarm)"), "\n")
	if !strings.Contains(headline, "Cottage: no live update for") || strings.Contains(headline, "Home") {
		t.Errorf("headline %q, want Cottage named and Home not", headline)
	}
	if alarms := b.texts("#cards .card.alarm"); len(alarms) != 1 || !strings.Contains(alarms[0], "2 ACTIVE") ||
		!strings.Contains(alarms[0], "Out of fuel · Boiler room 1 · Home · since") ||
		!strings.Contains(alarms[0], "(code 91, no translation in en) · Boiler room 3 · Cottage · since") {
		t.Errorf("alarm card %q, want both alarms named with module and object", alarms)
	}
	if sum := b.texts("#summary"); len(sum) != 1 || !strings.Contains(sum[0], "Watching 2 objects of the account with 2 realtime sessions (2 open now)") {
		t.Errorf("summary %q", sum)
	}
	// The index links to both sections.
	if got := b.attrs("#objects tr.object td.name a", "href"); !slices.Equal(got, []string{"#" + cottageSec, "#" + homeSec}) {
		t.Errorf("index links %q", got)
	}

	// Cottage's module page names Cottage and says its pushes are silent;
	// its object link leads back to Cottage's section.
	b.click("cottage-module", "#"+cottageSec+" table.modules tr.module td.name a")
	if got := b.texts("#object"); !slices.Equal(got, []string{"Cottage"}) {
		t.Errorf("the module page names object %q, want Cottage", got)
	}
	// innerText is as displayed: the label in capitals.
	if got := b.texts("#objectsession .label, #objectsession .state"); len(got) != 2 || !strings.EqualFold(got[0], "Live push of Cottage") || got[1] != "UNHEALTHY" {
		t.Errorf("the module page's object card %q", got)
	}
	b.noConsoleErrors()
	b.click("cottage-section", "#object")
	if loc := b.location(); !strings.HasSuffix(loc, "/status#"+cottageSec) {
		t.Errorf("the object link led to %s, want /status#%s", loc, cottageSec)
	}
	if got := b.texts("section.object:target h2.objectname"); len(got) != 1 || !strings.HasPrefix(got[0], "Cottage") {
		t.Errorf("the targeted section is %q, want Cottage's", got)
	}
}
