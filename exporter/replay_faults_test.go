package exporter

import (
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// faultRun is one run of the exporter against the simulated cloud with a
// fault, recorded (the simulator's own record of its traffic) into
// testdata/captures/<name>.jsonl by TestReplayFaultCaptures -update;
// TestReplayCaptures then replays it like any field report and, with
// -update, writes its golden <name>.metrics.
type faultRun struct {
	name, scenario string
	// health tunes the recorded exporter's durations (the run stays short).
	health func(*Health)
	// play plays the run on sim once the exporter serving field shows both
	// modules' parameters, and returns when the exporter has seen it all.
	play func(t *testing.T, sim *cloudsim.Cloud, field *httptest.Server)
}

// faultRuns are the recordings of testdata/captures made from the
// simulator with faults.
var faultRuns = []faultRun{
	{
		name:     "zombie-stretch",
		scenario: "pushes muted for a while: the ladder climbs (zombie primes carry a value set while muted, a hard restart); then pushes resume and event 22 primes again",
		health: func(h *Health) {
			h.PollInterval, h.StaleAfter = 100*time.Millisecond, 250*time.Millisecond
			h.CooldownBase, h.CooldownMax = 100*time.Millisecond, 200*time.Millisecond
		},
		play: playZombieStretch,
	},
	{
		name:     "alarm-raised-and-cleared",
		scenario: "alarm 3 raised on the first module and seen, then cleared: it ends in the alarm history",
		play:     playAlarmRaisedAndCleared,
	},
	{
		name:     "storm-503",
		scenario: "a storm of 503s: three polls of the module list, and the prime event 22 asks for twice (its third attempt gets the values); then the cloud recovers",
		health: func(h *Health) {
			h.PollInterval = 150 * time.Millisecond
		},
		play: playStorm503,
	},
}

// settings are the header settings of the run's recording, as recorded
// with cfg.
func (run faultRun) settings(cfg Config) map[string]string {
	return map[string]string{
		"source": "cloudsim (exporter TestReplayFaultCaptures)", "scenario": run.scenario,
		"poll_interval": cfg.Health.PollInterval.String(), "stale_after": cfg.Health.StaleAfter.String(),
	}
}

// config is the recorded exporter's configuration against sim.
func (run faultRun) config(t *testing.T, sim *cloudsim.Cloud) Config {
	cfg := validConfig(t)
	cfg.Parameters = Parameters{}
	if sim != nil {
		cfg.Cloud.URL = sim.URL()
	}
	if run.health != nil {
		run.health(&cfg.Health)
	}
	return cfg
}

// TestReplayFaultCaptures, with -update, records each of faultRuns into
// testdata/captures (run TestReplayCaptures -update after it for the
// golden files; TestReplayCaptures replays the recordings). Without
// -update it checks that each recording is of its run as the run is
// written now: the scenario and the durations in its header.
func TestReplayFaultCaptures(t *testing.T) {
	if !*update {
		for _, run := range faultRuns {
			path := filepath.Join(capturesDir, run.name+".jsonl")
			f, err := os.Open(path)
			if err != nil {
				t.Fatalf("%s: %v (go test ./exporter -run TestReplayFaultCaptures -update records it)", run.name, err)
			}
			h, _, err := traffic.Read(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if want := run.settings(run.config(t, nil)); !maps.Equal(h.Settings, want) {
				t.Errorf("%s records %v, the run is now %v: record it again with -update", path, h.Settings, want)
			}
		}
		return
	}
	for _, run := range faultRuns {
		t.Run(run.name, func(t *testing.T) {
			rec := &recorder{}
			sim := cloudsim.New(cloudsim.Options{Email: "a@example.com", Password: "secret", Modules: 2, Objects: 1, ParamsPerModule: 6, Record: rec.add})
			if err := sim.Start("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			defer sim.Close()
			cfg := run.config(t, sim)
			field, stop := startExporter(t, cfg)
			waitForParameters(t, sim, field)
			run.play(t, sim, field)
			settled(t, field)
			stop()
			writeCaptureFile(t, filepath.Join(capturesDir, run.name+".jsonl"), rec.records(), run.settings(cfg))
		})
	}
}

// waitForParameters waits until the exporter serving field shows the
// parameters of every module of sim.
func waitForParameters(t *testing.T, sim *cloudsim.Cloud, field *httptest.Server) {
	t.Helper()
	waitFor(t, "the exporter's parameters", func() bool {
		_, body := get(t, field, "/metrics")
		for _, d := range sim.Devids() {
			if !strings.Contains(body, `bragerone_parameter_value{devid="`+d+`"`) {
				return false
			}
		}
		return strings.Contains(body, "\nbragerone_session_up{")
	})
}

// settled waits until the exporter's fieldView is the same in two scrapes
// a poll interval apart.
func settled(t *testing.T, field *httptest.Server) {
	t.Helper()
	var last []string
	waitFor(t, "a settled /metrics view", func() bool {
		_, body := get(t, field, "/metrics")
		view := fieldView(body)
		same := slices.Equal(view, last)
		last = view
		time.Sleep(200 * time.Millisecond)
		return same
	})
}

// vKeys are the first n registers of pool P4 of devid, sorted.
func vKeys(t *testing.T, sim *cloudsim.Cloud, devid string, n int) []string {
	t.Helper()
	var keys []string
	for k := range sim.Params(devid) {
		if strings.HasPrefix(k, "P4.v") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) < n {
		t.Fatalf("%s has %d P4.v registers, want %d", devid, len(keys), n)
	}
	return keys[:n]
}

// metricLine says whether the exporter serving field shows a line
// starting with prefix.
func metricLine(t *testing.T, field *httptest.Server, prefix string) bool {
	t.Helper()
	_, body := get(t, field, "/metrics")
	return strings.Contains(body, "\n"+prefix)
}

func playZombieStretch(t *testing.T, sim *cloudsim.Cloud, field *httptest.Server) {
	d := sim.Devids()[0]
	keys := vKeys(t, sim, d, 2)
	sim.SetParam(d, keys[0], 101)
	waitFor(t, "the live value and push healthy", func() bool {
		_, body := get(t, field, "/metrics")
		return strings.Contains(body, "} 101\n") && lineWith(body, "bragerone_push_healthy{", "} 1")
	})
	mute := sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
	sim.SetParam(d, keys[1], 202) // swallowed: only a REST prime brings it
	waitFor(t, "the zombie's primes bring the muted value, and a hard restart", func() bool {
		_, body := get(t, field, "/metrics")
		return strings.Contains(body, "} 202\n") && lineWith(body, "bragerone_recovery_actions_total{", `result="ok",step="hard_restart"}`)
	})
	sim.Clear(mute)
	sim.SetParam(d, keys[0], 303)
	waitFor(t, "pushes again", func() bool {
		_, body := get(t, field, "/metrics")
		return strings.Contains(body, "} 303\n") && lineWith(body, "bragerone_push_healthy{", "} 1")
	})
	sim.EmitMemoryUpdated(d)
	time.Sleep(100 * time.Millisecond)
}

func playAlarmRaisedAndCleared(t *testing.T, sim *cloudsim.Cloud, field *httptest.Server) {
	d := sim.Devids()[0]
	if err := sim.RaiseAlarm(d, 3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the alarm seen", func() bool {
		return metricLine(t, field, `bragerone_module_alarm_active{code="3",devid="`+d+`"`)
	})
	time.Sleep(1100 * time.Millisecond) // the alarm lasts at least a second of the cloud's stamps
	if err := sim.ClearAlarm(d, 3); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the alarm finished, in the history", func() bool {
		return metricLine(t, field, `bragerone_module_alarm_last_duration_seconds{code="3",devid="`+d+`"}`) &&
			!metricLine(t, field, `bragerone_module_alarm_active{code="3",`)
	})
}

