package outage

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"
)

// Module outage reasons are the source of the observation that took the
// module offline (docs/spec.md W-4.4c).
const (
	SourceREST    = "rest"
	SourceWS      = "ws"
	SourceDerived = "derived"
)

// Sources lists the module outage reasons in a fixed order; the slice is
// the caller's own.
func Sources() []string {
	return []string{SourceREST, SourceWS, SourceDerived}
}

// ErrUnknownPoll is returned by CompletePoll for a generation that was
// never begun or has already completed.
var ErrUnknownPoll = errors.New("outage: unknown or already completed module poll")

// Gateway is the module's gateway metadata as reported by the cloud.
type Gateway struct {
	Address, Interface, Version string
}

// Row is one module-list row, reduced to what connectivity needs.
type Row struct {
	Devid string
	// ConnectedAt is epoch seconds; 0 (also a null on the wire) = offline.
	ConnectedAt int64
	// Unparsed marks a row whose connectedAt could not be parsed: it is
	// skipped, not counted as seen and changes nothing
	// (docs/spec.md W-2.3c); being listed, it is not derived-missing either.
	Unparsed bool
	Gateway  Gateway
}

// Listing is the completion of one GET /v1/modules poll.
type Listing struct {
	// Err is set when the poll failed (transport, HTTP status, decoding).
	Err error
	// Recognised is false for a body of an unknown shape.
	Recognised bool
	Rows       []Row
}

// StatusEvent is one devid entry of app:module:connection:status:changed.
type StatusEvent struct {
	Devid string
	// HasConnectedAt is false for a gateway-only body.
	HasConnectedAt bool
	ConnectedAt    int64
	// Gateway is nil when the body carries none.
	Gateway *Gateway
}

// ModulesConfig configures a Modules tracker.
type ModulesConfig struct {
	// Subscribed are the devids tracked; others are ignored.
	Subscribed []string
	// Episodes receives a module episode per finished outage; nil records none.
	Episodes *Episodes
	// GetModulesFailOfflineAfter is get_modules_fail_offline_after.
	//
	// Deprecated: it has no effect (docs/spec.md I-3.1g, "Module online
	// state" rules). Unusable polls never take a module offline, however
	// many there are; callers should log a deprecation warning when it is set.
	GetModulesFailOfflineAfter int
}

type moduleState struct {
	known       bool
	online      bool
	connectedAt int64
	gateway     Gateway
	source      string
	win         window
	outages     map[string]uint64
	// wsSeq is the observation sequence of the last WS connectivity
	// observation; a poll begun before it must not overwrite it.
	wsSeq uint64
}

// Modules tracks module↔cloud online state per subscribed devid
// (docs/spec.md I-3.1a to I-3.1f, W-4.3a).
type Modules struct {
	cfg     ModulesConfig
	mods    map[string]*moduleState
	seq     uint64              // observation sequence: polls begun and WS observations
	pending map[uint64]struct{} // polls begun and not completed
	stopSeq uint64              // polls begun at or before this were invalidated by Stop
	// usableSeq is the generation of the newest applied usable listing; an
	// older completion arriving later is stale.
	usableSeq uint64
	streak    int
}

// NewModules returns a tracker in which every subscribed devid is unknown.
func NewModules(cfg ModulesConfig) *Modules {
	m := &Modules{cfg: cfg, mods: map[string]*moduleState{}, pending: map[uint64]struct{}{}}
	m.SetSubscribed(cfg.Subscribed)
	return m
}

// SetSubscribed replaces the tracked devids; new ones start unknown and
// devids no longer subscribed are forgotten.
func (m *Modules) SetSubscribed(devids []string) {
	next := make(map[string]*moduleState, len(devids))
	for _, d := range devids {
		if d == "" {
			continue
		}
		if st, ok := m.mods[d]; ok {
			next[d] = st
		} else {
			next[d] = &moduleState{outages: map[string]uint64{}}
		}
	}
	m.mods = next
}

// ModuleChange reports what an observation did to one module.
type ModuleChange struct {
	Devid  string
	Online bool
	Source string
	// OnlineChanged: the online bit flipped or became known.
	OnlineChanged bool
	// CameOnline: offline→online (a gateway triggers module-online recovery
	// on this). Unknown→online is not a return.
	CameOnline bool
	// WentOffline: online or unknown → offline; an outage window opened.
	WentOffline bool
	// MetadataChanged: connectedAt or gateway changed.
	MetadataChanged bool
	// RestoredAfter/RestoredReason describe the finished outage on CameOnline.
	RestoredAfter  time.Duration
	RestoredReason string
	Episode        *Episode
}

