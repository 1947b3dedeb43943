package realtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// One scenario per field failure of docs/spec.md W-7.1 to W-7.21. Each switches
// the fault on at the simulated cloud, checks what the exporter shows while
// it lasts and after recovery, and checks that nothing is lost: every value
// the cloud holds, including those changed during the fault, is the value
// the exporter exposes.

// nudgeLive changes a parameter at the cloud until the exporter has stored
// one of the changes as a live (pushed) update: pushes made while no session
// is bound are not delivered, by design of the cloud.
func (s *scenario) nudgeLive(devid, key string, base float64) float64 {
	s.t.Helper()
	k, _ := store.ParseKey(key)
	v := base
	s.sim.SetParam(devid, key, v)
	deadline := time.Now().Add(scenarioDeadline)
	next := time.Now().Add(60 * time.Millisecond)
	for {
		if e, ok := s.store.Get(devid, k); ok && e.Source.IsLive() && e.Value == v {
			return v
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no live update of %s %s arrived; the exporter shows:%s", devid, key, s.dump())
		}
		if time.Now().After(next) {
			v++
			s.sim.SetParam(devid, key, v)
			next = time.Now().Add(60 * time.Millisecond)
		}
		time.Sleep(3 * time.Millisecond)
	}
}

// keepPushing changes a parameter at the cloud every 20 ms, as a working
// plant does, until the returned stop is called: push health holds only
// while live updates keep coming (with the zombie ladder, for 80 ms).
func (s *scenario) keepPushing(devid, key string, from float64) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for v := from; ; v++ {
			s.sim.SetParam(devid, key, v)
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(quit); <-done }) }
	s.t.Cleanup(stop)
	return stop
}

// goDown takes the session down and keeps it down: handshakes stall and the
// current transport is closed.
func (s *scenario) goDown() (clear func()) {
	s.t.Helper()
	stall := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultStallHandshake})
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	s.eventually("session shown down", func() bool { return s.is(0, "bragerone_session_up") })
	return func() { s.sim.Clear(stall) }
}

// rawListing fetches GET /v1/modules as the cloud answers it, with a login
// of its own.
func rawListing(t *testing.T, sim *cloudsim.Cloud) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": cloudsim.DefaultEmail, "password": cloudsim.DefaultPassword})
	resp, err := http.Post(sim.URL()+"/v1/auth/user", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var login struct {
		AccessToken string `json:"accessToken"`
	}
	err = json.NewDecoder(resp.Body).Decode(&login)
	resp.Body.Close()
	if err != nil || login.AccessToken == "" {
		t.Fatalf("login for the raw listing: %v", err)
	}
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/modules?page=1&limit=999&group_id=%d", sim.URL(), sim.ObjectID()), nil)
	req.Header.Set("Authorization", "Bearer "+login.AccessToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("raw listing: %d %v", resp.StatusCode, err)
	}
	return string(data)
}

// docs/spec.md W-7.1: the transport stays up, pings flow, pushes stop.
func TestScenario01ZombieSocket(t *testing.T) {
	s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) {
		zombieLadder(c)
		// Zombie primes far enough apart that the zombie is seen before
		// the hard restart (after which push health is unknown again).
		c.PollInterval = 60 * time.Millisecond
	}})
	s.waitUp()
	d := s.sim.Devids()[0]
	key, muted := s.vKey(d, 0), s.vKey(d, 1)
	pushing := s.keepPushing(d, key, 100)
	s.eventually("push healthy", func() bool { return s.is(1, "bragerone_push_healthy") })
	pushing()
	logins := s.sim.Requests("POST /v1/auth/user")

	mute := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
	s.sim.SetParam(d, muted, 202) // swallowed: only a REST prime can bring it
	s.eventually("the zombie shown: session up, push unhealthy with its stale age", func() bool {
		_, stale := s.metric("bragerone_live_stale_seconds")
		return s.is(1, "bragerone_session_up") && s.is(0, "bragerone_push_healthy") && stale
	})
	s.eventually("two zombie primes, then a hard restart", func() bool {
		return s.recoveries("zombie_prime") >= 2 && s.recoveries("hard_restart") >= 1
	})
	if got := s.sim.Requests("POST /v1/auth/user"); got <= logins {
		t.Fatalf("the hard restart did not log in afresh: %d logins before, %d after", logins, got)
	}
	s.exportedIs(d, muted, 202)

	s.sim.Clear(mute)
	pushing = s.keepPushing(d, key, 300)
	s.eventually("push healthy, ladder reset, no zombie streak left", func() bool {
		st := s.gw.Status()
		return s.is(1, "bragerone_push_healthy") && s.is(0, "bragerone_recovery_quarantined") &&
			s.is(0, "bragerone_recovery_cooldown_seconds") && s.absent("bragerone_live_stale_seconds") &&
			st.Ladder.PrimeStreak == 0 && st.Ladder.HardRestartStreak == 0
	})
	pushing()
	s.nothingLost()
}

// docs/spec.md W-7.2: the TCP connection dies without a close frame (and, here, the
// handshakes of the reconnects stall for a while).
func TestScenario02EngineIOAbortWithoutDisconnect(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	sid := s.waitUp()
	d := s.sim.Devids()[1]
	stall := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultStallHandshake})
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAbortTransport})

	// The library reports the abort (its transport error): the reason is
	// the classified one, not the supervisor's, whatever tick comes first.
	s.eventually("session down, reason eio_close, push unhealthy", func() bool {
		return s.is(0, "bragerone_session_up") && s.sessionOutageReason() != "" && s.is(0, "bragerone_push_healthy")
	})
	reason := s.sessionOutageReason()
	if reason != "eio_close" {
		t.Fatalf("outage reason %q, want eio_close:%s", reason, s.dump())
	}
	for _, dv := range s.sim.Devids() {
		if !s.is(1, "bragerone_module_online", "devid", dv) {
			t.Fatalf("losing our session took module %s offline:%s", dv, s.dump())
		}
	}
	// While down, the REST primes keep the values current.
	key := s.vKey(d, 0)
	s.sim.SetParam(d, key, 4242)
	s.exportedIs(d, key, 4242)
	if !s.is(0, "bragerone_session_up") {
		t.Fatalf("the value should have come by REST while the session was down:%s", s.dump())
	}

	s.sim.Clear(stall)
	s.waitNewBound(sid)
	s.eventually("session restored with the outage's reason", func() bool {
		return s.is(1, "bragerone_session_up") && s.labelOf("bragerone_session_last_outage_seconds", "reason") == reason
	})
	if n := s.sum("bragerone_session_outages_total"); n != 1 {
		t.Fatalf("one abort published %g outages (duplicate disconnects must be no-ops):%s", n, s.dump())
	}
	s.nudgeLive(d, s.vKey(d, 1), 10)
	s.nothingLost()
}

