package exporter

import (
	"strconv"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/fleet"
	"github.com/bragerone/bragerone_exporter/history"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// FleetSource turns the account's status and the store's per-module counts
// into a Snapshot at scrape time, as GatewaySource does for one gateway.
// Account, when set, adds the account's standing with the cloud (its
// login, token and throttling; in serve the REST client's, ClientAccount).
type FleetSource struct {
	Status  func() *fleet.Status
	Store   *store.Store
	Account collector.AccountSource
	Now     func() time.Time
	// Departures remembers the objects and modules that left (nil: none
	// remembered).
	Departures *collector.Departures
}

// Snapshot implements collector.SnapshotSource.
func (f FleetSource) Snapshot() collector.Snapshot {
	now := time.Now()
	if f.Now != nil {
		now = f.Now()
	}
	var stats map[string]store.ModuleStats
	if f.Store != nil {
		stats = f.Store.Stats()
	}
	s := FromFleet(f.Status(), stats, now)
	f.Departures.Observe(&s)
	withAccount(&s, f.Account)
	return s
}

// withAccount adds the account's standing read from src (nil: none) to s.
// The token's expiry is then the account's: a snapshot never speaks of a
// token the account does not hold.
func withAccount(s *collector.Snapshot, src collector.AccountSource) {
	if src == nil {
		return
	}
	a := src.Account()
	s.Account = &a
	s.TokenExpiry = time.Time{}
	if a.HasToken {
		s.TokenExpiry = a.TokenExpires
	}
}

// AccountReader is what ClientAccount reads: *cloudclient.Client.
type AccountReader interface {
	Account() cloudclient.AccountState
}

// ClientAccount is the REST client's account gate as a
// collector.AccountSource, read at scrape time.
type ClientAccount struct {
	Client AccountReader
}

// Account implements collector.AccountSource: the client's standing is
// the collector's (cloudapi.AccountState), read as it is.
func (c ClientAccount) Account() collector.AccountState { return c.Client.Account() }

// GatewaySource turns the gateway's published status and the store's
// per-module counts into a Snapshot at scrape time. Durations are recomputed
// at the scrape's now, so a scrape between two gateway publications still
// reports how long an outage has lasted up to this moment.
type GatewaySource struct {
	Status  func() *realtime.Status
	Store   *store.Store
	Account collector.AccountSource // nil: the account is not exported
	Now     func() time.Time
}

// Snapshot implements collector.SnapshotSource.
func (g GatewaySource) Snapshot() collector.Snapshot {
	now := time.Now()
	if g.Now != nil {
		now = g.Now()
	}
	var stats map[string]store.ModuleStats
	if g.Store != nil {
		stats = g.Store.Stats()
	}
	s := FromStatus(g.Status(), stats, now)
	withAccount(&s, g.Account)
	return s
}

// FromStatus converts one gateway's status to a Snapshot as of now: the
// snapshot of an account with that one object. It copies every map and
// slice, so the result shares nothing with the gateway.
func FromStatus(st *realtime.Status, stats map[string]store.ModuleStats, now time.Time) collector.Snapshot {
	if st == nil {
		return collector.Snapshot{Now: now}
	}
	s := collector.Snapshot{Now: now, TokenExpiry: st.TokenExpiry}
	addObject(&s, cloudclient.Object{ID: st.ObjectID}, st, stats, now)
	return s
}

// FromFleet converts the account's status to a Snapshot as of now: one
// object per watched object, their modules and episodes.
func FromFleet(st *fleet.Status, stats map[string]store.ModuleStats, now time.Time) collector.Snapshot {
	if st == nil {
		return collector.Snapshot{Now: now}
	}
	s := collector.Snapshot{Now: now, TokenExpiry: st.TokenExpiry, ObjectListFailureStreak: st.ListFailureStreak}
	for _, o := range st.Objects {
		if o.Gateway != nil {
			addObject(&s, o.Object, o.Gateway, stats, now)
		}
	}
	if st.Listed {
		s.Unwatched = make([]int, 0, len(st.Unwatched))
		for _, o := range st.Unwatched {
			s.Unwatched = append(s.Unwatched, o.ID)
		}
	}
	return s
}

// addObject adds one object's session state, modules and episodes to s.
func addObject(s *collector.Snapshot, object cloudclient.Object, st *realtime.Status, stats map[string]store.ModuleStats, now time.Time) {
	obj := collector.ObjectState{
		ID:   object.ID,
		Name: object.Name,
		Session: collector.SessionState{
			Up:               st.Session.Up,
			Outage:           outageAt(st.Session.Outage, now),
			OutagesByReason:  copyCounts(st.Session.Outages),
			Blinks:           st.Session.Blinks,
			ReconnectFailure: st.Session.ConnectFailure,
		},
		Push: collector.PushState{
			Known:          st.Push.State != outage.PushUnknown,
			Healthy:        st.Push.State == outage.PushHealthy,
			LastLiveUpdate: st.LastLiveUpdate,
			LastUpdate:     st.LastUpdate,
		},
		Recovery: collector.RecoveryState{
			Actions:           map[collector.ActionKey]uint64{},
			PrimeStreak:       st.Ladder.PrimeStreak,
			HardRestartStreak: st.Ladder.HardRestartStreak,
			RecycleStreak:     st.Ladder.RecycleStreak,
			RebuildCount:      st.Ladder.RebuildCount,
		},
		PollFailureStreak: st.PollFailureStreak,
		PrimeFailures:     copyCounts(st.PrimeFailures),
		Events:            make(map[string]uint64, len(st.Events)),
		Connected:         st.Connected,
		Binding:           st.Binding,
		Ready:             st.Ready,
		Recovering:        st.Recovering,
	}
	if obj.ID == 0 {
		obj.ID = st.ObjectID
	}
	for k, n := range st.Events {
		obj.Events[k.String()] += n
	}
	if st.Push.HasResumed {
		obj.Push.LastResumedAfter = st.Push.LastResumedAfter
	}
	if st.Push.HasStaleFor {
		// The zombie's silence grows between publications: carry it to now.
		obj.Push.StaleFor = st.Push.LiveStaleFor + max(0, now.Sub(st.At))
	}
	if !st.Ladder.CooldownUntil.IsZero() && st.Ladder.CooldownUntil.After(now) {
		obj.Recovery.CooldownLeft = st.Ladder.CooldownUntil.Sub(now)
	}
	if !st.Ladder.QuarantineUntil.IsZero() && st.Ladder.QuarantineUntil.After(now) {
		obj.Recovery.Quarantined = true
		obj.Recovery.QuarantineLeft = st.Ladder.QuarantineUntil.Sub(now)
	}
	for _, step := range ladder.RecoverySteps() {
		for _, o := range ladder.Outcomes() {
			if n := st.Ladder.Count(step, o); n > 0 {
				obj.Recovery.Actions[collector.ActionKey{Step: string(step), Result: o.String()}] = n
			}
		}
	}
	s.Objects = append(s.Objects, obj)
	for _, m := range st.Modules {
		ms := collector.ModuleState{
			Devid:           m.Devid,
			ObjectID:        obj.ID,
			Name:            m.Name,
			Title:           m.Title,
			Version:         m.Version,
			GatewayVersion:  m.Gateway.Version,
			OnlineKnown:     m.Known,
			Online:          m.Online,
			ConnectedAt:     m.ConnectedAt,
			Outage:          outageAt(m.Outage, now),
			OutagesByReason: copyCounts(m.Outages),
			Alarms:          m.Alarms,
			AlarmsKnown:     m.AlarmsKnown,
		}
		if m.ActiveAlarmsKnown {
			ms.ActiveAlarmsKnown = true
			for _, a := range m.ActiveAlarms {
				ms.ActiveAlarms = append(ms.ActiveAlarms, collector.Alarm{Code: strconv.Itoa(a.Code), Symbol: a.Symbol, Since: a.Since})
			}
		}
		ms.History = moduleHistory(m.History)
		if ps, ok := stats[m.Devid]; ok {
			ms.LastUpdate, ms.Params, ms.NonNumeric, ms.Refused = ps.LastUpdate, ps.Params, ps.NonNumeric, ps.Refused
		}
		s.Modules = append(s.Modules, ms)
	}
	for _, e := range st.Episodes {
		s.Episodes = append(s.Episodes, collector.Episode{
			Layer: string(e.Layer), ObjectID: obj.ID, Devid: e.Devid, Reason: e.Reason, ID: e.ID,
			StartedAt: e.StartedAt, EndedAt: e.EndedAt, DownFor: e.DownFor,
		})
	}
}

// moduleHistory copies a module's published history; nil stays nil (not
// read yet).
func moduleHistory(h *realtime.History) *collector.ModuleHistory {
	if h == nil {
		return nil
	}
	out := &collector.ModuleHistory{
		AlarmCounts:       copyCounts(h.Alarms.Counts),
		AlarmLastDuration: make(map[string]time.Duration, len(h.Alarms.LastDuration)),
		ChangesByState:    copyCounts(h.Activity.ByState),
		LastChange:        h.Activity.LastChange,
		RowsDropped:       map[string]uint64{history.ListAlarmHistory: h.Alarms.Dropped, history.ListActivity: h.Activity.Dropped},
	}
	for code, d := range h.Alarms.LastDuration {
		out.AlarmLastDuration[code] = d
	}
	for _, o := range h.Alarms.Recent {
		out.Alarms = append(out.Alarms, collector.AlarmOccurrence{Code: o.Code, Symbol: o.Symbol, Start: o.Start, End: o.End})
	}
	for _, c := range h.Activity.Recent {
		out.Changes = append(out.Changes, collector.Change{At: c.At, Register: c.Register, Symbol: c.Symbol,
			Old: c.Old, New: c.New, Unit: c.Unit, User: c.User, State: c.State})
	}
	return out
}

func outageAt(r outage.Record, now time.Time) collector.Outage {
	o := collector.Outage{Down: r.Down, HasLast: r.HasLast, LastDownFor: r.LastDownFor, LastReason: r.LastReason}
	if r.Down {
		o.DownSince, o.Reason = r.DownSince, r.Reason
		o.DownFor = max(0, now.Sub(r.DownSince))
	}
	return o
}

func copyCounts(in map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