// ModulesResult is the outcome of one observation.
type ModulesResult struct {
	// Changes lists modules whose online bit or metadata changed, by devid.
	Changes []ModuleChange

	// Usable: a poll completion that was applied as a usable listing.
	Usable bool
	// Failure: a poll completion that was unusable (error, empty,
	// unrecognised, no subscribed row). State is kept; only the streak grows.
	Failure bool
	// FailureStreak is the streak after this observation.
	FailureStreak int
	// LogLevel is how loud the caller should log this failure: Warn for the
	// first failure of an outage window, Debug after it.
	LogLevel slog.Level

	// Discarded: a poll completion that was dropped (Stale, or begun before
	// Stop); nothing changed.
	Discarded     bool
	DiscardReason string
	// Ignored: a WS observation that changed nothing it is allowed to
	// (foreign devid, gateway-only while unknown, empty body).
	Ignored bool
}

// CameOnline returns the devids that went offline→online.
func (r ModulesResult) CameOnline() []string {
	var out []string
	for _, c := range r.Changes {
		if c.CameOnline {
			out = append(out, c.Devid)
		}
	}
	return out
}

// Discard reasons.
const (
	DiscardStopped = "stopped"
	DiscardStale   = "stale"
)

// BeginPoll registers a module-list poll about to start and returns its
// generation, to be passed to CompletePoll.
func (m *Modules) BeginPoll() uint64 {
	m.seq++
	m.pending[m.seq] = struct{}{}
	return m.seq
}

// AbandonPoll forgets the poll begun as gen without applying it: its
// answer was no observation of the modules (the cloud throttled it).
func (m *Modules) AbandonPoll(gen uint64) { delete(m.pending, gen) }

// CompletePoll applies the completion of the poll begun as gen.
//
// A completion is discarded when Stop ran after its BeginPoll (only stop
// invalidates an in-flight poll; an ordinary realtime disconnect does not),
// or when a poll begun later has already been applied as usable, so an
// older completion cannot rebuild a failure streak after a newer success.
// Rows of devids with a WS connectivity observation newer than the poll's
// begin are not applied.
func (m *Modules) CompletePoll(gen uint64, l Listing, now time.Time) (ModulesResult, error) {
	if gen != 0 && gen <= m.stopSeq {
		return ModulesResult{Discarded: true, DiscardReason: DiscardStopped, FailureStreak: m.streak}, nil
	}
	if _, ok := m.pending[gen]; !ok {
		return ModulesResult{FailureStreak: m.streak}, fmt.Errorf("%w: generation %d", ErrUnknownPoll, gen)
	}
	delete(m.pending, gen)
	if gen < m.usableSeq {
		return ModulesResult{Discarded: true, DiscardReason: DiscardStale, FailureStreak: m.streak}, nil
	}

	// seen: subscribed rows that are applied. present: subscribed devids
	// listed at all; a row with an unparseable connectedAt is present (so it
	// is not derived-missing) but not seen: it changes nothing and does not
	// make the listing usable.
	seen := map[string]Row{}
	present := map[string]bool{}
	if l.Err == nil && l.Recognised {
		for _, row := range l.Rows {
			if _, ok := m.mods[row.Devid]; !ok {
				continue
			}
			present[row.Devid] = true
			if !row.Unparsed {
				seen[row.Devid] = row
			}
		}
	}
	if len(seen) == 0 {
		m.streak++
		r := ModulesResult{Failure: true, FailureStreak: m.streak, LogLevel: slog.LevelDebug}
		if m.streak == 1 {
			r.LogLevel = slog.LevelWarn
		}
		return r, nil
	}

	m.streak = 0
	m.usableSeq = gen
	r := ModulesResult{Usable: true}
	for _, devid := range m.devids() {
		st := m.mods[devid]
		if st.wsSeq > gen {
			continue // a newer WS observation wins over this older poll
		}
		var c ModuleChange
		if row, ok := seen[devid]; ok {
			c = m.apply(devid, st, row.ConnectedAt != 0, row.ConnectedAt, &row.Gateway, SourceREST, now)
		} else if present[devid] {
			continue
		} else {
			// Derived-missing: the listing has a sibling but not this module.
			c = m.apply(devid, st, false, st.connectedAt, nil, SourceDerived, now)
		}
		if c.OnlineChanged || c.MetadataChanged {
			r.Changes = append(r.Changes, c)
		}
	}
	return r, nil
}