// shortHeartbeat makes a silent connection's Engine.IO heartbeat run out in
// 0.6 s (the client gives up after pingInterval + pingTimeout without a
// ping), with room for a loaded machine on a live one.
func shortHeartbeat(o *cloudsim.Options) {
	o.PingInterval = 100 * time.Millisecond
	o.PingTimeout = 500 * time.Millisecond
}

// docs/spec.md W-7.2, the session dead without a disconnect: the connection goes silent
// (nothing arrives, the cloud's close of it stalls) while the client still
// believes it is connected.
func TestScenario02SessionDeadWithoutDisconnect(t *testing.T) {
	// This client library notices the silence itself once its heartbeat
	// runs out, and reports the end: reason server_stop, and a new
	// connection while the stalled one is still held open by the cloud.
	t.Run("the heartbeat runs out", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{sim: shortHeartbeat})
		sid := s.waitUp()
		old, _ := s.simSession(sid)
		d := s.sim.Devids()[1]
		stall := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultStallTransport})
		key := s.vKey(d, 0)
		s.sim.SetParam(d, key, 7171) // pushed into the black hole
		s.eventually("an outage with reason server_stop", func() bool {
			return s.is(1, "bragerone_session_outages_total", "reason", "server_stop")
		})
		now := s.waitNewBound(sid)
		if ss, _ := s.simSession(now); ss.EngineSID == old.EngineSID || ss.RemoteAddr == old.RemoteAddr {
			t.Fatalf("the new session reuses the stalled connection: %+v, stalled %+v", ss, old)
		}
		s.exportedIs(d, key, 7171)
		s.sim.Clear(stall)
		s.nudgeLive(d, s.vKey(d, 1), 1)
		if n := s.sum("bragerone_session_outages_total"); n != 1 {
			t.Fatalf("%g outages published, want 1:%s", n, s.dump())
		}
		s.nothingLost()
	})
	// The field failure proper: the library has closed the session but its
	// end never reaches the gateway, and tearing it down hangs. Only the
	// supervisor can find it: reason supervisor_stale, a new client on a
	// new connection without waiting for the hung teardown, nothing lost.
	t.Run("its end is never reported", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{sim: shortHeartbeat, seam: true})
		sid := s.waitUp()
		old, _ := s.simSession(sid)
		dead := s.seamOf(sid)
		dead.arm(seamMode{holdEvent: true, holdDone: true, hangDisconnect: true})
		d := s.sim.Devids()[1]
		stall := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultStallTransport})
		key := s.vKey(d, 0)
		s.sim.SetParam(d, key, 7272) // pushed into the black hole
		s.eventually("an outage with reason supervisor_stale", func() bool {
			return s.is(1, "bragerone_session_outages_total", "reason", "supervisor_stale")
		})
		now := s.waitNewBound(sid)
		dead.mu.Lock()
		libReason, begun, returned := dead.reason, dead.disconnects, dead.disconnected
		dead.mu.Unlock()
		if libReason != "server_stop" {
			t.Fatalf("the library ended the stalled session with %q, want server_stop (its heartbeat)", libReason)
		}
		if begun == 0 || returned != 0 {
			t.Fatalf("teardown of the dead session: %d begun, %d returned; want it begun and still hanging", begun, returned)
		}
		if ss, _ := s.simSession(now); ss.EngineSID == old.EngineSID || ss.RemoteAddr == old.RemoteAddr {
			t.Fatalf("the new session reuses the dead client's connection: %+v, dead %+v", ss, old)
		}
		s.eventually("session restored with reason supervisor_stale", func() bool {
			return s.is(1, "bragerone_session_up") && s.labelOf("bragerone_session_last_outage_seconds", "reason") == "supervisor_stale"
		})
		s.exportedIs(d, key, 7272)
		s.sim.Clear(stall)
		s.nudgeLive(d, s.vKey(d, 1), 1)
		if n := s.sum("bragerone_session_outages_total"); n != 1 {
			t.Fatalf("%g outages published, want 1:%s", n, s.dump())
		}
		s.nothingLost()
	})
}

// A session whose end the library has reported, or reports a moment after
// the supervisor looked, is not found dead by the supervisor: its
// disconnect, with the classified reason, decides the outage.
func TestScenario02ReportedEndIsNotSupervisorStale(t *testing.T) {
	for name, m := range map[string]seamMode{
		// Done is closed, the disconnect event still on its way for three looks.
		"disconnect event late": {holdEvent: true, releaseAtLook: 3},
		// Closed at the library, the end reported only after one look.
		"end reported after a look": {holdEvent: true, holdDone: true, releaseAtLook: 2},
		// Closed at the library, the end reported many health ticks later
		// (a busy machine), still within the grace.
		"end reported after many health ticks": {holdEvent: true, holdDone: true, releaseAfter: 300 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			s := startScenario(t, scenarioSetup{seam: true})
			sid := s.waitUp()
			ss := s.seamOf(sid)
			ss.arm(m)
			s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
			s.waitNewBound(sid)
			ss.mu.Lock()
			reason, looks := ss.reason, ss.looks
			ss.mu.Unlock()
			if looks < m.releaseAtLook {
				t.Fatalf("the session was replaced after %d looks at its Done, before its end was reported (held for %d):%s", looks, m.releaseAtLook, s.dump())
			}
			s.eventually("the outage published with the reported reason", func() bool {
				return s.is(1, "bragerone_session_outages_total", "reason", reason)
			})
			if v, _ := s.metric("bragerone_session_outages_total", "reason", "supervisor_stale"); v != 0 || reason == "supervisor_stale" {
				t.Fatalf("a reported end (%q) published as supervisor_stale:%s", reason, s.dump())
			}
			s.nothingLost()
		})
	}
}

