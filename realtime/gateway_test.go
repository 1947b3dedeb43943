package realtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
	"github.com/bragerone/bragerone_exporter/redact"
	"github.com/bragerone/bragerone_exporter/wire"
)

// harness runs a gateway against the simulated cloud over loopback, with the
// real REST client and Socket.IO transport, and durations in milliseconds.
type harness struct {
	t      *testing.T
	sim    *cloudsim.Cloud
	client *cloudclient.Client
	store  *store.Store
	gw     *Gateway
	cancel context.CancelFunc
	runErr chan error
}

func testLogger() *slog.Logger {
	if os.Getenv("GATEWAY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fastConfig shortens every duration so the real code paths run in ms.
func fastConfig() Config {
	cfg := DefaultConfig()
	cfg.PollInterval = 40 * time.Millisecond
	cfg.SupervisorInterval = 50 * time.Millisecond
	cfg.HealthInterval = 5 * time.Millisecond
	cfg.SessionHysteresis = 0
	cfg.ReconnectBackoff = 10 * time.Millisecond
	cfg.TeardownTimeout = time.Second
	cfg.StartRetryMax = 50 * time.Millisecond
	cfg.Ladder.StaleAfter = time.Hour // ladder tests lower it
	// The lists are read with every poll, as a safety interval of 0 does:
	// the tests of what a read finds wait for reads; the tests of when a
	// list is read set an interval.
	cfg.HistorySafetyInterval = 0
	return cfg
}

func startHarness(t *testing.T, tune func(*Config), simOpts ...func(*cloudsim.Options)) *harness {
	t.Helper()
	return startHarnessWithFaults(t, tune, nil, simOpts...)
}

// startHarnessWithFaults injects faults into the simulator before the
// gateway starts.
func startHarnessWithFaults(t *testing.T, tune func(*Config), faults []cloudsim.Fault, simOpts ...func(*cloudsim.Options)) *harness {
	t.Helper()
	return startHarnessFull(t, tune, nil, faults, simOpts...)
}

// startHarnessFull also tunes the REST client's configuration.
func startHarnessFull(t *testing.T, tune func(*Config), tuneClient func(*cloudclient.Config), faults []cloudsim.Fault, simOpts ...func(*cloudsim.Options)) *harness {
	t.Helper()
	so := cloudsim.Options{Modules: 2, ParamsPerModule: 40, Seed: 7, Logger: testLogger()}
	for _, f := range simOpts {
		f(&so)
	}
	sim := cloudsim.New(so)
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	for _, f := range faults {
		sim.Inject(f)
	}
	return startHarnessOn(t, sim, tune, tuneClient)
}

// startHarnessOn starts a gateway (with its own client and store) on a
// running simulator, as a fresh exporter start would.
func startHarnessOn(t *testing.T, sim *cloudsim.Cloud, tune func(*Config), tuneClient func(*cloudclient.Config)) *harness {
	t.Helper()
	ccfg := cloudclient.Config{
		BaseURL: sim.URL(), AssetsURL: sim.URL(),
		Credentials:  cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
		PrimeBackoff: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond},
		Timeout:      2 * time.Second,
		Logger:       testLogger(),
	}
	if tuneClient != nil {
		tuneClient(&ccfg)
	}
	client, err := cloudclient.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New()
	cfg := fastConfig()
	cfg.Client, cfg.Store, cfg.Logger = client, st, testLogger()
	cfg.NewTransport = func() (transport.Transport, error) {
		return transport.New(transport.Config{
			BaseURL: sim.URL(), Header: HandshakeHeaders(client, sim.URL()),
			ConnectTimeout: 2 * time.Second, TeardownTimeout: time.Second, Logger: testLogger(),
		})
	}
	if tune != nil {
		tune(&cfg)
	}
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, sim: sim, client: client, store: st, gw: gw, cancel: cancel, runErr: make(chan error, 1)}
	go func() { h.runErr <- gw.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

// stop cancels the gateway and waits for Run to return.
func (h *harness) stop() {
	h.cancel()
	select {
	case err := <-h.runErr:
		if err != nil {
			h.t.Errorf("Run returned %v", err)
		}
		h.runErr <- nil // keep later stop calls from blocking
	case <-time.After(10 * time.Second):
		h.t.Errorf("Run did not return after cancel")
	}
}

// waitFor polls cond until it holds or the deadline passes.
func (h *harness) waitFor(what string, cond func(*Status) bool) *Status {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := h.gw.Status()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; last status: connected=%v session=%+v push=%+v ladder=%+v recovering=%q poll_streak=%d modules=%+v sim_requests=%v",
				what, st.Connected, st.Session, st.Push, st.Ladder, st.Recovering, st.PollFailureStreak, st.Modules, h.sim.RequestCounts())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *harness) waitUntil(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func bound(st *Status) bool { return st.Connected && st.NamespaceSID != "" }

// boundSession is the simulator's view of the session with this SID.
func (h *harness) simSession(sid string) (cloudsim.Session, bool) {
	for _, s := range h.sim.Sessions() {
		if s.SID == sid {
			return s, true
		}
	}
	return cloudsim.Session{}, false
}

func (h *harness) waitBound() *Status {
	h.t.Helper()
	var st *Status
	h.waitUntil("session bound at the simulator", func() bool {
		st = h.gw.Status()
		if !bound(st) {
			return false
		}
		s, ok := h.simSession(st.NamespaceSID)
		return ok && s.Connected && len(s.Bound) > 0
	})
	return st
}

// storeValue reads one parameter from the exporter's store.
func (h *harness) storeValue(devid, key string) (any, store.Source, bool) {
	k, ok := store.ParseKey(key)
	if !ok {
		h.t.Fatalf("bad key %q", key)
	}
	e, ok := h.store.Get(devid, k)
	return e.Value, e.Source, ok && e.HasValue
}

// assertNothingLost checks that every value the simulator holds for every
// module is the value in the exporter's store.
func (h *harness) assertNothingLost() {
	h.t.Helper()
	h.waitUntil("store equal to the simulator", func() bool { return h.diff() == "" })
}

func (h *harness) diff() string {
	for _, d := range h.sim.Devids() {
		for key, want := range h.sim.Params(d) {
			got, _, ok := h.storeValue(d, key)
			if want == nil {
				continue
			}
			if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Sprintf("%s %s: store %v, simulator %v", d, key, got, want)
			}
		}
	}
	return ""
}

// firstKey returns a v-channel parameter of the module.
func (h *harness) firstKey(devid string) string {
	for key := range h.sim.Params(devid) {
		if k, ok := store.ParseKey(key); ok && k.Chan == 'v' {
			return key
		}
	}
	h.t.Fatalf("module %s has no v parameter", devid)
	return ""
}

func TestGatewayStartPrimesBindsAndStoresLiveUpdates(t *testing.T) {
	h := startHarness(t, nil)
	select {
	case <-h.gw.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("never ready")
	}
	st := h.waitBound()
	if len(st.Subscribed) != 2 || st.ObjectID != h.sim.ObjectID() {
		t.Fatalf("subscribed=%v object=%d", st.Subscribed, st.ObjectID)
	}
	h.assertNothingLost()

	devid := h.sim.Devids()[0]
	key := h.firstKey(devid)
	h.sim.SetParam(devid, key, 1234.5)
	h.waitUntil("live value stored", func() bool {
		v, src, ok := h.storeValue(devid, key)
		return ok && v == 1234.5 && src == store.SourceLive
	})
	h.waitFor("push healthy after a live update", func(st *Status) bool { return st.Push.State == outage.PushHealthy })
	if st := h.gw.Status(); !st.Session.Up || st.Session.Outage.Down {
		t.Fatalf("session = %+v", st.Session)
	}
}

// Every realtime reconnect is followed by modules/connect with the CURRENT
// namespace SID and a fresh prime; pushes then reach the new session.
func TestGatewayRebindsCurrentSIDAndReprimesAfterTransportDrop(t *testing.T) {
	h := startHarness(t, nil)
	first := h.waitBound()
	connects := h.sim.Requests("POST /v1/modules/connect")
	primes := h.sim.Requests("POST /v1/modules/parameters")

	// While the session is down a value changes: only the re-prime can bring it.
	h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	h.waitFor("a new session", func(st *Status) bool { return bound(st) && st.NamespaceSID != first.NamespaceSID })
	second := h.waitBound()
	if s, _ := h.simSession(first.NamespaceSID); s.Connected {
		t.Fatalf("old session still connected at the simulator: %+v", s)
	}
	if got := h.sim.Requests("POST /v1/modules/connect"); got <= connects {
		t.Fatalf("modules/connect requests %d -> %d: no rebind", connects, got)
	}
	h.waitUntil("re-prime", func() bool { return h.sim.Requests("POST /v1/modules/parameters") > primes })

	devid := h.sim.Devids()[1]
	key := h.firstKey(devid)
	h.sim.SetParam(devid, key, 77.0)
	h.waitUntil("live value on the new session", func() bool {
		v, src, ok := h.storeValue(devid, key)
		return ok && v == 77.0 && src == store.SourceLive
	})
	if s, ok := h.simSession(second.NamespaceSID); !ok || len(s.Bound) == 0 {
		t.Fatalf("the new SID is not the bound one: %+v", s)
	}
	h.assertNothingLost()
}

// A disconnect shorter than the hysteresis is a blink: no outage, counted.
func TestGatewaySessionBlinkInsideHysteresisLeavesNoOutage(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.SessionHysteresis = 5 * time.Second })
	first := h.waitBound()
	h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	h.waitFor("reconnected", func(st *Status) bool { return bound(st) && st.NamespaceSID != first.NamespaceSID })
	st := h.waitFor("blink counted", func(st *Status) bool { return st.Session.Blinks >= 1 })
	if st.Session.Outage.Down || st.Session.Outage.HasLast || len(st.Session.Outages) != 0 {
		t.Fatalf("a blink produced an outage: %+v", st.Session)
	}
	for _, ep := range st.Episodes {
		if ep.Layer == outage.LayerCloud {
			t.Fatalf("a blink recorded a cloud episode: %+v", ep)
		}
	}
}

