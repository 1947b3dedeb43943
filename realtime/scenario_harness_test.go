package realtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// The scenarios run the real gateway, the real REST client and the real
// Socket.IO transport against the simulated cloud over loopback, with every
// duration in milliseconds, and read what the exporter shows through the
// same collector serve builds, registered in a pedantic registry.

// scenarioSetup tunes one scenario before the gateway starts.
type scenarioSetup struct {
	sim    func(*cloudsim.Options)
	client func(*cloudclient.Config)
	gw     func(*realtime.Config)
	// before runs after the simulator started and before the gateway runs
	// (faults that must be on from the first request).
	before func(*scenario)
	// connectTimeout bounds one Socket.IO connect; default 400 ms.
	connectTimeout time.Duration
	// seam puts a seamTransport between the gateway and the transport.
	seam bool
	// route, when set, returns the base URL the exporter reaches the
	// simulator at (REST, Socket.IO and the assets origin), given the
	// simulator's own: a chaos proxy in between (see tcpfault_test.go).
	route func(simURL string) string
	// transport tunes the realtime transport's configuration.
	transport func(*transport.Config)
}

type scenario struct {
	t      *testing.T
	sim    *cloudsim.Cloud
	client *cloudclient.Client
	store  *store.Store
	gw     *realtime.Gateway
	reg    *prometheus.Registry
	cancel context.CancelFunc
	runErr chan error

	mu        sync.Mutex
	codes     map[string]map[int]int // REST answers seen by the client, by endpoint and code
	seams     []*seamSession         // every session made through the seam, in connect order
	seamsOver bool                   // the scenario ended: seam sessions hold nothing back
	sent      []sentToken            // the token each request to the cloud carried
	binds     []map[string]any       // the bodies posted to modules/connect, in order
	primed    [][]string             // the modules of each prime request, in order
}

