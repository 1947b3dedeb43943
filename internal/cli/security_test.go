package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/redact"
	"github.com/bragerone/bragerone_exporter/serving/status"
)

const redactMask = redact.Mask

// Security properties of the whole exporter: where credentials may come
// from, that they and the session tokens never reach a log line (at debug
// level, even when the cloud echoes the request in its error bodies), a
// metric or the status page, and that hostile values from the cloud cannot
// break the exposition.

// Every flag of every command: none carries a secret, so no secret ever
// shows in a process listing. The password comes from BRAGERONE_PASSWORD or
// the file --cloud.password-file names.
func TestNoSecretFlags(t *testing.T) {
	var cli CLI
	parser, err := kong.New(&cli, kong.Name("bragerone_exporter"), kong.Vars{"version": "test"}, flagVars(), kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`(?i)pass|token|secret|bearer|credential|auth`)
	seen := map[string]bool{}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			seen[f.Name] = true
			if f.Name == "cloud.password-file" || f.Name == "password-file" {
				if f.Tag.Type != "path" {
					t.Errorf("--%s is of type %q, want a path", f.Name, f.Tag.Type)
				}
				continue
			}
			if k := f.Target.Kind(); (k == reflect.String || k == reflect.Slice) && secret.MatchString(f.Name) {
				t.Errorf("command %q has flag --%s, which would carry a secret in argv", n.Name, f.Name)
			}
			for _, env := range f.Envs {
				if env == passwordEnv {
					t.Errorf("flag --%s is bound to %s: the password would become a flag value", f.Name, passwordEnv)
				}
			}
		}
		for _, p := range n.Positional {
			if secret.MatchString(p.Name) {
				t.Errorf("command %q has positional argument %q, which would carry a secret in argv", n.Name, p.Name)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(parser.Model.Node)
	// The walk reached the commands that log in (a walk over nothing
	// would pass too).
	for _, want := range []string{"cloud.email", "cloud.password-file", "web.listen-address", "log.level"} {
		if !seen[want] {
			t.Errorf("flag --%s not found in the command tree; the walk missed commands", want)
		}
	}
}

// The configuration file cannot hold the password either: it is no flag.
func TestConfigFileCannotHoldPassword(t *testing.T) {
	for _, body := range []string{"cloud.password: hunter2-secret\n", "cloud:\n  password: hunter2-secret\n"} {
		code, out, errOut := runArgs(t, "--config.file", writeConfig(t, body), "check")
		if code != exitUsage {
			t.Errorf("config %q: exit %d, want %d (unknown key); stderr %q", body, code, exitUsage, errOut)
		}
		if strings.Contains(out+errOut, "hunter2-secret") {
			t.Errorf("config %q: the password was echoed: %q", body, out+errOut)
		}
	}
}

// echoFront stands in front of a simulated cloud and answers some requests
// with errors whose bodies echo the request (headers with the bearer token,
// the login body with the password), the way a misbehaving proxy or cloud
// does. Everything else goes to the simulator; the tokens it issues are
// recorded.
type echoFront struct {
	sim  *cloudsim.Cloud
	plan map[string]map[int]int // which request gets which echo error (echoPlan, shortEchoPlan)
	// short echoes answer with one short JSON message instead of the whole
	// request: "rejected " and the login's password or the request's
	// Authorization header (and, once the cloud issued a second token, the
	// first one too). Short enough that an error quotes it.
	short bool

	mu     sync.Mutex
	n      map[string]int // requests seen, by method and path
	echoed map[string]int // echo errors served, by method and path
	tokens []string       // access and refresh tokens the cloud issued
}

// echoPlan: which request (1-based, per method and path) gets which echo error.
var echoPlan = map[string]map[int]int{
	"POST /v1/auth/user":          {1: 503, 2: 500},
	"GET /v1/modules":             {1: 503, 2: 500, 4: 401},
	"POST /v1/modules/parameters": {1: 422},
	"POST /v1/modules/connect":    {1: 500},
	"POST /v1/auth/revoke":        {1: 500},
	"GET /socket.io/":             {1: 403},
}

func (f *echoFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	if strings.HasPrefix(r.URL.Path, "/socket.io/") {
		key = r.Method + " /socket.io/"
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))

	f.mu.Lock()
	f.n[key]++
	status := f.plan[key][f.n[key]]
	if status != 0 {
		f.echoed[key]++
	}
	f.mu.Unlock()

	if status != 0 && f.short {
		f.shortEcho(w, r, key, body, status)
		return
	}
	if status != 0 {
		var headers strings.Builder
		for k, vs := range r.Header {
			fmt.Fprintf(&headers, "%s: %s\n", k, strings.Join(vs, ", "))
		}
		echo := fmt.Sprintf("you sent %s %s?%s\n%s\n%s", r.Method, r.URL.Path, r.URL.RawQuery, headers.String(), body)
		if status >= 500 {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			fmt.Fprintf(w, "<html><body><h1>%d</h1><pre>%s</pre></body></html>", status, echo)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"message": "rejected: " + echo, "request": string(body), "authorization": r.Header.Get("Authorization"),
		})
		return
	}
	if key != "POST /v1/auth/user" {
		f.sim.Handler().ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	f.sim.Handler().ServeHTTP(rec, r)
	var login struct{ AccessToken, RefreshToken string }
	if json.Unmarshal(rec.Body.Bytes(), &login) == nil {
		f.mu.Lock()
		for _, tok := range []string{login.AccessToken, login.RefreshToken} {
			if tok != "" {
				f.tokens = append(f.tokens, tok)
			}
		}
		f.mu.Unlock()
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// shortEcho answers with a short JSON message quoting the secret the
// request carried.
func (f *echoFront) shortEcho(w http.ResponseWriter, r *http.Request, key string, body []byte, status int) {
	msg := "rejected " + r.Header.Get("Authorization")
	if key == "POST /v1/auth/user" {
		var login struct{ Password string }
		_ = json.Unmarshal(body, &login)
		msg = "rejected " + login.Password
	}
	f.mu.Lock()
	if len(f.tokens) > 2 { // access and refresh of the first login, and more
		msg += "; replaced " + f.tokens[0]
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"message": msg})
}

func (f *echoFront) secrets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tokens...)
}

