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
	devids := b.texts("#modules tr.module td.devid")
	slices.Sort(devids)
	if !slices.Equal(devids, exp.devids) {
		t.Errorf("module rows show devids %q, want %q", devids, exp.devids)
	}
	names := b.texts("#modules tr.module td:nth-child(2)")
	for i := range exp.devids {
		want := fmt.Sprintf("Boiler room %d", i+1)
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no module row named %q; names %q", want, names)
		}
	}
	labels := b.texts("#cards .card .label")
	for _, want := range []string{"cloud session", "live push", "modules", "recovery"} {
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
			"Valve 1 pump", []string{"ERROR_MODUL_ROZSZERZEN"}},
	} {
		links := b.attrs("#modules tr.module td.name a", "href")
		names := b.texts("#modules tr.module td.name a")
		i := slices.Index(names, m.name)
		if i < 0 {
			t.Fatalf("no module link named %q on /status: %q", m.name, names)
		}
		b.click(strings.ReplaceAll(m.name, " ", "-"), fmt.Sprintf(`#modules tr.module td.name a[href=%q]`, links[i]))
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
		b.noConsoleErrors()
		b.click(strings.ReplaceAll(m.name, " ", "-")+"-back", "#back")
		if h := b.texts("h1"); !slices.Equal(h, []string{"bragerone_exporter status"}) {
			t.Fatalf("the back link led to %q", h)
		}
	}
}
