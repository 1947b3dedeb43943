package realtime_test

import (
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
)

// silentChange changes a parameter at the simulated cloud without a live
// push reaching the exporter (its pushes muted meanwhile), as the field
// sees when a setting is changed on the controller: only event 22 tells.
func (s *scenario) silentChange(devid, key string, v float64) {
	s.t.Helper()
	mute := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, Devid: devid})
	s.sim.SetParam(devid, key, v)
	s.sim.Clear(mute)
}

// firstNumericValue is the first numeric value-channel parameter of a
// module and the value the simulator holds for it.
func (s *scenario) firstNumericValue(devid string) (string, float64) {
	s.t.Helper()
	key := s.vKey(devid, 0)
	v, _ := number(s.sim.Params(devid)[key])
	return key, v
}

// A silent change announced by event 22 reaches the metrics although the
// prime event 22 triggers is answered 502 once: the prime is retried with
// the prime backoff.
func TestEvent22PrimeRetriedThroughOne502(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	s.waitBoundAndPrimed()
	d := s.sim.Devids()[0]
	key, old := s.firstNumericValue(d)
	s.exportedIs(d, key, old)
	changed := old + 11
	s.silentChange(d, key, changed)
	if v, ok := s.exported(d, key); !ok || v != old {
		t.Fatalf("the change was not silent: %s exported as %v (present %v) before event 22", key, v, ok)
	}

	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/parameters", Status: 502, Count: 1})
	s.sim.EmitMemoryUpdated(d)
	s.exportedIs(d, key, changed)
	if f := s.sim.Faults(); len(f) != 0 {
		t.Fatalf("the 502 was never served: faults still active %v", f)
	}
	if !s.is(0, "bragerone_prime_failures_total", "trigger", realtime.PrimeMemoryUpdated) {
		v, ok := s.metric("bragerone_prime_failures_total", "trigger", realtime.PrimeMemoryUpdated)
		t.Fatalf("prime failures (memory_updated) = %v (present %v); one 502 absorbed by the retry is not a failed prime", v, ok)
	}
}

// When every retry of the event-22 prime fails, the prime is owed: it is
// counted as failed, and the next tick primes the module again, so the
// announced change still arrives. With --poll.interval=0 the supervisor
// tick pays it.
func TestEvent22PrimeOwedUntilPaid(t *testing.T) {
	for _, tc := range []struct {
		name string
		poll time.Duration
	}{{"poll tick", 30 * time.Millisecond}, {"no poll", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			attempts := 0
			s := startScenario(t, scenarioSetup{
				client: func(c *cloudclient.Config) { attempts = 1 + len(c.PrimeBackoff) },
				gw:     func(c *realtime.Config) { c.PollInterval = tc.poll },
			})
			s.waitBoundAndPrimed()
			d := s.sim.Devids()[1]
			key, old := s.firstNumericValue(d)
			s.exportedIs(d, key, old)
			changed := old - 7
			s.silentChange(d, key, changed)

			// Every attempt of the event-22 prime is answered 502.
			s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/parameters", Status: 502, Count: attempts})
			s.sim.EmitMemoryUpdated(d)
			s.eventually("the failed prime counted", func() bool {
				return s.is(1, "bragerone_prime_failures_total", "trigger", realtime.PrimeMemoryUpdated)
			})
			s.exportedIs(d, key, changed)
			if !s.is(1, "bragerone_session_up") {
				up, ok := s.metric("bragerone_session_up")
				t.Fatalf("session_up = %v (present %v)", up, ok)
			}
		})
	}
}

// Through a 503 storm on the handshake the outage keeps the reason the
// session ended with, and the failed reconnects' reason is published
// beside it, until a reconnect succeeds.
func TestReconnectFailureReasonBesideOutageReason(t *testing.T) {
	// The supervisor is slowed down so that it cannot find the closing
	// session dead before its disconnect arrives (that outage would be
	// supervisor_stale, a race this test is not about).
	s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) { c.SupervisorInterval = time.Minute }})
	s.waitBoundAndPrimed()
	storm := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHandshake503})
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})

	down := func() bool {
		_, outage := s.metric("bragerone_session_outage_seconds", "reason", "disconnect")
		return outage && s.is(1, "bragerone_session_reconnect_failure_reason", "reason", "handshake_503")
	}
	s.eventually("down for disconnect, reconnects failing with handshake_503", down)
	// More failed reconnects change neither.
	handshakes := s.sim.Requests("GET /socket.io/")
	s.eventually("three more refused handshakes", func() bool { return s.sim.Requests("GET /socket.io/") >= handshakes+3 })
	if !down() {
		t.Fatalf("after more failed reconnects: outage %v, reconnect failure %v", s.labelSets("bragerone_session_outage_seconds"), s.labelSets("bragerone_session_reconnect_failure_reason"))
	}
	if got := s.labelSets("bragerone_session_reconnect_failure_reason"); len(got) != 1 {
		t.Fatalf("reconnect failure series = %v, want exactly one", got)
	}

	s.sim.Clear(storm)
	s.eventually("session up again", func() bool { return s.is(1, "bragerone_session_up") })
	if got := s.labelSets("bragerone_session_reconnect_failure_reason"); len(got) != 0 {
		t.Fatalf("reconnect failure still published while up: %v", got)
	}
	if _, ok := s.metric("bragerone_session_last_outage_seconds", "reason", "disconnect"); !ok {
		t.Fatalf("last outage = %v, want reason disconnect", s.labelSets("bragerone_session_last_outage_seconds"))
	}
}

// With no module-list poll nothing else calls the cloud while the session is
// healthy; the access token is still renewed ahead of its expiry (minus the
// client's refresh leeway), so it never runs out.
func TestTokenRenewedAheadOfExpiryWithoutPolling(t *testing.T) {
	const ttl, leeway = 4 * time.Second, 2 * time.Second
	s := startScenario(t, scenarioSetup{
		sim:    func(o *cloudsim.Options) { o.TokenTTL = ttl },
		client: func(c *cloudclient.Config) { c.RefreshLeeway = leeway },
		gw:     func(c *realtime.Config) { c.PollInterval = 0 },
	})
	s.waitBoundAndPrimed()
	logins := s.sim.Requests("POST /v1/auth/user")
	first, ok := s.metric("bragerone_token_expiry_timestamp_seconds")
	if !ok {
		t.Fatal("no token expiry exported")
	}
	s.eventuallyWithin("two renewals", 4*ttl, func() bool {
		if exp, ok := s.metric("bragerone_token_expiry_timestamp_seconds"); !ok || exp <= float64(time.Now().UnixNano())/1e9 {
			t.Fatalf("the token ran out: expiry %v (present %v)", exp, ok)
		}
		return s.sim.Requests("POST /v1/auth/user") >= logins+2
	})
	if exp, ok := s.metric("bragerone_token_expiry_timestamp_seconds"); !ok || exp <= first {
		t.Fatalf("token expiry %v (present %v) did not move past the first %v", exp, ok, first)
	}
	if n := s.sim.Requests("GET /v1/modules"); n > 1 {
		t.Fatalf("%d module-list requests with polling off: the renewal must not depend on them", n)
	}
	// Renewals are paced by the token, not a loop.
	if n := s.sim.Requests("POST /v1/auth/user") - logins; n > 4 {
		t.Fatalf("%d logins for two renewals", n)
	}
	if !s.is(1, "bragerone_session_up") {
		up, ok := s.metric("bragerone_session_up")
		t.Fatalf("session_up = %v (present %v)", up, ok)
	}
}