// docs/spec.md W-7.3: Engine.IO opens but the /ws join is never acknowledged; the connect
// times out, the leftover transport is reset and the next attempt is clean.
func TestScenario03HalfOpenAfterConnectTimeout(t *testing.T) {
	t.Run("during a run", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{connectTimeout: 150 * time.Millisecond})
		sid := s.waitUp()
		noAck := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultNoNamespaceAck})
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
		s.eventually("session down", func() bool { return s.is(0, "bragerone_session_up") })
		attempts := s.sim.Requests("GET /socket.io/")
		s.requestsAfter("GET /socket.io/", attempts+1) // timed out attempts are retried
		d := s.sim.Devids()[0]
		key := s.vKey(d, 0)
		s.sim.SetParam(d, key, 31)
		s.exportedIs(d, key, 31)

		s.sim.Clear(noAck)
		s.waitNewBound(sid)
		s.eventually("session up", func() bool { return s.is(1, "bragerone_session_up") })
		for _, ss := range s.sim.Sessions() {
			if ss.Connected && ss.SID != s.gw.Status().NamespaceSID {
				t.Fatalf("a leftover session is still connected at the cloud: %+v", ss)
			}
		}
		s.nudgeLive(d, s.vKey(d, 1), 5)
		s.nothingLost()
	})
	t.Run("at start", func(t *testing.T) {
		var noAck int
		s := startScenario(t, scenarioSetup{
			connectTimeout: 150 * time.Millisecond,
			before:         func(s *scenario) { noAck = s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultNoNamespaceAck}) },
		})
		select {
		case <-s.gw.Ready():
		case <-time.After(scenarioDeadline):
			t.Fatalf("no REST prime while the first connect cannot join:%s", s.dump())
		}
		attempts := s.sim.Requests("GET /socket.io/")
		s.requestsAfter("GET /socket.io/", attempts+1)
		if !s.is(0, "bragerone_session_up") {
			t.Fatalf("session shown up without a joined namespace:%s", s.dump())
		}
		s.nothingLost()
		s.sim.Clear(noAck)
		s.waitUp()
		s.nothingLost()
	})
}

// docs/spec.md W-7.4: after a reconnect the CURRENT namespace SID is bound, and pushes
// reach the new session.
func TestScenario04StaleSIDBind(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	old := s.waitUp()
	connects := s.sim.Requests("POST /v1/modules/connect")
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	sid := s.waitNewBound(old)
	ss, _ := s.simSession(sid)
	if len(ss.Bound) != len(s.sim.Devids()) {
		t.Fatalf("new SID %s bound to %v at the cloud", sid, ss.Bound)
	}
	if o, _ := s.simSession(old); o.Connected {
		t.Fatalf("the old session is still connected: %+v", o)
	}
	if s.sim.Requests("POST /v1/modules/connect") <= connects {
		t.Fatal("no modules/connect after the reconnect")
	}
	d := s.sim.Devids()[1]
	key := s.vKey(d, 0)
	k, _ := store.ParseKey(key)
	// The re-prime after the reconnect may still be in flight and carry the
	// new value too; a push to the new session shows as a live source on
	// one of a few changes.
	for i := 0; ; i++ {
		s.sim.SetParam(d, key, float64(777+i))
		s.exportedIs(d, key, float64(777+i))
		e, _ := s.store.Get(d, k)
		if e.Source.IsLive() {
			break
		}
		if i == 10 {
			t.Fatalf("10 changes all came by %v, none by a push to the new session", e.Source)
		}
	}
	s.eventually("push healthy", func() bool { return s.is(1, "bragerone_push_healthy") })
	s.nothingLost()
}

// docs/spec.md W-7.5: 502/503/504 with HTML bodies everywhere, 408
// E_DISPATCH_EVENT_TIMEOUT and read timeouts, while the session is lost too.
func TestScenario05ServiceUnavailableStorm(t *testing.T) {
	s := startScenario(t, scenarioSetup{client: func(c *cloudclient.Config) { c.Timeout = 300 * time.Millisecond }})
	s.waitUp()
	d := s.sim.Devids()[0]
	storm := []int{
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Status: 503}), // every REST path
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHandshake503}),
	}
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	key := s.vKey(d, 0)
	s.sim.SetParam(d, key, 5003) // changed during the storm
	s.holdsWhile(func() bool {
		for _, dv := range s.sim.Devids() {
			if !s.is(1, "bragerone_module_online", "devid", dv) {
				return false
			}
		}
		return true
	}, "modules online through the storm", func() bool {
		v, _ := s.metric("bragerone_module_poll_failure_streak")
		return s.is(0, "bragerone_session_up") && v >= 3
	})
	// Change the storm's shape: 408 dispatch timeouts on the prime, 502 and
	// read timeouts on the module list.
	for _, id := range storm[:1] {
		s.sim.Clear(id)
	}
	storm = append(storm[1:],
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultDispatchTimeout, Path: "POST /v1/modules/parameters"}),
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 502, Count: 2}),
	)
	// The prime is retried while down and meets the 408s; the module list
	// meets its two 502s, and only then read timeouts (a delay injected
	// with the 502s would hold them past the client's timeout too).
	// Modules stay online throughout.
	s.holdsWhile(s.modulesOnline, "modules online through the 408s and the 502s", func() bool {
		return s.answers("POST /v1/modules/parameters", 408) > 0 && s.answers("GET /v1/modules", 502) == 2
	})
	storm = append(storm, s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLatency, Path: "GET /v1/modules", DelayMS: 600}))
	s.holdsWhile(s.modulesOnline, "modules online through the read timeouts", func() bool {
		return s.answers("GET /v1/modules", 0) > 0
	})

	for _, id := range storm {
		s.sim.Clear(id)
	}
	s.waitBound()
	s.eventually("recovered", func() bool {
		return s.is(1, "bragerone_session_up") && s.is(0, "bragerone_module_poll_failure_streak")
	})
	s.exportedIs(d, key, 5003)
	s.nothingLost()
}