func playStorm503(t *testing.T, sim *cloudsim.Cloud, field *httptest.Server) {
	d := sim.Devids()[0]
	keys := vKeys(t, sim, d, 1)
	// The storm ends by itself: three polls of the module list and two
	// attempts of the prime are answered 503, and the prime's third attempt
	// (its retry after 200 ms, then 500 ms) gets the values. A replay meets
	// the same answers in the same order, however its clock runs: a failure
	// asked again gives way to what the recorded retry got.
	if _, err := sim.InjectFault(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: cloudapi.EndpointModules, Status: 503, Count: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.InjectFault(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: cloudapi.EndpointParameters, Status: 503, Count: 2}); err != nil {
		t.Fatal(err)
	}
	sim.SetParam(d, keys[0], 404)
	sim.EmitMemoryUpdated(d) // a prime asked for in the storm
	waitFor(t, "three 503s on the module list, two on the prime, then its retry answered", func() bool {
		_, body := get(t, field, "/metrics")
		return counterValue(body, `bragerone_http_requests_total{code="503",endpoint="`+cloudapi.EndpointModules+`"}`) == 3 &&
			counterValue(body, `bragerone_http_requests_total{code="503",endpoint="`+cloudapi.EndpointParameters+`"}`) == 2 &&
			counterValue(body, goodPrimes) >= 2 && len(sim.Faults()) == 0
	})
	sim.SetParam(d, keys[0], 505)
	waitFor(t, "recovered", func() bool {
		_, body := get(t, field, "/metrics")
		return strings.Contains(body, "} 505\n")
	})
}

// lineWith says whether body has a line starting with prefix that holds s.
func lineWith(body, prefix, s string) bool {
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, prefix) && strings.Contains(line, s) {
			return true
		}
	}
	return false
}
