package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/alerts/metricref"
)

const schemaPath = "testdata/grafana-dashboard.schema.json"

// dashboardFiles are the dashboards shipped; each one's uid is its file name.
var dashboardFiles = []string{"bragerone-overview.json", "bragerone-module.json"}

func TestShippedDashboardsAreListed(t *testing.T) {
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	want := slices.Clone(dashboardFiles)
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Errorf("dashboards in the folder %q, tested %q", files, want)
	}
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var d map[string]any
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	return d
}

func forEachDashboard(t *testing.T, f func(t *testing.T, name string, raw []byte, d map[string]any)) {
	for _, name := range dashboardFiles {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f(t, name, raw, decode(t, raw))
		})
	}
}

func TestDashboardsMatchGrafanaSchema(t *testing.T) {
	schemaJSON, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := newValidator(schemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	forEachDashboard(t, func(t *testing.T, _ string, _ []byte, d map[string]any) {
		// The import envelope (__inputs, __requires) is no part of the
		// dashboard model; TestDashboardsImportable checks it.
		delete(d, "__inputs")
		delete(d, "__requires")
		for _, e := range v.validate(d) {
			t.Error(e)
		}
	})
}

func TestSchemaValidatorRejects(t *testing.T) {
	schemaJSON, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	v, err := newValidator(schemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"no schemaVersion":     {`{"title":"x"}`, `required property "schemaVersion" is missing`},
		"unknown property":     {`{"schemaVersion":39,"titel":"x"}`, `property "titel" is not allowed`},
		"wrong type":           {`{"schemaVersion":"39"}`, `$.schemaVersion: is string, want type number`},
		"panel without type":   {`{"schemaVersion":39,"panels":[{"title":"x"}]}`, `$.panels[0]: matches no alternative of anyOf`},
		"bad variable type":    {`{"schemaVersion":39,"templating":{"list":[{"name":"a","type":"quer"}]}}`, `is not one of`},
		"bad gridPos":          {`{"schemaVersion":39,"panels":[{"type":"stat","gridPos":{"h":1,"w":2,"x":0}}]}`, `required property "y" is missing`},
		"bad threshold mode":   {`{"schemaVersion":39,"panels":[{"type":"stat","fieldConfig":{"defaults":{"thresholds":{"mode":"abs","steps":[]}},"overrides":[]}}]}`, `is not one of`},
		"time not an object":   {`{"schemaVersion":39,"time":"now-6h"}`, `$.time: is string, want type object`},
		"tags not all strings": {`{"schemaVersion":39,"tags":["a",1]}`, `$.tags[1]: is integer, want type string`},
	} {
		errs := v.validate(decode(t, []byte(tc.doc)))
		if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
			t.Errorf("%s: errors %q do not contain %q", name, errs, tc.want)
		}
	}
	if errs := v.validate(decode(t, []byte(`{"schemaVersion":39,"editable":false,"panels":[{"type":"row","id":1,"collapsed":false,"panels":[]}]}`))); len(errs) != 0 {
		t.Errorf("minimal dashboard rejected: %q", errs)
	}
}

// The lint tests read dashboards through these types; fields absent from the
// JSON stay at their zero value and fail the checks that need them.
type lintDashboard struct {
	UID           string      `json:"uid"`
	Title         string      `json:"title"`
	Editable      *bool       `json:"editable"`
	Tags          []string    `json:"tags"`
	SchemaVersion int         `json:"schemaVersion"`
	Panels        []lintPanel `json:"panels"`
	Templating    struct {
		List []lintVariable `json:"list"`
	} `json:"templating"`
}

type lintDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type lintPanel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Datasource  *lintDatasource `json:"datasource"`
	Repeat      string          `json:"repeat"`
	GridPos     *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit *string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Datasource *lintDatasource `json:"datasource"`
		Expr       string          `json:"expr"`
		RefID      string          `json:"refId"`
	} `json:"targets"`
	Panels []lintPanel `json:"panels"`
}

