package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// exporterBin is the binary under test, built once by TestMain.
var exporterBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the go command is not in PATH; it is needed to build the binary under test")
		return 1
	}
	dir, err := os.MkdirTemp("", "bragerone-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	exporterBin = filepath.Join(dir, "bragerone_exporter")
	build := exec.Command(goCmd, "build", "-o", exporterBin, "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build of the exporter failed: %v\n", err)
		return 1
	}
	return m.Run()
}

// statSources stats every file the binary may be built from. go test caches a
// package's result keyed on the files the test process itself touched while
// its tests ran; the build runs in a child process before them, so without
// this a changed product file would not invalidate a cached pass. startProc
// calls it once.
var statSourcesOnce = sync.OnceValue(func() error { return statSources("..") })

func statSources(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		_, err = os.Stat(path) // sources, go.mod, go.sum and embedded files alike
		return err
	})
}

// Demo account of the simulated cloud.
var demoEnv = []string{"BRAGERONE_EMAIL=" + cloudsim.DefaultEmail, "BRAGERONE_PASSWORD=" + cloudsim.DefaultPassword}

// fastHealth shortens the gateway's durations so that faults show on
// /metrics within a second or two.
var fastHealth = []string{
	"--poll.interval=200ms", "--session.supervisor-interval=200ms", "--session.down-hysteresis=1s",
	"--push.stale-after=1s", "--recovery.cooldown=100ms", "--recovery.cooldown-max=200ms",
	"--session.connect-timeout=3s",
}

// ---- waiting ------------------------------------------------------------------

const pollTick = 25 * time.Millisecond

// waitFor polls cond every pollTick until it holds; at the deadline the test
// fails with what cond last reported seeing.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last seen: %s", what, timeout, seen)
		}
		time.Sleep(pollTick)
	}
}

// ---- child processes ----------------------------------------------------------

// lineLog collects a child's output line by line, safe for concurrent use.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

// Lines returns every complete line so far, plus an unterminated tail.
func (l *lineLog) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.lines)
	if len(l.partial) > 0 {
		out = append(out, string(l.partial))
	}
	return out
}

func (l *lineLog) String() string { return strings.Join(l.Lines(), "\n") }

// logRecord is one JSON log line (--log.format=json).
type logRecord map[string]any

func (r logRecord) str(key string) string {
	s, _ := r[key].(string)
	return s
}

// Records returns the lines that are JSON objects.
func (l *lineLog) Records() []logRecord {
	var out []logRecord
	for _, line := range l.Lines() {
		var r logRecord
		if json.Unmarshal([]byte(line), &r) == nil && r != nil {
			out = append(out, r)
		}
	}
	return out
}

// proc is a child process whose output is kept and which is killed when the
// test ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	start  time.Time
	stdout lineLog
	stderr lineLog
	done   chan struct{} // closed when the process has exited
	err    error         // of Wait; read after done
}

// startProc starts bin with args and extra environment (on top of the test's
// environment without any BRAGERONE_ variable). The process is killed in
// t.Cleanup if it is still running, and its output is logged when the test
// failed.
func startProc(t testing.TB, name, bin string, env []string, args ...string) *proc {
	t.Helper()
	if err := statSourcesOnce(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(cleanEnv(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 2 * time.Second
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("---- %s %s\n---- stderr:\n%s\n---- stdout:\n%s", name, strings.Join(args, " "), tail(p.stderr.String(), 12000), tail(p.stdout.String(), 2000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// cleanEnv is the test's environment without BRAGERONE_ variables, so a
// developer's settings never reach the process under test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BRAGERONE_") {
			env = append(env, kv)
		}
	}
	return env
}

// kill ends the process (if it still runs) and waits for it.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process.
func (p *proc) signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// waitExit waits for the process to exit and returns its exit code; at the
// deadline the process is killed and the test fails.
func (p *proc) waitExit(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.kill()
		t.Fatalf("%s did not exit within %v\nstderr:\n%s", p.name, timeout, tail(p.stderr.String(), 4000))
	}
	var exitErr *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("%s was killed by signal %v", p.name, ws.Signal())
		}
		return exitErr.ExitCode()
	default:
		t.Fatalf("%s: %v", p.name, p.err)
		return -1
	}
}

// waitLog waits for a JSON log line with the message msg and returns it.
func (p *proc) waitLog(t testing.TB, timeout time.Duration, msg string) logRecord {
	t.Helper()
	var found logRecord
	waitFor(t, timeout, fmt.Sprintf("%s logs %q", p.name, msg), func() (bool, string) {
		for _, r := range p.stderr.Records() {
			if r.str("msg") == msg {
				found = r
				return true, ""
			}
		}
		if p.exited() {
			t.Fatalf("%s exited (%v) before logging %q:\n%s", p.name, p.err, msg, tail(p.stderr.String(), 4000))
		}
		return false, tail(p.stderr.String(), 2000)
	})
	return found
}

