// Package lifecycle owns the realtime connection lifecycle as a pure
// machine: given the lifecycle state, an event the gateway observed and the
// time, it returns the next state and the actions to run. It decides when to
// dial, when a dialled session becomes the current one, when to bind it,
// when to reconnect and after how long, when to log in afresh after a
// refused handshake, which session work a recovery step does, when a REST
// prime is owed, and that nothing starts once the gateway stops. It starts
// nothing, reads no clock and does no I/O; the gateway's loop goroutine
// feeds it events, runs the actions and feeds their outcomes back.
//
// What the recovery ladder decides (which step, cooldown, quarantine) is
// package ladder's; this machine runs the step it chose and reports the
// step's result (FinishStep) for the ladder to record.
//
// Rules implement the client session state, the recovery ladder's rules and
// the modules/connect rules (docs/spec.md I-3.2a to I-3.2g, I-3.4f, I-4h and
// docs/spec.md W-3.1a to W-3.1g, W-4.5, W-4.7a to W-4.7i); each rule cites
// the row it implements.
package lifecycle

import (
	"time"

	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
)

// Config holds the lifecycle's knobs.
type Config struct {
	// ReconnectBackoff is the pause after the first failed connect; it
	// doubles per failure up to ReconnectMax. The first reconnect after a
	// lost session is immediate when the session was up for at least
	// ReconnectMax; a session lost sooner counts as a failed connect (see
	// sessionLost).
	ReconnectBackoff time.Duration
	// ReconnectMax caps the reconnect pause (the gateway passes its
	// supervisor interval: docs/spec.md W-3.1c, attempts about every 15 s).
	ReconnectMax time.Duration
	// SilentGrace is how long a session must stay silently dead (no longer
	// connected, its end not reported) before it is torn down as
	// supervisor_stale. The library marks a session closed an instant
	// before it reports the end with the real reason; on a busy machine
	// that instant outlasts a health tick, so the grace is a duration, not
	// a number of ticks.
	SilentGrace time.Duration
	// ReconnectOffset is added to every scheduled reconnect, the first
	// one after a lost session too. The gateways of an account's objects
	// each get a different one (package fleet), so an outage that ends for
	// all of them at once is not answered with one handshake, bind and
	// prime per object at the same instant.
	ReconnectOffset time.Duration
}

// Mark orders REST primes: a prime requested later carries a larger mark
// (the parameter store's prime mark).
type Mark uint64

// State is the lifecycle state. It is a plain value: copies are independent.
type State struct {
	// Stopping: the gateway is stopping; nothing new starts.
	Stopping bool
	// Connecting: a dial is in flight (at most one at a time).
	Connecting bool
	// SessionUp: a joined session is the current one.
	SessionUp bool
	// Session numbers the sessions made current; a bind result of an
	// older session does not count for the current one.
	Session uint64
	// Transport numbers the transports: it grows each time the transport
	// is replaced, so a dial on a replaced one is recognised when it ends.
	Transport uint64
	// Binding counts resubscribes (bind + prime) in flight.
	Binding int
	// Relogging: a forced login after a refused handshake is in flight.
	Relogging bool
	// ReconnectFails counts failed connects in a row, and sessions lost
	// soon after they came up; it sets the backoff.
	ReconnectFails int
	// UpSince is when the current session came up.
	UpSince time.Time
	// ReconnectAt is when the next connect is due; zero = none scheduled.
	ReconnectAt time.Time
	// Step is the recovery step in flight ("" = none).
	Step ladder.Action
	// StepAwaitsConnect: the step has taken the session down and finishes
	// with the next connect and its bind.
	StepAwaitsConnect bool
	// SilentSession is the Session a supervisor tick found dead without an
	// end reported (0 = none), first seen so at SilentSince: a health tick
	// replaces it once it has stayed so for the SilentGrace.
	SilentSession uint64
	SilentSince   time.Time
	// PrimeOwed: the last connect's bind or prime failed, so the store has
	// no snapshot of that session; the next poll tick primes whatever the
	// ladder says. OwedMark is the mark of the prime that failed.
	PrimeOwed bool
	OwedMark  Mark
}

// Event is something the gateway observed. Its concrete types are below.
type Event interface{ event() }

