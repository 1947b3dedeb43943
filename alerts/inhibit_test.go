package alerts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// criticalAlerts are the alerts that page: a person must act now and the
// condition does not heal by itself (the exporter gone, credentials the cloud
// rejects, a module offline for long, a boiler alarm). Every other alert is
// a warning or info.
var criticalAlerts = []string{
	"BragerOneExporterAbsent",
	"BragerOneExporterDown",
	"BragerOneLoginRejected",
	"BragerOneModuleAlarm",
	"BragerOneModuleOfflineLong",
}

func TestSeverityPolicy(t *testing.T) {
	var critical []string
	for _, r := range alertRules(t) {
		if r.Labels["severity"] == "critical" {
			critical = append(critical, r.Alert)
		}
	}
	sort.Strings(critical)
	if !slices.Equal(critical, criticalAlerts) {
		t.Errorf("critical alerts %q, want exactly %q", critical, criticalAlerts)
	}
}

// TestRunbookExplainsSeverity: every runbook section says which severity its
// alert has (and why, in the sentence that follows), and it is the rule's.
func TestRunbookExplainsSeverity(t *testing.T) {
	sections := map[string]string{}
	var current string
	for _, line := range strings.Split(string(readFile(t, runbooksPath)), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			current = strings.TrimSpace(h)
			continue
		}
		if current != "" {
			sections[current] += line + "\n"
		}
	}
	severityLine := regexp.MustCompile("(?m)^\\*\\*Severity\\.\\*\\* `([a-z]+)`: \\S")
	for _, r := range alertRules(t) {
		m := severityLine.FindAllStringSubmatch(sections[r.Alert], -1)
		if len(m) != 1 {
			t.Errorf("%s: runbook section has %d \"**Severity.** `…`: why\" paragraphs, want 1", r.Alert, len(m))
			continue
		}
		if m[0][1] != r.Labels["severity"] {
			t.Errorf("%s: runbook says severity %q, the rule has %q", r.Alert, m[0][1], r.Labels["severity"])
		}
	}
}

// TestRulesReadExportedLoginResults: every result the rules select on
// bragerone_logins_total, and every reason they select on
// bragerone_login_failure_reason (= or =~ alternatives), is one the
// exporter exports.
func TestRulesReadExportedLoginResults(t *testing.T) {
	failures := cloudapi.LoginFailures()
	for _, sel := range []struct {
		re     *regexp.Regexp
		values []cloudapi.LoginOutcome
	}{
		{regexp.MustCompile(`bragerone_logins_total\{[^}]*result\s*=~?\s*"([^"]*)"`), cloudapi.LoginOutcomes()},
		{regexp.MustCompile(`bragerone_login_failure_reason\{[^}]*reason\s*=~?\s*"([^"]*)"`), failures},
	} {
		for _, g := range loadRules(t).Groups {
			for _, r := range g.Rules {
				for _, m := range sel.re.FindAllStringSubmatch(r.Expr, -1) {
					for v := range strings.SplitSeq(m[1], "|") {
						if !slices.Contains(sel.values, cloudapi.LoginOutcome(v)) {
							t.Errorf("%s%s: selects %q, which the exporter never exports there (it has %q)",
								r.Alert, r.Record, v, sel.values)
						}
					}
				}
			}
		}
	}
}

// TestLoginRejectedIsAVerdictOnTheCredentials: BragerOneLoginRejected
// reads the credential verdict and nothing else: the reason "rejected" of
// bragerone_login_failure_reason (or the result "rejected" of
// bragerone_logins_total), never a blocked, throttled or unanswered login.
func TestLoginRejectedIsAVerdictOnTheCredentials(t *testing.T) {
	verdict := regexp.MustCompile(`bragerone_(login_failure_reason\{[^}]*reason\s*=\s*"rejected"|logins_total\{[^}]*result\s*=\s*"rejected")`)
	for _, r := range alertRules(t) {
		if r.Alert != "BragerOneLoginRejected" {
			continue
		}
		if !verdict.MatchString(r.Expr) {
			t.Errorf("BragerOneLoginRejected does not read the verdict (reason or result \"rejected\"): %s", r.Expr)
		}
		for _, o := range cloudapi.LoginFailures() {
			if o != cloudapi.LoginRejected && strings.Contains(r.Expr, string(o)) {
				t.Errorf("BragerOneLoginRejected reads %q, which is no verdict on the credentials: %s", o, r.Expr)
			}
		}
		return
	}
	t.Fatal("no BragerOneLoginRejected")
}