// ---- the simulated cloud (simulate command) ------------------------------------

// simulator is a `bragerone_exporter simulate` process.
type simulator struct {
	*proc
	url    string
	devids []string
	ctl    control
}

func startSimulate(t testing.TB, args ...string) *simulator {
	t.Helper()
	// One object unless the test asks for more (a later flag wins): the
	// scenarios here are about one object's modules.
	args = append([]string{"simulate", "--listen=127.0.0.1:0", "--log.format=json", "--objects=1"}, args...)
	p := startProc(t, "simulate", exporterBin, nil, args...)
	rec := p.waitLog(t, 20*time.Second, "simulated cloud serving")
	s := &simulator{proc: p, url: rec.str("url")}
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") {
		t.Fatalf("simulate logged url %q", s.url)
	}
	ids, _ := rec["devids"].([]any)
	for _, d := range ids {
		s.devids = append(s.devids, fmt.Sprint(d))
	}
	if len(s.devids) == 0 {
		t.Fatalf("simulate logged no devids: %v", rec)
	}
	sort.Strings(s.devids)
	s.ctl = control{base: s.url}
	return s
}

// control drives a simulated cloud through its HTTP control endpoint.
type control struct{ base string }

func (c control) do(t testing.TB, method, path string, body any) []byte {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, out)
	}
	return out
}

// inject switches a fault on and returns its id.
func (c control) inject(t testing.TB, f cloudsim.Fault) int {
	t.Helper()
	var res struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(c.do(t, http.MethodPost, "/control/faults", f), &res); err != nil || res.ID <= 0 {
		t.Fatalf("inject %+v: id %d, %v", f, res.ID, err)
	}
	return res.ID
}

func (c control) clear(t testing.TB, id int) {
	t.Helper()
	c.do(t, http.MethodDelete, fmt.Sprintf("/control/faults/%d", id), nil)
}

func (c control) clearAll(t testing.TB) {
	t.Helper()
	c.do(t, http.MethodDelete, "/control/faults", nil)
}

// module switches a module "online" or "offline".
func (c control) module(t testing.TB, devid, action string) {
	t.Helper()
	c.do(t, http.MethodPost, "/control/modules/"+devid+"/"+action, nil)
}