// docs/spec.md W-7.6: module rows with gateway {} / null, connectedAt null and
// null strings.
func TestScenario06DegradedModuleRows(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	s.waitUp()
	a, b := s.sim.Devids()[0], s.sim.Devids()[1]
	deg := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultDegradedRow, Devid: b})
	s.eventually("the degraded module shown offline, reason rest", func() bool {
		_, down := s.metric("bragerone_module_outage_seconds", "devid", b, "reason", "rest")
		return s.is(0, "bragerone_module_online", "devid", b) && down
	})
	if !s.is(1, "bragerone_module_online", "devid", a) {
		t.Fatalf("the healthy sibling went offline:%s", s.dump())
	}
	if _, ok := s.metric("bragerone_module_info", "devid", b); !ok {
		t.Fatal("the degraded module was dropped instead of shown offline")
	}
	s.sim.Clear(deg)
	s.eventually("module back online with its last outage", func() bool {
		_, last := s.metric("bragerone_module_last_outage_seconds", "devid", b, "reason", "rest")
		_, down := s.metric("bragerone_module_outage_seconds", "devid", b)
		return s.is(1, "bragerone_module_online", "devid", b) && last && !down
	})
	s.nothingLost()
}

// docs/spec.md W-7.7: errors, [], {"unexpected":true} and rows of foreign
// modules keep the last known state and only grow the streak; a listing with a
// sibling but without this module takes it offline, reason derived.
func TestScenario07UnusableListingsInventNoOffline(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	s.waitUp()
	devids := s.sim.Devids()
	raw := rawListing(t, s.sim)
	foreign := raw
	for i, d := range devids {
		foreign = strings.ReplaceAll(foreign, d, fmt.Sprintf("FOREIGN%03d", i))
	}
	allOnline := func() bool {
		for _, d := range devids {
			if !s.is(1, "bragerone_module_online", "devid", d) {
				return false
			}
		}
		return true
	}
	for _, f := range []cloudsim.Fault{
		{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 500},
		{Kind: cloudsim.FaultListing, Body: `[]`},
		{Kind: cloudsim.FaultListing, Body: `{"unexpected":true}`},
		{Kind: cloudsim.FaultListing, Body: foreign},
	} {
		id := s.sim.Inject(f)
		s.holdsWhile(allOnline, fmt.Sprintf("modules online through %s %s", f.Kind, f.Body), func() bool {
			v, _ := s.metric("bragerone_module_poll_failure_streak")
			return v >= 3
		})
		s.sim.Clear(id)
		s.eventually("streak reset by a usable listing", func() bool { return s.is(0, "bragerone_module_poll_failure_streak") })
	}
	miss := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: devids[1]})
	s.eventually("the missing module offline, reason derived", func() bool {
		_, down := s.metric("bragerone_module_outage_seconds", "devid", devids[1], "reason", "derived")
		return s.is(0, "bragerone_module_online", "devid", devids[1]) && down
	})
	if !s.is(1, "bragerone_module_online", "devid", devids[0]) {
		t.Fatalf("the listed sibling went offline:%s", s.dump())
	}
	s.sim.Clear(miss)
	s.eventually("back online", func() bool { return s.is(1, "bragerone_module_online", "devid", devids[1]) })
	s.nothingLost()
}

// docs/spec.md W-7.8: a failed poll in flight across an ordinary disconnect still counts;
// a REST result must not overwrite a newer connection-status event.
func TestScenario08PollAndRealtimeRace(t *testing.T) {
	t.Run("failed poll in flight across a disconnect", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{})
		sid := s.waitUp()
		slow := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLatency, Path: "GET /v1/modules", DelayMS: 250})
		n := s.sim.Requests("GET /v1/modules")
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 503, Count: 1})
		s.requestsAfter("GET /v1/modules", n) // a poll is in flight, delayed
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
		s.eventually("the failed poll counted", func() bool { return s.is(1, "bragerone_module_poll_failure_streak") })
		s.sim.Clear(slow)
		s.waitNewBound(sid)
		s.eventually("streak reset", func() bool { return s.is(0, "bragerone_module_poll_failure_streak") })
		s.nothingLost()
	})
	t.Run("stale REST row after a newer event", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{})
		s.waitUp()
		b := s.sim.Devids()[1]
		online := rawListing(t, s.sim) // says b is online
		slow := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLatency, Path: "GET /v1/modules", DelayMS: 250})
		n := s.sim.Requests("GET /v1/modules")
		s.requestsAfter("GET /v1/modules", n) // this poll began before the event below
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultListing, Body: online, Count: 1})
		s.sim.SetModuleOnline(b, false)
		s.eventually("offline from the event", func() bool {
			_, down := s.metric("bragerone_module_outage_seconds", "devid", b, "reason", "ws")
			return s.is(0, "bragerone_module_online", "devid", b) && down
		})
		polls := s.sim.Requests("GET /v1/modules")
		s.holdsWhile(func() bool { return s.is(0, "bragerone_module_online", "devid", b) },
			"the newer event kept over the older poll's row", func() bool { return s.sim.Requests("GET /v1/modules") > polls+1 })
		s.sim.Clear(slow)
		if v, _ := s.metric("bragerone_module_outages_total", "devid", b, "reason", "ws"); v != 1 {
			t.Fatalf("module outages by ws = %g, want 1:%s", v, s.dump())
		}
		s.sim.SetModuleOnline(b, true)
		s.eventually("back online", func() bool { return s.is(1, "bragerone_module_online", "devid", b) })
		s.nothingLost()
	})
}