// With hysteresis 0 a lost session is published down at once, with the
// classified reason, and restored with last_* afterwards.
func TestGatewaySessionDownIsPublishedAndRestored(t *testing.T) {
	h := startHarness(t, nil)
	first := h.waitBound()
	stall := h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultStallHandshake})
	h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	st := h.waitFor("session down", func(st *Status) bool { return !st.Session.Up && st.Session.Outage.Down })
	if st.Session.Outage.Reason == "" || st.Push.State != outage.PushUnhealthy {
		t.Fatalf("down without reason or with healthy push: session=%+v push=%+v", st.Session, st.Push)
	}
	reason := st.Session.Outage.Reason
	h.sim.Clear(stall)
	st = h.waitFor("restored", func(st *Status) bool {
		return bound(st) && st.NamespaceSID != first.NamespaceSID && st.Session.Up && st.Session.Outage.HasLast
	})
	if st.Session.Outage.LastReason != reason || st.Session.Outage.LastDownFor <= 0 {
		t.Fatalf("last outage = %+v, want reason %q", st.Session.Outage, reason)
	}
	if st.Session.Outages[reason] != 1 {
		t.Fatalf("outages by reason = %v", st.Session.Outages)
	}
	h.assertNothingLost()
}

func TestGatewayEvent22PrimesThatModule(t *testing.T) {
	h := startHarness(t, nil)
	h.waitBound()
	<-h.gw.Ready()
	devid := h.sim.Devids()[0]
	before := h.sim.Requests("POST /v1/modules/parameters")
	h.sim.EmitMemoryUpdated(devid)
	h.waitUntil("a prime after event 22", func() bool { return h.sim.Requests("POST /v1/modules/parameters") > before })
}

