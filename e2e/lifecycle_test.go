package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// TestStartupToFirstFullScrape measures how long `serve --simulate` takes
// from process start to the first scrape holding every parameter series of
// all three modules. It is a figure, not an assertion, and runs alone (not
// in parallel with this package's other tests) to keep it meaningful.
func TestStartupToFirstFullScrape(t *testing.T) {
	exp := startServeSimulate(t)
	listening := time.Since(exp.start)
	if len(exp.devids) != 3 {
		t.Fatalf("embedded cloud has modules %v, want the default 3", exp.devids)
	}
	full := exp.waitFullScrape(t, exp.devids, 30*time.Second)
	elapsed := time.Since(exp.start)
	t.Logf("serve --simulate: process start to first full scrape %v (%d parameter series of %d modules); listening after %v",
		elapsed.Round(time.Millisecond), len(full.series("bragerone_parameter_value", nil)), len(exp.devids), listening.Round(time.Millisecond))
}

// TestHealthReadyAndStatus checks /-/healthy, /-/ready after the first prime
// and the /status page with one row per module.
func TestHealthReadyAndStatus(t *testing.T) {
	t.Parallel()
	exp := startServeSimulate(t)
	if code, body := httpGet(t, nil, exp.url+"/-/healthy"); code != http.StatusOK {
		t.Errorf("/-/healthy: %d %q, want 200", code, body)
	}
	waitFor(t, 30*time.Second, "/-/ready 200", func() (bool, string) {
		code, body := httpGet(t, nil, exp.url+"/-/ready")
		return code == http.StatusOK, body
	})
	// Ready means primed: every parameter is there.
	if ok, seen := fullScrape(exp.mustScrape(t), exp.devids); !ok {
		t.Errorf("ready before the snapshot is complete: %s", seen)
	}

	code, page := httpGet(t, nil, exp.url+"/status")
	if code != http.StatusOK {
		t.Fatalf("/status: HTTP %d", code)
	}
	// The rows of the modules tables (one per object); the outage list
	// names modules too.
	var rows []string
	for _, table := range regexp.MustCompile(`(?s)<table class="modules">.*?</table>`).FindAllString(page, -1) {
		rows = append(rows, regexp.MustCompile(`(?s)<tr\b.*?</tr>`).FindAllString(table, -1)...)
	}
	for _, d := range exp.devids {
		n := 0
		for _, r := range rows {
			if strings.Contains(r, ">"+d+"<") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("/status: module %s is in %d table rows, want 1", d, n)
		}
	}
}

// TestReadyAfterFailedFirstPrime starts the exporter while the cloud answers
// every prime with 503, then lets the prime through: /-/healthy is 200 all
// along, /-/ready is 503 until a prime succeeds and 200 after it, and every
// parameter is then exported.
func TestReadyAfterFailedFirstPrime(t *testing.T) {
	t.Parallel()
	sim := startSimulate(t, "--drift-interval=200ms")
	const primePath = "POST /v1/modules/parameters"
	fault := sim.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: primePath, Status: 503})
	exp := startServe(t, demoEnv, append([]string{"--cloud.url=" + sim.url}, fastHealth...)...)

	// The first prime and its retries (200, 500, 800 ms) all fail.
	waitFor(t, 20*time.Second, "the prime and its retries refused", func() (bool, string) {
		n := sim.ctl.state(t).Requests[primePath]
		return n >= 4, "prime requests: " + strconv.Itoa(n)
	})
	if code, body := httpGet(t, nil, exp.url+"/-/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("/-/ready with no snapshot stored: %d %q, want 503", code, body)
	}
	if code, body := httpGet(t, nil, exp.url+"/-/healthy"); code != http.StatusOK {
		t.Errorf("/-/healthy: %d %q, want 200", code, body)
	}

	sim.ctl.clear(t, fault)
	waitFor(t, 15*time.Second, "/-/ready 200 once the cloud answers primes again", func() (bool, string) {
		code, body := httpGet(t, nil, exp.url+"/-/ready")
		return code == http.StatusOK, body + " (prime requests so far: " + strconv.Itoa(sim.ctl.state(t).Requests[primePath]) + ")"
	})
	exp.waitFullScrape(t, sim.devids, faultDeadline)
}

