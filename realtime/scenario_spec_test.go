package realtime_test

import (
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
)

// Faults of the interface beyond the field failures
// (docs/spec.md I-3.1e, I-5.5, I-7b): 503/408 storms on each of handshake,
// module list, prime and bind; a token revoked at the cloud; event 22 for a
// module not watched; modules leaving and joining the account; and the reason
// of a module outage.

func (s *scenario) modulesOnline() bool {
	for _, d := range s.sim.Devids() {
		if !s.is(1, "bragerone_module_online", "devid", d) {
			return false
		}
	}
	return true
}

// The Socket.IO handshake answered 503 with an HTML page: the session stays
// down, the modules keep their state, REST keeps the values current, and
// the handshake is retried until it passes.
func TestSpecHandshake503Storm(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	old := s.waitUp()
	h503 := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHandshake503})
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	s.eventually("session down", func() bool { return s.is(0, "bragerone_session_up") })
	attempts := s.sim.Requests("GET /socket.io/")
	d := s.sim.Devids()[0]
	key := s.vKey(d, 0)
	s.sim.SetParam(d, key, 503)
	s.holdsWhile(s.modulesOnline, "modules online while the handshake fails", func() bool {
		v, ok := s.exported(d, key)
		return ok && v == 503 && s.sim.Requests("GET /socket.io/") >= attempts+2
	})
	if !s.is(0, "bragerone_session_up") {
		t.Fatalf("session shown up through a 503 handshake:%s", s.dump())
	}
	s.sim.Clear(h503)
	s.waitNewBound(old)
	s.nudgeLive(d, s.vKey(d, 1), 1)
	s.nothingLost()
}

// GET /v1/modules in a storm of 503 pages, 408 dispatch timeouts and read
// timeouts: module state kept, only the failure streak grows.
func TestSpecModuleList503Storm(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	s.waitUp()
	for _, f := range []cloudsim.Fault{
		{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 503},
		{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 504},
		{Kind: cloudsim.FaultDispatchTimeout, Path: "GET /v1/modules"},
	} {
		id := s.sim.Inject(f)
		s.holdsWhile(func() bool { return s.modulesOnline() && s.is(1, "bragerone_session_up") },
			"modules and session untouched by a module-list storm", func() bool {
				v, _ := s.metric("bragerone_module_poll_failure_streak")
				return v >= 3
			})
		s.sim.Clear(id)
		s.eventually("streak reset", func() bool { return s.is(0, "bragerone_module_poll_failure_streak") })
	}
	if s.answers("GET /v1/modules", 503) == 0 || s.answers("GET /v1/modules", 408) == 0 {
		t.Fatal("the storm did not reach the client")
	}
	s.nothingLost()
}