// docs/spec.md W-7.9: the token expires during a long outage; the reconnect resolves a
// fresh one, and falls back to the last one when the auth backend is down.
func TestScenario09TokenExpiryDuringOutage(t *testing.T) {
	t.Run("fresh token after expiry", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{
			sim:    func(o *cloudsim.Options) { o.TokenTTL = 400 * time.Millisecond },
			client: func(c *cloudclient.Config) { c.RefreshLeeway = 20 * time.Millisecond },
			// No polls: only the reconnect itself can get a fresh token.
			gw: func(c *realtime.Config) { c.PollInterval = 0 },
		})
		sid := s.waitUp()
		tok, _ := s.client.Token()
		// Counted from here: the token may run out, and a reconnect
		// attempt log in afresh, while the session is still being taken down.
		logins := s.sim.Requests("POST /v1/auth/user")
		clear := s.goDown()
		d := s.sim.Devids()[0]
		key := s.vKey(d, 0)
		s.sim.SetParam(d, key, 909)
		s.eventually("the token expired during the outage", func() bool { return time.Now().After(tok.ExpiresAt) })
		clear()
		s.waitNewBound(sid)
		if s.sim.Requests("POST /v1/auth/user") <= logins {
			t.Fatal("the reconnect did not log in for a fresh token")
		}
		if now, _ := s.client.Token(); now.AccessToken == tok.AccessToken {
			t.Fatal("still the expired token")
		}
		s.exportedIs(d, key, 909)
		s.nudgeLive(d, s.vKey(d, 1), 1)
		s.nothingLost()
	})
	t.Run("auth backend down", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{
			// The token is inside the refresh leeway from the start: every
			// handshake wants a fresh one.
			client: func(c *cloudclient.Config) { c.RefreshLeeway = 2 * time.Hour },
		})
		sid := s.waitUp()
		auth := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 503})
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
		s.eventually("reconnected on the last token", func() bool {
			st := s.gw.Status()
			return st.Connected && st.NamespaceSID != sid
		})
		if s.answers("POST /v1/auth/user", 503) == 0 {
			t.Fatal("the reconnect did not try to log in")
		}
		s.sim.Clear(auth)
		s.waitBound()
		d := s.sim.Devids()[1]
		s.nudgeLive(d, s.vKey(d, 0), 1)
		s.nothingLost()
	})
}

// docs/spec.md W-7.10: every escalation logs in afresh; without credentials the
// token is kept.
func TestScenario10FreshLoginPerRecoveryStep(t *testing.T) {
	t.Run("with credentials", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{gw: zombieLadder})
		s.waitUp()
		d := s.sim.Devids()[0]
		s.nudgeLive(d, s.vKey(d, 0), 1)
		logins := s.sim.Requests("POST /v1/auth/user")
		mute := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
		s.eventually("hard restarts and a transport recycle", func() bool {
			return s.recoveries("hard_restart") >= 3 && s.recoveries("transport_recycle") >= 1
		})
		steps := s.recoveries("hard_restart") + s.recoveries("transport_recycle") + s.recoveries("manager_rebuild")
		if got := float64(s.sim.Requests("POST /v1/auth/user") - logins); got < steps {
			t.Fatalf("%g recovery steps but %g logins at the cloud", steps, got)
		}
		s.sim.Clear(mute)
		s.nudgeLive(d, s.vKey(d, 1), 1)
		s.nothingLost()
	})
	t.Run("without credentials", func(t *testing.T) {
		var presetLogins int
		s := startScenario(t, scenarioSetup{
			gw:     zombieLadder,
			client: func(c *cloudclient.Config) { c.Credentials = nil },
			before: func(s *scenario) {
				// A token obtained elsewhere; this client cannot log in.
				other, err := cloudclient.New(cloudclient.Config{BaseURL: s.sim.URL(), AssetsURL: s.sim.URL(), Logger: scenarioLogger(),
					Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword})})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := other.Login(context.Background()); err != nil {
					t.Fatal(err)
				}
				tok, _ := other.Token()
				s.client.SetToken(tok)
				presetLogins = s.sim.Requests("POST /v1/auth/user")
			},
		})
		s.waitUp()
		d := s.sim.Devids()[0]
		s.nudgeLive(d, s.vKey(d, 0), 1)
		mute := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
		s.eventually("a hard restart on the kept token", func() bool {
			v, _ := s.metric("bragerone_recovery_actions_total", "step", "hard_restart", "result", "ok")
			return v >= 1
		})
		s.sim.Clear(mute)
		s.waitBound()
		if _, err := s.client.AccessToken(); err != nil {
			t.Fatalf("left unauthenticated: %v", err)
		}
		if got := s.sim.Requests("POST /v1/auth/user"); got != presetLogins {
			t.Fatalf("%d logins without credentials", got-presetLogins)
		}
		s.nudgeLive(d, s.vKey(d, 1), 1)
		s.nothingLost()
	})
}

// cooldownLadder reaches a long cooldown quickly: one hard restart, then a
// transport recycle, which always arms cooldown.
func cooldownLadder(c *realtime.Config) {
	zombieLadder(c)
	c.Ladder.HardRestartsBeforeRecycle = 1
	c.Ladder.CooldownBase = time.Hour
	c.Ladder.CooldownMax = time.Hour
}

