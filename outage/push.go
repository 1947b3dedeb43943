package outage

import (
	"fmt"
	"time"
)

// DefaultStaleAfter is the live-silence threshold (docs/spec.md I-3.3a, I-8b,
// Limits: "Live-silence threshold before zombie prime 180 s").
const DefaultStaleAfter = 180 * time.Second

// ReasonLiveStale is the reason of every live_stale episode.
const ReasonLiveStale = "live_stale"

// PushState is the tri-state live push health.
type PushState int

// Push health states; Unknown is exported as an absent series.
const (
	PushUnknown PushState = iota
	PushHealthy
	PushUnhealthy
)

func (p PushState) String() string {
	switch p {
	case PushUnknown:
		return "unknown"
	case PushHealthy:
		return "healthy"
	case PushUnhealthy:
		return "unhealthy"
	}
	return fmt.Sprintf("PushState(%d)", int(p))
}

// PushConfig configures live push health.
type PushConfig struct {
	// StaleAfter is the live silence after which push is unhealthy while the
	// session is up. ≤ 0: stale detection is off and an up session is
	// always healthy (docs/spec.md W-4.6a).
	StaleAfter time.Duration
	// Episodes receives a live_stale episode per resume; nil records none.
	Episodes *Episodes
}

// DefaultPushConfig returns the spec default with episodes recorded into eps.
func DefaultPushConfig(eps *Episodes) PushConfig {
	return PushConfig{StaleAfter: DefaultStaleAfter, Episodes: eps}
}

// Push derives live push health from the session link and the time of the
// last live parameter update. It is a separate signal from the session and
// module online bits.
type Push struct {
	cfg       PushConfig
	lastLive  time.Time
	published PushState

	hasResumed       bool
	lastResumedAfter time.Duration
}

// NewPush returns a push health machine that has seen no live update.
func NewPush(cfg PushConfig) *Push {
	return &Push{cfg: cfg}
}

// PushStatus is the derived health at one instant.
type PushStatus struct {
	State PushState
	// HasStaleFor/LiveStaleFor: the zombie age, only while the session is up
	// and push is unhealthy; never set while the session is down.
	HasStaleFor  bool
	LiveStaleFor time.Duration
	// HasResumed/LastResumedAfter: the gap of the last resume.
	HasResumed       bool
	LastResumedAfter time.Duration
	// LastLive is the last live update (zero when none was seen).
	LastLive time.Time
}

// PushResult reports a change of the published push health.
type PushResult struct {
	Status PushStatus
	// Changed: the state differs from the last published one; From is that one.
	Changed bool
	From    PushState
	// Resumed: a live update ended a stale gap ≥ StaleAfter within the same
	// up-window ("live ParamUpdate resumed after X s"); ResumedAfter is the gap.
	Resumed      bool
	ResumedAfter time.Duration
	Episode      *Episode
}

// Status computes the health at now without changing anything
// (docs/spec.md I-3.3a to I-3.3c, W-4.6a, rules in table order).
func (p *Push) Status(now time.Time, link Link) PushStatus {
	st := PushStatus{HasResumed: p.hasResumed, LastResumedAfter: p.lastResumedAfter, LastLive: p.lastLive}
	switch {
	case !link.Up:
		// Session down: unhealthy, never a stale healthy, no stale age.
		st.State = PushUnhealthy
	case p.cfg.StaleAfter <= 0:
		st.State = PushHealthy
	case p.lastLive.IsZero() || p.lastLive.Before(link.UpSince):
		// No live update stamped since the current up-window began: too
		// early to tell, until the window itself is StaleAfter old. Then it
		// is a zombie like any other (docs/spec.md I-3.3a: "no live parameter
		// update for 180 s, session still up"), or a zombie that survived a
		// reconnect would hide behind "unknown" for good.
		silent := nonNegative(now.Sub(link.UpSince))
		if link.UpSince.IsZero() || silent < p.cfg.StaleAfter {
			st.State = PushUnknown
			break
		}
		st.State = PushUnhealthy
		st.HasStaleFor = true
		st.LiveStaleFor = silent
	default:
		age := nonNegative(now.Sub(p.lastLive))
		if age >= p.cfg.StaleAfter {
			st.State = PushUnhealthy
			st.HasStaleFor = true
			st.LiveStaleFor = age
		} else {
			st.State = PushHealthy
		}
	}
	return st
}

// Evaluate recomputes the health at now and reports a flip against the last
// published state. Call it on ticks and on session changes.
func (p *Push) Evaluate(now time.Time, link Link) PushResult {
	st := p.Status(now, link)
	r := PushResult{Status: st, From: p.published, Changed: st.State != p.published}
	p.published = st.State
	return r
}

// LiveUpdate stamps a live parameter update (a pushed delta or snapshot
// with at least one parameter; REST primes are not live) and reports a
// resume when it ends a stale gap within the same up-window.
func (p *Push) LiveUpdate(now time.Time, link Link) PushResult {
	prev := p.lastLive
	var resumed bool
	var gap time.Duration
	var ep *Episode
	if link.Up && p.cfg.StaleAfter > 0 && !link.UpSince.IsZero() {
		// The gap runs from the last live update of this up-window, or from
		// the window's start when there was none.
		from := prev
		if from.IsZero() || from.Before(link.UpSince) {
			from = link.UpSince
		}
		gap = nonNegative(now.Sub(from))
		if gap >= p.cfg.StaleAfter {
			resumed = true
			p.hasResumed = true
			p.lastResumedAfter = gap
			e := p.cfg.Episodes.Add(Episode{Layer: LayerLiveStale, StartedAt: from, EndedAt: now, DownFor: gap, Reason: ReasonLiveStale})
			ep = &e
		}
	}
	if now.After(p.lastLive) {
		p.lastLive = now
	}
	r := p.Evaluate(now, link)
	r.Resumed, r.ResumedAfter, r.Episode = resumed, gap, ep
	if !resumed {
		r.ResumedAfter = 0
	}
	return r
}

// Snapshot returns the health at now (same as Status).
func (p *Push) Snapshot(now time.Time, link Link) PushStatus {
	return p.Status(now, link)
}
