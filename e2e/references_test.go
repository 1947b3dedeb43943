package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bragerone/bragerone_exporter/alerts"
	"github.com/bragerone/bragerone_exporter/alerts/metricref"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/dashboards"
)

// seenNames accumulates the series names of every scrape a scenario takes.
type seenNames struct {
	mu    sync.Mutex
	names map[string]bool
}

func (s *seenNames) add(sc scrape) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil {
		s.names = map[string]bool{}
	}
	for n := range sc.names() {
		s.names[n] = true
	}
}

func (s *seenNames) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

// waitState waits until a scrape shows the state and records the names of
// every scrape taken meanwhile.
func (s *seenNames) waitState(t *testing.T, exp *exporter, what string, cond func(scrape) (bool, string)) {
	t.Helper()
	exp.waitMetric(t, faultDeadline, what, func(sc scrape) (bool, string) {
		s.add(sc)
		return cond(sc)
	})
}

func present(name string, want map[string]string) func(scrape) (bool, string) {
	return func(s scrape) (bool, string) { return len(s.series(name, want)) > 0, s.show(name) }
}

// recordedNames returns the names the rule file's recording rules produce.
func recordedNames(t *testing.T, ruleFile []byte) map[string]bool {
	t.Helper()
	var doc struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(ruleFile, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				out[r.Record] = true
			}
		}
	}
	return out
}

