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
func (r *rig) silentChange(devid, key string, v float64) {
	r.t.Helper()
	mute := r.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, Devid: devid})
	r.sim.SetParam(devid, key, v)
	r.sim.Clear(mute)
}

// A silent change announced by event 22 reaches the metrics although the
// prime event 22 triggers is answered 502 once: the prime is retried with
// the prime backoff.
func TestEvent22PrimeRetriedThroughOne502(t *testing.T) {
	r := startRig(t, rigSetup{})
	r.waitBound()
	d := r.sim.Devids()[0]
	key, old := r.numericValueKey(d)
	r.until("the old value exported", rigDeadline, func() bool { v, ok := r.exported(d, key); return ok && v == old })
	changed := old + 11
	r.silentChange(d, key, changed)
	if v, _ := r.exported(d, key); v != old {
		t.Fatalf("the change was not silent: %s exported as %v before event 22", key, v)
	}

	r.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/parameters", Status: 502, Count: 1})
	r.sim.EmitMemoryUpdated(d)
	r.until("the new value exported after event 22", rigDeadline, func() bool {
		v, ok := r.exported(d, key)
		return ok && v == changed
	})
	if f := r.sim.Faults(); len(f) != 0 {
		t.Fatalf("the 502 was never served: faults still active %v", f)
	}
	if v, _ := r.metric("bragerone_prime_failures_total", "trigger", realtime.PrimeMemoryUpdated); v != 0 {
		t.Fatalf("prime failures (memory_updated) = %v; one 502 absorbed by the retry is not a failed prime", v)
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
			r := startRig(t, rigSetup{
				client: func(c *cloudclient.Config) { attempts = 1 + len(c.PrimeBackoff) },
				gw:     func(c *realtime.Config) { c.PollInterval = tc.poll },
			})
			r.waitBound()
			d := r.sim.Devids()[1]
			key, old := r.numericValueKey(d)
			r.until("the old value exported", rigDeadline, func() bool { v, ok := r.exported(d, key); return ok && v == old })
			changed := old - 7
			r.silentChange(d, key, changed)

			// Every attempt of the event-22 prime is answered 502.
			r.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/parameters", Status: 502, Count: attempts})
			r.sim.EmitMemoryUpdated(d)
			r.until("the failed prime counted", rigDeadline, func() bool {
				v, _ := r.metric("bragerone_prime_failures_total", "trigger", realtime.PrimeMemoryUpdated)
				return v == 1
			})
			r.until("the new value exported by the owed prime", rigDeadline, func() bool {
				v, ok := r.exported(d, key)
				return ok && v == changed
			})
			if up, _ := r.metric("bragerone_session_up"); up != 1 {
				t.Fatalf("session_up = %v", up)
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
	r := startRig(t, rigSetup{gw: func(c *realtime.Config) { c.SupervisorInterval = time.Minute }})
	r.waitBound()
	storm := r.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHandshake503})
	r.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})

	down := func() bool {
		_, outage := r.metric("bragerone_session_outage_seconds", "reason", "disconnect")
		v, _ := r.metric("bragerone_session_reconnect_failure_reason", "reason", "handshake_503")
		return outage && v == 1
	}
	r.until("down for disconnect, reconnects failing with handshake_503", rigDeadline, down)
	// More failed reconnects change neither.
	handshakes := r.sim.Requests("GET /socket.io/")
	r.until("three more refused handshakes", rigDeadline, func() bool { return r.sim.Requests("GET /socket.io/") >= handshakes+3 })
	if !down() {
		t.Fatalf("after more failed reconnects: outage %v, reconnect failure %v", r.labels("bragerone_session_outage_seconds"), r.labels("bragerone_session_reconnect_failure_reason"))
	}
	if got := r.labels("bragerone_session_reconnect_failure_reason"); len(got) != 1 {
		t.Fatalf("reconnect failure series = %v, want exactly one", got)
	}

	r.sim.Clear(storm)
	r.until("session up again", rigDeadline, func() bool { v, _ := r.metric("bragerone_session_up"); return v == 1 })
	if got := r.labels("bragerone_session_reconnect_failure_reason"); len(got) != 0 {
		t.Fatalf("reconnect failure still published while up: %v", got)
	}
	if _, ok := r.metric("bragerone_session_last_outage_seconds", "reason", "disconnect"); !ok {
		t.Fatalf("last outage = %v, want reason disconnect", r.labels("bragerone_session_last_outage_seconds"))
	}
}

// With no module-list poll nothing else calls the cloud while the session is
// healthy; the access token is still renewed ahead of its expiry (minus the
// client's refresh leeway), so it never runs out.
func TestTokenRenewedAheadOfExpiryWithoutPolling(t *testing.T) {
	const ttl, leeway = 4 * time.Second, 2 * time.Second
	r := startRig(t, rigSetup{
		sim:    func(o *cloudsim.Options) { o.TokenTTL = ttl },
		client: func(c *cloudclient.Config) { c.RefreshLeeway = leeway },
		gw:     func(c *realtime.Config) { c.PollInterval = 0 },
	})
	r.waitBound()
	logins := r.sim.Requests("POST /v1/auth/user")
	first, ok := r.metric("bragerone_token_expiry_timestamp_seconds")
	if !ok {
		t.Fatal("no token expiry exported")
	}
	r.until("two renewals", 4*ttl, func() bool {
		if exp, ok := r.metric("bragerone_token_expiry_timestamp_seconds"); !ok || exp <= float64(time.Now().UnixNano())/1e9 {
			t.Fatalf("the token ran out: expiry %v", exp)
		}
		return r.sim.Requests("POST /v1/auth/user") >= logins+2
	})
	if exp, _ := r.metric("bragerone_token_expiry_timestamp_seconds"); exp <= first {
		t.Fatalf("token expiry %v did not move past the first %v", exp, first)
	}
	if n := r.sim.Requests("GET /v1/modules"); n > 1 {
		t.Fatalf("%d module-list requests with polling off: the renewal must not depend on them", n)
	}
	// Renewals are paced by the token, not a loop.
	if n := r.sim.Requests("POST /v1/auth/user") - logins; n > 4 {
		t.Fatalf("%d logins for two renewals", n)
	}
	if up, _ := r.metric("bragerone_session_up"); up != 1 {
		t.Fatalf("session_up = %v", up)
	}
}