func scenarioLogger() *slog.Logger {
	if os.Getenv("GATEWAY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// scenarioGatewayConfig shortens every duration of the gateway so the real
// code paths run in milliseconds. Zombie detection is off unless a scenario
// turns it on.
func scenarioGatewayConfig() realtime.Config {
	cfg := realtime.DefaultConfig()
	cfg.PollInterval = 30 * time.Millisecond
	cfg.SupervisorInterval = 40 * time.Millisecond
	cfg.HealthInterval = 5 * time.Millisecond
	cfg.SessionHysteresis = 0
	cfg.ReconnectBackoff = 10 * time.Millisecond
	cfg.TeardownTimeout = 400 * time.Millisecond
	cfg.StartRetryMax = 50 * time.Millisecond
	cfg.Ladder.StaleAfter = time.Hour
	cfg.Ladder.ModuleOnlineDebounce = 0
	return cfg
}

// zombieLadder makes the recovery ladder climb in milliseconds.
func zombieLadder(c *realtime.Config) {
	c.Ladder.StaleAfter = 80 * time.Millisecond
	c.Ladder.CooldownBase = 30 * time.Millisecond
	c.Ladder.CooldownMax = 60 * time.Millisecond
	c.Ladder.QuarantineFor = time.Hour
}

func startScenario(t *testing.T, su scenarioSetup) *scenario {
	t.Helper()
	so := cloudsim.Options{Modules: 2, ParamsPerModule: 40, Seed: 11, Logger: scenarioLogger()}
	if su.sim != nil {
		su.sim(&so)
	}
	sim := cloudsim.New(so)
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })

	s := &scenario{t: t, sim: sim, codes: map[string]map[int]int{}, runErr: make(chan error, 1)}
	cloudURL := sim.URL()
	if su.route != nil {
		cloudURL = su.route(cloudURL)
	}
	ccfg := cloudclient.Config{
		BaseURL: cloudURL, AssetsURL: cloudURL,
		Credentials:  cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
		PrimeBackoff: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond},
		Timeout:      2 * time.Second,
		Logger:       scenarioLogger(),
		// Backoff pauses (login's duplicate-entry retry) at a tenth of their length.
		Sleep: func(ctx context.Context, d time.Duration) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d / 10):
				return nil
			}
		},
		Observer:   s.observe,
		HTTPClient: &http.Client{Transport: requestRecorder{s: s, next: http.DefaultTransport}},
	}
	if su.client != nil {
		su.client(&ccfg)
	}
	client, err := cloudclient.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	s.client = client
	s.store = store.New()

	cfg := scenarioGatewayConfig()
	cfg.Client, cfg.Store, cfg.Logger = client, s.store, scenarioLogger()
	connectTimeout := su.connectTimeout
	if connectTimeout == 0 {
		connectTimeout = 400 * time.Millisecond
	}
	handshakeHeader := realtime.HandshakeHeaders(client, cloudURL)
	recordedHeader := func(ctx context.Context) (http.Header, error) {
		h, err := handshakeHeader(ctx)
		if err == nil {
			s.recordToken("GET /socket.io/", h.Get("Authorization"))
		}
		return h, err
	}
	cfg.NewTransport = func() (transport.Transport, error) {
		tcfg := transport.Config{
			BaseURL: cloudURL, Header: recordedHeader,
			ConnectTimeout: connectTimeout, TeardownTimeout: 300 * time.Millisecond, Logger: scenarioLogger(),
		}
		if su.transport != nil {
			su.transport(&tcfg)
		}
		tr, err := transport.New(tcfg)
		if err != nil {
			return nil, err
		}
		if su.seam {
			return &seamTransport{Transport: tr, s: s}, nil
		}
		return tr, nil
	}
	// The exporter's own metrics, fed as serve feeds them.
	s.reg = prometheus.NewPedanticRegistry()
	if _, err := collector.NewInstrumentation(s.reg, collector.InstrumentationOptions{}); err != nil {
		t.Fatal(err)
	}
	if su.gw != nil {
		su.gw(&cfg)
	}
	gw, err := realtime.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.gw = gw

	// The collector exactly as serve builds it.
	col, err := collector.New(exporter.GatewaySource{Status: gw.Status, Store: s.store}, s.store, collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.reg.MustRegister(col)

	if su.before != nil {
		su.before(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() { s.runErr <- gw.Run(ctx) }()
	t.Cleanup(s.stop)
	t.Cleanup(s.endSeams) // before stop: a hung teardown must not hold it
	return s
}

func (s *scenario) observe(endpoint string, code int, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codes[endpoint] == nil {
		s.codes[endpoint] = map[int]int{}
	}
	s.codes[endpoint][code]++
}

// sentToken is the bearer token one request carried ("" for none).
type sentToken struct{ endpoint, token string }

// requestRecorder records what each REST request carried: its bearer token,
// and the body of each bind and prime.
type requestRecorder struct {
	s    *scenario
	next http.RoundTripper
}

func (r requestRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.s.recordToken(req.Method+" "+req.URL.Path, req.Header.Get("Authorization"))
	if req.Method == http.MethodPost && req.GetBody != nil {
		switch req.URL.Path {
		case "/v1/modules/connect":
			var b map[string]any
			if decodeBody(req, &b) {
				r.s.mu.Lock()
				r.s.binds = append(r.s.binds, b)
				r.s.mu.Unlock()
			}
		case "/v1/modules/parameters":
			var b struct{ Modules []string }
			if decodeBody(req, &b) {
				r.s.mu.Lock()
				r.s.primed = append(r.s.primed, b.Modules)
				r.s.mu.Unlock()
			}
		}
	}
	return r.next.RoundTrip(req)
}

// decodeBody decodes a copy of the request's JSON body.
func decodeBody(req *http.Request, v any) bool {
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	return json.NewDecoder(body).Decode(v) == nil
}

// primes returns the modules of every prime request sent so far.
func (s *scenario) primes() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.primed...)
}

