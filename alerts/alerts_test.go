package alerts

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/bragerone/bragerone_exporter/alerts/metricref"
)

const (
	rulesPath        = "bragerone.rules.yml"
	runbooksPath     = "runbooks.md"
	alertmanagerPath = "alertmanager.example.yml"
	metricsMDPath    = "../METRICS.md"
	runbookBase      = "https://github.com/bragerone/bragerone_exporter/blob/main/alerts/runbooks.md#"
)

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadRules(t *testing.T) *ruleFile {
	t.Helper()
	f, err := parseRules(readFile(t, rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func alertRules(t *testing.T) []rule {
	t.Helper()
	var alerts []rule
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alerting rules in " + rulesPath)
	}
	return alerts
}

// tool finds a Prometheus command-line tool; a missing tool fails the test
// with the Debian package that provides it.
func tool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found in PATH; install the Debian package %q (apt-get install -y --no-install-recommends %s)",
			name, debianPackage, debianPackage)
	}
	return path
}

// run runs a tool and returns its standard output; a failure shows both outputs.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

func TestPromtoolCheckRules(t *testing.T) {
	run(t, tool(t, "promtool", "prometheus"), "check", "rules", rulesPath)
}

func TestPromtoolTestRules(t *testing.T) {
	promtool := tool(t, "promtool", "prometheus")
	files, err := filepath.Glob("tests/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule unit tests in tests/ (%v)", err)
	}
	run(t, promtool, append([]string{"test", "rules"}, files...)...)
}

func TestAmtoolCheckConfig(t *testing.T) {
	run(t, tool(t, "amtool", "prometheus-alertmanager"), "check-config", alertmanagerPath)
}

func TestAlertmanagerRoutesBySeverity(t *testing.T) {
	amtool := tool(t, "amtool", "prometheus-alertmanager")
	for severity, receiver := range map[string]string{"critical": "pager", "warning": "ticket", "info": "null"} {
		out := run(t, amtool, "config", "routes", "test", "--config.file="+alertmanagerPath,
			"alertname=BragerOneSessionDown", "severity="+severity)
		if got := strings.TrimSpace(out); got != receiver {
			t.Errorf("severity %s routed to %q, want %q", severity, got, receiver)
		}
	}
}

var alertName = regexp.MustCompile(`^BragerOne(?:[A-Z][a-z0-9]*)+$`)

// labelRef is the one template a summary may hold: a label's value, so that
// a notification's title says which alarm on which module.
var labelRef = regexp.MustCompile(`\{\{ \$labels\.[a-z_]+ \}\}`)

func TestAlertConventions(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range alertRules(t) {
		if !alertName.MatchString(r.Alert) {
			t.Errorf("%s: not a CamelCase name with prefix BragerOne", r.Alert)
		}
		if seen[r.Alert] {
			t.Errorf("%s: defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if d, err := model.ParseDuration(r.For); err != nil || d <= 0 {
			t.Errorf("%s: for: %q is not a positive duration", r.Alert, r.For)
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, s)
		}
		if s := r.Annotations["summary"]; s == "" || !strings.HasSuffix(s, ".") || strings.Contains(labelRef.ReplaceAllString(s, "x"), "{{") {
			t.Errorf("%s: summary %q must be a sentence, naming at most labels", r.Alert, s)
		}
		if r.Annotations["description"] == "" {
			t.Errorf("%s: no description", r.Alert)
		}
		if got, want := r.Annotations["runbook_url"], runbookBase+strings.ToLower(r.Alert); got != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, got, want)
		}
		for k := range r.Annotations {
			if k != "summary" && k != "description" && k != "runbook_url" {
				t.Errorf("%s: unexpected annotation %q", r.Alert, k)
			}
		}
	}
}

// githubAnchor is the anchor GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestRunbookHasOneSectionPerAlert(t *testing.T) {
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(readFile(t, runbooksPath)), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[githubAnchor(h)] = true
		}
	}
	alerts := map[string]bool{}
	for _, r := range alertRules(t) {
		anchor := strings.TrimPrefix(r.Annotations["runbook_url"], runbookBase)
		alerts[anchor] = true
		if !anchors[anchor] {
			t.Errorf("%s: runbook anchor #%s has no section in %s", r.Alert, anchor, runbooksPath)
		}
	}
	for a := range anchors {
		if !alerts[a] {
			t.Errorf("%s: section #%s belongs to no alert", runbooksPath, a)
		}
	}
}