func (f *echoFront) unserved() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for key, plan := range f.plan {
		for i := range plan {
			if f.n[key] < i {
				out = append(out, fmt.Sprintf("%s #%d", key, i))
			}
		}
	}
	return out
}

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// serveRun is `serve` running in-process through runContext.
type serveRun struct {
	t      *testing.T
	base   string
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan int
}

func startServeRun(t *testing.T, args ...string) *serveRun {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := &serveRun{t: t, base: "http://" + addr, stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	args = append([]string{"serve", "--web.listen-address=" + addr}, args...)
	go func() { r.done <- runContext(ctx, args, io.Discard, r.stderr) }()
	t.Cleanup(func() { r.stop() })
	return r
}

// stop cancels serve and returns its exit code.
func (r *serveRun) stop() int {
	r.cancel()
	select {
	case code := <-r.done:
		r.done <- code
		return code
	case <-time.After(20 * time.Second):
		r.t.Fatalf("serve did not return after cancel; stderr:\n%s", r.stderr.String())
		return -1
	}
}

func (r *serveRun) get(path string) (int, []byte, error) {
	resp, err := http.Get(r.base + path)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// scrape fetches /metrics in the text format and parses it.
func (r *serveRun) scrape() (map[string]*dto.MetricFamily, []byte, error) {
	code, body, err := r.get("/metrics")
	if err != nil {
		return nil, nil, err
	}
	if code != 200 {
		return nil, body, fmt.Errorf("/metrics answered %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	return mfs, body, err
}

func gaugeValue(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		for k, v := range labels {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// waitServe polls until cond holds on a scrape, or fails with the last one.
func (r *serveRun) waitServe(what string, cond func(map[string]*dto.MetricFamily) bool) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for {
		mfs, body, err := r.scrape()
		if err == nil && cond(mfs) {
			return
		}
		if err != nil {
			last = err.Error()
		} else {
			last = string(body)
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; last scrape:\n%s\nstderr:\n%s", what, tailLines(last, 40), tailLines(r.stderr.String(), 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fastServeFlags make serve's health machinery run in milliseconds.
var fastServeFlags = []string{
	"--poll.interval=100ms", "--session.supervisor-interval=100ms", "--session.connect-timeout=1s",
	"--session.down-hysteresis=0s", "--cloud.timeout=2s",
}

// The password and every token the cloud issued never appear in the debug
// log, in /metrics, in /status or on the landing page, although the cloud
// answers login, module list, prime, bind, logout and the Socket.IO
// handshake with errors that echo the request (password in the login body,
// bearer token in the headers), and a 401 forces a fresh login.
func TestSecretsNeverLoggedOrExposed(t *testing.T) {
	sim := startSecretCloud(t, nil)
	front := &echoFront{sim: sim, plan: echoPlan, n: map[string]int{}, echoed: map[string]int{}}
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	t.Setenv(passwordEnv, secretPassword)

	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			front.mu.Lock()
			front.n, front.echoed, front.tokens = map[string]int{}, map[string]int{}, nil
			front.mu.Unlock()

			r := startServeRun(t, append([]string{
				"--log.level=debug", "--log.format=" + format,
				"--cloud.url=" + srv.URL, "--cloud.email=" + cloudsim.DefaultEmail,
			}, fastServeFlags...)...)
			r.waitServe("session up with parameters exported, after every echo error was served", func(mfs map[string]*dto.MetricFamily) bool {
				up, _ := gaugeValue(mfs, "bragerone_session_up", nil)
				// Only the revoke's echo may be left: the token the 401
				// replaced is revoked as soon as nothing uses it, or at
				// the logout.
				left := slices.DeleteFunc(front.unserved(), func(s string) bool { return strings.HasPrefix(s, "POST /v1/auth/revoke") })
				return up == 1 && mfs["bragerone_parameter_value"] != nil && len(left) == 0
			})
			_, metrics, err := r.scrape()
			if err != nil {
				t.Fatal(err)
			}
			exposed := map[string][]byte{"/metrics": metrics}
			for _, path := range append([]string{"/status", "/"}, modulePages(sim.Devids())...) {
				_, body, err := r.get(path)
				if err != nil {
					t.Fatal(err)
				}
				exposed[path] = body
			}
			if code := r.stop(); code != exitOK {
				t.Fatalf("serve exited %d; stderr:\n%s", code, tailLines(r.stderr.String(), 40))
			}
			if left := front.unserved(); len(left) != 0 {
				t.Fatalf("echo errors never requested: %v", left)
			}

			secrets := append([]string{secretPassword}, front.secrets()...)
			if len(secrets) < 5 { // the password, and access+refresh of two logins at least (the 401 forced one)
				t.Fatalf("the cloud issued too few tokens to check: %d secrets", len(secrets))
			}
			logs := r.stderr.String()
			if !strings.Contains(logs, "DBG") && !strings.Contains(logs, `"level":"DEBUG"`) {
				t.Fatalf("no debug line logged; the check would see nothing:\n%s", tailLines(logs, 20))
			}
			for _, s := range secrets {
				// A prefix catches a token cut short as well.
				for _, needle := range []string{s, s[:12]} {
					if i := strings.Index(logs, needle); i >= 0 {
						t.Errorf("secret %q in the log: ...%s...", needle, logs[max(0, i-200):min(len(logs), i+len(needle)+50)])
					}
					for path, body := range exposed {
						if bytes.Contains(body, []byte(needle)) {
							t.Errorf("secret %q served on %s", needle, path)
						}
					}
				}
			}
		})
	}
}

// hostileFront renames the simulator's modules to hostile device ids (and
// gives them hostile names) in every REST answer, and maps them
// back in the requests, so the exporter sees a cloud whose devids and module
// metadata are built to break the exposition.
type hostileFront struct {
	sim     *cloudsim.Cloud
	real    []string
	hostile []string
}

func (f *hostileFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/socket.io/") {
		f.sim.Handler().ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	for i, h := range f.hostile {
		enc, _ := json.Marshal(h)
		body = bytes.ReplaceAll(body, enc, []byte(`"`+f.real[i]+`"`))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	f.sim.Handler().ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	var doc any
	if rec.Code == 200 && json.Unmarshal(out, &doc) == nil {
		doc = f.rename(doc)
		out, _ = json.Marshal(doc)
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

func (f *hostileFront) hostileOf(s string) (string, bool) {
	for i, d := range f.real {
		if s == d {
			return f.hostile[i], true
		}
	}
	return "", false
}

// rename replaces the real devids as object keys and values, and the name
// and title of a module row.
func (f *hostileFront) rename(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if h, ok := f.hostileOf(k); ok {
				k = h
			}
			out[k] = f.rename(val)
		}
		if d, ok := x["devid"].(string); ok {
			if h, ok := f.hostileOf(d); ok {
				out["devid"] = h
				out["name"] = `<script>alert("name")</script>` + "\n" + `"} 1` + "\n# HELP bragerone_injected x" + strings.Repeat(`\"`, 100)
			}
		}
		return out
	case []any:
		for i := range x {
			x[i] = f.rename(x[i])
		}
		return x
	case string:
		if h, ok := f.hostileOf(x); ok {
			return h
		}
	}
	return v
}

// Devids and module metadata from the cloud are label values: quotes,
// backslashes, newlines, an exposition line smuggled in and 300-byte values
// cannot break /metrics. The scrape parses, every label value is valid UTF-8
// and at most collector.MaxLabelValueLen bytes, the two devids that share a
// long prefix stay two series, and no family is injected.
func TestHostileDevidsCannotBreakTheExposition(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{Modules: 2, ParamsPerModule: 30, Seed: 5})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	long := strings.Repeat("D", 200)
	front := &hostileFront{sim: sim, real: sim.Devids(), hostile: []string{
		long + `"} 1` + "\n" + `bragerone_injected{devid="x"} 1` + "\n\\",
		long + "\u00e9\u00e9\t#",
	}}
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	t.Setenv(passwordEnv, cloudsim.DefaultPassword)

	r := startServeRun(t, append([]string{"--cloud.url=" + srv.URL, "--cloud.email=" + cloudsim.DefaultEmail}, fastServeFlags...)...)
	want := []string{collector.LabelValue(front.hostile[0]), collector.LabelValue(front.hostile[1])}
	if want[0] == want[1] {
		t.Fatalf("the two hostile devids share one label value %q", want[0])
	}
	r.waitServe("parameters of both hostile modules exported", func(mfs map[string]*dto.MetricFamily) bool {
		for _, d := range want {
			found := false
			for _, m := range mfs["bragerone_parameter_value"].GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "devid" && lp.GetValue() == d {
						found = true
					}
				}
			}
			if !found {
				return false
			}
		}
		return true
	})
	mfs, body, err := r.scrape()
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	for name, mf := range mfs {
		if strings.Contains(name, "injected") {
			t.Errorf("an injected family %q", name)
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v := lp.GetValue(); len(v) > collector.MaxLabelValueLen || !utf8.ValidString(v) {
					t.Errorf("%s{%s=%q}: %d bytes, valid UTF-8 %v", name, lp.GetName(), v, len(v), utf8.ValidString(v))
				}
			}
		}
	}
	for _, d := range want {
		if v, ok := gaugeValue(mfs, "bragerone_module_info", map[string]string{"devid": d}); !ok || v != 1 {
			t.Errorf("bragerone_module_info of %q: %v %v", d, v, ok)
		}
	}
	if bytes.Contains(body, []byte("\nbragerone_injected")) {
		t.Error("an exposition line was smuggled in through a label value")
	}

	// The OpenMetrics exposition (what Prometheus negotiates) too.
	req, _ := http.NewRequest("GET", r.base+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	om, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text") || !bytes.HasSuffix(om, []byte("# EOF\n")) {
		t.Fatalf("no OpenMetrics exposition: %q", resp.Header.Get("Content-Type"))
	}
	for _, line := range strings.Split(string(om), "\n") {
		if strings.HasPrefix(line, "bragerone_injected") || strings.HasPrefix(line, "# HELP bragerone_injected") {
			t.Errorf("OpenMetrics line smuggled in: %q", line)
		}
	}

	// The status page shows the hostile name as text.
	_, page, err := r.get("/status")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page, []byte("<script>alert")) {
		t.Error("/status carries the hostile module name unescaped")
	}
	for _, path := range modulePages(front.hostile) {
		code, page, err := r.get(path)
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, code, err)
		}
		if bytes.Contains(page, []byte("<script>alert")) || bytes.Contains(page, []byte("\nbragerone_injected")) {
			t.Errorf("%s carries a hostile value unescaped", path)
		}
	}
}