// docs/spec.md W-7.11: a module flapping offline→online during the cooldown clears it and
// recovers at once; a failed login re-arms the cooldown.
func TestScenario11ModuleFlapDuringCooldown(t *testing.T) {
	flap := func(s *scenario, devid string) {
		s.sim.SetModuleOnline(devid, false) // events are muted: the poll sees it
		s.eventually("module offline", func() bool { return s.is(0, "bragerone_module_online", "devid", devid) })
		s.sim.SetModuleOnline(devid, true)
	}
	inCooldown := func(s *scenario) bool { v, _ := s.metric("bragerone_recovery_cooldown_seconds"); return v > 0 }

	t.Run("recovers at once", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{gw: cooldownLadder})
		s.waitUp()
		d := s.sim.Devids()[0]
		s.nudgeLive(d, s.vKey(d, 0), 1)
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
		s.eventually("cooldown after a recycle", func() bool { return inCooldown(s) && s.gw.Status().Recovering == "" })
		s.waitBound() // a recycle whose connect failed reconnects after the step
		connects, logins := s.sim.Requests("POST /v1/modules/connect"), s.sim.Requests("POST /v1/auth/user")
		key := s.vKey(d, 1)
		s.sim.SetParam(d, key, 1111) // muted: only a REST prime brings it
		flap(s, s.sim.Devids()[1])
		s.eventually("cooldown cleared and the session bound again", func() bool {
			return !inCooldown(s) && s.sim.Requests("POST /v1/modules/connect") > connects
		})
		if s.sim.Requests("POST /v1/auth/user") <= logins {
			t.Fatal("module-online recovery did not log in afresh")
		}
		s.exportedIs(d, key, 1111)
		s.nothingLost()
	})
	t.Run("failed login re-arms the cooldown", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{gw: cooldownLadder})
		s.waitUp()
		d := s.sim.Devids()[0]
		s.nudgeLive(d, s.vKey(d, 0), 1)
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
		s.eventually("cooldown after a recycle", func() bool { return inCooldown(s) && s.gw.Status().Recovering == "" })
		s.waitBound() // a recycle whose connect failed reconnects after the step
		armed := s.gw.Status().Ladder.CooldownUntil
		auth := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 503})
		connects := s.sim.Requests("POST /v1/modules/connect")
		key := s.vKey(d, 1)
		s.sim.SetParam(d, key, 1112) // muted: only a REST prime brings it
		flap(s, s.sim.Devids()[1])
		s.eventually("the login tried and the cooldown re-armed", func() bool {
			st := s.gw.Status()
			return s.answers("POST /v1/auth/user", 503) > 0 && st.Recovering == "" && st.Ladder.CooldownUntil.After(armed) && inCooldown(s)
		})
		if s.sim.Requests("POST /v1/modules/connect") != connects {
			t.Fatal("the session was rebound although the fresh login failed")
		}
		s.sim.Clear(auth)
		s.exportedIs(d, key, 1112)
		s.nothingLost()
	})
}

// docs/spec.md W-7.12: while cooling down, zombie primes are not counted, so no hard
// restart fires the moment the cooldown ends.
func TestScenario12NoStreakDuringCooldown(t *testing.T) {
	s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) {
		zombieLadder(c)
		c.Ladder.CooldownBase = 400 * time.Millisecond
		c.Ladder.CooldownMax = 400 * time.Millisecond
	}})
	s.waitUp()
	d := s.sim.Devids()[0]
	s.nudgeLive(d, s.vKey(d, 0), 1)
	auth := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 503})
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
	s.eventually("a hard restart aborted by the failed login, and a cooldown", func() bool {
		v, _ := s.metric("bragerone_recovery_actions_total", "step", "hard_restart", "result", "aborted")
		c, _ := s.metric("bragerone_recovery_cooldown_seconds")
		return v >= 1 && c > 0
	})
	s.sim.Clear(auth)
	key := s.vKey(d, 1)
	s.sim.SetParam(d, key, 1212) // muted: only a REST prime brings it
	hard := s.recoveries("hard_restart")
	primes := s.sim.Requests("POST /v1/modules/parameters")
	// Each look reads the hard restarts first, then a status: when that
	// status is still inside the cooldown, so was the count. A look after
	// the cooldown ends the phase (the streak may grow from then on).
	over := false
	s.holdsWhile(func() bool {
		hardNow := s.recoveries("hard_restart")
		st := s.gw.Status()
		over = !st.At.Before(st.Ladder.CooldownUntil)
		return over || st.Ladder.PrimeStreak == 0 && hardNow == hard
	}, "no zombie streak and no escalation during the cooldown", func() bool { return over })
	if s.sim.Requests("POST /v1/modules/parameters") <= primes {
		t.Fatal("no REST prime during the cooldown")
	}
	s.eventually("the ladder climbs again after the cooldown", func() bool {
		v, _ := s.metric("bragerone_recovery_actions_total", "step", "hard_restart", "result", "ok")
		return v >= 1
	})
	s.exportedIs(d, key, 1212)
	s.nothingLost()
}

// docs/spec.md W-7.13: requests issued while a forced re-login has dropped the token wait
// for the login; none fails for want of a token.
func TestScenario13NoTokenRaceDuringRelogin(t *testing.T) {
	s := startScenario(t, scenarioSetup{gw: zombieLadder})
	s.waitUp()
	d := s.sim.Devids()[0]
	s.nudgeLive(d, s.vKey(d, 0), 1)
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLatency, Path: "POST /v1/auth/user", DelayMS: 200})
	logins := s.sim.Requests("POST /v1/auth/user")
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
	key := s.vKey(d, 1)
	// Muted: only a REST prime brings it.
	s.sim.SetParam(d, key, 1313)
	s.requestsAfter("POST /v1/auth/user", logins) // the forced login is under way
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = s.client.Prime(context.Background(), s.sim.Devids())
			} else {
				_, err = s.client.Modules(context.Background(), s.sim.ObjectID())
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("request during the re-login failed: %v", err)
	}
	if n := s.answers("POST /v1/modules/parameters", 401) + s.answers("GET /v1/modules", 401); n != 0 {
		t.Errorf("%d requests went out without a valid token", n)
	}
	s.eventually("the hard restart completed", func() bool {
		v, _ := s.metric("bragerone_recovery_actions_total", "step", "hard_restart", "result", "ok")
		return v >= 1
	})
	if !s.is(0, "bragerone_module_poll_failure_streak") {
		t.Fatalf("polls failed during the re-login:%s", s.dump())
	}
	s.exportedIs(d, key, 1313)
	s.nothingLost()
}