func TestGatewayModuleOfflineFromConnectionStatusEvent(t *testing.T) {
	h := startHarness(t, nil)
	h.waitBound()
	devid := h.sim.Devids()[0]
	h.waitFor("module known online", func(st *Status) bool { m, ok := moduleOf(st, devid); return ok && m.Known && m.Online })
	h.sim.SetModuleOnline(devid, false)
	st := h.waitFor("module offline", func(st *Status) bool { m, _ := moduleOf(st, devid); return !m.Online })
	m, _ := moduleOf(st, devid)
	if !m.Outage.Down || (m.Outage.Reason != outage.SourceWS && m.Outage.Reason != outage.SourceREST) {
		t.Fatalf("module outage = %+v", m.Outage)
	}
	h.sim.SetModuleOnline(devid, true)
	st = h.waitFor("module online again", func(st *Status) bool { m, _ := moduleOf(st, devid); return m.Online })
	m, _ = moduleOf(st, devid)
	if !m.Outage.HasLast || m.Outage.Down {
		t.Fatalf("after restore: %+v", m.Outage)
	}
}

// Gateway text pushed in a connection-status event passes through the
// client's secrets like a REST record: a cloud echoing the bearer token
// into it shows the token masked. No poll runs, so only the push can carry
// the new version.
func TestGatewayPushedGatewayTextIsScrubbed(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.PollInterval = 0 })
	h.waitBound()
	devid := h.sim.Devids()[0]
	h.waitFor("module known online", func(st *Status) bool { m, ok := moduleOf(st, devid); return ok && m.Known && m.Online })
	tok, err := h.client.AccessToken()
	if err != nil || len(tok) < 8 {
		t.Fatalf("token %q, %v", tok, err)
	}
	h.sim.SetGatewayVersion(devid, "gw "+tok)
	st := h.waitFor("the pushed gateway version", func(st *Status) bool {
		m, _ := moduleOf(st, devid)
		return strings.HasPrefix(m.Gateway.Version, "gw ")
	})
	if m, _ := moduleOf(st, devid); m.Gateway.Version != "gw "+redact.Mask {
		t.Fatalf("gateway version %q, want the token masked", m.Gateway.Version)
	}
}