type lintVariable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *lintDatasource `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Hide       int             `json:"hide"`
}

// queryText is a query variable's PromQL.
func (v lintVariable) queryText() string {
	return variable{Name: v.Name, Type: v.Type, Query: v.Query}.query()
}

func lint(raw []byte, fileName string) []string {
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, fmtf(format, a...)) }
	var d lintDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		return []string{err.Error()}
	}
	if wantUID := strings.TrimSuffix(filepath.Base(fileName), ".json"); d.UID != wantUID {
		fail("uid %q, want the file name %q (stable across imports)", d.UID, wantUID)
	}
	if len(d.UID) == 0 || len(d.UID) > 40 {
		fail("uid %q must have 1 to 40 characters", d.UID)
	}
	if d.Title == "" {
		fail("no title")
	}
	if d.Editable == nil || *d.Editable {
		fail("editable must be false")
	}
	if !slices.Contains(d.Tags, "bragerone") {
		fail("tags %q lack \"bragerone\"", d.Tags)
	}
	if d.SchemaVersion < 36 {
		fail("schemaVersion %d, want a current one (>= 36)", d.SchemaVersion)
	}

	vars := map[string]lintVariable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
		if v.Type == "query" && (v.Datasource == nil || v.Datasource.UID != "${datasource}") {
			fail("variable %s: datasource must be ${datasource}", v.Name)
		}
	}
	if v, ok := vars["datasource"]; !ok || v.Type != "datasource" || string(v.Query) != `"prometheus"` {
		fail("no variable datasource of type datasource with query prometheus")
	}
	for _, name := range []string{"job", "instance"} {
		v, ok := vars[name]
		if !ok || v.Type != "query" || !v.Multi || !v.IncludeAll || v.AllValue != ".+" {
			fail("variable %s must be a multi-select query variable with includeAll and allValue .+", name)
		}
	}
	// The object picker: objects by name, several at once, All by default
	// (allValue .* keeps an object whose name is empty).
	if v, ok := vars["object"]; !ok || v.Type != "query" || !v.Multi || !v.IncludeAll || v.AllValue != ".*" ||
		v.queryText() != `label_values(bragerone_object_info{job=~"$job", instance=~"$instance"}, name)` {
		fail("variable object must be a multi-select query variable with includeAll and allValue .*, " +
			`reading label_values(bragerone_object_info{job=~"$job", instance=~"$instance"}, name)`)
	}
	// A module picker lists the picked objects' modules: label_values takes
	// a selector, not a join, so it filters on the hidden ids of the objects
	// picked by name, whose All (no allValue) stands for exactly those ids.
	if _, ok := vars["module"]; ok {
		id, ok := vars["object_id"]
		if !ok || id.Type != "query" || id.Hide != 2 || !id.Multi || !id.IncludeAll || id.AllValue != "" ||
			!strings.Contains(id.queryText(), `bragerone_object_info{`) || !strings.Contains(id.queryText(), `name=~"${object:regex}"`) {
			fail("variable object_id must be a hidden multi-select query variable on bragerone_object_info filtered by " +
				`name=~"${object:regex}", with includeAll and no allValue`)
		}
		for _, name := range []string{"module", "devid"} {
			if !strings.Contains(vars[name].queryText(), `object_id=~"${object_id:regex}"`) {
				fail("variable %s must be filtered by object_id=~\"${object_id:regex}\" (query %s)", name, vars[name].queryText())
			}
		}
	}

	ids := map[int]bool{}
	var walk func([]lintPanel)
	walk = func(ps []lintPanel) {
		for _, p := range ps {
			where := fmtf("panel %d %q", p.ID, p.Title)
			if ids[p.ID] {
				fail("%s: duplicate id", where)
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				fail("%s: missing or invalid gridPos", where)
			}
			if p.Title == "" {
				fail("%s: no title", where)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Description == "" {
				fail("%s: no description", where)
			}
			if p.FieldConfig.Defaults.Unit == nil || *p.FieldConfig.Defaults.Unit == "" {
				fail("%s: no fieldConfig.defaults.unit", where)
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" || p.Datasource.Type != "prometheus" {
				fail("%s: datasource must be {type prometheus, uid ${datasource}}", where)
			}
			if len(p.Targets) == 0 {
				fail("%s: no queries", where)
			}
			for _, tg := range p.Targets {
				if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
					fail("%s: query %s: datasource must be ${datasource}", where, tg.RefID)
				}
				for _, e := range lintExpr(tg.Expr) {
					fail("%s: query %s: %s", where, tg.RefID, e)
				}
			}
		}
	}
	walk(d.Panels)
	return errs
}

var (
	rateCall    = regexp.MustCompile(`\b(rate|irate|increase)\s*\(`)
	metricInSel = regexp.MustCompile(`(?:^|[^A-Za-z0-9_:$])(bragerone_[A-Za-z0-9_]+|up)\b(\{[^}]*\})?`)
)

// lintExpr checks one panel query: every rate/irate/increase range is
// $__rate_interval, and every selector filters on $job and $instance.
func lintExpr(expr string) []string {
	var errs []string
	if strings.TrimSpace(expr) == "" {
		return []string{"empty expression"}
	}
	for _, loc := range rateCall.FindAllStringSubmatchIndex(expr, -1) {
		fn := expr[loc[2]:loc[3]]
		arg := balanced(expr[loc[1]-1:])
		open := strings.LastIndex(arg, "[")
		if open < 0 || !strings.HasPrefix(arg[open:], "[$__rate_interval]") {
			errs = append(errs, fmtf("%s() must use [$__rate_interval]: %s", fn, arg))
		}
	}
	for _, m := range metricInSel.FindAllStringSubmatch(expr, -1) {
		if !strings.Contains(m[2], `job=~"$job"`) || !strings.Contains(m[2], `instance=~"$instance"`) {
			errs = append(errs, fmtf("%s must be filtered by job=~\"$job\" and instance=~\"$instance\"", m[1]))
		}
	}
	return errs
}

// balanced returns s up to and including the parenthesis closing s[0].
func balanced(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[:i+1]
			}
		}
	}
	return s
}

func fmtf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

func TestDashboardConventions(t *testing.T) {
	forEachDashboard(t, func(t *testing.T, name string, raw []byte, _ map[string]any) {
		for _, e := range lint(raw, name) {
			t.Error(e)
		}
	})
}

func TestLintCatchesViolations(t *testing.T) {
	good, err := os.ReadFile("bragerone-module.json")
	if err != nil {
		t.Fatal(err)
	}
	if errs := lint(good, "bragerone-module.json"); len(errs) != 0 {
		t.Fatalf("shipped dashboard does not lint: %q", errs)
	}
	for name, tc := range map[string]struct {
		from, to, want string
	}{
		"editable":          {`"editable": false`, `"editable": true`, "editable must be false"},
		"uid":               {`"uid": "bragerone-module"`, `"uid": "bragerone-module-renamed"`, "uid"},
		"unit":              {`"unit": "s"`, `"unit": ""`, "no fieldConfig.defaults.unit"},
		"description":       {`"description": "Outages of the module begun per interval, by reason."`, `"description": ""`, "no description"},
		"rate interval":     {`[$__rate_interval]`, `[5m]`, "must use [$__rate_interval]"},
		"instance selector": {`bragerone_module_online{job=~\"$job\", instance=~\"$instance\", devid=~\"$devid\"}`, `bragerone_module_online{job=~\"$job\", devid=~\"$devid\"}`, `filtered by job=~"$job" and instance=~"$instance"`},
		"panel datasource":  {`"uid": "${datasource}"`, `"uid": "prometheus"`, "datasource must be"},
		"allValue":          {`"allValue": ".+"`, `"allValue": ".*"`, "allValue .+"},
		"tags":              {`"bragerone",`, `"other",`, "lack \"bragerone\""},
		"object picker":     {`"name": "object",`, `"name": "site",`, "variable object must be"},
		"object all value":  {`"allValue": ".*"`, `"allValue": ".+"`, "variable object must be"},
		"object ids shown":  {`"hide": 2`, `"hide": 0`, "variable object_id must be"},
		"module picker":     {`object_id=~\"${object_id:regex}\"}, name)`, `}, name)`, "variable module must be filtered"},
		"devid picker":      {`object_id=~\"${object_id:regex}\", name=~`, `name=~`, "variable devid must be filtered"},
	} {
		bad := strings.Replace(string(good), tc.from, tc.to, 1)
		if bad == string(good) {
			t.Fatalf("%s: %q not found in the dashboard", name, tc.from)
		}
		errs := lint([]byte(bad), "bragerone-module.json")
		if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
			t.Errorf("%s: lint errors %q do not contain %q", name, errs, tc.want)
		}
	}
}