// ObserveWS applies one devid entry of a connection-status event.
func (m *Modules) ObserveWS(ev StatusEvent, now time.Time) ModulesResult {
	st, ok := m.mods[ev.Devid]
	if !ok {
		return ModulesResult{Ignored: true, FailureStreak: m.streak}
	}
	var c ModuleChange
	switch {
	case ev.HasConnectedAt:
		m.seq++
		st.wsSeq = m.seq
		c = m.apply(ev.Devid, st, ev.ConnectedAt != 0, ev.ConnectedAt, ev.Gateway, SourceWS, now)
	case ev.Gateway != nil && st.known:
		// Gateway-only: metadata only, and only when the online bit is known.
		c = ModuleChange{Devid: ev.Devid, Online: st.online, Source: st.source}
		if st.gateway != *ev.Gateway {
			st.gateway = *ev.Gateway
			c.MetadataChanged = true
		}
	default:
		return ModulesResult{Ignored: true, FailureStreak: m.streak}
	}
	r := ModulesResult{FailureStreak: m.streak}
	if c.OnlineChanged || c.MetadataChanged {
		r.Changes = []ModuleChange{c}
	}
	return r
}

// apply sets one observation; gw nil keeps the gateway metadata.
func (m *Modules) apply(devid string, st *moduleState, online bool, connectedAt int64, gw *Gateway, source string, now time.Time) ModuleChange {
	c := ModuleChange{Devid: devid, Online: online, Source: source}
	wasKnown, wasOnline := st.known, st.online
	if st.connectedAt != connectedAt {
		c.MetadataChanged = true
		st.connectedAt = connectedAt
	}
	if gw != nil && st.gateway != *gw {
		c.MetadataChanged = true
		st.gateway = *gw
	}
	st.known, st.online, st.source = true, online, source
	switch {
	case !online && (!wasKnown || wasOnline):
		// Online→offline, or a first observation that is offline.
		c.OnlineChanged, c.WentOffline = true, true
		st.win.open(now, source)
		st.outages[source]++
	case online && wasKnown && !wasOnline:
		since, dur, reason := st.win.close(now)
		ep := m.cfg.Episodes.Add(Episode{Layer: LayerModule, StartedAt: since, EndedAt: now, DownFor: dur, Reason: reason, Devid: devid})
		c.OnlineChanged, c.CameOnline = true, true
		c.RestoredAfter, c.RestoredReason, c.Episode = dur, reason, &ep
	case online && !wasKnown:
		c.OnlineChanged = true
	}
	return c
}

// Stop invalidates every in-flight poll and resets the failure streak
// (stop() bumps the lifecycle generation). Module state is kept.
func (m *Modules) Stop() {
	m.stopSeq = m.seq
	m.pending = map[uint64]struct{}{}
	m.streak = 0
}

// Online returns the online bit of devid and whether it is known.
func (m *Modules) Online(devid string) (online, known bool) {
	st, ok := m.mods[devid]
	if !ok {
		return false, false
	}
	return st.online, st.known
}

// AllOffline reports whether every subscribed module is known to be
// offline; an unknown module counts as online, and no modules is false.
func (m *Modules) AllOffline() bool {
	if len(m.mods) == 0 {
		return false
	}
	for _, st := range m.mods {
		if !st.known || st.online {
			return false
		}
	}
	return true
}

// FailureStreak is the number of unusable polls in a row.
func (m *Modules) FailureStreak() int { return m.streak }

// ModuleSnapshot is a copy of one module's state.
type ModuleSnapshot struct {
	Devid       string
	Known       bool
	Online      bool
	ConnectedAt int64
	Gateway     Gateway
	// Source of the last applied observation (rest, ws, derived).
	Source string
	Outage Record
	// Outages counts outages begun, by reason.
	Outages map[string]uint64
}

// ModulesSnapshot is a copy of the tracker for readers.
type ModulesSnapshot struct {
	Modules       []ModuleSnapshot // by devid
	FailureStreak int
}

// Snapshot returns a copy; outage durations are computed from now.
func (m *Modules) Snapshot(now time.Time) ModulesSnapshot {
	s := ModulesSnapshot{FailureStreak: m.streak}
	for _, d := range m.devids() {
		st := m.mods[d]
		s.Modules = append(s.Modules, ModuleSnapshot{
			Devid: d, Known: st.known, Online: st.online, ConnectedAt: st.connectedAt,
			Gateway: st.gateway, Source: st.source, Outage: st.win.record(now),
			Outages: copyCounts(st.outages),
		})
	}
	return s
}

func (m *Modules) devids() []string {
	out := make([]string, 0, len(m.mods))
	for d := range m.mods {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}