// A pushed parameter whose value is text reaches the store with the
// remembered secrets masked, as a prime's does; numbers stay as sent.
func TestGatewayPushedParameterTextIsScrubbed(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.PollInterval = 0 })
	h.waitBound()
	<-h.gw.Ready()
	devid := h.sim.Devids()[0]
	tok, err := h.client.AccessToken()
	if err != nil || len(tok) < 8 {
		t.Fatalf("token %q, %v", tok, err)
	}
	var keys []string
	for key := range h.sim.Params(devid) {
		if k, ok := store.ParseKey(key); ok && k.Chan == 'v' {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	text, number := keys[0], keys[1]
	h.sim.SetParam(devid, text, "note "+tok)
	h.sim.SetParam(devid, number, 47.5)
	h.waitUntil("both pushes stored", func() bool {
		v, _, _ := h.storeValue(devid, text)
		n, _, _ := h.storeValue(devid, number)
		return v != nil && strings.HasPrefix(fmt.Sprint(v), "note ") && n == 47.5
	})
	if v, src, _ := h.storeValue(devid, text); v != "note "+redact.Mask || src != store.SourceLive {
		t.Fatalf("stored %q from %v, want the token masked from the push", v, src)
	}
}

func TestGateway503StormNeverTakesModulesOffline(t *testing.T) {
	h := startHarness(t, nil)
	h.waitBound()
	h.waitFor("modules online", func(st *Status) bool { return allOnline(st) })
	id := h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 503})
	st := h.waitFor("failure streak", func(st *Status) bool { return st.PollFailureStreak >= 3 })
	if !allOnline(st) {
		t.Fatalf("a 503 storm took a module offline: %+v", st.Modules)
	}
	h.sim.Clear(id)
	h.waitFor("streak reset", func(st *Status) bool { return st.PollFailureStreak == 0 })
}

func TestGatewayDegradedRowTakesModuleOffline(t *testing.T) {
	h := startHarness(t, nil)
	h.waitBound()
	devid := h.sim.Devids()[1]
	h.waitFor("modules online", func(st *Status) bool { return allOnline(st) })
	h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultDegradedRow, Devid: devid})
	st := h.waitFor("degraded module offline", func(st *Status) bool { m, _ := moduleOf(st, devid); return !m.Online })
	m, _ := moduleOf(st, devid)
	if m.Outage.Reason != outage.SourceREST {
		t.Fatalf("reason = %q, want rest", m.Outage.Reason)
	}
	if other, _ := moduleOf(st, h.sim.Devids()[0]); !other.Online {
		t.Fatal("the healthy sibling went offline too")
	}
}