// The REST prime answered with errors while the session is down: it is
// retried on every poll, and the values arrive once it passes, still down.
func TestSpecPrimeErrorsWhileDown(t *testing.T) {
	for name, f := range map[string]cloudsim.Fault{
		"503":          {Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/parameters", Status: 503},
		"408 dispatch": {Kind: cloudsim.FaultDispatchTimeout, Path: "POST /v1/modules/parameters"},
		"401":          {Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/parameters", Status: 401},
	} {
		t.Run(name, func(t *testing.T) {
			s := startScenario(t, scenarioSetup{})
			s.waitUp()
			up := s.goDown()
			id := s.sim.Inject(f)
			d := s.sim.Devids()[1]
			key := s.vKey(d, 0)
			s.sim.SetParam(d, key, 408)
			polls := s.sim.Requests("GET /v1/modules")
			failed := s.sum("bragerone_prime_failures_total", "trigger", realtime.PrimeTick)
			// The polls go on, and every tick primes again and fails. Each
			// tick's prime runs in a worker beside the next poll, so the
			// test waits for both counts rather than compare them at the
			// instant of the third poll.
			s.eventually("three more polls and three failed tick primes", func() bool {
				return s.sim.Requests("GET /v1/modules") >= polls+3 &&
					s.sum("bragerone_prime_failures_total", "trigger", realtime.PrimeTick) >= failed+3
			})
			if v, ok := s.exported(d, key); ok && v == 408 {
				t.Fatal("the value arrived although every prime failed")
			}
			s.sim.Clear(id)
			s.exportedIs(d, key, 408)
			if !s.is(0, "bragerone_session_up") || !s.modulesOnline() {
				t.Fatalf("want session down and modules online:%s", s.dump())
			}
			up()
			s.waitBound()
			s.nothingLost()
		})
	}
}

// modules/connect answered 503: the new session is not bound; the bind is
// retried (each time with a prime) until the cloud binds it.
func TestSpecConnect503Storm(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	old := s.waitUp()
	connects := s.sim.Requests("POST /v1/modules/connect")
	id := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/connect", Status: 503})
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	s.eventually("the bind refused and retried", func() bool {
		st := s.gw.Status()
		return st.Connected && st.NamespaceSID != old && s.sim.Requests("POST /v1/modules/connect") >= connects+3
	})
	if !s.modulesOnline() || !s.is(1, "bragerone_session_up") {
		t.Fatalf("a bind storm changed module or session state:%s", s.dump())
	}
	d := s.sim.Devids()[0]
	key := s.vKey(d, 0)
	s.sim.SetParam(d, key, 5031) // not pushed: nothing is bound
	s.exportedIs(d, key, 5031)   // the retries prime
	s.sim.Clear(id)
	s.waitBound()
	s.nudgeLive(d, s.vKey(d, 1), 1)
	s.nothingLost()
}

// Every token revoked at the cloud: REST answers 401, the client logs in
// again and retries; the module poll never fails for it, and a reconnect
// works with the new token.
func TestSpecTokenRevokedServerSide(t *testing.T) {
	// A tick reads the alarms and the history beside the module list, and
	// whichever request meets a revoked token first logs in again for all:
	// a module list asked for after that login carries the new token. So
	// the tokens are revoked as a module-list request leaves, with the
	// token it carries.
	var s *scenario
	var revokeAtListing atomic.Bool
	s = startScenario(t, scenarioSetup{client: func(c *cloudclient.Config) {
		next := c.HTTPClient.Transport
		c.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && r.URL.Path == "/v1/modules" && revokeAtListing.CompareAndSwap(true, false) {
				s.sim.RevokeTokens()
			}
			return next.RoundTrip(r)
		})}
	}})
	old := s.waitUp()
	logins := s.sim.Requests("POST /v1/auth/user")
	polls := s.sim.Requests("GET /v1/modules")
	revokeAtListing.Store(true)
	s.holdsWhile(func() bool { return s.is(0, "bragerone_module_poll_failure_streak") && s.modulesOnline() },
		"polls keep succeeding across the revocation", func() bool {
			return s.answers("GET /v1/modules", 401) > 0 && s.sim.Requests("GET /v1/modules") >= polls+3
		})
	if s.sim.Requests("POST /v1/auth/user") <= logins || s.answers("GET /v1/modules", 401) == 0 {
		t.Fatal("the revoked token was never rejected and replaced")
	}
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	s.waitNewBound(old)
	d := s.sim.Devids()[1]
	s.nudgeLive(d, s.vKey(d, 0), 1)
	s.nothingLost()
}