// modulePages are the paths of the status pages of the modules.
func modulePages(devids []string) []string {
	var out []string
	for _, d := range devids {
		out = append(out, status.ModulePath+url.PathEscape(d))
	}
	return out
}

// The simulator's control endpoint (which injects faults and revokes tokens)
// answers loopback clients only unless told otherwise, and both ways of
// running the simulator listen on loopback by default. The endpoint's
// loopback rule itself is tested in cloudsim (TestControlEndpointLoopbackOnly).
func TestSimulatorControlLoopbackByDefault(t *testing.T) {
	cli, err := parseForTest(t, "simulate")
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(cli.Simulate.Listen)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("simulate listens on %q by default, want a loopback address", cli.Simulate.Listen)
	}
	if cli.Simulate.AllowRemoteControl {
		t.Error("simulate allows remote control by default")
	}
	// serve --simulate's embedded simulator: exporter's
	// TestSimulatedCloudListensOnLoopback.
}

// shortEchoPlan: the requests a short-echo cloud answers with an error
// quoting the secret it carried. The login's answer quotes the password;
// the object list, a 401 that forces a fresh login, the bind and the prime
// quote the bearer token, and the later ones the token it replaced too.
var shortEchoPlan = map[string]map[int]int{
	"POST /v1/auth/user":          {1: 500},
	"GET /v1/objects":             {1: 500},
	"GET /v1/modules":             {1: 401},
	"POST /v1/modules/connect":    {1: 500},
	"POST /v1/modules/parameters": {1: 422},
}