// Events.
type (
	// ConnectWanted: connect now unless a dial is running, a session is
	// up or the gateway is stopping (the start of the run). Cancelled:
	// the run's context has ended.
	ConnectWanted struct{ Cancelled bool }
	// ReconnectDue: the reconnect scheduled at ReconnectAt is due.
	ReconnectDue struct{ Cancelled bool }
	// DialUnavailable: the transport to dial could not be built.
	DialUnavailable struct{}
	// DialOK: a dial on transport Transport joined a session.
	DialOK struct {
		Transport uint64
		Cancelled bool
	}
	// DialFailed: a dial failed with reason (an outage reason token).
	// TooManyAbandoned: the transport holds too many stuck library calls.
	// AuthRejected: the cloud refused the token at the handshake.
	// PrimedOnce: the store was primed at least once.
	DialFailed struct {
		Reason                         string
		TooManyAbandoned, AuthRejected bool
		PrimedOnce                     bool
	}
	// SessionEnded: the current session's end was reported (its
	// disconnect event, or its event stream closing).
	SessionEnded struct{ Reason, Detail string }
	// BindFinished: a bind + prime of session Session, requested at Mark,
	// ended. Bound: the cloud bound the session. Primed: its prime
	// succeeded. Failed: the bind or the prime failed with an error.
	BindFinished struct {
		Session               uint64
		Mark                  Mark
		Bound, Primed, Failed bool
	}
	// PrimeFinished: a REST prime requested at Mark ended; CoversAll: it
	// primed every subscribed module.
	PrimeFinished struct {
		Mark          Mark
		OK, CoversAll bool
	}
	// ModulesChanged: the set of watched modules changed.
	ModulesChanged struct{}
	// SupervisorTick: the supervisor's periodic check. SilentlyDead: the
	// current session is no longer connected although its end was not
	// reported. Bound: the current session is bound to the current
	// modules. HaveModules: any module is watched.
	SupervisorTick struct {
		SilentlyDead, Bound, HaveModules bool
		Cancelled                        bool
	}
	// HealthTick: the health tick. SilentlyDead as for SupervisorTick;
	// Abandoned: the transport holds stuck library calls.
	HealthTick struct{ SilentlyDead, Abandoned bool }
	// StepChosen: the ladder chose a recovery step; ForceLogin: a fresh
	// login comes first.
	StepChosen struct {
		Step       ladder.Action
		ForceLogin bool
	}
	// StepReady: the step's forced login is done (Aborted: it failed, so
	// the step does not run).
	StepReady struct {
		Step               ladder.Action
		Aborted, Cancelled bool
	}
	// ReloginFinished: the forced login after a refused handshake ended.
	ReloginFinished struct{}
	// Stop: the gateway stops.
	Stop struct{}
)

func (ConnectWanted) event()   {}
func (ReconnectDue) event()    {}
func (DialUnavailable) event() {}
func (DialOK) event()          {}
func (DialFailed) event()      {}
func (SessionEnded) event()    {}
func (BindFinished) event()    {}
func (PrimeFinished) event()   {}
func (ModulesChanged) event()  {}
func (SupervisorTick) event()  {}
func (HealthTick) event()      {}
func (StepChosen) event()      {}
func (StepReady) event()       {}
func (ReloginFinished) event() {}
func (Stop) event()            {}

// Action is something the gateway runs. Its concrete types are below.
type Action interface{ action() }