// TestSignalStopsCleanly sends SIGTERM or SIGINT to `serve --simulate`: it
// logs the shutdown, stops the gateway and exits 0.
func TestSignalStopsCleanly(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			exp := startServeSimulate(t)
			waitFor(t, 30*time.Second, "/-/ready 200", func() (bool, string) {
				code, body := httpGet(t, nil, exp.url+"/-/ready")
				return code == http.StatusOK, body
			})
			sent := time.Now()
			exp.signal(t, sig)
			if code := exp.waitExit(t, 15*time.Second); code != 0 {
				t.Fatalf("exit code %d after %v, want 0\n%s", code, sig, tail(exp.stderr.String(), 4000))
			}
			t.Logf("exited 0 %v after %v", time.Since(sent).Round(time.Millisecond), sig)
			msgs := map[string]bool{}
			for _, r := range exp.stderr.Records() {
				msgs[r.str("msg")] = true
				if lvl := r.str("level"); lvl == "ERROR" {
					t.Errorf("error logged during a clean shutdown: %v", r)
				}
			}
			for _, want := range []string{"shutting down", "realtime gateway stopped"} {
				if !msgs[want] {
					t.Errorf("no %q log line", want)
				}
			}
		})
	}
}

// TestExitCodes checks the exit code and the message of each way `serve`
// refuses to run.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, env []string, args ...string) (int, []string) {
		t.Helper()
		p := startProc(t, "serve", exporterBin, env, args...)
		code := p.waitExit(t, 30*time.Second)
		return code, p.stderr.Lines()
	}
	plainLines := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "{") {
				out = append(out, l)
			}
		}
		return out
	}

	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		sim := startSimulate(t)
		const wrong = "wrong-e2e-password"
		code, lines := run(t, []string{"BRAGERONE_EMAIL=" + cloudsim.DefaultEmail, "BRAGERONE_PASSWORD=" + wrong},
			"serve", "--cloud.url="+sim.url, "--web.listen-address=127.0.0.1:0", "--log.format=json")
		if code != 2 {
			t.Errorf("exit code %d, want 2", code)
		}
		// Under --log.format=json the error that ends the process is a
		// record like every other line, not a plain line.
		var fatal []logRecord
		for _, l := range lines {
			var r logRecord
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Errorf("a stderr line that is not a JSON record under --log.format=json: %q", l)
			} else if r.str("level") == "ERROR" {
				fatal = append(fatal, r)
			}
		}
		if len(fatal) != 1 || fatal[0].str("msg") != "bad usage or configuration" ||
			!strings.Contains(fatal[0].str("err"), "login rejected") || !strings.Contains(fatal[0].str("err"), "email and password") {
			t.Errorf("want one ERROR record saying the login was rejected and to check the email and password; got %v", fatal)
		}
		for _, l := range lines {
			if strings.Contains(l, wrong) {
				t.Errorf("the password is in the output: %s", l)
			}
		}
	})
	for _, tc := range []struct {
		name  string
		args  []string
		names string // what the message must mention
	}{
		{"unknown flag", []string{"serve", "--simulate", "--no-such-flag"}, "--no-such-flag"},
		{"missing web config file", []string{"serve", "--simulate", "--web.config.file=/nonexistent"}, "/nonexistent"},
		{"negative duration", []string{"serve", "--simulate", "--poll.interval=-1s"}, "--poll.interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, lines := run(t, nil, append(tc.args, "--web.listen-address=127.0.0.1:0")...)
			if code != 2 {
				t.Errorf("exit code %d, want 2; stderr %q", code, lines)
			}
			msg := plainLines(lines)
			if len(msg) != 1 || !strings.Contains(msg[0], tc.names) {
				t.Errorf("want one stderr line naming %s; got %q", tc.names, msg)
			}
		})
	}
}