// checkSecretsAbsent fails for every secret (or its first 12 bytes, a token
// cut short) found in any of texts.
// exposedTexts scrapes /metrics and gets each of paths from a running
// serve, stops it (it must exit cleanly) and returns each text by where it
// was shown, the log as "the log".
func exposedTexts(t *testing.T, r *serveRun, paths []string) map[string]string {
	t.Helper()
	_, metrics, err := r.scrape()
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"/metrics": string(metrics)}
	for _, path := range paths {
		_, body, err := r.get(path)
		if err != nil {
			t.Fatal(err)
		}
		texts[path] = string(body)
	}
	if code := r.stop(); code != exitOK {
		t.Fatalf("serve exited %d; stderr:\n%s", code, tailLines(r.stderr.String(), 40))
	}
	texts["the log"] = r.stderr.String()
	return texts
}

// secretPassword is the account password of the secret tests' simulated
// clouds: long enough to be found cut short.
const secretPassword = "Pa55-w0rd-sekret-7731"

// startSecretCloud starts a simulated cloud of two small modules whose
// account password is secretPassword (logger nil: the simulator's default).
func startSecretCloud(t *testing.T, logger *slog.Logger) *cloudsim.Cloud {
	t.Helper()
	sim := cloudsim.New(cloudsim.Options{Password: secretPassword, Modules: 2, ParamsPerModule: 30, Seed: 3, Logger: logger})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim
}