// TestRulesAndDashboardsReadRealSeries checks every metric the alert rules
// and the dashboards read (alerts.RuleMetrics, dashboards.MetricsReferenced)
// and every metric METRICS.md promises against real scrapes of
// `serve --simulate`.
//
// Rule for metrics that exist only in some states: the scenario brings each
// such state about with the simulator's faults and waits until the scrape
// shows it (module offline → bragerone_module_outage_seconds; module restored
// → bragerone_module_last_outage_seconds; pushes muted → live push stale,
// bragerone_live_stale_seconds; session dropped with a stalled handshake →
// bragerone_session_outage_seconds; a reconnect timing out on the stalled
// handshake → bragerone_session_reconnect_failure_reason; handshake released →
// bragerone_session_last_outage_seconds). A name counts as present when any
// scrape of the scenario holds it; histograms count as their _bucket, _sum
// and _count series. Names with a colon are recording rules and must be
// recorded by the rule file instead.
func TestRulesAndDashboardsReadRealSeries(t *testing.T) {
	t.Parallel()
	rulesYAML, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	referencedBy := map[string][]string{}
	ruleNames, err := alerts.RuleMetrics(rulesYAML)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ruleNames {
		referencedBy[n] = append(referencedBy[n], "alerts/bragerone.rules.yml")
	}
	boards, err := filepath.Glob("../dashboards/*.json")
	if err != nil || len(boards) == 0 {
		t.Fatalf("no dashboards found: %v", err)
	}
	for _, b := range boards {
		raw, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		names, err := dashboards.MetricsReferenced(raw)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if len(names) == 0 {
			t.Errorf("%s references no metric", b)
		}
		for _, n := range names {
			referencedBy[n] = append(referencedBy[n], "dashboards/"+filepath.Base(b))
		}
	}
	md, err := os.ReadFile("../METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	contract, err := metricref.Contract(md)
	if err != nil {
		t.Fatal(err)
	}

	// Drift every 2 s (the embedded cloud's) stays under a 3 s stale
	// threshold; zombie-primes=0 keeps a zombie a zombie (prime only, no
	// restart), so the stale gauge stays until pushes resume.
	exp := startServeSimulate(t, "--poll.interval=200ms", "--session.supervisor-interval=200ms",
		"--session.down-hysteresis=1s", "--session.connect-timeout=3s", "--push.stale-after=3s",
		"--recovery.zombie-primes=0", "--modules.forget-after=1s", "--objects.refresh-interval=300ms",
		"--simulate.objects=2", "--simulate.modules=4")
	var seen seenNames
	seen.add(exp.waitFullScrape(t, exp.devids, 30*time.Second))
	seen.waitState(t, exp, "live push healthy", valueIs("bragerone_push_healthy", nil, 1))

	devid := exp.devids[0]
	sel := map[string]string{"devid": devid}
	exp.sim.module(t, devid, "offline")
	seen.waitState(t, exp, "module outage", present("bragerone_module_outage_seconds", sel))
	exp.sim.module(t, devid, "online")
	seen.waitState(t, exp, "module restored", present("bragerone_module_last_outage_seconds", sel))

	mute := exp.sim.inject(t, cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
	seen.waitState(t, exp, "zombie session (push stale)", present("bragerone_live_stale_seconds", nil))
	exp.sim.clear(t, mute)
	seen.waitState(t, exp, "live push healthy again", valueIs("bragerone_push_healthy", nil, 1))

	stall := exp.sim.inject(t, cloudsim.Fault{Kind: cloudsim.FaultStallHandshake})
	exp.sim.inject(t, cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	seen.waitState(t, exp, "session outage", present("bragerone_session_outage_seconds", nil))
	seen.waitState(t, exp, "reconnect failed", present("bragerone_session_reconnect_failure_reason", nil))
	exp.sim.clear(t, stall)
	seen.waitState(t, exp, "session restored", present("bragerone_session_last_outage_seconds", nil))

	// A login refused by a firewall's page in front of the cloud: the next
	// module-list poll is answered 401, the re-login 403 with an HTML page.
	blocked := exp.sim.inject(t, cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 403, HTML: true})
	exp.sim.inject(t, cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 401, Count: 1})
	seen.waitState(t, exp, "login blocked", present("bragerone_login_failure_reason", map[string]string{"reason": "blocked"}))
	seen.waitState(t, exp, "login backoff", present("bragerone_login_retry_timestamp_seconds", nil))
	exp.sim.clear(t, blocked)

	// A module that leaves its object (missing from the list past
	// --modules.forget-after), then the object that leaves the account.
	objects := exp.sim.state(t).Objects
	gone := objects[0].Devids[len(objects[0].Devids)-1]
	exp.sim.inject(t, cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: gone})
	seen.waitState(t, exp, "module departed", present("bragerone_module_departed_timestamp_seconds", map[string]string{"devid": gone}))
	exp.sim.do(t, http.MethodPost, fmt.Sprintf("/control/objects/%d/hide", objects[1].ID), nil)
	seen.waitState(t, exp, "object departed", present("bragerone_object_departed_timestamp_seconds", nil))

	recorded := recordedNames(t, rulesYAML)
	var refs []string
	for n := range referencedBy {
		refs = append(refs, n)
	}
	sort.Strings(refs)
	for _, n := range refs {
		switch {
		case strings.Contains(n, ":"):
			if !recorded[n] {
				t.Errorf("%s (read by %s) is recorded by no rule of %s", n, strings.Join(referencedBy[n], ", "), rulesFile)
			}
		case !seen.has(n):
			t.Errorf("%s (read by %s) is in no scrape of the scenario", n, strings.Join(referencedBy[n], ", "))
		}
	}
	var promised []string
	for n := range contract {
		promised = append(promised, n)
	}
	sort.Strings(promised)
	for _, n := range promised {
		if !seen.has(n) {
			t.Errorf("%s is in METRICS.md but in no scrape of the scenario", n)
		}
	}
	seen.mu.Lock()
	for n := range seen.names {
		if strings.HasPrefix(n, "bragerone_") && !contract[n] {
			t.Errorf("%s is exported but not in METRICS.md", n)
		}
	}
	seen.mu.Unlock()
	if !t.Failed() {
		t.Logf("%d names read by rules and dashboards, %d promised by METRICS.md: all in real scrapes", len(refs), len(promised))
	}
}