// Actions.
type (
	// Dial: connect transport Transport in a worker (building it first
	// when the last one was replaced); its end comes back as DialOK,
	// DialFailed, or DialUnavailable when it cannot be built.
	Dial struct{ Transport uint64 }
	// DiscardDialled: the dial that just ended joined a session nobody
	// wants any more (its transport was replaced, or the gateway stops):
	// disconnect it in the background.
	DiscardDialled struct{}
	// RecordConnectFailure: count the failed connect under Reason beside
	// the outage reason; Attempt is its number in the current run.
	RecordConnectFailure struct {
		Reason  string
		Attempt int
	}
	// Attach: the dialled session becomes the current one, number Session
	// (the client session machine goes up).
	Attach struct{ Session uint64 }
	// Bind: bind session Session to the modules with its current namespace
	// SID, listen and REST-prime, in a worker; its end comes back as
	// BindFinished. Force: bind even if this SID is bound already.
	// Rebind: the supervisor found the session not bound.
	Bind struct {
		Session       uint64
		Force, Rebind bool
	}
	// SessionGone: the current session ended by itself: drop it and its
	// binding and record the disconnect.
	SessionGone struct{ Reason, Detail string }
	// TearDown: take the current session away on purpose and disconnect it
	// in the background, recording Reason (Abort: as an Engine.IO abort,
	// published down at once).
	TearDown struct {
		Reason string
		Abort  bool
	}
	// ReplaceTransport: close the transport in the background; the next
	// Dial builds a new one.
	ReplaceTransport struct{}
	// Relogin: force a fresh login in a worker; its end comes back as
	// ReloginFinished.
	Relogin struct{}
	// PrimeWhileDown: REST-prime every module now (no session, never primed).
	PrimeWhileDown struct{}
	// StartStep: run recovery step Step: a fresh login first when
	// ForceLogin, in a worker; its end comes back as StepReady.
	StartStep struct {
		Step       ladder.Action
		ForceLogin bool
	}
	// RunStep: the step's session work starts now (the actions after it).
	RunStep struct{ Step ladder.Action }
	// FinishStep: step Step ended with Result; the ladder records it.
	FinishStep struct {
		Step   ladder.Action
		Result ladder.Result
	}
)

func (Dial) action()                 {}
func (DiscardDialled) action()       {}
func (RecordConnectFailure) action() {}
func (Attach) action()               {}
func (Bind) action()                 {}
func (SessionGone) action()          {}
func (TearDown) action()             {}
func (ReplaceTransport) action()     {}
func (Relogin) action()              {}
func (PrimeWhileDown) action()       {}
func (StartStep) action()            {}
func (RunStep) action()              {}
func (FinishStep) action()           {}

// machine carries one step's work: the state being changed and the actions
// collected, in order.
type machine struct {
	c   Config
	st  State
	now time.Time
	out []Action
}

func (m *machine) do(a ...Action) { m.out = append(m.out, a...) }

// Step is the machine: it applies ev observed at now to st and returns the
// next state and the actions to run, in order.
func (c Config) Step(st State, ev Event, now time.Time) (State, []Action) {
	m := &machine{c: c, st: st, now: now}
	m.step(ev)
	return m.st, m.out
}

func (m *machine) step(ev Event) {
	switch e := ev.(type) {
	case ConnectWanted:
		m.connect(e.Cancelled)
	case ReconnectDue:
		m.st.ReconnectAt = time.Time{}
		m.connect(e.Cancelled)
	case DialUnavailable:
		m.st.Connecting = false
		m.scheduleReconnect()
	case DialOK:
		m.dialOK(e)
	case DialFailed:
		m.dialFailed(e)
	case SessionEnded:
		m.sessionEnded(e)
	case BindFinished:
		m.bindFinished(e)
	case PrimeFinished:
		// A prime of every module requested after the failed one pays the
		// connect prime owed.
		if e.OK && m.st.PrimeOwed && e.Mark > m.st.OwedMark && e.CoversAll {
			m.st.PrimeOwed = false
		}
	case ModulesChanged:
		// New modules are bound on the session that is up.
		if m.st.SessionUp {
			m.bind(false, false)
		}
	case SupervisorTick:
		m.supervise(e)
	case HealthTick:
		m.health(e)
	case StepChosen:
		if m.st.Step != "" || m.st.Stopping {
			return
		}
		m.st.Step = e.Step
		m.do(StartStep(e))
	case StepReady:
		m.runStep(e)
	case ReloginFinished:
		m.st.Relogging = false
	case Stop:
		// docs/spec.md W-4.2b, stop: the session is published down with
		// reason stop and closed by the gateway; nothing starts after it.
		m.st.Stopping = true
		m.st.SessionUp = false
		m.st.ReconnectAt = time.Time{}
	}
}

// connect starts a dial unless one is running, a session is up or the
// gateway is stopping.
func (m *machine) connect(cancelled bool) {
	if m.st.Connecting || m.st.SessionUp || m.st.Stopping || cancelled {
		return
	}
	m.st.Connecting = true
	m.st.ReconnectAt = time.Time{}
	m.do(Dial{Transport: m.st.Transport})
}

