package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/bragerone/bragerone_exporter/alerts/metricref"
)

// The object picker is checked on real PromQL evaluation: promtool runs
// every panel and variable query of both dashboards, as a recording rule,
// over synthetic series of one exporter watching two objects, with Grafana's
// variables expanded as a dashboard showing one object, or all, would expand
// them.

// synthObject is an object of the synthetic account, with its modules.
type synthObject struct {
	id, name string
	modules  [][2]string // devid, module name
}

var synthObjects = []synthObject{
	{"1", "Home", [][2]string{{"M1", "Boiler"}, {"M2", "Heat pump"}}},
	{"2", "Cottage", [][2]string{{"M3", "Boiler"}, {"M4", "Pellet stove"}}},
}

const (
	synthJob      = "bragerone"
	synthInstance = "exporter:9900"
)

// synthLabelValue is the value of a label that neither names an object nor
// a module: one a panel's own filters keep (a 5xx code, a visible register).
var synthLabelValue = map[string]string{
	"reason": "disconnect", "step": "hard_restart", "result": "failed", "event": "parameters",
	"endpoint": "GET /v1/modules", "code": "503", "le": "+Inf", "trigger": "connect", "stage": "index",
	"pool": "P4", "param": "v1", "symbol": "PARAM_P4_1", "unit": "°C", "menu": "Boiler", "visible": "true",
	"state": "On", "text": "22:00", "title": "HT", "version": "2.07", "gateway_version": "V2.08",
	"index_asset": "index.js", "language": "en", "revision": "abc", "branch": "main", "goversion": "go",
	"goos": "linux", "goarch": "amd64", "tags": "",
}

// synthSeries returns promtool input series for every metric of the list,
// with the labels METRICS.md gives it: one series per object for a series of
// an object's session, one per module for a module's.
func synthSeries(t *testing.T, names []string, contract map[string][]string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, n := range names {
		labels, ok := contract[n]
		if !ok {
			t.Fatalf("%s is not in METRICS.md", n)
		}
		values := "1x40"
		if strings.HasSuffix(n, "_total") || strings.HasSuffix(n, "_bucket") || strings.HasSuffix(n, "_count") || strings.HasSuffix(n, "_sum") {
			values = "0+1x40"
		}
		if l := labels; len(l) > 0 && strings.HasSuffix(n, "_bucket") {
			labels = append(slices.Clone(l), "le")
		}
		for _, o := range synthObjects {
			mods := o.modules
			if !slices.Contains(labels, "devid") {
				mods = [][2]string{{"", ""}}
			}
			for _, m := range mods {
				ls := []string{fmt.Sprintf("job=%q", synthJob), fmt.Sprintf("instance=%q", synthInstance)}
				for _, l := range labels {
					v := synthLabelValue[l]
					switch l {
					case "object_id":
						v = o.id
					case "devid":
						v = m[0]
					case "name":
						switch n {
						case "bragerone_object_info":
							v = o.name
						case "bragerone_module_info":
							v = m[1]
						default:
							v = "Boiler temperature"
						}
					}
					ls = append(ls, fmt.Sprintf("%s=%q", l, v))
				}
				out = append(out, map[string]string{"series": n + "{" + strings.Join(ls, ",") + "}", "values": values})
			}
			if !slices.Contains(labels, "object_id") && !slices.Contains(labels, "devid") {
				break // the account's: one series
			}
		}
	}
	return out
}

// dashboardQuery is one PromQL query of a dashboard and where it is:
// a panel's, or the variable's of that name.
type dashboardQuery struct {
	where, expr, variable string
}

func dashboardQueries(t *testing.T, file string) []dashboardQuery {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d lintDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var out []dashboardQuery
	var walk func([]lintPanel)
	walk = func(ps []lintPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, dashboardQuery{where: fmt.Sprintf("%s: panel %q query %s", file, p.Title, tg.RefID), expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q := (variable{Name: v.Name, Type: v.Type, Query: v.Query}).query(); q != "" {
			out = append(out, dashboardQuery{where: fmt.Sprintf("%s: variable %s", file, v.Name), expr: q, variable: v.Name})
		}
	}
	return out
}

var grafanaVariable = regexp.MustCompile(`\$\{([A-Za-z_]+)(?::([a-z]+))?\}|\$([A-Za-z_]+)`)

// expand replaces the Grafana variables of a query; an unknown one fails.
func expand(t *testing.T, where, expr string, vars map[string]string) string {
	t.Helper()
	return grafanaVariable.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVariable.FindStringSubmatch(m)
		v, ok := vars[sub[1]+sub[3]]
		if !ok {
			t.Fatalf("%s: no value for the variable %s", where, m)
		}
		return v
	})
}