// bindsFor returns the modules/connect bodies that carried sid (under any
// key), in order.
func (s *scenario) bindsFor(sid string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, b := range s.binds {
		if b["wsid"] == sid || b["sid"] == sid {
			out = append(out, b)
		}
	}
	return out
}

func (s *scenario) recordToken(endpoint, authorization string) {
	scheme, tok, _ := strings.Cut(strings.TrimSpace(authorization), " ")
	if !strings.EqualFold(scheme, "bearer") {
		tok = ""
	}
	s.mu.Lock()
	s.sent = append(s.sent, sentToken{endpoint, strings.TrimSpace(tok)})
	s.mu.Unlock()
}

// withoutToken lists the requests that needed a token (all but the login)
// and went out without one, and counts the requests that carried one.
func (s *scenario) withoutToken() (missing []string, carried int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.sent {
		switch {
		case st.endpoint == "POST /v1/auth/user":
		case st.token == "":
			missing = append(missing, st.endpoint)
		default:
			carried++
		}
	}
	return missing, carried
}

// answers returns how many REST answers with code the client saw for endpoint.
func (s *scenario) answers(endpoint string, code int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codes[endpoint][code]
}

// stop cancels the gateway and waits for Run to return.
func (s *scenario) stop() {
	s.cancel()
	select {
	case err := <-s.runErr:
		if err != nil {
			s.t.Errorf("Run returned %v", err)
		}
		s.runErr <- nil
	case <-time.After(5 * time.Second):
		s.t.Errorf("Run did not return after cancel")
	}
}

// ---- reading what the exporter shows ----

type sample struct {
	labels map[string]string
	value  float64
}

// series gathers the registry and returns every sample of the metric name.
func (s *scenario) series(name string) []sample {
	s.t.Helper()
	return gatherSamples(s.t, s.reg, name)
}

// gatherSamples gathers reg and returns every sample of the metric name.
func gatherSamples(t testing.TB, reg prometheus.Gatherer, name string) []sample {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering the exporter's metrics: %v", err)
	}
	var out []sample
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sm := sample{labels: map[string]string{}}
			for _, lp := range m.GetLabel() {
				sm.labels[lp.GetName()] = lp.GetValue()
			}
			switch {
			case m.GetGauge() != nil:
				sm.value = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				sm.value = m.GetCounter().GetValue()
			default:
				sm.value = math.NaN()
			}
			out = append(out, sm)
		}
	}
	return out
}

// metric returns the value of the sample of name whose labels include the
// given name/value pairs, and whether there is one.
func (s *scenario) metric(name string, labelPairs ...string) (float64, bool) {
	s.t.Helper()
	for _, sm := range s.series(name) {
		if matches(sm.labels, labelPairs) {
			return sm.value, true
		}
	}
	return 0, false
}

func matches(labels map[string]string, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if labels[pairs[i]] != pairs[i+1] {
			return false
		}
	}
	return true
}

// labelSets returns the label sets of every sample of name, each as
// "k=v,…" with the names in order, sorted.
func (s *scenario) labelSets(name string) []string {
	s.t.Helper()
	var out []string
	for _, sm := range s.series(name) {
		names := make([]string, 0, len(sm.labels))
		for k := range sm.labels {
			names = append(names, k)
		}
		sort.Strings(names)
		kv := make([]string, len(names))
		for i, k := range names {
			kv[i] = k + "=" + sm.labels[k]
		}
		out = append(out, strings.Join(kv, ","))
	}
	sort.Strings(out)
	return out
}

// is reports whether the metric is present with exactly value v.
func (s *scenario) is(v float64, name string, labelPairs ...string) bool {
	s.t.Helper()
	got, ok := s.metric(name, labelPairs...)
	return ok && got == v
}

// absent reports whether the registry exposes no sample of name at all
// (testutil counts the gathered samples).
func (s *scenario) absent(name string) bool {
	s.t.Helper()
	n, err := testutil.GatherAndCount(s.reg, name)
	if err != nil {
		s.t.Fatalf("gathering %s: %v", name, err)
	}
	return n == 0
}