// scheduleReconnect arms the next connect: at once after a lost session,
// then with a doubling backoff capped at ReconnectMax.
func (m *machine) scheduleReconnect() {
	if m.st.Stopping {
		return
	}
	d := time.Duration(0)
	if m.st.ReconnectFails > 0 {
		d = m.c.ReconnectBackoff << min(m.st.ReconnectFails-1, 16)
		d = min(d, m.c.ReconnectMax)
	}
	m.st.ReconnectAt = m.now.Add(d + m.c.ReconnectOffset)
}

func (m *machine) dialOK(e DialOK) {
	m.st.Connecting = false
	if m.st.Stopping || e.Transport != m.st.Transport || e.Cancelled {
		// The transport was replaced (or the gateway stops) while dialling.
		m.do(DiscardDialled{})
		return
	}
	m.st.UpSince = m.now
	m.st.Session++
	m.st.SessionUp = true
	m.do(Attach{Session: m.st.Session})
	// After every realtime reconnect the current SID is posted again and a
	// fresh prime follows (docs/spec.md I-4h, I-1c).
	m.bind(false, false)
}

func (m *machine) dialFailed(e DialFailed) {
	m.st.Connecting = false
	m.st.ReconnectFails++
	m.do(RecordConnectFailure{Reason: e.Reason, Attempt: m.st.ReconnectFails})
	if m.st.StepAwaitsConnect {
		// The step's reconnect failed: the step failed.
		m.finishStep(ladder.Result{OK: false})
	}
	if e.TooManyAbandoned {
		// Too many stuck library calls on this transport: replace it.
		m.replaceTransport()
	}
	if e.AuthRejected && !m.st.Relogging {
		// The cloud refused our token (revoked server-side, or expired
		// early): it still looks valid here, so without a fresh login every
		// attempt would be refused (docs/spec.md I-5.7).
		m.st.Relogging = true
		m.do(Relogin{})
	}
	if !e.PrimedOnce {
		// While down the store is kept current over REST
		// (docs/spec.md I-3.2g); at start nothing else would fill it until
		// the next poll.
		m.do(PrimeWhileDown{})
	}
	m.scheduleReconnect()
}

func (m *machine) sessionEnded(e SessionEnded) {
	if !m.st.SessionUp {
		return
	}
	m.st.SessionUp = false
	m.do(SessionGone(e))
	if m.st.StepAwaitsConnect {
		// The step's own teardown; its result comes with the reconnect.
		return
	}
	m.sessionLost()
	m.scheduleReconnect()
}

// sessionLost settles the reconnect backoff when the current session is
// lost: a session that was up for at least ReconnectMax resets it (the
// reconnect is immediate), one lost sooner counts as a failed connect. A
// link or a cloud that cuts every session right after it joins would
// otherwise have the gateway dial, bind and prime in a tight loop.
func (m *machine) sessionLost() {
	if m.now.Sub(m.st.UpSince) >= m.c.ReconnectMax {
		m.st.ReconnectFails = 0
		return
	}
	m.st.ReconnectFails++
}

// bind asks for a bind + prime of the current session.
func (m *machine) bind(force, rebind bool) {
	m.st.Binding++
	m.do(Bind{Session: m.st.Session, Force: force, Rebind: rebind})
}

func (m *machine) bindFinished(e BindFinished) {
	m.st.Binding--
	if e.Primed {
		m.st.PrimeOwed = false
	} else if e.Session == m.st.Session && e.Failed {
		// No snapshot after this connect: the next tick primes, whatever
		// the ladder says (live traffic alone would never fill the store).
		m.st.PrimeOwed, m.st.OwedMark = true, e.Mark
	}
	if m.st.StepAwaitsConnect && e.Session == m.st.Session {
		// docs/spec.md W-4.7c: the step awaits resubscribe(); its result
		// is the bind's.
		m.finishStep(ladder.Result{OK: e.Bound})
	}
}

func (m *machine) supervise(e SupervisorTick) {
	if m.st.Stopping {
		return
	}
	if m.st.SessionUp && e.SilentlyDead {
		// docs/spec.md I-3.2e: an Engine.IO abort that skips the disconnect
		// callback. Replaced on the next health tick if still so: the
		// library marks a session closed an instant before it reports the
		// end, so one sighting alone may be a disconnect in flight.
		if m.st.SilentSession != m.st.Session {
			m.st.SilentSession, m.st.SilentSince = m.st.Session, m.now
		}
		return
	}
	if !m.st.SessionUp && !m.st.Connecting && m.st.ReconnectAt.IsZero() {
		m.connect(e.Cancelled)
	}
	// A live session the cloud has not bound (modules/connect failed, or
	// answered 201 accepted-not-bound) gets no live update: bind again now
	// rather than wait minutes for the zombie ladder.
	if m.st.SessionUp && m.st.Binding == 0 && m.st.Step == "" && e.HaveModules && !e.Bound {
		m.bind(false, true)
	}
}

