package exporter

import (
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// recorder collects the records a simulated cloud makes of its traffic.
type recorder struct {
	mu   sync.Mutex
	recs []traffic.Record
}

func (r *recorder) add(rec traffic.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) records() []traffic.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// runExporter runs an exporter on cfg until the test ends; it returns its
// handler's server.
func runExporter(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	srv, stop := startExporter(t, cfg)
	t.Cleanup(stop)
	return srv
}

// startExporter runs an exporter on cfg until stop, which waits for Run to
// return; it returns its handler's server.
func startExporter(t *testing.T, cfg Config) (*httptest.Server, func()) {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	return srv, func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("exporter Run = %v", err)
			}
			srv.Close()
		})
	}
}

// fieldSeries are the series a replay must reproduce: the modules, their
// values, online states, alarms and outage reasons. Durations and
// timestamps are compared by their labels only: they are measured anew.
var fieldSeries = []struct {
	prefix     string
	withValues bool
}{
	{"bragerone_module_info{", true},
	{"bragerone_object_info{", true},
	{"bragerone_parameter_value{", true},
	{"bragerone_module_online{", true},
	{"bragerone_module_alarms{", true},
	{"bragerone_module_alarm_active{", true},
	// A finished alarm: its length is the recorded history row's
	// (finished_at - created_at), not measured anew.
	{"bragerone_module_alarm_last_duration_seconds{", true},
	{"bragerone_module_outages_total{", true},
	{"bragerone_module_outage_seconds{", false},
	{"bragerone_session_up{", true},
	// Which failures the cloud answered, not how many times: a replayed
	// exporter meets a recorded failure as often as its polls fall inside
	// it on the replay clock, which depends on the machine's pace (the
	// successes are not compared at all: how often the catalog and the
	// lists were read is the client's business).
	{`bragerone_http_requests_total{code="0"`, false},
	{`bragerone_http_requests_total{code="4`, false},
	{`bragerone_http_requests_total{code="5`, false},
}

// failedPrime is the count of primes answered 503, on /metrics;
// failedPrimeSeen is its series in a fieldView, which keeps no count.
const (
	failedPrime     = failedPrimeSeen + ` 1`
	failedPrimeSeen = `bragerone_http_requests_total{code="503",endpoint="` + cloudapi.EndpointParameters + `"}`
)

// goodPrimes is the series of primes answered 200.
const goodPrimes = `bragerone_http_requests_total{code="200",endpoint="` + cloudapi.EndpointParameters + `"}`

// counterValue is the value of series on a /metrics body, 0 when absent.
func counterValue(body, series string) float64 {
	_, after, ok := strings.Cut(body, "\n"+series+" ")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(after, "\n")
	v, _ := strconv.ParseFloat(line, 64)
	return v
}