// The zombie (pushes muted, transport alive) climbs the ladder to quarantine;
// a live update clears everything.
func TestGatewayZombieClimbsLadderToQuarantineAndLiveUpdateClears(t *testing.T) {
	h := startHarness(t, func(c *Config) {
		c.PollInterval = 30 * time.Millisecond
		c.Ladder.StaleAfter = 60 * time.Millisecond
		c.Ladder.CooldownBase = 20 * time.Millisecond
		c.Ladder.CooldownMax = 40 * time.Millisecond
		c.Ladder.QuarantineFor = time.Hour
		c.Ladder.ModuleOnlineDebounce = 0
	})
	h.waitBound()
	devid := h.sim.Devids()[0]
	key := h.firstKey(devid)
	h.sim.SetParam(devid, key, 1.0)
	h.waitFor("push healthy", func(st *Status) bool { return st.Push.State == outage.PushHealthy })
	mute := h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})

	st := h.waitFor("quarantine", func(st *Status) bool { return st.QuarantineLeft > 0 })
	for _, step := range []ladder.Action{ladder.ZombiePrime, ladder.HardRestart, ladder.Recycle, ladder.Rebuild} {
		n := st.Ladder.Count(step, ladder.OK) + st.Ladder.Count(step, ladder.Failed)
		if n == 0 {
			t.Errorf("ladder reached quarantine without a %s", step)
		}
	}
	if st.Ladder.Count(ladder.EnterQuarantine, ladder.OK) == 0 {
		t.Errorf("quarantine not counted: %+v", st.Ladder)
	}
	logins := h.sim.Requests("POST /v1/auth/user")
	if logins < 2 {
		t.Errorf("recovery steps did not force fresh logins: %d logins", logins)
	}

	h.sim.Clear(mute)
	h.sim.SetParam(devid, key, 2.0)
	h.waitFor("quarantine cleared by a live update", func(st *Status) bool {
		return st.QuarantineLeft == 0 && st.Ladder.RebuildCount == 0 && st.Push.State == outage.PushHealthy
	})
	h.assertNothingLost()
}

func TestGatewayStopPublishesSessionDownWithReasonStop(t *testing.T) {
	h := startHarness(t, nil)
	h.waitBound()
	h.stop()
	st := h.gw.Status()
	if st.Session.Up || st.Connected {
		t.Fatalf("after stop: %+v", st.Session)
	}
	if st.Session.Outages[outage.ReasonStop] != 1 {
		t.Fatalf("stop not published: %+v", st.Session)
	}
	if st.Push.State != outage.PushUnhealthy {
		t.Fatalf("push after stop = %v, want unhealthy", st.Push.State)
	}
}

func TestGatewayWrongCredentialsFailStart(t *testing.T) {
	runStartExpectingAuthFailure(t, "wrong")
}

// runStartExpectingAuthFailure runs a gateway logging in with password
// against a one-module simulator carrying faults, and wants Run to fail
// with ErrStartAuth.
func runStartExpectingAuthFailure(t *testing.T, password string, faults ...cloudsim.Fault) {
	t.Helper()
	sim := cloudsim.New(cloudsim.Options{Modules: 1, ParamsPerModule: 5, Logger: testLogger()})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	for _, f := range faults {
		if _, err := sim.InjectFault(f); err != nil {
			t.Fatal(err)
		}
	}
	client, _ := cloudclient.New(cloudclient.Config{BaseURL: sim.URL(), AssetsURL: sim.URL(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: "demo@example.com", Password: password}), Logger: testLogger()})
	cfg := fastConfig()
	cfg.Client, cfg.Store, cfg.Logger = client, store.New(), testLogger()
	cfg.NewTransport = func() (transport.Transport, error) { return transport.New(transport.Config{BaseURL: sim.URL()}) }
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gw.Run(ctx); err == nil || !errorsIs(err, ErrStartAuth) {
		t.Fatalf("Run = %v, want ErrStartAuth", err)
	}
	// What the exporter showed until it gave up: why it never connected.
	if st := gw.Status(); st.Session.ConnectFailure != outage.ReasonLoginRejected || st.PollFailureStreak != 1 {
		t.Fatalf("connect failure %q, poll failure streak %d; want %q and the one failed start",
			st.Session.ConnectFailure, st.PollFailureStreak, outage.ReasonLoginRejected)
	}
}

