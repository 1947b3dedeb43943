package cloudclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

const (
	testEmail    = "user@example.com"
	testPassword = "secret"
)

// seen is one request as the fake cloud received it.
type seen struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

func (s seen) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(s.Body, &m); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", s.Method, s.Path, s.Body, err)
	}
	return m
}

// fakeCloud is a loopback HTTP server speaking the cloud's login protocol;
// other routes are set per test. Tokens it issued are valid until revoked.
type fakeCloud struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	logins   int
	seq      int
	valid    map[string]bool
	requests []seen
	routes   map[string]http.HandlerFunc
	// loginHook, when set, answers the login instead of the default handler.
	loginHook func(w http.ResponseWriter, r *http.Request, n int) bool
	expiresIn time.Duration
}

func newFakeCloud(t *testing.T) *fakeCloud {
	t.Helper()
	fc := &fakeCloud{t: t, valid: map[string]bool{}, routes: map[string]http.HandlerFunc{}}
	fc.srv = httptest.NewServer(http.HandlerFunc(fc.serve))
	t.Cleanup(fc.srv.Close)
	return fc
}

func (fc *fakeCloud) URL() string { return fc.srv.URL }

// handle sets the handler of "METHOD /path".
func (fc *fakeCloud) handle(route string, h http.HandlerFunc) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.routes[route] = h
}

// handleJSON answers route with a fixed status and JSON body.
func (fc *fakeCloud) handleJSON(route string, status int, body string) {
	fc.handle(route, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	})
}

func (fc *fakeCloud) loginCount() int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.logins
}

func (fc *fakeCloud) revokeAll() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	clear(fc.valid)
}

// seenFor returns the requests to "METHOD /path" in order.
func (fc *fakeCloud) seenFor(route string) []seen {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	var out []seen
	for _, s := range fc.requests {
		if s.Method+" "+s.Path == route {
			out = append(out, s)
		}
	}
	return out
}

func (fc *fakeCloud) total() int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.requests)
}

func (fc *fakeCloud) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fc.mu.Lock()
	fc.requests = append(fc.requests, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), body})
	route := r.Method + " " + r.URL.Path
	h := fc.routes[route]
	fc.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if route == "POST /v1/auth/user" {
		fc.login(w, r, body)
		return
	}
	if h == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(404)
		io.WriteString(w, `{"message":"no such route"}`)
		return
	}
	if !strings.HasPrefix(r.URL.Path, "/v1/system/") && strings.HasPrefix(r.URL.Path, "/v1/") {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		fc.mu.Lock()
		ok := fc.valid[tok]
		fc.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			io.WriteString(w, `{"message":"Unauthorized"}`)
			return
		}
	}
	h(w, r)
}

func (fc *fakeCloud) login(w http.ResponseWriter, r *http.Request, body []byte) {
	fc.mu.Lock()
	fc.logins++
	n := fc.logins
	hook := fc.loginHook
	fc.mu.Unlock()
	if hook != nil && hook(w, r, n) {
		return
	}
	var creds map[string]string
	_ = json.Unmarshal(body, &creds)
	w.Header().Set("Content-Type", "application/json")
	if creds["email"] != testEmail || creds["password"] != testPassword {
		w.WriteHeader(401)
		io.WriteString(w, `{"message":"Invalid credentials"}`)
		return
	}
	fc.mu.Lock()
	fc.seq++
	tok := fmt.Sprintf("tok-%d", fc.seq)
	fc.valid[tok] = true
	exp := ""
	if fc.expiresIn > 0 {
		exp = fmt.Sprintf(`,"expiresAt":%q`, time.Now().Add(fc.expiresIn).UTC().Format(time.RFC3339))
	}
	fc.mu.Unlock()
	fmt.Fprintf(w, `{"accessToken":%q,"refreshToken":"r","type":"bearer"%s,"user":{"id":7},"objects":[{"id":1,"name":"Home","addressCountry":"PL"}]}`, tok, exp)
}

// sleeps records the pauses a client asked for; they return at once.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newClient returns a client of fc with working credentials and instant sleeps.
func newClient(t *testing.T, fc *fakeCloud, opts ...func(*cloudclient.Config)) (*cloudclient.Client, *sleeps) {
	t.Helper()
	sl := &sleeps{}
	cfg := cloudclient.Config{
		BaseURL:     fc.URL(),
		AssetsURL:   fc.URL() + "/one",
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: testEmail, Password: testPassword}),
		Sleep:       sl.sleep,
		WriteRate:   -1,
	}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := cloudclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, sl
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
