package exporter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// simulatedConfig runs the exporter against its embedded simulated cloud:
// one small module, the catalog on.
func simulatedConfig(t *testing.T) Config {
	cfg := validConfig(t)
	cfg.Simulate = Simulate{Enabled: true, Modules: 1, Objects: 1, ParamsPerModule: 20}
	cfg.Parameters = Parameters{}
	return cfg
}

// get fetches path from srv; the body is "" on a transport error.
func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// serveRun runs e until the test ends, serving its handler.
func serveRun(t *testing.T, e *Exporter) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return srv
}

// waitFor polls cond every 20 ms until it holds, or fails after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunServesTheSimulatedCloud assembles the whole exporter against its
// embedded simulated cloud and reads it through its handler: not ready until
// the first snapshot, then ready with the session up, the module's
// parameters exported and named by the catalog, and the pages up; Run
// returns nil once its context ends, and the simulated cloud sees the
// logout.
func TestRunServesTheSimulatedCloud(t *testing.T) {
	e, err := New(simulatedConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.sim.URL(), "http://127.0.0.1:") {
		t.Errorf("the embedded simulated cloud serves on %s, want loopback", e.sim.URL())
	}
	sim := e.sim
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	if code, _ := get(t, srv, "/-/ready"); code != http.StatusServiceUnavailable {
		t.Errorf("/-/ready before Run = %d, want 503", code)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	waitFor(t, "ready", func() bool { code, _ := get(t, srv, "/-/ready"); return code == http.StatusOK })
	waitFor(t, "the catalog's names on /metrics", func() bool {
		_, body := get(t, srv, "/metrics")
		return strings.Contains(body, `bragerone_session_up{object_id="`+strconv.Itoa(sim.ObjectID())+`"} 1`) && strings.Contains(body, "bragerone_parameter_value{") &&
			strings.Contains(body, "bragerone_parameter_info{")
	})
	for _, path := range []string{"/", "/status", "/-/healthy"} {
		if code, _ := get(t, srv, path); code != http.StatusOK {
			t.Errorf("GET %s = %d", path, code)
		}
	}
	// The REST client's account gate is read at scrape time: logged in,
	// not throttled, no failed login.
	_, body := get(t, srv, "/metrics")
	for _, want := range []string{"\nbragerone_rate_limit_pause_seconds 0\n", "\nbragerone_rate_limit_pauses_total 0\n",
		"\nbragerone_tokens_held 1\n", "\nbragerone_tokens_revoked_total 0\n", "\nbragerone_token_expiry_timestamp_seconds "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	if strings.Contains(body, "bragerone_login_failure_reason{") || strings.Contains(body, "\nbragerone_login_retry_timestamp_seconds ") {
		t.Error("/metrics reports a failed login after a good one")
	}
	if _, page := get(t, srv, "/status"); !strings.Contains(page, `id="account"`) || !strings.Contains(page, "LOGGED IN") {
		t.Error("/status has no account line saying the account is logged in")
	}

	cancel()
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Errorf("Run after its context ended = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if n := sim.Requests(cloudapi.EndpointRevoke); n != 1 {
		t.Errorf("the simulated cloud saw %d logouts, want 1", n)
	}
}

// TestRunRejectedLoginIsAConfigError: credentials the cloud refuses at the
// start stop Run with a *ConfigError telling the operator to check them.
func TestRunRejectedLoginIsAConfigError(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{Modules: 1, ParamsPerModule: 5})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	cfg := validConfig(t)
	cfg.Cloud.URL, cfg.Cloud.Email, cfg.Cloud.Password = sim.URL(), cloudsim.DefaultEmail, "not-the-password"
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(context.Background()) }()
	select {
	case err := <-done:
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "login rejected by the cloud: check the email and password") {
			t.Errorf("Run = %v, want a *ConfigError saying the login was rejected", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not stop on a rejected login")
	}
}

// TestRunWatchesEveryObject: the assembled exporter on a simulated account
// of two objects watches both with one login: each object's session and
// name on /metrics, each module labelled with its own object.
func TestRunWatchesEveryObject(t *testing.T) {
	cfg := simulatedConfig(t)
	cfg.Simulate.Modules, cfg.Simulate.Objects = 3, 2
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveRun(t, e)
	objects := e.sim.Objects()
	if len(objects) != 2 {
		t.Fatalf("simulated objects %+v", objects)
	}
	var want []string
	for _, o := range objects {
		id := strconv.Itoa(o.ID)
		want = append(want, `bragerone_session_up{object_id="`+id+`"} 1`,
			`bragerone_object_info{name="`+o.Name+`",object_id="`+id+`"} 1`)
		for _, d := range o.Devids {
			want = append(want, `devid="`+d+`"`)
		}
	}
	var body string
	waitFor(t, "both objects' sessions up on /metrics", func() bool {
		_, body = get(t, srv, "/metrics")
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	})
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "bragerone_module_info{") {
			continue
		}
		devid := between(line, `devid="`, `"`)
		if got, want := between(line, `object_id="`, `"`), strconv.Itoa(e.sim.ObjectOf(devid)); got != want {
			t.Errorf("module %s labelled object %s, want %s", devid, got, want)
		}
	}
	if n := e.sim.Logins(); n != 1 {
		t.Errorf("logins = %d for two objects, want 1", n)
	}
}

// between returns the text of s after the first from and before the next to.
func between(s, from, to string) string {
	_, after, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(after, to)
	return v
}