// labelValuesQuery splits label_values(selector, label).
var labelValuesQuery = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_]+)\)$`)

// exprTest is a promql_expr_test of promtool, and what it checks.
type exprTest struct {
	Expr       string      `yaml:"expr"`
	EvalTime   string      `yaml:"eval_time"`
	ExpSamples []expSample `yaml:"exp_samples"`
	what       string
}

type expSample struct {
	Labels string  `yaml:"labels"`
	Value  float64 `yaml:"value"`
}

// TestObjectPickerFiltersEveryPanel: on a real PromQL engine (promtool),
// every panel query of both dashboards that reads a series of an object's
// session or of a module, expanded for one picked object, returns only that
// object's series, each named by the object (label object), and returns it
// at all; expanded for all objects, it returns every object's. The module
// dashboard's panels that follow the module picker ($devid) are left to the
// picker's own check: the object picker offers the objects by name, and the
// module picker offers the picked object's modules only. Every other query
// must at least parse.
func TestObjectPickerFiltersEveryPanel(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found in PATH; install the Debian package \"prometheus\"")
	}
	md, err := os.ReadFile("../METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := metricref.ContractLabels(md)
	if err != nil {
		t.Fatal(err)
	}
	objectScoped := func(expr string) bool {
		for _, n := range metricref.InExpr(expr) {
			if slices.Contains(contract[n], "object_id") || slices.Contains(contract[n], "devid") {
				return true
			}
		}
		return false
	}

	home, cottage := synthObjects[0], synthObjects[1]
	vars := func(object, objectID, module, devid string) map[string]string {
		return map[string]string{
			"job": ".+", "instance": ".+", "datasource": "prometheus", "__rate_interval": "5m",
			"object": object, "object_id": objectID, "module": module, "devid": devid,
			"menu": ".+", "pool": ".+", "param": ".+",
		}
	}
	one := vars(regexp.QuoteMeta(home.name), home.id, "Boiler", home.modules[0][0])
	all := vars(".*", "("+home.id+"|"+cottage.id+")", ".+", ".+")

	var (
		rules   []map[string]string
		tests   []exprTest
		names   []string
		checked int
	)
	record := func(expr string) string {
		name := fmt.Sprintf("dashboard:query_%d", len(rules))
		rules = append(rules, map[string]string{"record": name, "expr": expr})
		return name
	}
	expect := func(what, expr string, samples ...expSample) {
		tests = append(tests, exprTest{Expr: expr, EvalTime: "30m", ExpSamples: append([]expSample{}, samples...), what: what})
	}
	present := expSample{Labels: "{}", Value: 1}
	for _, file := range dashboardFiles {
		for _, q := range dashboardQueries(t, file) {
			names = append(names, metricref.InExpr(q.expr)...)
			if q.variable != "" {
				m := labelValuesQuery.FindStringSubmatch(q.expr)
				if m == nil {
					t.Errorf("%s: %q is not label_values(selector, label)", q.where, q.expr)
					continue
				}
				values := func(v map[string]string) string {
					return fmt.Sprintf("group by (%s) (%s)", m[2], expand(t, q.where, m[1], v))
				}
				var want []string
				switch q.variable {
				case "object":
					want = []string{home.name, cottage.name} // every object, by name
				case "object_id":
					want = []string{home.id} // the ids of the object picked by name
				case "module":
					want = []string{"Boiler", "Heat pump"} // the picked object's modules
				case "devid":
					want = []string{home.modules[0][0]} // its module of that name, not the other object's
				}
				if want == nil {
					record(values(one))
					continue
				}
				checked++
				var samples []expSample
				for _, w := range want {
					samples = append(samples, expSample{Labels: fmt.Sprintf("{%s=%q}", m[2], w), Value: 1})
				}
				expect(fmt.Sprintf("%s: with %s picked, offers other values than %q", q.where, home.name, want), values(one), samples...)
				continue
			}
			if !objectScoped(q.expr) || strings.Contains(q.expr, `devid=~"$devid"`) {
				record(expand(t, q.where, q.expr, one))
				continue
			}
			checked++
			r := record(expand(t, q.where, q.expr, one))
			expect(q.where+": with "+home.name+" picked, shows another object's series or one without the label object",
				fmt.Sprintf("count(%s{object!=%q})", r, home.name))
			expect(q.where+": with "+home.name+" picked, shows nothing of it",
				fmt.Sprintf("count(%s{object=%q}) > bool 0", r, home.name), present)
			ra := record(expand(t, q.where, q.expr, all))
			for _, o := range synthObjects {
				expect(q.where+": with every object picked, shows nothing of "+o.name,
					fmt.Sprintf("count(%s{object=%q}) > bool 0", ra, o.name), present)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d queries read the series of an object or a module: METRICS.md gives no label object_id or devid?", checked)
	}
	sort.Strings(names)
	names = slices.Compact(names)
	names = slices.DeleteFunc(names, func(n string) bool { return n == "up" })

	dir := t.TempDir()
	if d := os.Getenv("DASHBOARDS_PROMTOOL_DIR"); d != "" {
		dir = d
	}
	ruleFile, _ := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboards", "rules": rules}}})
	if err := os.WriteFile(filepath.Join(dir, "rules.yml"), ruleFile, 0o644); err != nil {
		t.Fatal(err)
	}
	testFile, _ := yaml.Marshal(map[string]any{
		"rule_files":          []string{"rules.yml"},
		"evaluation_interval": "1m",
		"tests": []any{map[string]any{
			"interval":         "1m",
			"input_series":     synthSeries(t, names, contract),
			"promql_expr_test": tests,
		}},
	})
	if err := os.WriteFile(filepath.Join(dir, "tests.yml"), testFile, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "test", "rules", "tests.yml")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		// Say which query each failed expression is about.
		report := out.String()
		for _, tc := range tests {
			if strings.Contains(report, strconv.Quote(tc.Expr)) {
				t.Errorf("%s: %s", tc.what, tc.Expr)
			}
		}
		t.Fatalf("promtool test rules: %v\n%s", err, report)
	}
}

// TestOverviewRepeatsSessionRowPerObject: the overview has one row per
// picked object, titled by it, that shows the object's session, its
// outage, its live push and staleness and its recovery ladder, every query
// of it narrowed to the row's object.
func TestOverviewRepeatsSessionRowPerObject(t *testing.T) {
	raw, err := os.ReadFile("bragerone-overview.json")
	if err != nil {
		t.Fatal(err)
	}
	var d lintDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	var (
		inRow bool
		read  []string
		title string
	)
	for _, p := range d.Panels {
		if p.Type == "row" {
			if inRow {
				break
			}
			if p.Repeat == "object" {
				inRow, title = true, p.Title
				for _, c := range p.Panels { // a collapsed row keeps its panels
					for _, tg := range c.Targets {
						read = append(read, metricref.InExpr(tg.Expr)...)
					}
				}
			}
			continue
		}
		if !inRow {
			continue
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, `name=~"${object:regex}"`) {
				t.Errorf("panel %q query %s of the object's row is not narrowed to the row's object: %s", p.Title, tg.RefID, tg.Expr)
			}
			read = append(read, metricref.InExpr(tg.Expr)...)
		}
	}
	if !inRow {
		t.Fatal("no row repeated by the variable object")
	}
	if !strings.Contains(title, "$object") {
		t.Errorf("the object's row is titled %q, without $object", title)
	}
	for _, want := range []string{
		"bragerone_session_up", "bragerone_session_outage_seconds", "bragerone_push_healthy",
		"bragerone_live_stale_seconds", "bragerone_recovery_quarantined", "bragerone_recovery_actions_total",
	} {
		if !slices.Contains(read, want) {
			t.Errorf("the object's row does not show %s", want)
		}
	}
}