func (m *machine) health(e HealthTick) {
	seq := m.st.SilentSession
	if seq == 0 {
		return
	}
	if !m.st.SessionUp || seq != m.st.Session || !e.SilentlyDead {
		m.st.SilentSession, m.st.SilentSince = 0, time.Time{}
		return
	}
	if m.now.Sub(m.st.SilentSince) < m.c.SilentGrace {
		return // its end may still be reported, with the real reason
	}
	m.st.SilentSession, m.st.SilentSince = 0, time.Time{}
	// docs/spec.md I-3.2e, the Engine.IO abort: down at once, the leftover
	// teardown bounded, the client replaced if it hangs.
	m.tearDown(outage.ReasonSupervisorStale, true)
	if e.Abandoned {
		m.replaceTransport()
	}
	m.sessionLost()
	m.scheduleReconnect()
}

func (m *machine) tearDown(reason string, abort bool) {
	if !m.st.SessionUp {
		return
	}
	m.st.SessionUp = false
	m.do(TearDown{Reason: reason, Abort: abort})
}

func (m *machine) replaceTransport() {
	m.st.Transport++
	m.do(ReplaceTransport{})
}

func (m *machine) finishStep(r ladder.Result) {
	step := m.st.Step
	m.st.Step, m.st.StepAwaitsConnect = "", false
	if step != "" {
		m.do(FinishStep{Step: step, Result: r})
	}
}

// runStep performs the step's session work once its forced login is done.
// Each step ends in FinishStep: at once when it cannot run, otherwise when
// the new session has been bound (or its connect failed).
func (m *machine) runStep(e StepReady) {
	if e.Aborted {
		// docs/spec.md W-4.7c to W-4.7e: a forced fresh login; if that
		// fails, arm cooldown and abort (the ladder arms it).
		m.finishStep(ladder.Result{Aborted: true})
		return
	}
	if m.st.Stopping {
		m.st.Step = ""
		return
	}
	switch e.Step {
	case ladder.HardRestart, ladder.Recycle, ladder.Rebuild, ladder.Resubscribe:
	default:
		m.st.Step = ""
		return
	}
	m.do(RunStep{Step: e.Step})
	m.st.StepAwaitsConnect = true
	switch e.Step {
	case ladder.HardRestart:
		// docs/spec.md W-4.7c, hard restart: down with force_reconnect,
		// reconnect on the same transport (new Engine.IO and namespace
		// SIDs), then bind with the new SID, listen, prime.
		m.tearDown(outage.ReasonForceReconnect, false)
	case ladder.Recycle, ladder.Rebuild:
		// docs/spec.md W-4.7d, recycle: down with hard_reset, then a new
		// Socket.IO client and a full connect. The rebuild (docs/spec.md W-4.7e) replaces
		// the "realtime manager" that holds that client and registers its
		// hooks before connecting. Here every piece of that manager is
		// already fresh on every transport replacement: a new transport
		// (Config.NewTransport, its library manager built per connect),
		// events delivered per session (nothing to register late), the
		// binding forgotten with the session, the reconnect backoff reset
		// below. So a rebuild does the same session work as a recycle;
		// what differs is the ladder's: a rebuild counts towards the
		// quarantine, and its cooldown is longer (it comes later in the
		// recycle streak the cooldown grows with).
		m.tearDown(outage.ReasonHardReset, false)
		m.replaceTransport()
	case ladder.Resubscribe:
		// docs/spec.md W-4.7g, W-4.7h: resubscribe() the current session:
		// bind it afresh and prime.
		if !m.st.SessionUp {
			m.finishStep(ladder.Result{OK: false})
			return
		}
		m.bind(true, false)
		return
	}
	m.st.ReconnectFails = 0
	m.st.ReconnectAt = time.Time{}
	m.connect(e.Cancelled)
}