// unitTests is the part of a promtool unit-test file this package checks.
type unitTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		InputSeries []struct {
			Series string `yaml:"series"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `yaml:"exp_labels"`
				ExpAnnotations map[string]string `yaml:"exp_annotations"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestEveryAlertIsUnitTested requires, for every alert, a promtool evaluation
// where it fires with its full label set and annotations, and one at or after
// its for: duration where it must stay silent.
func TestEveryAlertIsUnitTested(t *testing.T) {
	files, _ := filepath.Glob("tests/*.yml")
	type coverage struct{ firing, quiet bool }
	cov := map[string]*coverage{}
	rules := map[string]rule{}
	for _, r := range alertRules(t) {
		cov[r.Alert] = &coverage{}
		rules[r.Alert] = r
	}
	for _, file := range files {
		var ut unitTests
		if err := yaml.Unmarshal(readFile(t, file), &ut); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !slices.Equal(ut.RuleFiles, []string{"../" + rulesPath}) {
			t.Errorf("%s: rule_files %q, want [../%s]", file, ut.RuleFiles, rulesPath)
		}
		for _, tg := range ut.Tests {
			for _, at := range tg.AlertRuleTest {
				r, ok := rules[at.Alertname]
				if !ok {
					t.Errorf("%s: test of unknown alert %q", file, at.Alertname)
					continue
				}
				evalTime, err1 := model.ParseDuration(at.EvalTime)
				forDur, err2 := model.ParseDuration(r.For)
				if err1 != nil || err2 != nil {
					t.Errorf("%s: %s: bad eval_time %q or for %q", file, at.Alertname, at.EvalTime, r.For)
					continue
				}
				if len(at.ExpAlerts) == 0 {
					if time.Duration(evalTime) >= time.Duration(forDur) {
						cov[at.Alertname].quiet = true
					}
					continue
				}
				cov[at.Alertname].firing = true
				for _, ea := range at.ExpAlerts {
					if ea.ExpLabels["severity"] != r.Labels["severity"] {
						t.Errorf("%s: %s at %s: expected severity %q, rule has %q", file, at.Alertname, at.EvalTime,
							ea.ExpLabels["severity"], r.Labels["severity"])
					}
					for _, k := range []string{"summary", "description", "runbook_url"} {
						if ea.ExpAnnotations[k] == "" {
							t.Errorf("%s: %s at %s: expected alert does not check annotation %q", file, at.Alertname, at.EvalTime, k)
						}
					}
				}
			}
		}
	}
	for name, c := range cov {
		if !c.firing {
			t.Errorf("%s: no unit test where it fires", name)
		}
		if !c.quiet {
			t.Errorf("%s: no unit test where it stays silent at or after its for: duration", name)
		}
	}
}

func TestRulesReadOnlyContractMetrics(t *testing.T) {
	contract, err := metricref.Contract(readFile(t, metricsMDPath))
	if err != nil {
		t.Fatal(err)
	}
	f := loadRules(t)
	recorded := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			names := metricref.InExpr(r.Expr)
			if len(names) == 0 {
				t.Errorf("%s%s: expression reads no known metric: %s", r.Alert, r.Record, r.Expr)
			}
			for _, n := range names {
				if n != "up" && !contract[n] && !recorded[n] {
					t.Errorf("%s%s: reads %s, which is neither in METRICS.md nor recorded by a rule", r.Alert, r.Record, n)
				}
			}
		}
	}
	names, err := RuleMetrics(readFile(t, rulesPath))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !contract[n] {
			t.Errorf("RuleMetrics: %s is not in METRICS.md", n)
		}
	}
}

func TestRuleMetrics(t *testing.T) {
	const file = `
groups:
  - name: g
    rules:
      - record: job:bragerone_a:rate5m
        expr: sum by (job) (rate(bragerone_a_total{code=~"5.."}[5m]))
      - alert: A
        expr: job:bragerone_a:rate5m > 0 and on (job) up == 1
        for: 1m
        annotations:
          description: 'bragerone_in_prose {{ with query "bragerone_b_seconds" }}{{ . | first | value }}{{ end }}{{ with query "job:bragerone_a:rate5m" }}{{ end }}'
          runbook_url: https://example.org/bragerone_exporter/runbooks.md#a
      - alert: B
        expr: histogram_quantile(0.9, rate(bragerone_c_seconds_bucket[5m])) > bragerone_a_total
        for: 1m
`
	got, err := RuleMetrics([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bragerone_a_total", "bragerone_b_seconds", "bragerone_c_seconds_bucket"}
	if !slices.Equal(got, want) {
		t.Errorf("RuleMetrics = %q, want %q", got, want)
	}
}

func TestRuleMetricsRejectsBadFiles(t *testing.T) {
	for name, file := range map[string]string{
		"not yaml":          "groups: [",
		"unknown field":     "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        fro: 5m\n",
		"alert and record":  "groups:\n  - name: g\n    rules:\n      - alert: A\n        record: b\n        expr: up\n",
		"neither":           "groups:\n  - name: g\n    rules:\n      - expr: up\n",
		"empty expression":  "groups:\n  - name: g\n    rules:\n      - alert: A\n",
		"groups not a list": "groups: 3\n",
	} {
		if _, err := RuleMetrics([]byte(file)); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "rule file") {
			t.Errorf("%s: error %q does not say it is about the rule file", name, err)
		}
	}
}

func ExampleRuleMetrics() {
	names, err := RuleMetrics([]byte(`
groups:
  - name: g
    rules:
      - alert: BragerOneSessionDown
        expr: max_over_time(bragerone_session_up[3m]) == 0
        for: 2m
`))
	fmt.Println(names, err)
	// Output: [bragerone_session_up] <nil>
}