func TestDashboardsReadOnlyContractMetrics(t *testing.T) {
	md, err := os.ReadFile("../METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := metricref.Contract(md)
	if err != nil {
		t.Fatal(err)
	}
	forEachDashboard(t, func(t *testing.T, _ string, raw []byte, _ map[string]any) {
		exprs, err := expressions(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range exprs {
			names := metricref.InExpr(e)
			if len(names) == 0 {
				t.Errorf("query reads no known metric: %s", e)
			}
			for _, n := range names {
				if n != "up" && !contract[n] {
					t.Errorf("%s is not in METRICS.md (query %s)", n, e)
				}
			}
		}
		names, err := MetricsReferenced(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 0 {
			t.Error("MetricsReferenced found nothing")
		}
	})
}

func TestMetricsReferenced(t *testing.T) {
	const d = `{
	  "panels": [
	    {"type": "row", "panels": [
	      {"type": "timeseries", "targets": [{"expr": "rate(bragerone_b_total{job=~\"$job\"}[$__rate_interval])"}]}
	    ]},
	    {"type": "stat", "targets": [{"expr": "up{job=~\"$job\"} * on (instance) bragerone_a"}, {"expr": ""}]}
	  ],
	  "templating": {"list": [
	    {"name": "devid", "type": "query", "query": "label_values(bragerone_c{job=~\"$job\"}, devid)"},
	    {"name": "pool", "type": "query", "query": {"query": "label_values(bragerone_d, pool)", "refId": "X"}},
	    {"name": "datasource", "type": "datasource", "query": "prometheus"}
	  ]}
	}`
	got, err := MetricsReferenced([]byte(d))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bragerone_a", "bragerone_b_total", "bragerone_c", "bragerone_d"}; !slices.Equal(got, want) {
		t.Errorf("MetricsReferenced = %q, want %q", got, want)
	}
	for _, bad := range []string{``, `[1, 2]`, `{"panels": 3}`, `{"panels": [`} {
		if _, err := MetricsReferenced([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "dashboard JSON") {
			t.Errorf("MetricsReferenced(%q): error %v, want a dashboard JSON error", bad, err)
		}
	}
}
