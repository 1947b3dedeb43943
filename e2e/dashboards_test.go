package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
// jobs and instances (allValue .+); $__rate_interval is four 1 s scrapes
// and a margin.
func allVars() map[string]string {
	return map[string]string{"job": ".+", "instance": ".+", "__rate_interval": "10s"}
}

// TestDashboardQueriesOnPrometheus runs every panel query and variable query
// of both dashboards on a real Prometheus scraping `serve --simulate`: each
// is valid PromQL, and the panels a healthy exporter must fill answer.
func TestDashboardQueriesOnPrometheus(t *testing.T) {
	t.Parallel()
	exp := startServeSimulate(t, "--poll.interval=200ms")
	exp.waitFullScrape(t, exp.devids, 30*time.Second)
	prom := startPrometheus(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: bragerone
    static_configs:
      - targets: [%q]
`, exp.addr))
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
