package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

func TestRedactAttrHidesSecrets(t *testing.T) {
	var buf bytes.Buffer
	g := Globals{LogLevel: "debug", LogFormat: "json"}
	logger, err := g.newLogger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("login", "password", "hunter2", "token", "eyJhbGciOi", "Authorization", "Bearer abc", "email", "demo@example.com")
	out := buf.String()
	for _, secret := range []string{"hunter2", "eyJhbGciOi", "Bearer abc"} {
		if strings.Contains(out, secret) {
			t.Fatalf("secret %q logged: %s", secret, out)
		}
	}
	if !strings.Contains(out, "demo@example.com") {
		t.Fatalf("non-secret attribute lost: %s", out)
	}
}

// The log handlers and the REST client share one set of secrets: a value
// the client learned is masked in any attribute of any log line, in both
// formats. The embedded simulator's public demo password is not shared.
func TestLoggerMasksWhatTheClientLearned(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		g := &Globals{LogLevel: "debug", LogFormat: format}
		logger, err := g.newLogger(&buf)
		if err != nil {
			t.Fatal(err)
		}
		g.Logger = logger
		t.Setenv(passwordEnv, "Pa55-w0rd-sekret-7731")
		cf := &cloudFlags{Email: "user@example.com", URL: "http://127.0.0.1:1", Timeout: time.Second}
		client, _, err := cf.newClient(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		if client.Secrets() != g.Secrets {
			t.Fatal("the client remembers its secrets apart from the log handlers")
		}
		_, _ = client.Login(context.Background()) // resolves the password; nothing listens
		logger.Warn("x", "detail", "echo Pa55-w0rd-sekret-7731", "err", errors.New("echo Pa55-w0rd-sekret-7731"))
		if out := buf.String(); strings.Contains(out, "sekret") || !strings.Contains(out, "echo REDACTED") {
			t.Errorf("%s: %s", format, out)
		}

		demo := &cloudFlags{Email: "demo@example.com", URL: "http://127.0.0.1:1", Timeout: time.Second, password: cloudsim.DefaultPassword}
		client, _, err = demo.newClient(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		if client.Secrets() == g.Secrets {
			t.Error("the demo password would be masked in every log line")
		}
	}
}

// logLine is one JSON log record, its keys in the order written.
type logLine struct {
	keys   []string
	fields map[string]any
}

func (l logLine) str(key string) string { s, _ := l.fields[key].(string); return s }

// parseJSONLog reads every line of a JSON log; a line that is not one
// JSON object, or that names a key twice, fails the test.
func parseJSONLog(t *testing.T, log string) []logLine {
	t.Helper()
	var out []logLine
	for _, line := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("log line is not a JSON object: %q", line)
		}
		l := logLine{fields: map[string]any{}}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			key := tok.(string)
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			if _, twice := l.fields[key]; twice {
				t.Errorf("key %q twice in %q", key, line)
			}
			l.keys = append(l.keys, key)
			l.fields[key] = v
		}
		out = append(out, l)
	}
	return out
}

