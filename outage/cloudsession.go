package outage

import (
	"fmt"
	"time"
)

// DefaultHysteresis is cloud_session_down_hysteresis_s (docs/spec.md I-8c,
// Limits: "Session-down hysteresis default 15 s (0 disables it)").
const DefaultHysteresis = 15 * time.Second

// SessionState is the phase of the exporter↔cloud session machine.
type SessionState int

// Session phases. Only Up and PendingDown are published as "up".
const (
	// SessionIdle: not started, or stopped. Published as down, without an
	// open outage window.
	SessionIdle SessionState = iota
	// SessionUp: connected and joined.
	SessionUp
	// SessionPendingDown: disconnected, inside the hysteresis window; still
	// published as up.
	SessionPendingDown
	// SessionDown: an outage is published.
	SessionDown
)

func (s SessionState) String() string {
	switch s {
	case SessionIdle:
		return "idle"
	case SessionUp:
		return "up"
	case SessionPendingDown:
		return "pending_down"
	case SessionDown:
		return "down"
	}
	return fmt.Sprintf("SessionState(%d)", int(s))
}

// SessionConfig configures a Session. The zero value publishes a disconnect
// at once (hysteresis 0); use DefaultSessionConfig for the spec default.
type SessionConfig struct {
	// Hysteresis is how long a disconnect may last before the outage is
	// published; a reconnect inside it is a blink. ≤ 0 publishes at once.
	Hysteresis time.Duration
	// Episodes receives a cloud episode per finished outage; nil records none.
	Episodes *Episodes
}

// DefaultSessionConfig returns the spec defaults with episodes recorded into eps.
func DefaultSessionConfig(eps *Episodes) SessionConfig {
	return SessionConfig{Hysteresis: DefaultHysteresis, Episodes: eps}
}

// Session tracks whether the exporter's Socket.IO session is up, with the
// spec's down-hysteresis (docs/spec.md I-3.2a to I-3.2c).
type Session struct {
	cfg   SessionConfig
	state SessionState

	upSince time.Time // start of the published up-window

	pendingSince  time.Time
	pendingReason string

	// connectFailure is the classified reason of the latest failed connect
	// since the session was last up: why it is still down, beside why it
	// went down.
	connectFailure string

	win     window
	blinks  uint64
	outages map[string]uint64
}

// NewSession returns an idle session machine.
func NewSession(cfg SessionConfig) *Session {
	return &Session{cfg: cfg, outages: map[string]uint64{}}
}

// SessionResult says what one event did to the published session state.
type SessionResult struct {
	// Changed is true when the published up/down bit flipped (at least once:
	// an event arriving after a missed hysteresis deadline can publish the
	// pending outage and end it in the same call).
	Changed bool
	// Up is the published bit after the event.
	Up    bool
	State SessionState

	// WentDown: an outage was published by this event (with Reason and
	// DownSince). Stop while up publishes down with reason "stop".
	WentDown  bool
	Reason    string
	DownSince time.Time

	// Restored: down→up. RestoredAfter and RestoredReason feed the WARN
	// "cloud session restored after X s (reason=…)".
	Restored       bool
	RestoredAfter  time.Duration
	RestoredReason string

	// Pending: a disconnect opened the hysteresis window.
	Pending bool
	// Blink: a reconnect inside the hysteresis window was absorbed.
	Blink bool
	// Ignored: the event had no effect (duplicate disconnect, event while idle…).
	Ignored bool

	// Episode is set when an outage was finalised into last_*.
	Episode *Episode
}

func (s *Session) result() SessionResult {
	return SessionResult{Up: s.publishedUp(), State: s.state}
}

// enter moves the machine to st. The latest connect failure describes a
// session trying to come back, so it ends when the session is up again or
// stopped.
func (s *Session) enter(st SessionState) {
	s.state = st
	if st == SessionUp || st == SessionIdle {
		s.connectFailure = ""
	}
}

func (s *Session) publishedUp() bool {
	return s.state == SessionUp || s.state == SessionPendingDown
}

// Connected reports a Socket.IO connect plus namespace join.
func (s *Session) Connected(now time.Time) SessionResult {
	adv, advanced := s.advance(now)
	switch s.state {
	case SessionIdle:
		s.enter(SessionUp)
		s.upSince = now
		r := s.result()
		r.Changed = true
		return r
	case SessionPendingDown:
		// Blink: no outage, no last_*, no episode; the up-window goes on.
		s.enter(SessionUp)
		s.pendingSince, s.pendingReason = time.Time{}, ""
		s.blinks++
		r := s.result()
		r.Blink = true
		return r
	case SessionDown:
		since, dur, reason := s.win.close(now)
		ep := s.cfg.Episodes.Add(Episode{Layer: LayerCloud, StartedAt: since, EndedAt: now, DownFor: dur, Reason: reason})
		s.enter(SessionUp)
		s.upSince = now
		r := s.result()
		r.Changed = true
		r.Restored = true
		r.RestoredAfter = dur
		r.RestoredReason = reason
		r.Episode = &ep
		if advanced {
			// The caller missed the deadline: the outage was published and
			// ended within this call; report both halves.
			r.WentDown, r.Reason, r.DownSince = true, adv.Reason, adv.DownSince
		}
		return r
	}
	r := s.result()
	r.Ignored = true
	return r
}