// labelOf returns the value of label on the first sample of name matching
// the pairs ("" when there is none).
func (s *scenario) labelOf(name, label string, labelPairs ...string) string {
	s.t.Helper()
	for _, sm := range s.series(name) {
		if matches(sm.labels, labelPairs) {
			return sm.labels[label]
		}
	}
	return ""
}

// sum adds the samples of name matching the pairs.
func (s *scenario) sum(name string, labelPairs ...string) float64 {
	s.t.Helper()
	total := 0.0
	for _, sm := range s.series(name) {
		if matches(sm.labels, labelPairs) {
			total += sm.value
		}
	}
	return total
}

// recoveries is bragerone_recovery_actions_total for a step, all results.
func (s *scenario) recoveries(step string) float64 {
	return s.sum("bragerone_recovery_actions_total", "step", step)
}

// dump renders the health metrics for failure messages.
func (s *scenario) dump() string {
	var b strings.Builder
	for _, name := range []string{
		"bragerone_session_up", "bragerone_session_outage_seconds", "bragerone_session_last_outage_seconds",
		"bragerone_push_healthy", "bragerone_live_stale_seconds", "bragerone_module_online",
		"bragerone_module_outage_seconds", "bragerone_module_poll_failure_streak", "bragerone_recovery_quarantined",
		"bragerone_recovery_cooldown_seconds",
	} {
		for _, sm := range s.series(name) {
			fmt.Fprintf(&b, "\n  %s%v = %g", name, sm.labels, sm.value)
		}
	}
	for _, sm := range s.series("bragerone_recovery_actions_total") {
		if sm.value > 0 {
			fmt.Fprintf(&b, "\n  bragerone_recovery_actions_total%v = %g", sm.labels, sm.value)
		}
	}
	st := s.gw.Status()
	fmt.Fprintf(&b, "\n  status: connected=%v sid=%q recovering=%q ladder=%+v", st.Connected, st.NamespaceSID, st.Recovering, st.Ladder)
	fmt.Fprintf(&b, "\n  simulator requests: %v", s.sim.RequestCounts())
	s.mu.Lock()
	fmt.Fprintf(&b, "\n  REST answers seen by the client: %v", s.codes)
	s.mu.Unlock()
	return b.String()
}

// ---- waiting ----

const scenarioDeadline = 5 * time.Second

// eventually polls cond with a short tick until it holds, or fails the test
// with what the exporter showed.
func (s *scenario) eventually(what string, cond func() bool) {
	s.t.Helper()
	s.eventuallyWithin(what, scenarioDeadline, cond)
}

// eventuallyWithin is eventually with its own deadline d, for a condition
// paced by a longer clock than the gateway's (a token's lifetime).
func (s *scenario) eventuallyWithin(what string, d time.Duration, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s; the exporter shows:%s", what, s.dump())
		}
		time.Sleep(3 * time.Millisecond)
	}
}

// holdsWhile checks inv at every tick until done holds (or the deadline),
// failing as soon as inv is false: an invariant kept throughout a phase.
func (s *scenario) holdsWhile(inv func() bool, what string, done func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(scenarioDeadline)
	for {
		if !inv() {
			s.t.Fatalf("%s broken; the exporter shows:%s", what, s.dump())
		}
		if done() {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out while checking %s; the exporter shows:%s", what, s.dump())
		}
		time.Sleep(3 * time.Millisecond)
	}
}

// requestsAfter waits until the simulator served more than n requests of
// endpoint.
func (s *scenario) requestsAfter(endpoint string, n int) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("a %s request (more than %d)", endpoint, n), func() bool { return s.sim.Requests(endpoint) > n })
}

// ---- the session at the simulator ----