func checkSecretsAbsent(t *testing.T, secrets []string, texts map[string]string) {
	t.Helper()
	for _, s := range secrets {
		for _, needle := range []string{s, s[:min(12, len(s))]} {
			for where, text := range texts {
				if i := strings.Index(text, needle); i >= 0 {
					t.Errorf("secret %q in %s: ...%s...", needle, where, text[max(0, i-200):min(len(text), i+len(needle)+50)])
				}
			}
		}
	}
}

// logLinesAt returns the lines of a text or JSON log written at level
// ("DBG"/"DEBUG", "WRN"/"WARN", ...).
func logLinesAt(logs, format, level string) []string {
	text := map[string]string{"DEBUG": " DBG ", "INFO": " INF ", "WARN": " WRN ", "ERROR": " ERR "}[level]
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		if format == "json" && strings.Contains(line, `"level":"`+level+`"`) || format == "text" && strings.Contains(line, text) {
			out = append(out, line)
		}
	}
	return out
}

// A cloud whose errors are one short message quoting the secret the request
// carried (the password on login, the bearer token and the token it
// replaced on authenticated requests) gets its message quoted, in errors and
// in the log, with the secret masked: serve at debug level (every line of
// every level is written) in both formats, and /metrics, /status and the
// landing page.
func TestShortSecretEchoesNeverLoggedOrExposed(t *testing.T) {
	sim := startSecretCloud(t, nil)
	t.Setenv(passwordEnv, secretPassword)

	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			front := &echoFront{sim: sim, plan: shortEchoPlan, short: true, n: map[string]int{}, echoed: map[string]int{}}
			srv := httptest.NewServer(front)
			t.Cleanup(srv.Close)
			r := startServeRun(t, append([]string{
				"--log.level=debug", "--log.format=" + format,
				"--cloud.url=" + srv.URL, "--cloud.email=" + cloudsim.DefaultEmail,
			}, fastServeFlags...)...)
			r.waitServe("session up with parameters exported, after every echo error was served", func(mfs map[string]*dto.MetricFamily) bool {
				up, _ := gaugeValue(mfs, "bragerone_session_up", nil)
				return up == 1 && mfs["bragerone_parameter_value"] != nil && len(front.unserved()) == 0
			})
			texts := exposedTexts(t, r, []string{"/status", "/"})
			logs := texts["the log"]

			secrets := append([]string{secretPassword}, front.secrets()...)
			if len(secrets) < 5 { // the password, and access+refresh of two logins at least (the 401 forced one)
				t.Fatalf("the cloud issued too few tokens to check: %d secrets", len(secrets))
			}
			checkSecretsAbsent(t, secrets, texts)
			// The echoes were quoted, masked, at debug and at warn level:
			// the check above looked at lines that carried them.
			for _, want := range []string{"rejected " + redactMask, "rejected Bearer " + redactMask, "replaced " + redactMask} {
				if !strings.Contains(logs, want) {
					t.Errorf("no log line quotes %q; the echo never reached the log:\n%s", want, tailLines(logs, 40))
				}
			}
			for _, level := range []string{"DEBUG", "WARN"} {
				if !slices.ContainsFunc(logLinesAt(logs, format, level), func(l string) bool { return strings.Contains(l, "rejected ") }) {
					t.Errorf("no %s line quotes an echo:\n%s", level, tailLines(logs, 40))
				}
			}
		})
	}
}

