package dashboards

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/bragerone/bragerone_exporter/alerts/metricref"
)

// model is the part of the classic dashboard JSON that holds queries.
type model struct {
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type    string   `json:"type"`
	Title   string   `json:"title"`
	Targets []target `json:"targets"`
	Panels  []panel  `json:"panels"` // a collapsed row keeps its panels here
}

type target struct {
	Expr string `json:"expr"`
}

type variable struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Query json.RawMessage `json:"query"`
}

// query returns a query variable's PromQL: Grafana stores it either as a
// string or as an object with a "query" field.
func (v variable) query() string {
	if v.Type != "query" || len(v.Query) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil {
		return o.Query
	}
	return ""
}

// expressions returns every PromQL text of a dashboard: panel targets
// (rows' nested panels included) and query variables.
func expressions(dashboardJSON []byte) ([]string, error) {
	var m model
	if err := json.Unmarshal(dashboardJSON, &m); err != nil {
		return nil, fmt.Errorf("dashboard JSON: %w", err)
	}
	var exprs []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if t.Expr != "" {
					exprs = append(exprs, t.Expr)
				}
			}
			walk(p.Panels)
		}
	}
	walk(m.Panels)
	for _, v := range m.Templating.List {
		if q := v.query(); q != "" {
			exprs = append(exprs, q)
		}
	}
	return exprs, nil
}

// MetricsReferenced returns the names of the exporter's series that a
// dashboard's queries (panel targets and query variables) read, sorted and
// without duplicates. Series Prometheus makes itself (up) are left out, so
// every name returned must appear in a scrape of the exporter.
func MetricsReferenced(dashboardJSON []byte) ([]string, error) {
	exprs, err := expressions(dashboardJSON)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricref.InExpr(e) {
			if n != "up" {
				set[n] = true
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
