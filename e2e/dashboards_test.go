package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// The dashboards' queries are run against a real Prometheus that scrapes
// `serve --simulate`, with Grafana's variables expanded as a dashboard
// showing every job and instance would expand them.

// dashboardPanel is the part of a Grafana panel these tests read.
type dashboardPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Repeat  string `json:"repeat"`
	Targets []struct {
		Expr   string `json:"expr"`
		RefID  string `json:"refId"`
		Format string `json:"format"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

type dashboardDoc struct {
	Panels     []dashboardPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// loadDashboard reads a shipped dashboard and returns its panels, rows'
// panels included, in order.
func loadDashboard(t *testing.T, file string) (dashboardDoc, []dashboardPanel) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "dashboards", file))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboardDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var flat []dashboardPanel
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			flat = append(flat, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return d, flat
}

func panelByTitle(t *testing.T, panels []dashboardPanel, title string) dashboardPanel {
	t.Helper()
	for _, p := range panels {
		if p.Title == title {
			return p
		}
	}
	t.Fatalf("no panel titled %q", title)
	return dashboardPanel{}
}

var grafanaVar = regexp.MustCompile(`\$\{([A-Za-z_]+)(?::([a-z]+))?\}|\$([A-Za-z_]+)`)

// expandVars replaces Grafana variables in expr: $name, ${name} and
// ${name:format} all take vars[name]; an unknown variable fails the test.
func expandVars(t *testing.T, expr string, vars map[string]string) string {
	t.Helper()
	return grafanaVar.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVar.FindStringSubmatch(m)
		name := sub[1] + sub[3]
		v, ok := vars[name]
		if !ok {
			t.Fatalf("query %s: no value for the variable %s", expr, m)
		}
		return v
	})
}

// allVars is how Grafana expands the variables of a dashboard showing all
// jobs and instances (allValue .+) and all objects (the object picker's
// allValue .*, and its hidden ids, all of them); $__rate_interval is four
// 1 s scrapes and a margin.
func allVars() map[string]string {
	return map[string]string{"job": ".+", "instance": ".+", "object": ".*", "object_id": ".+", "__rate_interval": "10s"}
}

// TestDashboardQueriesOnPrometheus runs every panel query and variable query
// of both dashboards on a real Prometheus scraping `serve --simulate`: each
// is valid PromQL, and the panels a healthy exporter must fill answer.
func TestDashboardQueriesOnPrometheus(t *testing.T) {
	t.Parallel()
	exp := startServeSimulate(t, "--poll.interval=200ms")
	exp.waitFullScrape(t, exp.devids, 30*time.Second)
	prom := scrapeEverySecond(t, exp.addr)
	// Two rate windows of scrapes, so that every rate() has samples.
	waitFor(t, 30*time.Second, "REST request rates in Prometheus", func() (bool, string) {
		res, err := prom.query(`rate(bragerone_http_requests_total[10s]) > 0`)
		if err != nil {
			return false, err.Error()
		}
		return len(res) > 0, fmt.Sprintf("%d series", len(res))
	})

	// "REST 5xx ratio" says 0, not "No data", while no request got a 5xx.
	_, overview := loadDashboard(t, "bragerone-overview.json")
	ratio := panelByTitle(t, overview, "REST 5xx ratio")
	for _, tg := range ratio.Targets {
		q := expandVars(t, tg.Expr, allVars())
		res, err := prom.query(q)
		if err != nil {
			t.Fatalf("REST 5xx ratio %s: %v", tg.RefID, err)
		}
		if len(res) == 0 {
			t.Errorf("REST 5xx ratio %s answers no data before the first 5xx: %s", tg.RefID, q)
		}
		for _, s := range res {
			if s.value() != "0" {
				t.Errorf("REST 5xx ratio %s: %v = %s, want 0 (the simulated cloud answered no 5xx)", tg.RefID, s.Metric, s.value())
			}
		}
	}

	// And it rises once the cloud answers the module list with 503.
	exp.sim.inject(t, cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 503})
	for _, tg := range ratio.Targets {
		q := expandVars(t, tg.Expr, allVars())
		waitFor(t, 30*time.Second, "REST 5xx ratio "+tg.RefID+" above 0 with the module list failing", func() (bool, string) {
			res, err := prom.query(q)
			if err != nil {
				return false, err.Error()
			}
			for _, s := range res {
				if v, err := strconv.ParseFloat(s.value(), 64); err == nil && v > 0 && v <= 1 {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%v", res)
		})
	}
	exp.sim.clearAll(t)

	// "REST latency by endpoint" draws finite lines only: an endpoint not
	// called in the window (login, the catalog's assets) has a NaN quantile.
	latency := panelByTitle(t, overview, "REST latency by endpoint")
	for _, tg := range latency.Targets {
		q := expandVars(t, tg.Expr, allVars())
		res, err := prom.query(q)
		if err != nil {
			t.Fatalf("REST latency %s: %v", tg.RefID, err)
		}
		if len(res) == 0 {
			t.Errorf("REST latency %s draws nothing while the module list is polled: %s", tg.RefID, q)
		}
		for _, s := range res {
			if v, err := strconv.ParseFloat(s.value(), 64); err != nil || math.IsNaN(v) {
				t.Errorf("REST latency %s: %v = %s, want a finite quantile", tg.RefID, s.Metric, s.value())
			}
		}
	}

	checkModuleDashboard(t, prom)
	checkAlarmTable(t, prom, overview)

	// Every query of both dashboards is valid PromQL on real data.
	for _, file := range []string{"bragerone-overview.json", "bragerone-module.json"} {
		doc, panels := loadDashboard(t, file)
		vars := allVars()
		for _, v := range doc.Templating.List {
			if _, ok := vars[v.Name]; !ok {
				vars[v.Name] = ".+"
			}
		}
		for _, p := range panels {
			for _, tg := range p.Targets {
				if _, err := prom.query(expandVars(t, tg.Expr, vars)); err != nil {
					t.Errorf("%s: panel %q query %s: %v", file, p.Title, tg.RefID, err)
				}
			}
		}
		for _, v := range doc.Templating.List {
			if v.Type != "query" {
				continue
			}
			var q string
			if json.Unmarshal(v.Query, &q) != nil {
				var o struct{ Query string }
				_ = json.Unmarshal(v.Query, &o)
				q = o.Query
			}
			inner, ok := strings.CutPrefix(q, "label_values(")
			if !ok {
				t.Errorf("%s: variable %s: query %q is not label_values(…)", file, v.Name, q)
				continue
			}
			sel := inner[:strings.LastIndex(inner, ",")]
			res, err := prom.query(expandVars(t, sel, vars))
			if err != nil {
				t.Errorf("%s: variable %s: %v", file, v.Name, err)
			} else if len(res) == 0 {
				t.Errorf("%s: variable %s: %s selects nothing on a healthy exporter", file, v.Name, sel)
			}
		}
	}
}

// varQuery is the PromQL selector of a label_values(selector, label)
// variable of the dashboard, and the label.
func varQuery(t *testing.T, doc dashboardDoc, name string) (selector, label string) {
	t.Helper()
	for _, v := range doc.Templating.List {
		if v.Name != name {
			continue
		}
		var q string
		if json.Unmarshal(v.Query, &q) != nil {
			t.Fatalf("variable %s: query %s", name, v.Query)
		}
		inner, ok := strings.CutPrefix(q, "label_values(")
		i := strings.LastIndex(inner, ",")
		if !ok || i < 0 {
			t.Fatalf("variable %s: %q is not label_values(selector, label)", name, q)
		}
		return inner[:i], strings.TrimSpace(strings.TrimSuffix(inner[i+1:], ")"))
	}
	t.Fatalf("no variable %s", name)
	return "", ""
}

// labelValues runs a label_values variable as Grafana would.
func labelValues(t *testing.T, prom *prometheus, doc dashboardDoc, name string, vars map[string]string) []string {
	t.Helper()
	sel, label := varQuery(t, doc, name)
	res, err := prom.query(expandVars(t, sel, vars))
	if err != nil {
		t.Fatalf("variable %s: %v", name, err)
	}
	var out []string
	for _, s := range res {
		if v := s.Metric[label]; v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// checkModuleDashboard opens the module dashboard as its default view does
// for the simulated installer's boiler: the module picked by name, and the
// panels of its "Boiler" menu filled with named, unit-aware series.
func checkModuleDashboard(t *testing.T, prom *prometheus) {
	t.Helper()
	doc, panels := loadDashboard(t, "bragerone-module.json")
	vars := allVars()
	waitFor(t, 60*time.Second, "the catalog's series in Prometheus", func() (bool, string) {
		res, err := prom.query(`bragerone_parameter_info{menu="Boiler"}`)
		if err != nil {
			return false, err.Error()
		}
		return len(res) > 0, fmt.Sprintf("%d series", len(res))
	})

	modules := labelValues(t, prom, doc, "module", vars)
	if !slices.Equal(modules, []string{"Boiler room 1", "Boiler room 2", "Boiler room 3"}) {
		t.Fatalf("the module picker offers %q, want the modules' names", modules)
	}
	vars["module"] = regexp.QuoteMeta("Boiler room 1") // ${module:regex}
	devids := labelValues(t, prom, doc, "devid", vars)
	if len(devids) != 1 {
		t.Fatalf("module Boiler room 1 picks devids %q, want one", devids)
	}
	vars["devid"] = devids[0]
	menus := labelValues(t, prom, doc, "menu", vars)
	if want := []string{"Boiler", "Hot water", "Information", "Service parameters/Burner"}; !slices.Equal(menus, want) {
		t.Errorf("menus of Boiler room 1: %q, want %q", menus, want)
	}
	vars["menu"] = "Boiler"

	series := func(title string) []promSample {
		t.Helper()
		p := panelByTitle(t, panels, title)
		if p.Repeat != "" {
			t.Errorf("panel %q repeats itself; the menu row repeats", title)
		}
		res, err := prom.query(expandVars(t, p.Targets[0].Expr, vars))
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		return res
	}
	named := func(res []promSample) map[string]promSample {
		out := map[string]promSample{}
		for _, s := range res {
			out[s.Metric["name"]] = s
		}
		return out
	}

	temps := named(series("Temperatures"))
	for _, want := range []string{"Boiler temperature", "Boiler set temperature", "Outdoor temperature", "Flue gas temperature"} {
		if _, ok := temps[want]; !ok {
			t.Errorf("Temperatures of the Boiler menu lack %q: %v", want, temps)
		}
	}
	for name, s := range temps {
		if s.Metric["unit"] != "°C" {
			t.Errorf("Temperatures: %s in %q", name, s.Metric["unit"])
		}
	}
	if _, ok := temps["Frost protection temperature"]; ok {
		t.Error("Temperatures show a parameter the app hides")
	}

	states := series("Burner, pump and other states")
	inState := map[string]string{}
	for _, s := range states {
		if s.value() == "1" {
			inState[s.Metric["name"]] = s.Metric["state"]
		}
	}
	if inState["Boiler state"] != "Alarm" || inState["Central heating pump"] != "Off" {
		t.Errorf("states of the Boiler menu: %v, want the boiler in Alarm and its pump Off", inState)
	}

	others := named(series("Other values"))
	if p, ok := others["Boiler power"]; !ok || p.Metric["unit"] != "kW" {
		t.Errorf("Other values lack the boiler power in kW: %v", others)
	}
	for name, s := range others {
		if s.Metric["unit"] == "°C" || inState[name] != "" {
			t.Errorf("Other values repeat %s (%s)", name, s.Metric["unit"])
		}
	}

	table := panelByTitle(t, panels, "Current values")
	rows := 0
	for _, tg := range table.Targets {
		res, err := prom.query(expandVars(t, tg.Expr, vars))
		if err != nil {
			t.Fatalf("Current values %s: %v", tg.RefID, err)
		}
		rows += len(res)
	}
	if rows < len(temps)+len(others) {
		t.Errorf("Current values: %d rows, fewer than the panels above show", rows)
	}
	// A time of day is shown as the app shows it, in its own column.
	shownAs := map[string]string{}
	for _, tg := range table.Targets {
		res, err := prom.query(expandVars(t, tg.Expr, vars))
		if err != nil {
			t.Fatalf("Current values %s: %v", tg.RefID, err)
		}
		for _, s := range res {
			if text, ok := s.Metric["text"]; ok {
				shownAs[s.Metric["name"]] = text
			}
		}
	}
	if at := shownAs["Night setback start"]; !regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5]0$`).MatchString(at) {
		t.Errorf("Current values show the night setback start as %q, want a time of day (all shown as text: %v)", at, shownAs)
	}
}

// checkAlarmTable reads the overview's active-alarms table: one row per
// simulated boiler alarm, with the alarm's and the module's names.
func checkAlarmTable(t *testing.T, prom *prometheus, overview []dashboardPanel) {
	t.Helper()
	p := panelByTitle(t, overview, "Active boiler alarms")
	res, err := prom.query(expandVars(t, p.Targets[0].Expr, allVars()))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range res {
		got[s.Metric["module"]] = s.Metric["name"]
	}
	want := map[string]string{"Boiler room 1": "Out of fuel", "Boiler room 3": "ERROR_MODUL_ROZSZERZEN"}
	if len(got) != len(want) || got["Boiler room 1"] != want["Boiler room 1"] || got["Boiler room 3"] != want["Boiler room 3"] {
		t.Errorf("active alarms table: %v, want %v", got, want)
	}
}