func (c control) state(t testing.TB) cloudsim.State {
	t.Helper()
	var st cloudsim.State
	if err := json.Unmarshal(c.do(t, http.MethodGet, "/control/state", nil), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// ---- the exporter (serve command) ----------------------------------------------

// exporter is a `bragerone_exporter serve` process.
type exporter struct {
	*proc
	addr   string  // host:port it listens on
	url    string  // http://addr
	sim    control // the embedded simulated cloud (serve --simulate only)
	devids []string
}

// startServe runs `serve` on a free loopback port with JSON logs.
func startServe(t testing.TB, env []string, args ...string) *exporter {
	t.Helper()
	all := append([]string{"serve", "--web.listen-address=127.0.0.1:0", "--log.format=json"}, args...)
	p := startProc(t, "serve", exporterBin, env, all...)
	e := &exporter{proc: p}
	e.addr = p.waitLog(t, 20*time.Second, "Listening on").str("address")
	if e.addr == "" {
		t.Fatal("serve logged no listen address")
	}
	e.url = "http://" + e.addr
	if slices.Contains(args, "--simulate") {
		e.sim = control{base: p.waitLog(t, 5*time.Second, "running against the embedded simulated cloud").str("url")}
		e.devids = e.sim.devids(t)
	}
	return e
}

// startServeSimulate runs `serve --simulate` with the given extra flags, one
// simulated object unless they ask for more (a later flag wins).
func startServeSimulate(t testing.TB, args ...string) *exporter {
	t.Helper()
	return startServe(t, nil, append([]string{"--simulate", "--simulate.objects=1"}, args...)...)
}

// devids lists the modules of a simulated cloud, sorted.
func (c control) devids(t testing.TB) []string {
	t.Helper()
	var ids []string
	for _, m := range c.state(t).Modules {
		ids = append(ids, m.Devid)
	}
	sort.Strings(ids)
	return ids
}

// ---- scraping -----------------------------------------------------------------

// scrape is one parsed /metrics answer.
type scrape map[string]*dto.MetricFamily

// fetchScrape GETs a metrics URL and parses the text exposition.
func fetchScrape(client *http.Client, url string) (scrape, []byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, body, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		return nil, body, fmt.Errorf("GET %s: Content-Type %q, want the text format", url, ct)
	}
	s, err := parseExposition(body)
	if err != nil {
		return nil, body, fmt.Errorf("parse %s: %w", url, err)
	}
	return s, body, nil
}

// parseExposition parses the Prometheus text format.
func parseExposition(body []byte) (scrape, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	return scrape(fams), err
}

// mustScrape scrapes the exporter's /metrics or fails the test.
func (e *exporter) mustScrape(t testing.TB) scrape {
	t.Helper()
	s, _, err := fetchScrape(nil, e.url+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scrapeOrErr scrapes for a waiting condition: errors are reported as seen.
func (e *exporter) scrapeOrErr() (scrape, string) {
	s, _, err := fetchScrape(nil, e.url+"/metrics")
	if err != nil {
		return nil, err.Error()
	}
	return s, ""
}

func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func matches(m *dto.Metric, want map[string]string) bool {
	got := labelsOf(m)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func sampleValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// series returns the samples of a metric whose labels include want.
func (s scrape) series(name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range s[name].GetMetric() {
		if matches(m, want) {
			out = append(out, m)
		}
	}
	return out
}

// value returns the value of the single sample of a metric whose labels
// include want; ok is false when there is none.
func (s scrape) value(name string, want map[string]string) (float64, bool) {
	ms := s.series(name, want)
	if len(ms) == 0 {
		return 0, false
	}
	return sampleValue(ms[0]), true
}

// show renders a metric's samples for failure messages.
func (s scrape) show(name string) string {
	fam := s[name]
	if fam == nil {
		return name + " absent"
	}
	var parts []string
	for _, m := range fam.GetMetric() {
		parts = append(parts, fmt.Sprintf("%v %g", labelsOf(m), sampleValue(m)))
	}
	return name + " " + strings.Join(parts, "; ")
}

// names lists the series names of a scrape as Prometheus stores them:
// histograms and summaries as their _bucket/_sum/_count series.
func (s scrape) names() map[string]bool {
	out := map[string]bool{}
	for name, fam := range s {
		switch fam.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			out[name], out[name+"_sum"], out[name+"_count"] = true, true, true
		default:
			out[name] = true
		}
	}
	return out
}

// fullScrape reports whether every module's numeric parameters are all
// exported: for each devid, as many bragerone_parameter_value series as
// bragerone_parameters minus bragerone_parameters_non_numeric, and more than
// none (no filters or cap are set in these tests).
func fullScrape(s scrape, devids []string) (bool, string) {
	var seen []string
	ok := true
	for _, d := range devids {
		sel := map[string]string{"devid": d}
		total, _ := s.value("bragerone_parameters", sel)
		nonNumeric, _ := s.value("bragerone_parameters_non_numeric", sel)
		n := len(s.series("bragerone_parameter_value", sel))
		seen = append(seen, fmt.Sprintf("%s: %d series, %g parameters, %g non-numeric", d, n, total, nonNumeric))
		if n == 0 || float64(n) != total-nonNumeric {
			ok = false
		}
	}
	return ok, strings.Join(seen, "; ")
}

// waitFullScrape waits until every module's parameters are exported and
// returns that scrape.
func (e *exporter) waitFullScrape(t testing.TB, devids []string, timeout time.Duration) scrape {
	t.Helper()
	var full scrape
	waitFor(t, timeout, "every module's parameters on /metrics", func() (bool, string) {
		s, errSeen := e.scrapeOrErr()
		if s == nil {
			return false, errSeen
		}
		ok, seen := fullScrape(s, devids)
		if ok {
			full = s
		}
		return ok, seen
	})
	return full
}

// waitMetric waits until cond holds on a scrape and returns that scrape.
func (e *exporter) waitMetric(t testing.TB, timeout time.Duration, what string, cond func(scrape) (bool, string)) scrape {
	t.Helper()
	var got scrape
	waitFor(t, timeout, what, func() (bool, string) {
		s, errSeen := e.scrapeOrErr()
		if s == nil {
			return false, errSeen
		}
		ok, seen := cond(s)
		if ok {
			got = s
		}
		return ok, seen
	})
	return got
}

// valueIs is a waitMetric condition: the sample selected by want equals v.
func valueIs(name string, want map[string]string, v float64) func(scrape) (bool, string) {
	return func(s scrape) (bool, string) {
		got, ok := s.value(name, want)
		return ok && got == v, s.show(name)
	}
}

// httpGet fetches a URL and returns status and body.
func httpGet(t testing.TB, client *http.Client, url string) (int, string) {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// freePort returns a loopback port that was free a moment ago, for programs
// that cannot be told to listen on port 0 and report the port.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// tool finds a Prometheus command-line program; a missing one fails the test
// and names the Debian package that provides it.
func tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found in PATH; install the Debian package \"prometheus\" (apt-get install -y --no-install-recommends prometheus)", name)
	}
	return path
}
