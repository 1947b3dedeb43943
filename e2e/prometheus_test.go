package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const rulesFile = "../alerts/bragerone.rules.yml"

// TestPromtoolCheckMetrics lints a real scrape of `serve --simulate`, with
// every module's parameters in it, with `promtool check metrics`.
func TestPromtoolCheckMetrics(t *testing.T) {
	t.Parallel()
	promtool := tool(t, "promtool")
	exp := startServeSimulate(t)
	exp.waitFullScrape(t, exp.devids, 30*time.Second)
	_, body, err := fetchScrape(nil, exp.url+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte("bragerone_parameter_value{")) {
		t.Fatal("the scrape holds no parameter series")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics on a %d-byte scrape: %v\n%s", len(body), err, out)
	}
}

// prometheus is a Prometheus server run by a test.
type prometheus struct {
	*proc
	url string
}

// startPrometheus runs the Debian prometheus binary on a free loopback port
// with config (YAML) and storage in a temporary directory, and waits until it
// is ready.
// scrapeEverySecond starts a Prometheus that scrapes target (host:port) as
// job bragerone every second.
func scrapeEverySecond(t *testing.T, target string) *prometheus {
	t.Helper()
	return startPrometheus(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: bragerone
    static_configs:
      - targets: [%q]
`, target))
}

func startPrometheus(t *testing.T, config string) *prometheus {
	t.Helper()
	bin := tool(t, "prometheus")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startProc(t, "prometheus", bin, nil,
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	pr := &prometheus{proc: p, url: "http://" + addr}
	waitFor(t, 30*time.Second, "prometheus ready", func() (bool, string) {
		if p.exited() {
			t.Fatalf("prometheus exited: %v\n%s", p.err, tail(p.stderr.String(), 4000))
		}
		resp, err := http.Get(pr.url + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return pr
}

// api GETs a Prometheus HTTP API path and decodes its data field into out.
func (p *prometheus) api(path string, out any) error {
	resp, err := http.Get(p.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var env struct {
		Status string          `json:"status"`
		Data   json.RawMessage `json:"data"`
		Error  string          `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return fmt.Errorf("GET %s: HTTP %d: %w", path, resp.StatusCode, err)
	}
	if env.Status != "success" {
		return fmt.Errorf("GET %s: %s: %s", path, env.Status, env.Error)
	}
	return json.Unmarshal(env.Data, out)
}

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"` // [time, "value"]
}

func (s promSample) value() string { v, _ := s.Value[1].(string); return v }

// query runs an instant query; the result must be a vector.
func (p *prometheus) query(q string) ([]promSample, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	if err := p.api("/api/v1/query?query="+url.QueryEscape(q), &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s", q, data.ResultType)
	}
	return data.Result, nil
}

type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	Value       string            `json:"value"`
}

func (p *prometheus) alerts() ([]promAlert, error) {
	var data struct {
		Alerts []promAlert `json:"alerts"`
	}
	err := p.api("/api/v1/alerts", &data)
	return data.Alerts, err
}

func showAlerts(as []promAlert) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, fmt.Sprintf("%s %s %v", a.Labels["alertname"], a.State, a.Labels))
	}
	if len(parts) == 0 {
		return "no active alerts"
	}
	return strings.Join(parts, "; ")
}

// copyMarker labels the alerts of the rewritten copy of the rules.
const copyMarker = "e2e_rules"

// forZeroCopy writes a copy of the alerting rules of a rule file with every
// `for:` set to 0s and the label e2e_rules="for_0s", so that an alert whose
// expression holds fires at the next evaluation instead of after minutes.
// Recording rules stay in the original file only.
func forZeroCopy(t *testing.T, src, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []map[string]any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var groups []map[string]any
	alerts := 0
	for _, g := range doc.Groups {
		rules, _ := g["rules"].([]any)
		var kept []any
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			if rule["alert"] == nil {
				continue
			}
			rule["for"] = "0s"
			labels, _ := rule["labels"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
			}
			labels[copyMarker] = "for_0s"
			rule["labels"] = labels
			kept = append(kept, rule)
		}
		if len(kept) > 0 {
			g["name"] = fmt.Sprint(g["name"]) + ".for_0s"
			g["rules"] = kept
			groups = append(groups, g)
			alerts += len(kept)
		}
	}
	if alerts == 0 {
		t.Fatalf("%s holds no alerting rules", src)
	}
	out, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bragerone.for_0s.rules.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPrometheusScrapesAndEvaluatesRules runs a real Prometheus server that