// docs/spec.md W-7.14: the exporter persists no token; what applies is that an empty or
// unusable token installed before start is discarded, not used or waited on.
func TestScenario14EmptyTokenDiscarded(t *testing.T) {
	for name, tok := range map[string]cloudclient.Token{
		"empty":   {AccessToken: "", ExpiresAt: time.Now().Add(time.Hour)},
		"unknown": {AccessToken: "persisted-elsewhere", ExpiresAt: time.Now().Add(time.Hour)},
	} {
		t.Run(name, func(t *testing.T) {
			s := startScenario(t, scenarioSetup{before: func(s *scenario) { s.client.SetToken(tok) }})
			s.waitUp()
			if got, _ := s.client.Token(); got.AccessToken == tok.AccessToken {
				t.Fatal("the bad token is still in use")
			}
			s.nothingLost()
			// No request, REST or handshake, went out with an empty token.
			if missing, carried := s.withoutToken(); len(missing) != 0 || carried == 0 {
				t.Fatalf("requests without a token: %v (%d with one)", missing, carried)
			}
		})
	}
}

// docs/spec.md W-7.15: login answered 500 ER_DUP_ENTRY is retried, at start and
// in recovery.
func TestScenario15LoginDuplicateEntry(t *testing.T) {
	s := startScenario(t, scenarioSetup{
		gw:     zombieLadder,
		before: func(s *scenario) { s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLoginDupEntry, Count: 2}) },
	})
	s.waitUp()
	if got := s.sim.Requests("POST /v1/auth/user"); got != 3 {
		t.Fatalf("%d login requests at start, want 3 (two duplicate-entry answers retried)", got)
	}
	d := s.sim.Devids()[0]
	s.nudgeLive(d, s.vKey(d, 0), 1)
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLoginDupEntry, Count: 2})
	mute := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
	s.eventually("a hard restart after a retried login", func() bool {
		v, _ := s.metric("bragerone_recovery_actions_total", "step", "hard_restart", "result", "ok")
		return v >= 1
	})
	if v, _ := s.metric("bragerone_recovery_actions_total", "step", "hard_restart", "result", "aborted"); v != 0 {
		t.Fatalf("a duplicate-entry login aborted the step:%s", s.dump())
	}
	s.sim.Clear(mute)
	s.nudgeLive(d, s.vKey(d, 1), 1)
	s.nothingLost()
}

// docs/spec.md W-7.16: event 22 re-primes that module.
func TestScenario16ModuleMemoryUpdated(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	s.waitUp()
	d := s.sim.Devids()[0]
	key := s.vKey(d, 0)
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, Devid: d, Count: 1})
	s.sim.SetParam(d, key, 1616) // the one muted push
	if len(s.sim.Faults()) != 0 {
		t.Fatalf("the mute fault was not consumed: %+v", s.sim.Faults())
	}
	primes := s.sim.Requests("POST /v1/modules/parameters")
	s.sim.EmitMemoryUpdated(d)
	s.exportedIs(d, key, 1616)
	if s.sim.Requests("POST /v1/modules/parameters") <= primes {
		t.Fatal("the value came without a prime")
	}
	k, _ := store.ParseKey(key)
	if e, _ := s.store.Get(d, k); e.Source != store.SourcePrime {
		t.Fatalf("source %v, want prime", e.Source)
	}
	if v, _ := s.metric("bragerone_session_up"); v != 1 {
		t.Fatalf("event 22 disturbed the session:%s", s.dump())
	}
	s.nothingLost()
}

// docs/spec.md W-7.17: no snapshot on (re)connect: modules/connect with the current SID,
// the listen emits, then a REST prime bring the values changed meanwhile.
func TestScenario17NoSnapshotOnReconnect(t *testing.T) {
	// No polls: only the prime that follows the reconnect can bring values.
	s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) { c.PollInterval = 0 }})
	old := s.waitUp()
	clear := s.goDown()
	d := s.sim.Devids()[1]
	key := s.vKey(d, 0)
	s.sim.SetParam(d, key, 1717) // pushed to nobody
	clear()
	sid := s.waitNewBound(old)
	s.eventually("the listen emits on the new session, with modules and with devids", func() bool {
		ss, _ := s.simSession(sid)
		for _, ev := range []string{"app:modules:parameters:listen", "app:modules:activity:quantity:listen", "app:modules:alarms:quantity:listen"} {
			if ss.Listens[ev] < 2 {
				return false
			}
		}
		return true
	})
	s.exportedIs(d, key, 1717)
	s.nothingLost()
}

// docs/spec.md W-7.18: stop while down records no restore spanning the stopped time and
// publishes no second outage.
func TestScenario18StopWhileDown(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	s.waitUp()
	s.goDown()
	s.eventually("outage open", func() bool { return s.sessionOutageReason() != "" })
	reason := s.sessionOutageReason()
	d := s.sim.Devids()[1]
	key := s.vKey(d, 0)
	s.sim.SetParam(d, key, 1818) // pushed to nobody: the REST prime while down brings it
	s.exportedIs(d, key, 1818)
	s.stop()
	// Stopping keeps what was known: every value still the cloud's.
	if diff := s.lostDiff(); diff != "" {
		t.Fatalf("values lost by the stop: %s", diff)
	}
	if !s.is(0, "bragerone_session_up") {
		t.Fatalf("session shown up after stop:%s", s.dump())
	}
	if !s.absent("bragerone_session_outage_seconds") {
		t.Fatalf("an outage window still open after stop:%s", s.dump())
	}
	if _, ok := s.metric("bragerone_session_last_outage_seconds", "reason", reason); !ok {
		t.Fatalf("the outage was not finalised with its reason %q:%s", reason, s.dump())
	}
	if v, _ := s.metric("bragerone_session_outages_total", "reason", "stop"); v != 0 {
		t.Fatalf("stop while down published a stop outage:%s", s.dump())
	}
	if n := s.sum("bragerone_session_outages_total"); n != 1 {
		t.Fatalf("%g outages published, want 1:%s", n, s.dump())
	}
	if s.gw.Status().Push.State.String() == "healthy" {
		t.Fatal("push healthy after stop")
	}
}