// A JSON log has the shape of the Prometheus ecosystem's (promslog): every
// record starts with time, level, source (file:line) and msg; durations are
// Go duration strings, never bare nanoseconds; errors are their message,
// never a Go type name; no value is a Go map or struct; a module coming back
// online is INFO, not WARN. The records come from a real run of serve
// against the simulated cloud: start, catalog load, a failed module-list
// poll, and a module that goes offline and comes back.
func TestJSONLogShape(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{Modules: 2, ParamsPerModule: 30, Seed: 1})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	t.Setenv(passwordEnv, cloudsim.DefaultPassword)
	r := startServeRun(t, append([]string{"--log.format=json", "--log.level=debug",
		"--cloud.url=" + sim.URL(), "--cloud.email=" + cloudsim.DefaultEmail}, fastServeFlags...)...)
	devid := sim.Devids()[0]
	online := func(want float64) func(map[string]*dto.MetricFamily) bool {
		return func(mfs map[string]*dto.MetricFamily) bool {
			v, ok := gaugeValue(mfs, "bragerone_module_online", map[string]string{"devid": devid})
			return ok && v == want && mfs["bragerone_parameter_value"] != nil
		}
	}
	r.waitServe("the module online with parameters", online(1))
	sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "/v1/modules", Status: 503, Count: 1})
	sim.SetModuleOnline(devid, false)
	r.waitServe("the module offline", online(0))
	sim.SetModuleOnline(devid, true)
	r.waitServe("the module back online", online(1))
	wantMsgs := []string{"Starting bragerone_exporter", "Build context", "parameter catalog loaded",
		"cloud request failed", "module offline", "module back online"}
	deadline := time.Now().Add(20 * time.Second)
	for {
		log := r.stderr.String()
		missing := slices.DeleteFunc(slices.Clone(wantMsgs), func(m string) bool { return strings.Contains(log, `"msg":"`+m+`"`) })
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record of %q in the log:\n%s", missing, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.stop()

	source := regexp.MustCompile(`^[a-z0-9_]+\.go:[0-9]+$`)
	levels := []string{"DEBUG", "INFO", "WARN", "ERROR"}
	byMsg := map[string]logLine{}
	lines := parseJSONLog(t, r.stderr.String())
	for _, l := range lines {
		if len(l.keys) < 4 || !slices.Equal(l.keys[:4], []string{"time", "level", "source", "msg"}) {
			t.Errorf("record does not start with time, level, source, msg: %v", l.fields)
			continue
		}
		if _, err := time.Parse(time.RFC3339Nano, l.str("time")); err != nil {
			t.Errorf("time %q: %v", l.fields["time"], err)
		}
		if !slices.Contains(levels, l.str("level")) {
			t.Errorf("level %q, want one of %v", l.fields["level"], levels)
		}
		if !source.MatchString(l.str("source")) {
			t.Errorf("source %q, want file.go:line", l.fields["source"])
		}
		for k, v := range l.fields {
			switch v := v.(type) {
			case map[string]any:
				t.Errorf("%s: %s is an object (a Go map or struct): %v", l.str("msg"), k, v)
			case string:
				for _, leak := range []string{"map[", "&{", "%!", "APIError", "DecodeError", "<nil>"} {
					if strings.Contains(v, leak) {
						t.Errorf("%s: %s=%q shows Go internals (%s)", l.str("msg"), k, v, leak)
					}
				}
			}
		}
		if _, seen := byMsg[l.str("msg")]; !seen {
			byMsg[l.str("msg")] = l
		}
	}
	if len(lines) < 2 || lines[0].str("msg") != "Starting bragerone_exporter" || lines[0].str("version") != versionString() ||
		lines[1].str("msg") != "Build context" || !strings.Contains(lines[1].str("build_context"), "go="+runtime.Version()) {
		t.Errorf("the log does not start with the version and the build context, as node_exporter's does: %v", lines[:min(2, len(lines))])
	}
	duration := func(msg, key string) {
		t.Helper()
		s, ok := byMsg[msg].fields[key].(string)
		if _, err := time.ParseDuration(s); !ok || err != nil {
			t.Errorf("%s: %s=%v, want a Go duration string such as \"1.5s\"", msg, key, byMsg[msg].fields[key])
		}
	}
	duration("parameter catalog loaded", "took")
	duration("module back online", "after")
	if f := byMsg["parameter catalog loaded"].str("failures"); f != "none" {
		t.Errorf("catalog failures %q, want none", f)
	}
	if l := byMsg["cloud request failed"]; l.str("level") != "WARN" || !strings.Contains(l.str("err"), "HTTP 503") || l.fields["status"] != 503.0 {
		t.Errorf("cloud request failed: %v, want WARN with status 503 and the error's message in err", l.fields)
	}
	for msg, level := range map[string]string{"module offline": "WARN", "module back online": "INFO"} {
		if got := byMsg[msg].str("level"); got != level {
			t.Errorf("%q logged at %s, want %s", msg, got, level)
		}
	}
	if got := byMsg["module offline"].str("reason"); got == "" {
		t.Errorf("module offline without its reason: %v", byMsg["module offline"].fields)
	}
}

// The error that ends the process with exit 2 is one JSON record under
// --log.format=json (from the flag or its variable, and whether kong or the
// command refused the configuration), and one plain line in the text format.
func TestUsageErrorFollowsTheLogFormat(t *testing.T) {
	cases := []struct {
		name string
		env  string
		args []string
		want string // in the error
	}{
		{"unknown flag", "", []string{"serve", "--log.format=json", "--no-such-flag"}, "--no-such-flag"},
		{"flag refused by serve", "", []string{"serve", "--log.format", "json", "--parameters.max-series=-1"}, "--parameters.max-series"},
		{"format from the environment", "json", []string{"serve", "--no-such-flag"}, "--no-such-flag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BRAGERONE_LOG_FORMAT", tc.env)
			code, _, errOut := runArgs(t, tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, errOut)
			}
			lines := parseJSONLog(t, errOut)
			if len(lines) != 1 || lines[0].str("level") != "ERROR" || lines[0].str("msg") != "bad usage or configuration" ||
				!strings.Contains(lines[0].str("err"), tc.want) || lines[0].str("source") == "" {
				t.Errorf("want one ERROR record naming %s; got %q", tc.want, errOut)
			}
		})
	}
	t.Run("text", func(t *testing.T) {
		code, _, errOut := runArgs(t, "serve", "--parameters.max-series=-1")
		if code != exitUsage || !strings.HasPrefix(errOut, "bragerone_exporter: --parameters.max-series") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("exit %d, stderr %q; want one plain line", code, errOut)
		}
	})
}

// The log ring keeps debug records whatever --log.level says, masked as
// the log is.
func TestLogRingKeepsDebugLines(t *testing.T) {
	g := &Globals{LogLevel: "warn", LogFormat: "text"}
	var out strings.Builder
	logger, err := g.newLogger(&out)
	if err != nil {
		t.Fatal(err)
	}
	g.Secrets.Add("ring-secret-value")
	logger.Debug("a debug line", "password", "p", "echo", "ring-secret-value")
	logger.Warn("a warning")
	lines := string(g.LogRing.Lines())
	if !strings.Contains(lines, `"msg":"a debug line"`) || !strings.Contains(lines, `"msg":"a warning"`) {
		t.Errorf("the ring holds %q", lines)
	}
	if strings.Contains(lines, "ring-secret-value") || strings.Contains(lines, `"password":"p"`) {
		t.Errorf("a secret in the ring: %q", lines)
	}
	if strings.Contains(out.String(), "a debug line") || !strings.Contains(out.String(), "a warning") {
		t.Errorf("the log at warn: %q", out.String())
	}
}