// scrapes `serve --simulate` every second as job "bragerone" and evaluates
// the shipped alert rules (and a copy of them with `for: 0s`) every second;
// values and alerts are read back through Prometheus's HTTP API.
func TestPrometheusScrapesAndEvaluatesRules(t *testing.T) {
	t.Parallel()
	tool(t, "prometheus")
	exp := startServeSimulate(t, "--poll.interval=200ms", "--session.supervisor-interval=200ms", "--session.down-hysteresis=1s")
	full := exp.waitFullScrape(t, exp.devids, 30*time.Second)
	wantParams := len(full.series("bragerone_parameter_value", nil))

	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := forZeroCopy(t, rules, t.TempDir())
	prom := startPrometheus(t, fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
  - %q
scrape_configs:
  - job_name: bragerone
    static_configs:
      - targets: [%q]
`, rules, copyPath, exp.addr))

	// The values, as Prometheus stored them.
	target := map[string]string{"job": "bragerone", "instance": exp.addr}
	expectOne := func(q, want string) func() (bool, string) {
		return func() (bool, string) {
			res, err := prom.query(q)
			if err != nil {
				return false, err.Error()
			}
			if len(res) != 1 {
				return false, fmt.Sprintf("%d samples: %v", len(res), res)
			}
			return res[0].value() == want, fmt.Sprintf("%v", res)
		}
	}
	waitFor(t, 20*time.Second, `up{job="bragerone"} == 1`, expectOne(`up{job="bragerone"}`, "1"))
	waitFor(t, 20*time.Second, "bragerone_session_up through Prometheus", func() (bool, string) {
		res, err := prom.query("bragerone_session_up")
		if err != nil {
			return false, err.Error()
		}
		if len(res) != 1 {
			return false, fmt.Sprintf("%v", res)
		}
		for k, v := range target {
			if res[0].Metric[k] != v {
				return false, fmt.Sprintf("labels %v, want %v", res[0].Metric, target)
			}
		}
		return res[0].value() == "1", fmt.Sprintf("%v", res)
	})
	waitFor(t, 20*time.Second, "count(bragerone_parameter_value) equal to a direct scrape's",
		expectOne("count(bragerone_parameter_value)", fmt.Sprint(wantParams)))

	// Every rule evaluates without error on real data.
	waitFor(t, 20*time.Second, "every rule evaluated without error", func() (bool, string) {
		var data struct {
			Groups []struct {
				Name  string `json:"name"`
				File  string `json:"file"`
				Rules []struct {
					Name           string    `json:"name"`
					Health         string    `json:"health"`
					LastError      string    `json:"lastError"`
					LastEvaluation time.Time `json:"lastEvaluation"`
				} `json:"rules"`
			} `json:"groups"`
		}
		if err := prom.api("/api/v1/rules", &data); err != nil {
			return false, err.Error()
		}
		n, pending := 0, []string{}
		for _, g := range data.Groups {
			for _, r := range g.Rules {
				n++
				if r.Health == "err" {
					t.Fatalf("rule %s (group %s, %s) fails: %s", r.Name, g.Name, filepath.Base(g.File), r.LastError)
				}
				if r.Health != "ok" {
					pending = append(pending, r.Name)
				}
			}
		}
		return n > 0 && len(pending) == 0, fmt.Sprintf("%d rules, not yet evaluated: %v", n, pending)
	})

	// A healthy exporter raises no alert, not even with for: 0s, but one
	// BragerOneModuleAlarm for each boiler alarm the simulated modules
	// report, named after the alarm and the module (firing in the for: 0s
	// copy, pending in the shipped rules).
	alarms := simulatedAlarms(t, exp, prom)
	waitFor(t, 20*time.Second, "only the boiler alarms alert while everything is healthy", func() (bool, string) {
		as, err := prom.alerts()
		if err != nil {
			return false, err.Error()
		}
		if !onlyAlarmAlerts(as, alarms) {
			return false, showAlerts(as)
		}
		if ok, seen := checkAlarmAlerts(as, alarms, true, "firing"); !ok {
			return false, seen
		}
		return checkAlarmAlerts(as, alarms, false, "pending")
	})

	devid := exp.devids[0]
	exp.sim.module(t, devid, "offline")
	var original, forZero promAlert
	waitFor(t, 30*time.Second, "BragerOneModuleOffline pending (rules as shipped) and firing (for: 0s)", func() (bool, string) {
		as, err := prom.alerts()
		if err != nil {
			return false, err.Error()
		}
		var gotOriginal, gotCopy bool
		for _, a := range as {
			if a.Labels["alertname"] != "BragerOneModuleOffline" || a.Labels["devid"] != devid {
				continue
			}
			if a.Labels[copyMarker] == "" && a.State == "pending" {
				original, gotOriginal = a, true
			}
			if a.Labels[copyMarker] != "" && a.State == "firing" {
				forZero, gotCopy = a, true
			}
		}
		return gotOriginal && gotCopy, showAlerts(as)
	})
	for _, a := range []promAlert{original, forZero} {
		for k, v := range map[string]string{"job": "bragerone", "instance": exp.addr, "severity": "warning"} {
			if a.Labels[k] != v {
				t.Errorf("%s alert: label %s=%q, want %q (labels %v)", a.State, k, a.Labels[k], v, a.Labels)
			}
		}
		if r := a.Labels["reason"]; r != "ws" && r != "rest" {
			t.Errorf("%s alert: reason %q, want ws or rest (labels %v)", a.State, r, a.Labels)
		}
		if d := a.Annotations["description"]; !strings.Contains(d, devid) || !strings.Contains(d, "reason "+a.Labels["reason"]) {
			t.Errorf("%s alert: description %q does not name the module and the reason", a.State, d)
		}
	}
	// Only the offline module alerts (its 5-minute ticket and its 30-minute
	// page share the condition), besides the boiler alarms.
	offlineAlert := func(a promAlert) bool {
		n := a.Labels["alertname"]
		return n == "BragerOneModuleOffline" || n == "BragerOneModuleOfflineLong"
	}
	if as, err := prom.alerts(); err == nil {
		for _, a := range as {
			if onlyAlarmAlerts([]promAlert{a}, alarms) {
				continue
			}
			if !offlineAlert(a) || a.Labels["devid"] != devid {
				t.Errorf("unexpected alert with one module offline: %s", showAlerts([]promAlert{a}))
			}
		}
	}

	exp.sim.module(t, devid, "online")
	waitFor(t, 30*time.Second, "the module offline alerts resolved after the module is back", func() (bool, string) {
		as, err := prom.alerts()
		if err != nil {
			return false, err.Error()
		}
		return !slices.ContainsFunc(as, offlineAlert), showAlerts(as)
	})
}