// ---- inhibition ------------------------------------------------------------------

// amConfig is the part of alertmanager.example.yml this file checks.
type amConfig struct {
	InhibitRules []struct {
		SourceMatchers []string `yaml:"source_matchers"`
		TargetMatchers []string `yaml:"target_matchers"`
		Equal          []string `yaml:"equal"`
	} `yaml:"inhibit_rules"`
}

var matcherSyntax = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$`)

// matchingAlerts returns the alerts of the rule file whose alertname a
// matcher list selects (it must select on alertname with = or =~), and each
// alternative of an =~ alternation that selects no alert.
func matchingAlerts(t *testing.T, matchers []string, names []string) (matched, dead []string) {
	t.Helper()
	for _, m := range matchers {
		p := matcherSyntax.FindStringSubmatch(m)
		if p == nil {
			t.Fatalf("matcher %q is not name op \"value\"", m)
		}
		if p[1] != "alertname" {
			continue
		}
		switch p[2] {
		case "=":
			if slices.Contains(names, p[3]) {
				matched = append(matched, p[3])
			} else {
				dead = append(dead, p[3])
			}
		case "=~":
			re := regexp.MustCompile("^(?:" + p[3] + ")$")
			for _, n := range names {
				if re.MatchString(n) {
					matched = append(matched, n)
				}
			}
			// BragerOne(A|B|C): every alternative must name an alert.
			if prefix, alts, ok := strings.Cut(p[3], "("); ok && strings.HasSuffix(alts, ")") {
				for alt := range strings.SplitSeq(strings.TrimSuffix(alts, ")"), "|") {
					altRE := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + "(?:" + alt + ")$")
					if !slices.ContainsFunc(names, altRE.MatchString) {
						dead = append(dead, prefix+alt)
					}
				}
			}
		default:
			t.Fatalf("matcher %q: alertname must be selected with = or =~", m)
		}
	}
	return matched, dead
}

// firingLabels returns, per alert, the label names of its firing cases in
// the promtool unit tests: the labels the alert really carries.
func firingLabels(t *testing.T) map[string][]string {
	t.Helper()
	files, _ := filepath.Glob("tests/*.yml")
	out := map[string][]string{}
	for _, file := range files {
		var ut unitTests
		if err := yaml.Unmarshal(readFile(t, file), &ut); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, tg := range ut.Tests {
			for _, at := range tg.AlertRuleTest {
				for _, ea := range at.ExpAlerts {
					if _, seen := out[at.Alertname]; !seen {
						out[at.Alertname] = slices.Sorted(maps.Keys(ea.ExpLabels))
					}
				}
			}
		}
	}
	return out
}

// TestInhibitRulesNameRealAlerts: every inhibit rule of the example
// Alertmanager configuration selects existing alerts on both sides (no
// alternative of a regular expression names a missing alert), and every
// label in equal is carried by the source and the target alerts, since an
// absent label matches only another absent one.
func TestInhibitRulesNameRealAlerts(t *testing.T) {
	var cfg amConfig
	if err := yaml.Unmarshal(readFile(t, alertmanagerPath), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.InhibitRules) == 0 {
		t.Fatal("no inhibit rules")
	}
	var names []string
	for _, r := range alertRules(t) {
		names = append(names, r.Alert)
	}
	labels := firingLabels(t)
	for i, ir := range cfg.InhibitRules {
		sources, deadS := matchingAlerts(t, ir.SourceMatchers, names)
		targets, deadT := matchingAlerts(t, ir.TargetMatchers, names)
		if len(sources) == 0 || len(targets) == 0 || len(deadS)+len(deadT) > 0 {
			t.Errorf("inhibit rule %d: sources %q, targets %q; names no alert: %q", i, sources, targets, append(deadS, deadT...))
		}
		for _, s := range sources {
			if slices.Contains(targets, s) {
				t.Errorf("inhibit rule %d: %s would silence itself", i, s)
			}
		}
		for _, l := range ir.Equal {
			for _, a := range append(slices.Clone(sources), targets...) {
				if !slices.Contains(labels[a], l) {
					t.Errorf("inhibit rule %d: %s carries no label %q (its labels: %q)", i, a, l, labels[a])
				}
			}
		}
	}
}

// alertmanager starts the Alertmanager of the Debian package
// prometheus-alertmanager (or an upstream "alertmanager") with the example
// configuration and returns its base URL. Notifications never leave: the
// test ends long before the first group_wait.
func alertmanager(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus-alertmanager")
	if err != nil {
		bin = tool(t, "alertmanager", "prometheus-alertmanager")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--config.file="+alertmanagerPath,
		"--storage.path="+t.TempDir(),
		"--web.listen-address=127.0.0.1:0",
		"--cluster.listen-address=",
		"--log.level=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	listening := regexp.MustCompile(`msg="Listening on" address=(\S+)`)
	addr := make(chan string, 1)
	var log bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
			log.WriteString(sc.Text() + "\n")
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("alertmanager exited without listening:\n%s", log.String())
		}
		return "http://" + a // the goroutine above keeps draining stderr
	case <-time.After(30 * time.Second):
		t.Fatal("alertmanager did not report its listen address within 30 s")
	}
	return ""
}

// firingAlert is an alert as Prometheus would send it: the labels its rule
// gives it, with the job and instance of one exporter, object 1 ("Home") and
// module M1 where it has them; extra overrides labels in pairs.
func firingAlert(t *testing.T, labels map[string][]string, name, instance string, extra ...string) map[string]string {
	t.Helper()
	ls := map[string]string{"alertname": name}
	severity := ""
	for _, r := range alertRules(t) {
		if r.Alert == name {
			severity = r.Labels["severity"]
		}
	}
	if severity == "" {
		t.Fatalf("no alert %s", name)
	}
	for _, l := range labels[name] {
		switch l {
		case "job":
			ls[l] = "bragerone"
		case "instance":
			ls[l] = instance
		case "severity":
			ls[l] = severity
		case "devid":
			ls[l] = "M1"
		case "result":
			ls[l] = "rejected"
		case "reason":
			ls[l] = "rest"
		case "object_id":
			ls[l] = "1"
		case "object":
			ls[l] = "Home"
		case "module":
			ls[l] = "Boiler"
		default:
			t.Fatalf("%s: no test value for label %q", name, l)
		}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		ls[extra[i]] = extra[i+1]
	}
	return ls
}

// alertKey names an alert by its name, exporter, object and module:
// alertname{instance,object_id,devid}.
func alertKey(ls map[string]string) string {
	return ls["alertname"] + "{" + ls["instance"] + "," + ls["object_id"] + "," + ls["devid"] + "}"
}

// TestAlertmanagerInhibition posts the alerts of whole faults to a real
// Alertmanager running the example configuration and checks which of them
// it inhibits: each fault notifies through its cause only.
func TestAlertmanagerInhibition(t *testing.T) {
	labels := firingLabels(t)
	type scenario struct {
		name      string
		alerts    []map[string]string
		inhibited []string // alertKeys; every other alert must stay active
	}
	a := func(name, instance string, extra ...string) map[string]string {
		return firingAlert(t, labels, name, instance, extra...)
	}
	scenarios := []scenario{
		{
			name: "cloud outage, every object down: the session alerts speak for it; modules the cloud reports offline still notify",
			alerts: []map[string]string{
				a("BragerOneSessionDown", "outage"),
				a("BragerOneSessionDown", "outage", "object_id", "2", "object", "Cottage"),
				a("BragerOneAllSessionsDown", "outage"),
				a("BragerOneModulePollFailing", "outage"),
				a("BragerOneModulePollFailing", "outage", "object_id", "2", "object", "Cottage"),
				a("BragerOneModuleNoUpdates", "outage"),
				a("BragerOneTokenExpiring", "outage"),
				a("BragerOneUpstreamErrors", "outage"),
				a("BragerOneRecoveryLadderEscalating", "outage"),
				a("BragerOneRecoveryQuarantined", "outage", "object_id", "2", "object", "Cottage"),
				a("BragerOneModuleOffline", "outage"),
				a("BragerOneModuleOfflineLong", "outage", "devid", "M2"),
			},
			inhibited: []string{
				"BragerOneModulePollFailing{outage,1,}", "BragerOneModulePollFailing{outage,2,}",
				"BragerOneModuleNoUpdates{outage,1,M1}",
				"BragerOneTokenExpiring{outage,,}", "BragerOneUpstreamErrors{outage,,}",
				"BragerOneRecoveryLadderEscalating{outage,1,}", "BragerOneRecoveryQuarantined{outage,2,}",
			},
		},
		{
			name: "one object's session down: its own poll, update and ladder alerts are silenced, not another object's, nor the account's token and 5xx alerts",
			alerts: []map[string]string{
				a("BragerOneSessionDown", "house"),
				a("BragerOneModulePollFailing", "house"),
				a("BragerOneModulePollFailing", "house", "object_id", "2", "object", "Cottage"),
				a("BragerOneModuleNoUpdates", "house"),
				a("BragerOneModuleNoUpdates", "house", "object_id", "2", "object", "Cottage", "devid", "M2"),
				a("BragerOneRecoveryLadderEscalating", "house"),
				a("BragerOneRecoveryLadderEscalating", "house", "object_id", "2", "object", "Cottage"),
				a("BragerOneRecoveryQuarantined", "house", "object_id", "2", "object", "Cottage"),
				a("BragerOneTokenExpiring", "house"),
				a("BragerOneUpstreamErrors", "house"),
			},
			inhibited: []string{
				"BragerOneModulePollFailing{house,1,}", "BragerOneModuleNoUpdates{house,1,M1}",
				"BragerOneRecoveryLadderEscalating{house,1,}",
			},
		},
		{
			name: "rejected credentials: one page, every object's session and what follows are silenced",
			alerts: []map[string]string{
				a("BragerOneLoginRejected", "creds"),
				a("BragerOneSessionDown", "creds"),
				a("BragerOneSessionDown", "creds", "object_id", "2", "object", "Cottage"),
				a("BragerOneAllSessionsDown", "creds"),
				a("BragerOneLivePushStale", "creds"),
				a("BragerOneModulePollFailing", "creds"),
				a("BragerOneModuleNoUpdates", "creds"),
				a("BragerOneTokenExpiring", "creds"),
				a("BragerOneRecoveryLadderEscalating", "creds"),
				a("BragerOneRecoveryQuarantined", "creds"),
			},
			inhibited: []string{
				"BragerOneSessionDown{creds,1,}", "BragerOneSessionDown{creds,2,}", "BragerOneAllSessionsDown{creds,,}",
				"BragerOneLivePushStale{creds,1,}", "BragerOneModulePollFailing{creds,1,}",
				"BragerOneModuleNoUpdates{creds,1,M1}", "BragerOneTokenExpiring{creds,,}",
				"BragerOneRecoveryLadderEscalating{creds,1,}", "BragerOneRecoveryQuarantined{creds,1,}",
			},
		},
		{
			name: "the cloud throttles the account: the throttling notifies, what it holds back is silenced; a module offline, a zombie and another exporter still notify",
			alerts: []map[string]string{
				a("BragerOneCloudThrottling", "busy"),
				a("BragerOneSessionDown", "busy"),
				a("BragerOneSessionDown", "busy", "object_id", "2", "object", "Cottage"),
				a("BragerOneAllSessionsDown", "busy"),
				a("BragerOneModulePollFailing", "busy"),
				a("BragerOneModuleNoUpdates", "busy"),
				a("BragerOneTokenExpiring", "busy"),
				a("BragerOneUpstreamErrors", "busy"),
				a("BragerOneRecoveryLadderEscalating", "busy"),
				a("BragerOneRecoveryQuarantined", "busy"),
				a("BragerOneModuleOffline", "busy"),
				a("BragerOneLivePushStale", "busy"),
				a("BragerOneSessionDown", "calm"),
			},
			inhibited: []string{
				"BragerOneSessionDown{busy,1,}", "BragerOneSessionDown{busy,2,}", "BragerOneAllSessionsDown{busy,,}",
				"BragerOneModulePollFailing{busy,1,}", "BragerOneModuleNoUpdates{busy,1,M1}", "BragerOneTokenExpiring{busy,,}",
				"BragerOneUpstreamErrors{busy,,}", "BragerOneRecoveryLadderEscalating{busy,1,}", "BragerOneRecoveryQuarantined{busy,1,}",
			},
		},
		{
			name: "logins refused in front of the cloud: the blocked login notifies, every object's session and what follows are silenced, a module offline is not",
			alerts: []map[string]string{
				a("BragerOneLoginBlocked", "proxy"),
				a("BragerOneSessionDown", "proxy"),
				a("BragerOneSessionDown", "proxy", "object_id", "2", "object", "Cottage"),
				a("BragerOneAllSessionsDown", "proxy"),
				a("BragerOneModulePollFailing", "proxy"),
				a("BragerOneTokenExpiring", "proxy"),
				a("BragerOneRecoveryLadderEscalating", "proxy"),
				a("BragerOneModuleOffline", "proxy"),
				a("BragerOneSessionDown", "elsewhere"),
			},
			inhibited: []string{
				"BragerOneSessionDown{proxy,1,}", "BragerOneSessionDown{proxy,2,}", "BragerOneAllSessionsDown{proxy,,}",
				"BragerOneModulePollFailing{proxy,1,}", "BragerOneTokenExpiring{proxy,,}", "BragerOneRecoveryLadderEscalating{proxy,1,}",
			},
		},
		{
			name: "a module offline for long: its page silences its own ticket, not another module's",
			alerts: []map[string]string{
				a("BragerOneModuleOfflineLong", "plant"),
				a("BragerOneModuleOffline", "plant"),
				a("BragerOneModuleOffline", "plant", "devid", "M2"),
			},
			inhibited: []string{"BragerOneModuleOffline{plant,1,M1}"},
		},
		{
			name: "exporter down: its own alerts are silenced, another exporter's are not",
			alerts: []map[string]string{
				a("BragerOneExporterDown", "gone"),
				a("BragerOneSessionDown", "gone"),
				a("BragerOneAllSessionsDown", "gone"),
				a("BragerOneLoginRejected", "gone"),
				a("BragerOneLoginBlocked", "gone"),
				a("BragerOneCloudThrottling", "gone"),
				a("BragerOneModuleOfflineLong", "gone"),
				a("BragerOneParameterSeriesDropped", "gone"),
				a("BragerOneSessionDown", "other"),
				a("BragerOneModulePollFailing", "other"),
				a("BragerOneModulePollFailing", "other2"),
			},
			inhibited: []string{
				"BragerOneModulePollFailing{other,1,}",
				"BragerOneSessionDown{gone,1,}", "BragerOneAllSessionsDown{gone,,}", "BragerOneLoginRejected{gone,,}",
				"BragerOneLoginBlocked{gone,,}", "BragerOneCloudThrottling{gone,,}",
				"BragerOneModuleOfflineLong{gone,1,M1}", "BragerOneParameterSeriesDropped{gone,1,M1}",
			},
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			base := alertmanager(t)
			body, _ := json.Marshal(func() []map[string]any {
				var out []map[string]any
				for _, ls := range sc.alerts {
					out = append(out, map[string]any{"labels": ls, "startsAt": time.Now().UTC().Format(time.RFC3339)})
				}
				return out
			}())
			resp, err := http.Post(base+"/api/v2/alerts", "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("POST /api/v2/alerts: %s: %s", resp.Status, b)
			}
			want := map[string]bool{}
			for _, ls := range sc.alerts {
				want[alertKey(ls)] = slices.Contains(sc.inhibited, alertKey(ls))
			}
			if len(want) != len(sc.alerts) {
				t.Fatalf("two alerts of the scenario share a key")
			}
			for _, k := range sc.inhibited {
				if _, ok := want[k]; !ok {
					t.Fatalf("expected-inhibited %s is not posted", k)
				}
			}
			// Alertmanager's inhibitor learns the posted alerts asynchronously;
			// wait until every alert is listed and processed and every alert
			// expected to be inhibited is, then compare the whole picture.
			deadline := time.Now().Add(20 * time.Second)
			var got map[string]bool
			for {
				got = inhibitedNow(t, base)
				if settled(got, want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			var problems []string
			for k, w := range want {
				g, ok := got[k]
				switch {
				case !ok:
					problems = append(problems, k+" not listed (or unprocessed)")
				case g && !w:
					problems = append(problems, k+" inhibited, want active")
				case !g && w:
					problems = append(problems, k+" active, want inhibited")
				}
			}
			sort.Strings(problems)
			if len(problems) > 0 {
				t.Errorf("%s:\n%s", sc.name, strings.Join(problems, "\n"))
			}
		})
	}
}

// settled reports whether every wanted alert is listed and every alert that
// should be inhibited is.
func settled(got, want map[string]bool) bool {
	for k, w := range want {
		g, ok := got[k]
		if !ok || (w && !g) {
			return false
		}
	}
	return true
}

// inhibitedNow lists the processed alerts of an Alertmanager by key, true
// for those it inhibits.
func inhibitedNow(t *testing.T, base string) map[string]bool {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts?active=true&inhibited=true&silenced=true&unprocessed=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var alerts []struct {
		Labels map[string]string `json:"labels"`
		Status struct {
			State       string   `json:"state"`
			InhibitedBy []string `json:"inhibitedBy"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(fmt.Errorf("GET /api/v2/alerts: %w", err))
	}
	out := map[string]bool{}
	for _, al := range alerts {
		if al.Status.State == "unprocessed" {
			continue
		}
		out[alertKey(al.Labels)] = len(al.Status.InhibitedBy) > 0
	}
	return out
}

// TestREADMEAlertTable: the README's alert table lists every alert of the
// rule file once, with the rule's severity, and nothing else.
func TestREADMEAlertTable(t *testing.T) {
	row := regexp.MustCompile("(?m)^\\| `(BragerOne[A-Za-z0-9]+)` \\| ([a-z]+) \\| [^|]+ \\|$")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(readFile(t, "../README.md")), -1) {
		if _, dup := documented[m[1]]; dup {
			t.Errorf("README.md lists %s twice", m[1])
		}
		documented[m[1]] = m[2]
	}
	for _, r := range alertRules(t) {
		sev, ok := documented[r.Alert]
		switch {
		case !ok:
			t.Errorf("README.md's alert table lacks %s", r.Alert)
		case sev != r.Labels["severity"]:
			t.Errorf("README.md gives %s severity %s, the rule %s", r.Alert, sev, r.Labels["severity"])
		}
		delete(documented, r.Alert)
	}
	for name := range documented {
		t.Errorf("README.md's alert table lists %s, which is no alert", name)
	}
}