// Disconnected reports a session loss with its classified reason. Inside
// the hysteresis the outage is pending; a duplicate while pending or down
// is a no-op.
func (s *Session) Disconnected(now time.Time, reason string) SessionResult {
	if adv, advanced := s.advance(now); advanced {
		return adv
	}
	if s.state != SessionUp {
		r := s.result()
		r.Ignored = true
		return r
	}
	reason = NormalizeReason(reason)
	if s.cfg.Hysteresis <= 0 {
		return s.publishDown(now, reason)
	}
	s.enter(SessionPendingDown)
	s.pendingSince, s.pendingReason = now, reason
	r := s.result()
	r.Pending = true
	return r
}

// ConnectFailed records the classified reason of a failed connect attempt
// (handshake_503, connect_error, login_unreachable, …) while the session is
// not up, the first attempts after start included. It changes no published
// state: the outage keeps the reason the session ended with, and this one is
// published beside it until a connect succeeds. A reason outside
// ConnectFailureReasons is recorded as connect_error.
func (s *Session) ConnectFailed(reason string) {
	if s.state == SessionUp {
		return
	}
	if !IsConnectFailureReason(reason) {
		reason = ReasonConnectError
	}
	s.connectFailure = reason
}

// Abort reports an Engine.IO abort that skipped the disconnect callback:
// down is published at once, without hysteresis. An abort while a
// disconnect is pending publishes that disconnect (its time and reason).
func (s *Session) Abort(now time.Time, reason string) SessionResult {
	if adv, advanced := s.advance(now); advanced {
		return adv
	}
	switch s.state {
	case SessionUp:
		return s.publishDown(now, NormalizeReason(reason))
	case SessionPendingDown:
		return s.publishDown(s.pendingSince, s.pendingReason)
	}
	r := s.result()
	r.Ignored = true
	return r
}

// Tick publishes a pending outage once the hysteresis has elapsed. Call it
// at NextDeadline (or on any regular tick).
func (s *Session) Tick(now time.Time) SessionResult {
	if r, ok := s.advance(now); ok {
		return r
	}
	r := s.result()
	r.Ignored = true
	return r
}

// advance publishes a pending disconnect whose hysteresis has run out, so
// every event sees the state as of now.
func (s *Session) advance(now time.Time) (SessionResult, bool) {
	if s.state != SessionPendingDown || now.Sub(s.pendingSince) < s.cfg.Hysteresis {
		return SessionResult{}, false
	}
	return s.publishDown(s.pendingSince, s.pendingReason), true
}

func (s *Session) publishDown(since time.Time, reason string) SessionResult {
	s.win.open(since, reason)
	return s.goDown(SessionDown, since, reason)
}

// goDown leaves a published-up session for to (down, or idle on stop),
// counts the outage under reason and reports it as gone down at since.
func (s *Session) goDown(to SessionState, since time.Time, reason string) SessionResult {
	s.enter(to)
	s.pendingSince, s.pendingReason = time.Time{}, ""
	s.upSince = time.Time{}
	s.outages[reason]++
	r := s.result()
	r.Changed, r.WentDown, r.Reason, r.DownSince = true, true, reason, since
	return r
}

// Stop reports stop(): down at once with reason "stop". Stopping while up
// (or pending) publishes down and drops the window without touching last_*;
// stopping while down finalises the open outage into last_* with its own
// reason and records its episode, so a later start reports no restore that
// spans the stopped time (docs/spec.md W-4.4b, W-7.18).
func (s *Session) Stop(now time.Time) SessionResult {
	adv, advanced := s.advance(now)
	switch s.state {
	case SessionUp, SessionPendingDown:
		return s.goDown(SessionIdle, now, ReasonStop)
	case SessionDown:
		since, dur, reason := s.win.close(now)
		ep := s.cfg.Episodes.Add(Episode{Layer: LayerCloud, StartedAt: since, EndedAt: now, DownFor: dur, Reason: reason})
		s.enter(SessionIdle)
		r := s.result()
		r.Episode = &ep
		if advanced {
			r.Changed, r.WentDown, r.Reason, r.DownSince = true, true, adv.Reason, adv.DownSince
		}
		return r
	}
	r := s.result()
	r.Ignored = true
	return r
}

// NextDeadline is when a pending outage will be published, if one is pending.
func (s *Session) NextDeadline() (time.Time, bool) {
	if s.state != SessionPendingDown {
		return time.Time{}, false
	}
	return s.pendingSince.Add(s.cfg.Hysteresis), true
}

// Link is the view of the session that push health needs.
type Link struct {
	Up      bool
	UpSince time.Time
}

// Link returns the published up bit and the start of the current up-window.
// A blink does not start a new up-window.
func (s *Session) Link() Link {
	if !s.publishedUp() {
		return Link{}
	}
	return Link{Up: true, UpSince: s.upSince}
}

// SessionSnapshot is a copy of the session machine for readers.
type SessionSnapshot struct {
	State   SessionState
	Up      bool
	UpSince time.Time
	// PendingSince/PendingReason describe a disconnect inside the hysteresis.
	PendingSince  time.Time
	PendingReason string
	Outage        Record
	// ConnectFailure is the classified reason of the latest failed connect
	// since the session was last up ("" when none failed): why it is still
	// down, while Outage.Reason says why it went down.
	ConnectFailure string
	Blinks         uint64
	// Outages counts published outages by reason.
	Outages map[string]uint64
}

// Snapshot returns a copy; Outage.DownFor is computed from now.
func (s *Session) Snapshot(now time.Time) SessionSnapshot {
	return SessionSnapshot{
		State:          s.state,
		Up:             s.publishedUp(),
		UpSince:        s.Link().UpSince,
		PendingSince:   s.pendingSince,
		PendingReason:  s.pendingReason,
		Outage:         s.win.record(now),
		ConnectFailure: s.connectFailure,
		Blinks:         s.blinks,
		Outages:        copyCounts(s.outages),
	}
}