// fieldView is the part of a /metrics body fieldSeries selects, sorted.
func fieldView(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		for _, s := range fieldSeries {
			if !strings.HasPrefix(line, s.prefix) {
				continue
			}
			if !s.withValues {
				line = line[:strings.LastIndexByte(line, ' ')]
			}
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
}

// TestReplayReproducesTheFieldRun records a run of the exporter against
// TestReplayReproducesTheFieldRun records a run of the exporter against
// the simulated cloud with the faults of the field (a parameter changed
// live, an alarm raised, a module going offline, event 22 and the prime it
// asks for answered 503), in the simulator's own
// record of its traffic, then points a second exporter at a replay of that
// recording (logging in with other credentials, at twice the recorded
// pace): its /metrics shows the same modules, values, online states,
// alarms and outage reasons as the first one's did.
func TestReplayReproducesTheFieldRun(t *testing.T) {
	rec := &recorder{}
	sim := cloudsim.New(cloudsim.Options{Email: "a@example.com", Password: "secret", Modules: 2, Objects: 2, ParamsPerModule: 20, Record: rec.add})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	cfg := validConfig(t)
	cfg.Parameters = Parameters{}
	cfg.Cloud.URL = sim.URL()
	want := playTheField(t, sim, runExporter(t, cfg))
	if *update {
		writeCaptureFile(t, filepath.Join(capturesDir, "simulated-field-run.jsonl"), rec.records(),
			map[string]string{"source": "cloudsim (exporter TestReplayReproducesTheFieldRun)", "scenario": "two objects; a value changed live, alarm 3 raised, the Cottage module offline, event 22 and its prime answered 503"})
	}
	rp, err := cloudsim.NewReplay(rec.records(), cloudsim.ReplayOptions{Speed: 2})
	if err != nil {
		t.Fatal(err)
	}
	replayMatches(t, rp, want, sim.Devids())
}

// TestReplayOfTheExportersCapture: the same field run recorded by the
// exporter itself, redacted as a user sends it, in its capture file (serve
// --capture.file) and in its diagnostics bundle (GET /debug/diagnostics),
// each replayed from the file into a second exporter, gives the same
// /metrics.
func TestReplayOfTheExportersCapture(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{Email: "a@example.com", Password: "secret", Modules: 2, Objects: 2, ParamsPerModule: 20})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	cfg := validConfig(t)
	cfg.Parameters = Parameters{}
	cfg.Cloud.URL = sim.URL()
	cfg.Diagnostics.CaptureFile = filepath.Join(t.TempDir(), "capture.jsonl")
	cfg.Diagnostics.RingBytes = -1 // sized by the account
	field, stop := startExporter(t, cfg)
	want := playTheField(t, sim, field)
	code, bundle := get(t, field, "/debug/diagnostics")
	if code != 200 {
		t.Fatalf("GET /debug/diagnostics = %d", code)
	}
	bundleFile := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if err := os.WriteFile(bundleFile, []byte(bundle), 0o600); err != nil {
		t.Fatal(err)
	}
	stop() // the capture is complete once the exporter has stopped
	if *update {
		data, err := os.ReadFile(cfg.Diagnostics.CaptureFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(capturesDir, "exporter-field-run.jsonl"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, file := range map[string]string{"capture": cfg.Diagnostics.CaptureFile, "bundle": bundleFile} {
		t.Run(name, func(t *testing.T) {
			rp, h, err := cloudsim.LoadReplay(file, cloudsim.ReplayOptions{Speed: 2})
			if err != nil {
				t.Fatal(err)
			}
			if h.Format != traffic.Format {
				t.Errorf("header %+v", h)
			}
			replayMatches(t, rp, want, sim.Devids())
		})
	}
}

// replayMatches points an exporter (with credentials of its own) at a
// replay of rp and waits until the replay has played every event and its
// fieldView is want.
func replayMatches(t *testing.T, rp *cloudsim.Replay, want, devids []string) {
	t.Helper()
	replay := cloudsim.New(cloudsim.Options{Modules: 1, ParamsPerModule: 1, Replay: rp})
	if err := replay.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	cfg := validConfig(t)
	t.Setenv("BRAGERONE_TEST_PASSWORD", "not-the-field-password")
	cfg.Parameters = Parameters{}
	cfg.Cloud.URL, cfg.Cloud.Email = replay.URL(), "developer@example.com"
	dev, stop := startExporter(t, cfg)
	defer stop()
	var got []string
	var st cloudsim.ReplayState
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body := get(t, dev, "/metrics")
		got = fieldView(body)
		st, _ = replay.ReplayState()
		if st.Finished && slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replayed run's /metrics differ from the field's (replay %+v)\nfield:\n%s\nreplayed:\n%s", st, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
	if len(want) < 10 {
		t.Errorf("compared only %d series: %v", len(want), want)
	}
	for _, s := range []string{`bragerone_module_alarm_active{code="3"`, `bragerone_module_outage_seconds{devid="` + devids[1] + `",reason="ws"}`, "} 4321", failedPrimeSeen} {
		if !slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, s) }) {
			t.Errorf("the replayed run lacks %s", s)
		}
	}
}

// playTheField plays the field's events on sim once the exporter serving
// field is up (a value changes, an alarm is raised, the second module goes
// offline, event 22 asks for a prime the cloud answers 503 once), and returns the exporter's fieldView once it shows them all.
func playTheField(t *testing.T, sim *cloudsim.Cloud, field *httptest.Server) []string {
	t.Helper()
	devids := sim.Devids()

	waitFor(t, "the field exporter's parameters", func() bool {
		_, body := get(t, field, "/metrics")
		return strings.Count(body, "\nbragerone_session_up{") == 2 && !strings.Contains(body, "bragerone_session_up{object_id=\"0\"") &&
			strings.Contains(body, `bragerone_parameter_value{devid="`+devids[1]+`"`) && strings.Contains(body, `bragerone_parameter_value{devid="`+devids[0]+`"`)
	})

	// The field's events: a value changes, an alarm is raised, the second
	// module goes offline.
	var key string
	for k := range sim.Params(devids[0]) {
		if strings.HasPrefix(k, "P4.") && (key == "" || k < key) {
			key = k
		}
	}
	sim.SetParam(devids[0], key, 4321)
	if err := sim.RaiseAlarm(devids[0], 3); err != nil {
		t.Fatal(err)
	}
	sim.SetModuleOnline(devids[1], false)
	// Event 22 asks for a prime of the first module, which the cloud
	// answers 503; the client's retry gets it.
	_, body := get(t, field, "/metrics")
	primes := counterValue(body, goodPrimes)
	if _, err := sim.InjectFault(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: cloudapi.EndpointParameters, Status: 503, Count: 1}); err != nil {
		t.Fatal(err)
	}
	sim.EmitMemoryUpdated(devids[0])
	var want []string
	waitFor(t, "the field exporter sees the value, the alarm, the module offline and the catalog's names", func() bool {
		_, body := get(t, field, "/metrics")
		seen := fieldView(body)
		settled := slices.Equal(seen, want) // the same in two scrapes in a row
		want = seen
		return settled && strings.Contains(body, `bragerone_module_online{devid="`+devids[1]+`"} 0`) &&
			strings.Contains(body, `bragerone_module_alarm_active{code="3",devid="`+devids[0]+`"`) && strings.Contains(body, "} 4321\n") &&
			strings.Contains(body, `bragerone_module_outage_seconds{devid="`+devids[1]+`",reason="ws"`) &&
			strings.Contains(body, "bragerone_parameter_info{") && strings.Contains(body, failedPrime) &&
			counterValue(body, goodPrimes) > primes
	})
	return want
}