// A connect that failed building its handshake headers never dialled: the
// headers carry the token, so the login it needed failed, and its reason is
// the login's. Failures of the dial itself keep the transport's reason.
func TestConnectFailureReasonOfTheLoginBeforeTheDial(t *testing.T) {
	login := func(status int) error {
		return fmt.Errorf("logging in: %w", &cloudclient.APIError{Endpoint: cloudapi.EndpointLogin, Status: status})
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"login refused", &transport.ConnectError{Phase: transport.PhaseHeaders, Reason: outage.ReasonConnectError, Err: login(401)}, outage.ReasonLoginRejected},
		{"login 503", &transport.ConnectError{Phase: transport.PhaseHeaders, Reason: outage.ReasonConnectError, Err: login(503)}, outage.ReasonLoginUnreachable},
		{"login timed out", &transport.ConnectError{Phase: transport.PhaseHeaders, Reason: outage.ReasonConnectError, Err: context.DeadlineExceeded}, outage.ReasonLoginUnreachable},
		{"handshake 503", &transport.ConnectError{Phase: transport.PhaseDial, Reason: outage.ReasonHandshake503, Err: fmt.Errorf("503")}, outage.ReasonHandshake503},
		{"namespace refused", &transport.ConnectError{Phase: transport.PhaseNamespace, Err: fmt.Errorf("refused")}, outage.ReasonConnectError},
		{"not a connect error", fmt.Errorf("boom"), outage.ReasonConnectError},
	} {
		if got := connectFailureReason(tc.err); got != tc.want {
			t.Errorf("%s: reason %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A login refused with 422 (the cloud's answer to a malformed or wrong
// credentials body) is a rejection like 401: the start fails at once, as
// logins_total counts it, instead of retrying as if the cloud were down.
func TestGatewayLoginRejected422FailsStart(t *testing.T) {
	runStartExpectingAuthFailure(t, cloudsim.DefaultPassword, cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Status: 422, Path: "POST /v1/auth/user"})
}

func moduleOf(st *Status, devid string) (ModuleStatus, bool) {
	for _, m := range st.Modules {
		if m.Devid == devid {
			return m, true
		}
	}
	return ModuleStatus{}, false
}

func allOnline(st *Status) bool {
	if len(st.Modules) == 0 {
		return false
	}
	for _, m := range st.Modules {
		if !m.Known || !m.Online {
			return false
		}
	}
	return true
}

// A failed prime after connect is owed: the next tick primes even while live
// updates keep push healthy (otherwise the store would hold only what live
// deltas happened to touch, and the exporter would never be ready).
func TestGatewayFailedFirstPrimeIsRetriedOnTheNextTick(t *testing.T) {
	h := startHarnessWithFaults(t, nil, []cloudsim.Fault{{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/parameters", Status: 503, Count: 4}})
	h.waitBound()
	devid := h.sim.Devids()[0]
	key := h.firstKey(devid)
	h.sim.SetParam(devid, key, 5.5)
	select {
	case <-h.gw.Ready():
	case <-time.After(10 * time.Second):
		t.Fatalf("never ready after the prime fault ended; prime requests: %d", h.sim.Requests("POST /v1/modules/parameters"))
	}
	h.assertNothingLost()
}

// One bad event never stops the others: a handler failure (here the OnLive
// hook) costs that event only.
func TestGatewayFailingEventHandlerDoesNotStopLaterEvents(t *testing.T) {
	var calls atomic.Int32
	h := startHarness(t, func(c *Config) {
		c.OnLive = func([]wire.ParamUpdate) {
			if calls.Add(1) == 1 {
				panic("hook failure")
			}
		}
	})
	h.waitBound()
	devid := h.sim.Devids()[0]
	key := h.firstKey(devid)
	h.sim.SetParam(devid, key, 1.5)
	h.waitUntil("the failing hook ran", func() bool { return calls.Load() >= 1 })
	h.sim.SetParam(devid, key, 2.5)
	h.waitUntil("the next event processed", func() bool {
		v, src, ok := h.storeValue(devid, key)
		return ok && v == 2.5 && src == store.SourceLive && calls.Load() >= 2
	})
	if st := h.gw.Status(); !st.Connected {
		t.Fatal("the session was lost over a handler failure")
	}
}