// The command-line tools print the same errors to the terminal: check,
// against a cloud whose login, user record and object list answer with a
// short echo of the secret, prints them (stdout and the error line) with the
// secret masked, at every log level and in both formats.
func TestShortSecretEchoesNeverPrintedByTools(t *testing.T) {
	sim := startSecretCloud(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Setenv(passwordEnv, secretPassword)

	plans := map[string]map[string]map[int]int{
		"login": {"POST /v1/auth/user": {1: 500}},
		"authenticated": {
			"GET /v1/user":    {1: 500},
			"GET /v1/objects": {1: 500},
		},
	}
	for name, plan := range plans {
		for _, format := range []string{"text", "json"} {
			for _, level := range []string{"debug", "info", "warn", "error"} {
				t.Run(name+"/"+format+"/"+level, func(t *testing.T) {
					front := &echoFront{sim: sim, plan: plan, short: true, n: map[string]int{}, echoed: map[string]int{}}
					srv := httptest.NewServer(front)
					t.Cleanup(srv.Close)
					code, out, errOut := runArgs(t, "check", "--log.level="+level, "--log.format="+format,
						"--cloud.url="+srv.URL, "--cloud.email="+cloudsim.DefaultEmail)
					if code != exitRuntime {
						t.Errorf("check exited %d, want %d (a 500 of the cloud)\nstdout:\n%s\nstderr:\n%s", code, exitRuntime, out, errOut)
					}
					if left := front.unserved(); len(left) != 0 {
						t.Fatalf("echo errors never requested: %v\nstdout:\n%s\nstderr:\n%s", left, out, errOut)
					}
					secrets := append([]string{secretPassword}, front.secrets()...)
					checkSecretsAbsent(t, secrets, map[string]string{"stdout": out, "stderr": errOut})
					// The error line (level error, shown at every level)
					// quotes the echo with the secret masked.
					errLines := logLinesAt(errOut, format, "ERROR")
					if !slices.ContainsFunc(errLines, func(l string) bool { return strings.Contains(l, "rejected ") && strings.Contains(l, redactMask) }) {
						t.Errorf("the error line does not quote the masked echo:\n%s", errOut)
					}
					if name == "authenticated" && !strings.Contains(out, "GET /v1/user failed") {
						t.Errorf("stdout does not report the failed user record:\n%s", out)
					}
				})
			}
		}
	}
}

// recordEchoFront passes everything to the simulator, but writes the
// request's bearer token and the password into the text of every module
// row it lists (name, version, gateway version), as a cloud that echoes
// what it was sent into its data would.
type recordEchoFront struct {
	sim      *cloudsim.Cloud
	password string
	echoed   atomic.Int64

	mu     sync.Mutex
	tokens []string // bearer tokens echoed
}

func (f *recordEchoFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method+" "+r.URL.Path != "GET /v1/modules" {
		f.sim.Handler().ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	f.sim.Handler().ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	var doc struct {
		Data []map[string]any `json:"data"`
	}
	if rec.Code == 200 && json.Unmarshal(out, &doc) == nil && len(doc.Data) > 0 {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		if !slices.Contains(f.tokens, tok) {
			f.tokens = append(f.tokens, tok)
		}
		f.mu.Unlock()
		for _, row := range doc.Data {
			row["name"] = fmt.Sprintf("Boiler %s %s", tok, f.password)
			row["moduleVersion"] = "v1 " + tok
			row["gateway"] = map[string]any{"address": "10.0.0.1", "interface": "eth0", "version": "gw " + f.password}
		}
		out, _ = json.Marshal(doc)
		f.echoed.Add(1)
	}
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// The cloud's records are text like its errors: a module list whose names,
// versions and gateway versions quote the bearer token and the password
// reaches /metrics (bragerone_module_info), /status, the module pages, the
// landing page and the log with both masked, and the module is still
// exported under its devid with the rest of its name.
func TestSecretsEchoedIntoRecordsNeverExposed(t *testing.T) {
	sim := startSecretCloud(t, nil)
	front := &recordEchoFront{sim: sim, password: secretPassword}
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	t.Setenv(passwordEnv, secretPassword)

	r := startServeRun(t, append([]string{
		"--log.level=debug", "--log.format=json",
		"--cloud.url=" + srv.URL, "--cloud.email=" + cloudsim.DefaultEmail,
	}, fastServeFlags...)...)
	r.waitServe("every module's info and parameters exported", func(mfs map[string]*dto.MetricFamily) bool {
		return mfs["bragerone_parameter_value"] != nil && mfs["bragerone_module_info"] != nil &&
			len(mfs["bragerone_module_info"].GetMetric()) == len(sim.Devids())
	})
	texts := exposedTexts(t, r, append([]string{"/status", "/"}, modulePages(sim.Devids())...))
	if front.echoed.Load() == 0 {
		t.Fatal("no module list was rewritten; the check would see nothing")
	}
	front.mu.Lock()
	tokens := append([]string{secretPassword}, front.tokens...)
	front.mu.Unlock()
	if len(tokens) < 2 || len(tokens[1]) < 12 {
		t.Fatalf("no usable bearer token was echoed: %q", tokens[1:])
	}
	checkSecretsAbsent(t, tokens, texts)
	want := fmt.Sprintf(`name="Boiler %s %s"`, redactMask, redactMask)
	for _, d := range sim.Devids() {
		line := fmt.Sprintf(`bragerone_module_info{devid=%q,gateway_version="gw %s",`, d, redactMask)
		if !strings.Contains(texts["/metrics"], line) || strings.Count(texts["/metrics"], want) != len(sim.Devids()) {
			t.Errorf("module %s not exported with its masked name and gateway version (%s, %s):\n%s", d, line, want, texts["/metrics"])
		}
	}
}