func (s *scenario) simSession(sid string) (cloudsim.Session, bool) {
	for _, ss := range s.sim.Sessions() {
		if ss.SID == sid {
			return ss, true
		}
	}
	return cloudsim.Session{}, false
}

// simSessionEnds lists the simulator's ended sessions with the reason each
// gave, oldest first: what a test that saw a session lost tells about why.
func (s *scenario) simSessionEnds() string {
	var ends []string
	for _, ss := range s.sim.Sessions() {
		if !ss.Connected {
			ends = append(ends, fmt.Sprintf("%s %q", ss.SID, ss.Reason))
		}
	}
	if len(ends) == 0 {
		return "none"
	}
	return strings.Join(ends, ", ")
}

// waitBound waits until the gateway's current session is bound at the
// simulator to every module, and returns its namespace SID.
func (s *scenario) waitBound() string {
	s.t.Helper()
	var sid string
	s.eventually("the session bound at the simulator", func() bool {
		st := s.gw.Status()
		if !st.Connected || st.NamespaceSID == "" {
			return false
		}
		ss, ok := s.simSession(st.NamespaceSID)
		if !ok || !ss.Connected || len(ss.Bound) < len(st.Subscribed) {
			return false
		}
		sid = st.NamespaceSID
		return true
	})
	return sid
}

// waitBoundAndPrimed waits until the session is bound at the simulator, no
// resubscribe is in flight and the first prime is stored: from then on
// nothing primes unless the test makes it (a prime made by the poll tick
// before the session came up may otherwise still be followed by the bind's).
func (s *scenario) waitBoundAndPrimed() {
	s.t.Helper()
	s.eventually("the session bound and primed", func() bool {
		st := s.gw.Status()
		if !st.Connected || !st.Ready || st.Binding != 0 {
			return false
		}
		ss, ok := s.simSession(st.NamespaceSID)
		return ok && ss.Connected && len(ss.Bound) > 0
	})
}

// waitNewBound waits for a bound session other than old.
func (s *scenario) waitNewBound(old string) string {
	s.t.Helper()
	s.eventually("a new session", func() bool {
		st := s.gw.Status()
		return st.Connected && st.NamespaceSID != "" && st.NamespaceSID != old
	})
	return s.waitBound()
}

// waitUp waits until the exporter shows a bound, healthy-looking start:
// session up, every module online, the first prime stored.
func (s *scenario) waitUp() string {
	s.t.Helper()
	select {
	case <-s.gw.Ready():
	case <-time.After(scenarioDeadline):
		s.t.Fatalf("the gateway never stored a first prime:%s", s.dump())
	}
	sid := s.waitBound()
	s.eventually("session up and modules online", func() bool {
		if !s.is(1, "bragerone_session_up") {
			return false
		}
		for _, d := range s.sim.Devids() {
			if !s.is(1, "bragerone_module_online", "devid", d) {
				return false
			}
		}
		return true
	})
	return sid
}

// ---- parameters ----

