package realtime

import (
	"maps"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
)

// Status is the gateway's published health picture: a deep copy readers may
// keep. Durations are as of At; readers that want them at another instant
// recompute them from the timestamps.
type Status struct {
	At         time.Time
	ObjectID   int
	Subscribed []string

	Session outage.SessionSnapshot
	// Connected: a realtime session is open now (the published Session.Up
	// stays true inside the hysteresis).
	Connected    bool
	NamespaceSID string
	Push         outage.PushStatus
	// Binding counts resubscribes (bind + prime) in flight: 0 once the
	// session's bind and the prime after it have finished.
	Binding int

	Modules           []ModuleStatus
	PollFailureStreak int

	Ladder         ladder.State
	Recovering     string // step in flight, "" when none
	CooldownLeft   time.Duration
	QuarantineLeft time.Duration

	Episodes       []outage.Episode
	TokenExpiry    time.Time // zero when the token never expires or there is none
	LastUpdate     time.Time // any source
	LastLiveUpdate time.Time
	DroppedEvents  int64
	DecodeErrors   int64
	// PrimeFailures counts primes that failed after their retries, by
	// trigger (every trigger of PrimeTriggers, from 0).
	PrimeFailures map[string]uint64
	Ready         bool
	// Events counts the realtime events of this gateway's sessions by kind.
	Events map[cloudapi.EventKind]uint64
}

// ModuleStatus is one watched module.
type ModuleStatus struct {
	outage.ModuleSnapshot
	Name, Title, Version string
	Alarms               int
	AlarmsKnown          bool

	// ActiveAlarms is the module's last active alarm list, by code; shared,
	// never changed. ActiveAlarmsKnown is false until a list was read.
	ActiveAlarms      []Alarm
	ActiveAlarmsKnown bool

	// History is what the module's alarm lists and activity log said since
	// the gateway began watching it; nil until one was read. Shared, never
	// changed.
	History *History

	// DeviceMenu and Permissions are the module row's "deviceMenu" and
	// "permissions": which menu of the web app describes the module and
	// what it may show. Valid once the module was seen in a listing
	// (Listed); Permissions is shared with the listing and never changed.
	DeviceMenu  int
	Permissions []string
	Listed      bool
}

// publish builds and stores a fresh Status; called on the loop.
func (g *Gateway) publish() {
	now := g.cfg.Now()
	st := &Status{
		At:                now,
		ObjectID:          g.objectID,
		Subscribed:        append([]string(nil), g.subscribed...),
		Session:           g.session.Snapshot(now),
		Connected:         g.sess != nil,
		Binding:           g.life.Binding,
		Push:              g.push.Status(now, g.session.Link()),
		Ladder:            g.ladder,
		Recovering:        string(g.life.Step),
		CooldownLeft:      g.ladder.CooldownLeft(now),
		Episodes:          g.episodes.Snapshot(),
		DroppedEvents:     g.overflowed,
		DecodeErrors:      g.decodeErrors,
		PrimeFailures:     maps.Clone(g.primeFailures),
		Ready:             g.primedOnce(),
		PollFailureStreak: g.modules.FailureStreak(),
	}
	if g.sess != nil {
		st.NamespaceSID = g.sess.NamespaceSID()
	}
	if g.ladder.Quarantined(now) {
		st.QuarantineLeft = g.ladder.QuarantineUntil.Sub(now)
	}
	if tok, ok := g.client.Token(); ok {
		st.TokenExpiry = tok.ExpiresAt
	}
	st.LastUpdate, st.LastLiveUpdate = g.lastUpdates()
	st.Events = maps.Clone(g.events)
	mods := g.modules.Snapshot(now)
	for _, m := range mods.Modules {
		ms := ModuleStatus{ModuleSnapshot: m}
		if meta, ok := g.meta[m.Devid]; ok {
			ms.Name, ms.Title, ms.Version = meta.Name, meta.Title, meta.Version
			ms.DeviceMenu, ms.Permissions, ms.Listed = meta.DeviceMenu, meta.Permissions, true
		}
		ms.ActiveAlarms, ms.ActiveAlarmsKnown = g.activeAlarms[m.Devid]
		ms.Alarms, ms.AlarmsKnown = g.alarms[m.Devid]
		if h := g.history[m.Devid]; h != nil {
			ms.History = h.snap
		}
		st.Modules = append(st.Modules, ms)
	}
	g.status.Store(st)
}