// docs/spec.md W-7.19: modules/connect answers 201 accepted-not-bound: not bound, and the
// exporter keeps trying to bind until it is.
func TestScenario19ConnectAcceptedNotBound(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	old := s.waitUp()
	oldBinds := len(s.bindsFor(old))
	nb := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultConnectNotBound})
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	// Every body variant (wsid, sid, then wsid with group_id), each with
	// the new session's namespace SID, is answered 201; the round is tried
	// again while unbound.
	var sid string
	s.eventually("a new session, every bind variant refused, and a retry", func() bool {
		st := s.gw.Status()
		if !st.Connected || st.NamespaceSID == old {
			return false
		}
		sid = st.NamespaceSID
		return len(s.bindsFor(sid)) >= 6
	})
	variants := map[string]int{}
	for _, b := range s.bindsFor(sid) {
		key := "sid"
		if _, ok := b["wsid"]; ok {
			key = "wsid"
		}
		if _, ok := b["group_id"]; ok {
			key += "+group_id"
		}
		variants[key]++
	}
	if len(variants) != 3 || variants["wsid"] < 2 || variants["sid"] < 2 || variants["wsid+group_id"] < 2 {
		t.Fatalf("bind variants with the new namespace SID, by body shape: %v; want wsid, sid and wsid+group_id, each tried again", variants)
	}
	engine, _ := s.simSession(sid)
	if n := len(s.bindsFor(engine.EngineSID)) + len(s.bindsFor(old)) - oldBinds; n != 0 {
		t.Fatalf("%d binds posted the Engine.IO SID or the old namespace SID", n)
	}
	if ss, _ := s.simSession(sid); len(ss.Bound) != 0 {
		t.Fatalf("bound despite 201: %+v", ss)
	}
	if !s.absent("bragerone_push_healthy") && !s.is(0, "bragerone_push_healthy") {
		t.Fatalf("push shown healthy on an unbound session:%s", s.dump())
	}
	d := s.sim.Devids()[0]
	key := s.vKey(d, 0)
	s.sim.SetParam(d, key, 1919)
	s.sim.Clear(nb)
	s.waitBound()
	s.nudgeLive(d, s.vKey(d, 1), 1)
	s.eventually("push healthy once bound", func() bool { return s.is(1, "bragerone_push_healthy") })
	s.nothingLost()
}

// docs/spec.md W-7.20: a connect_error after having been connected counts as a
// disconnect, with the reason classified. Here the cloud revokes the token
// and refuses the joined namespace (a CONNECT_ERROR "Unauthorized"), then
// every join on that token: the session comes back on a fresh login without
// waiting for a REST call to renew the token.
func TestScenario20ConnectErrorAfterConnected(t *testing.T) {
	s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) { c.PollInterval = 0 }})
	old := s.waitUp()
	logins := s.sim.Requests("POST /v1/auth/user")
	s.sim.RevokeTokens()
	s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultConnectError, Body: "Unauthorized"})
	// Counted as soon as it is published (the session may be back before
	// a scrape sees it down).
	s.eventually("an outage counted with reason connect_error", func() bool {
		return s.is(1, "bragerone_session_outages_total", "reason", "connect_error")
	})
	d := s.sim.Devids()[0]
	key := s.vKey(d, 0)
	s.sim.SetParam(d, key, 2020) // changed around the outage
	s.waitNewBound(old)
	if s.sim.Requests("POST /v1/auth/user") <= logins {
		t.Fatal("no fresh login after the refused join")
	}
	s.eventually("session restored, the last outage's reason connect_error", func() bool {
		return s.is(1, "bragerone_session_up") && s.labelOf("bragerone_session_last_outage_seconds", "reason") == "connect_error"
	})
	if n := s.sum("bragerone_session_outages_total"); n != 1 {
		t.Fatalf("%g outages published, want the one connect_error:%s", n, s.dump())
	}
	// The refusal of the joined namespace and of each join on the revoked
	// token are the library's connect_error events, each counted.
	if n := s.sum("bragerone_realtime_events_total", "event", "connect_error"); n < 2 {
		t.Fatalf("%g connect_error events counted, want the joined session's and at least one refused join's:%s", n, s.dump())
	}
	s.exportedIs(d, key, 2020)
	s.nudgeLive(d, s.vKey(d, 1), 1)
	s.nothingLost()
}

// docs/spec.md W-7.21: a disconnect shorter than the hysteresis is a blink, not
// an outage; a longer one is published.
func TestScenario21SessionBlink(t *testing.T) {
	t.Run("blink", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) { c.SessionHysteresis = 3 * time.Second }})
		old := s.waitUp()
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
		s.holdsWhile(func() bool { return s.is(1, "bragerone_session_up") }, "session shown up through the blink",
			func() bool { st := s.gw.Status(); return st.Connected && st.NamespaceSID != old })
		s.waitBound()
		s.eventually("blink counted", func() bool { return s.is(1, "bragerone_session_blinks_total") })
		if n := s.sum("bragerone_session_outages_total"); n != 0 || !s.absent("bragerone_session_last_outage_seconds") {
			t.Fatalf("a blink published an outage:%s", s.dump())
		}
		d := s.sim.Devids()[0]
		s.nudgeLive(d, s.vKey(d, 0), 1)
		s.nothingLost()
	})
	t.Run("longer than the hysteresis", func(t *testing.T) {
		s := startScenario(t, scenarioSetup{gw: func(c *realtime.Config) { c.SessionHysteresis = 150 * time.Millisecond }})
		s.waitUp()
		stall := s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultStallHandshake})
		s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
		s.eventually("outage published after the hysteresis", func() bool {
			return s.is(0, "bragerone_session_up") && s.sessionOutageReason() != ""
		})
		s.sim.Clear(stall)
		s.waitBound()
		s.eventually("restored", func() bool { return s.is(1, "bragerone_session_up") })
		if s.is(1, "bragerone_session_blinks_total") {
			t.Fatalf("a published outage counted as a blink:%s", s.dump())
		}
		s.nothingLost()
	})
}
