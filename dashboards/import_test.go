package dashboards

import (
	"sort"
	"strings"
	"testing"
)

// TestDashboardsImportable checks the two ways a dashboard is loaded. The
// import dialog and grafana.com read __inputs (one Prometheus data source)
// and __requires (Grafana, the Prometheus plugin and every panel type the
// dashboard uses, no other); file provisioning never resolves __inputs, so
// the dashboard keeps its own Data source variable and every query names
// ${datasource}, never an input.
func TestDashboardsImportable(t *testing.T) {
	forEachDashboard(t, func(t *testing.T, _ string, raw []byte, d map[string]any) {
		inputs, _ := d["__inputs"].([]any)
		if len(inputs) != 1 {
			t.Fatalf("__inputs %v, want one Prometheus data source", d["__inputs"])
		}
		in, _ := inputs[0].(map[string]any)
		if in["type"] != "datasource" || in["pluginId"] != "prometheus" || in["name"] == "" {
			t.Errorf("__inputs[0] = %v, want a prometheus datasource input", in)
		}
		if name, _ := in["name"].(string); strings.Contains(string(raw), "${"+name+"}") {
			t.Errorf("a query names ${%s}, which file provisioning leaves unresolved; use ${datasource}", name)
		}

		used := map[string]bool{}
		var walk func(ps []any)
		walk = func(ps []any) {
			for _, p := range ps {
				pm, _ := p.(map[string]any)
				if ty, _ := pm["type"].(string); ty != "" && ty != "row" {
					used[ty] = true
				}
				sub, _ := pm["panels"].([]any)
				walk(sub)
			}
		}
		panels, _ := d["panels"].([]any)
		walk(panels)
		required := map[string]bool{}
		reqs, _ := d["__requires"].([]any)
		for _, r := range reqs {
			rm, _ := r.(map[string]any)
			ty, _ := rm["type"].(string)
			id, _ := rm["id"].(string)
			required[ty+"/"+id] = true
			if ty == "panel" && !used[id] {
				t.Errorf("__requires lists panel %s, which the dashboard does not use", id)
			}
		}
		var missing []string
		for _, need := range []string{"grafana/grafana", "datasource/prometheus"} {
			if !required[need] {
				missing = append(missing, need)
			}
		}
		for ty := range used {
			if !required["panel/"+ty] {
				missing = append(missing, "panel/"+ty)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("__requires lacks %v", missing)
		}

		// The Data source variable of file provisioning.
		var found bool
		templating, _ := d["templating"].(map[string]any)
		list, _ := templating["list"].([]any)
		for _, v := range list {
			vm, _ := v.(map[string]any)
			if vm["name"] == "datasource" {
				found = vm["type"] == "datasource" && vm["query"] == "prometheus"
			}
		}
		if !found {
			t.Error("no datasource variable of type datasource over prometheus")
		}
		if !strings.Contains(string(raw), `"uid": "${datasource}"`) {
			t.Error("no query uses ${datasource}")
		}
	})
}