// A module that leaves the account stops being exported after
// ForgetMissingAfter; event 22 for it (a module no longer watched) is
// ignored; when it comes back it is watched, bound and primed again.
func TestSpecModuleLeavesAndJoinsAccount(t *testing.T) {
	s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) { c.ForgetMissingAfter = 150 * time.Millisecond }})
	s.waitUp()
	a, b := s.sim.Devids()[0], s.sim.Devids()[1]
	connects := s.sim.Requests("POST /v1/modules/connect")
	gone := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: b})
	s.eventually("shown offline, reason derived, while it may come back", func() bool {
		_, down := s.metric("bragerone_module_outage_seconds", "devid", b, "reason", "derived")
		return down
	})
	s.eventually("no longer exported", func() bool {
		_, online := s.metric("bragerone_module_online", "devid", b)
		_, info := s.metric("bragerone_module_info", "devid", b)
		_, param := s.metric("bragerone_parameter_value", "devid", b)
		return !online && !info && !param
	})
	if !s.is(1, "bragerone_module_online", "devid", a) {
		t.Fatalf("the remaining module is not online:%s", s.dump())
	}
	// Dropping b rebinds the session to a alone, with a prime.
	s.requestsAfter("POST /v1/modules/connect", connects)
	aloneFrom := 0
	s.eventually("a prime of a alone", func() bool {
		for i, p := range s.primes() {
			if slices.Equal(p, []string{a}) {
				aloneFrom = i
				return true
			}
		}
		return false
	})
	// The session at the cloud is still bound to b: its event 22 reaches us
	// and must not prime it; a's event primes a.
	mark := len(s.primes())
	s.sim.EmitMemoryUpdated(b)
	s.sim.EmitMemoryUpdated(a)
	s.eventually("a prime of a after its event 22", func() bool {
		return slices.ContainsFunc(s.primes()[mark:], func(p []string) bool { return slices.Equal(p, []string{a}) })
	})
	// Give a prime of b, had one been started before a's, time to arrive.
	polls := s.sim.Requests("GET /v1/modules")
	s.requestsAfter("GET /v1/modules", polls+1)
	for _, p := range s.primes()[aloneFrom:] {
		if slices.Contains(p, b) {
			t.Fatalf("a module no longer watched was primed after it was dropped: %v", s.primes()[aloneFrom:])
		}
	}
	if _, param := s.metric("bragerone_parameter_value", "devid", b); param {
		t.Fatal("event 22 of a foreign module brought its values back")
	}

	s.sim.Clear(gone)
	s.eventually("exported again", func() bool { return s.is(1, "bragerone_module_online", "devid", b) })
	s.waitBound()
	s.nudgeLive(b, s.vKey(b, 0), 1)
	s.nothingLost()
}

// bragerone_module_outage_seconds carries the observation that took the
// module offline: rest (the list said connectedAt 0), ws (a connection-status
// event) or derived (missing from a usable list).
func TestSpecModuleOutageReason(t *testing.T) {
	t.Run("rest", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{})
		s.waitUp()
		b := s.sim.Devids()[1]
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, Devid: b}) // the list alone tells
		s.sim.SetModuleOnline(b, false)
		s.eventually("outage reason rest", func() bool {
			return s.labelOf("bragerone_module_outage_seconds", "reason", "devid", b) == "rest"
		})
		s.sim.ClearAll()
		s.sim.SetModuleOnline(b, true)
		s.eventually("last outage reason rest", func() bool {
			return s.labelOf("bragerone_module_last_outage_seconds", "reason", "devid", b) == "rest" &&
				s.is(1, "bragerone_module_outages_total", "devid", b, "reason", "rest")
		})
	})
	t.Run("ws", func(t *testing.T) {
		// No polls: only the event can tell.
		s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) { c.PollInterval = 0 }})
		s.waitUp()
		b := s.sim.Devids()[1]
		s.sim.SetModuleOnline(b, false)
		s.eventually("outage reason ws", func() bool {
			return s.is(0, "bragerone_module_online", "devid", b) &&
				s.labelOf("bragerone_module_outage_seconds", "reason", "devid", b) == "ws"
		})
		s.sim.SetModuleOnline(b, true)
		s.eventually("back online, last reason ws", func() bool {
			return s.is(1, "bragerone_module_online", "devid", b) &&
				s.labelOf("bragerone_module_last_outage_seconds", "reason", "devid", b) == "ws"
		})
	})
	t.Run("derived", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{})
		s.waitUp()
		b := s.sim.Devids()[1]
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: b})
		s.eventually("outage reason derived", func() bool {
			return s.labelOf("bragerone_module_outage_seconds", "reason", "devid", b) == "derived"
		})
	})
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