var update = flag.Bool("update", false, "rewrite testdata/captures: the recordings made on the simulator (the field run's, the fault runs') and each recording's golden /metrics view")

// capturesDir holds recordings (captures, bundles) with the /metrics view
// a replay of each must give (NAME.metrics beside NAME.jsonl, NAME.jsonl.gz
// or NAME.tar.gz): field reports turned into tests.
const capturesDir = "../testdata/captures"

// writeCaptureFile writes recs, oldest first, as a capture.
func writeCaptureFile(t *testing.T, path string, recs []traffic.Record, settings map[string]string) {
	t.Helper()
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].At.Before(recs[j].At) })
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := traffic.NewWriter(f, traffic.NewHeader(recs[0].At, settings))
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].Seq = uint64(i + 1)
		if err := w.Write(recs[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplayCaptures replays every recording of testdata/captures into an
// exporter and compares its /metrics (the fieldSeries view) with the
// recording's golden file once the replay has played every event. A
// recording is played at twice its pace, or faster to last about two
// seconds (the replayed client's retries then come after the recorded
// ones, and get what those got), into an exporter that polls at
// replayPollInterval.
// -update writes the golden files from what the replay gives.
func TestReplayCaptures(t *testing.T) {
	entries, err := os.ReadDir(capturesDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		base := name
		for _, ext := range []string{".jsonl", ".jsonl.gz", ".tar.gz"} {
			if strings.HasSuffix(name, ext) {
				base = strings.TrimSuffix(name, ext)
			}
		}
		if base == name || e.IsDir() {
			continue
		}
		n++
		t.Run(base, func(t *testing.T) {
			replayCapture(t, filepath.Join(capturesDir, name), filepath.Join(capturesDir, base+".metrics"))
		})
	}
	if n == 0 {
		t.Fatalf("no recordings in %s", capturesDir)
	}
}

func replayCapture(t *testing.T, file, golden string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	h, recs, err := cloudsim.ReadRecording(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	first, last := recs[0].At, recs[0].At
	for _, r := range recs {
		if r.At.Before(first) {
			first = r.At
		}
		if r.At.After(last) {
			last = r.At
		}
	}
	speed := max(2, last.Sub(first).Seconds()/2)
	rp, err := cloudsim.NewReplay(recs, cloudsim.ReplayOptions{Speed: speed})
	if err != nil {
		t.Fatal(err)
	}
	replay := cloudsim.New(cloudsim.Options{Modules: 1, ParamsPerModule: 1, Replay: rp})
	if err := replay.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	cfg := validConfig(t)
	cfg.Parameters = Parameters{}
	cfg.Cloud.URL = replay.URL()
	cfg.Health.PollInterval = replayPollInterval(h.Settings["poll_interval"], last.Sub(first), speed, cfg.Health.PollInterval)
	srv := runExporter(t, cfg)

	var want []string
	if !*update {
		data, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (go test ./exporter -run TestReplayCaptures -update writes it)", err)
		}
		want = strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	var got []string
	same := 0 // scrapes in a row with the same view, for -update
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, body := get(t, srv, "/metrics")
		view := fieldView(body)
		if slices.Equal(view, got) {
			same++
		} else {
			same = 0
		}
		got = view
		st, _ := replay.ReplayState()
		if st.Finished && ((*update && same >= 10) || (!*update && slices.Equal(got, want))) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replay %+v; /metrics view:\n%s\nwant (%s):\n%s", st, strings.Join(got, "\n"), golden, strings.Join(want, "\n"))
		}
	}
	if *update {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// replayPollInterval is the poll interval of an exporter replaying a
// recording of span made polling every recorded (the header's
// poll_interval) at speed: twice as often as the recorded exporter, in
// replay time, so that a polled request the cloud failed (a storm of 503s
// on the module list) meets each recorded failure in turn (a failure asked
// again gives way to the recorded retry's answer) and none is skipped by
// the clock: the replayed exporter counts the failures the recorded one
// did. A recording shorter than its poll interval holds no poll after the
// start's: the replayed exporter makes none either (one would get the
// start's module list, which the events since contradict, on a machine
// slow enough to reach it). Without a recorded interval it is def.
func replayPollInterval(recorded string, span time.Duration, speed float64, def time.Duration) time.Duration {
	d, err := time.ParseDuration(recorded)
	if err != nil || d <= 0 {
		return def
	}
	if d > span {
		return d
	}
	return time.Duration(float64(d) / speed / 2)
}