// vKey returns the i-th value-channel parameter of a module with a numeric
// value, in key order.
func (s *scenario) vKey(devid string, i int) string {
	s.t.Helper()
	var keys []string
	for k, v := range s.sim.Params(devid) {
		if pk, ok := store.ParseKey(k); ok && pk.Chan == 'v' && isNumber(v) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if i >= len(keys) {
		s.t.Fatalf("module %s has only %d numeric v parameters", devid, len(keys))
	}
	return keys[i]
}

func isNumber(v any) bool {
	_, ok := number(v)
	return ok
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// exported returns the exporter's bragerone_parameter_value of a key.
func (s *scenario) exported(devid, key string) (float64, bool) {
	s.t.Helper()
	pool, param, _ := strings.Cut(key, ".")
	return s.metric("bragerone_parameter_value", "devid", devid, "pool", pool, "param", param)
}

// exportedIs waits until the exporter shows value v for a parameter.
func (s *scenario) exportedIs(devid, key string, v float64) {
	s.t.Helper()
	s.eventually(fmt.Sprintf("%s %s exported as %g", devid, key, v), func() bool {
		got, ok := s.exported(devid, key)
		return ok && got == v
	})
}

// lostDiff compares every value the simulator holds with what the exporter
// exposes: numeric values through bragerone_parameter_value, the others
// through the store the collector reads. "" when nothing is lost.
func (s *scenario) lostDiff() string {
	s.t.Helper()
	exported := map[string]float64{}
	for _, sm := range s.series("bragerone_parameter_value") {
		exported[sm.labels["devid"]+" "+sm.labels["pool"]+"."+sm.labels["param"]] = sm.value
	}
	for _, d := range s.sim.Devids() {
		for key, want := range s.sim.Params(d) {
			if n, ok := number(want); ok {
				got, ok := exported[d+" "+key]
				if !ok || got != n {
					return fmt.Sprintf("%s %s: exported %v (present %v), simulator %v", d, key, got, ok, want)
				}
				continue
			}
			k, _ := store.ParseKey(key)
			e, ok := s.store.Get(d, k)
			if !ok || fmt.Sprint(e.Value) != fmt.Sprint(want) {
				return fmt.Sprintf("%s %s: stored %v, simulator %v", d, key, e.Value, want)
			}
		}
	}
	return ""
}

// nothingLost waits until every simulator value is what the exporter shows.
func (s *scenario) nothingLost() {
	s.t.Helper()
	deadline := time.Now().Add(scenarioDeadline)
	for {
		diff := s.lostDiff()
		if diff == "" {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("values lost: %s; the exporter shows:%s", diff, s.dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sessionOutageReason is the reason label of the open session outage ("" when none).
func (s *scenario) sessionOutageReason() string {
	return s.labelOf("bragerone_session_outage_seconds", "reason")
}

// ---- a session whose end is not reported ----

// seamTransport wraps the real transport so a scenario can play the one
// failure no network fault brings out of this client library: a session the
// library has closed while its end never reaches the gateway (in the field,
// python-engineio dropping the disconnect on aiohttp's CLOSED message,
// docs/spec.md W-7.2), and a teardown of it that hangs. Every session it
// makes passes everything through until the scenario arms it.
type seamTransport struct {
	transport.Transport
	s *scenario
}

// Abandoned forwards the transport's count of stuck library calls, which
// the gateway reads.
func (t *seamTransport) Abandoned() int {
	if ab, ok := t.Transport.(interface{ Abandoned() int }); ok {
		return ab.Abandoned()
	}
	return 0
}

func (t *seamTransport) Connect(ctx context.Context) (transport.Session, error) {
	inner, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ss := &seamSession{
		Session: inner, events: make(chan transport.Event), done: make(chan struct{}),
		release: make(chan struct{}), quit: make(chan struct{}),
	}
	t.s.mu.Lock()
	t.s.seams = append(t.s.seams, ss)
	over := t.s.seamsOver
	t.s.mu.Unlock()
	if over {
		ss.close()
	}
	go ss.pump()
	go ss.watchDone()
	return ss, nil
}

// seamMode says what a seamSession holds back once its session has ended.
type seamMode struct {
	holdEvent bool // the EventDisconnect (and the stream's close)
	holdDone  bool // Done
	// releaseAtLook lets what is held through when the gateway looks at the
	// dead session (asks for its Done after Connected said false) for the
	// n-th time; 0 = never.
	releaseAtLook int
	// releaseAfter lets what is held through this long after the gateway
	// first saw the session closed (a busy machine's late report); 0 = never.
	releaseAfter   time.Duration
	hangDisconnect bool // Disconnect blocks until the scenario ends
}

type seamSession struct {
	transport.Session
	events chan transport.Event
	done   chan struct{}

	mu           sync.Mutex
	mode         seamMode
	deadSeen     bool   // Connected has said false
	looks        int    // Done asked for after that
	reason       string // the reason token the library reported for the end
	disconnects  int    // Disconnect calls begun
	disconnected int    // Disconnect calls returned

	doneOnce, releaseOnce, quitOnce sync.Once
	release                         chan struct{} // closed: nothing is held any more
	quit                            chan struct{} // closed when the scenario ends
}

func (ss *seamSession) arm(m seamMode) {
	ss.mu.Lock()
	ss.mode = m
	ss.mu.Unlock()
}

func (ss *seamSession) close() {
	ss.quitOnce.Do(func() { close(ss.quit) })
	ss.letGo()
}

func (ss *seamSession) letGo() { ss.releaseOnce.Do(func() { close(ss.release) }) }

func (ss *seamSession) released() bool {
	select {
	case <-ss.release:
		return true
	default:
		return false
	}
}

// pump forwards the session's events, holding the disconnect back when armed to.
func (ss *seamSession) pump() {
	defer close(ss.events)
	for ev := range ss.Session.Events() {
		if ev.Kind == cloudapi.EventDisconnect {
			ss.mu.Lock()
			ss.reason = ev.Reason
			hold := ss.mode.holdEvent
			ss.mu.Unlock()
			if hold {
				<-ss.release
			}
		}
		select {
		case ss.events <- ev:
		case <-ss.quit:
			return
		}
	}
}

// watchDone closes Done once the session ended, unless it is held.
func (ss *seamSession) watchDone() {
	<-ss.Session.Done()
	ss.mu.Lock()
	hold := ss.mode.holdDone
	ss.mu.Unlock()
	if hold {
		<-ss.release
	}
	ss.closeDone()
}

func (ss *seamSession) closeDone() { ss.doneOnce.Do(func() { close(ss.done) }) }

// innerDone reports whether the library ended the session.
func (ss *seamSession) innerDone() bool {
	select {
	case <-ss.Session.Done():
		return true
	default:
		return false
	}
}

func (ss *seamSession) Events() <-chan transport.Event { return ss.events }

// Connected is the library's answer. An end not held back is visible in
// Done by the time Connected says false, as it is with the transport alone.
func (ss *seamSession) Connected() bool {
	up := ss.Session.Connected()
	if !up {
		ss.mu.Lock()
		if !ss.deadSeen && ss.mode.releaseAfter > 0 {
			time.AfterFunc(ss.mode.releaseAfter, ss.letGo)
		}
		ss.deadSeen = true
		hold := ss.mode.holdDone && !ss.released()
		ss.mu.Unlock()
		if !hold && ss.innerDone() {
			ss.closeDone()
		}
	}
	return up
}

func (ss *seamSession) Done() <-chan struct{} {
	ss.mu.Lock()
	if ss.deadSeen {
		ss.looks++
		if ss.mode.releaseAtLook > 0 && ss.looks >= ss.mode.releaseAtLook {
			ss.letGo()
		}
	}
	ss.mu.Unlock()
	if ss.released() && ss.innerDone() {
		ss.closeDone()
	}
	return ss.done
}

func (ss *seamSession) Disconnect(ctx context.Context) error {
	ss.mu.Lock()
	ss.disconnects++
	hang := ss.mode.hangDisconnect
	ss.mu.Unlock()
	if hang {
		<-ss.quit
	}
	err := ss.Session.Disconnect(ctx)
	ss.mu.Lock()
	ss.disconnected++
	ss.mu.Unlock()
	return err
}

// endSeams lets every seam session go.
func (s *scenario) endSeams() {
	s.mu.Lock()
	s.seamsOver = true
	seams := append([]*seamSession(nil), s.seams...)
	s.mu.Unlock()
	for _, ss := range seams {
		ss.close()
	}
}

// seamOf returns the seam session with the namespace SID.
func (s *scenario) seamOf(sid string) *seamSession {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.seams {
		if ss.NamespaceSID() == sid {
			return ss
		}
	}
	s.t.Fatalf("no seam session %s", sid)
	return nil
}
