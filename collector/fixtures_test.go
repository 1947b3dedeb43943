package collector

import (
	"math"
	"testing"
	"time"
)

// t0 is the fixed "now" of every fixture snapshot.
var t0 = time.Date(2026, 11, 21, 14, 0, 0, 0, time.UTC)

// paramList is a parameter source backed by a slice, in the order given.
type paramList []storedParam

type storedParam struct {
	devid, pool, param string
	value              float64
	numeric            bool
}

func (l paramList) ForEachParam(fn func(devid, pool, param string, value float64, numeric bool)) {
	for _, p := range l {
		fn(p.devid, p.pool, p.param, p.value, p.numeric)
	}
}

func num(devid, key string, v float64) storedParam {
	pool, param := splitKey(key)
	return storedParam{devid: devid, pool: pool, param: param, value: v, numeric: true}
}

func text(devid, key string) storedParam {
	pool, param := splitKey(key)
	return storedParam{devid: devid, pool: pool, param: param}
}

func splitKey(key string) (string, string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '.' {
			return key[:i], key[i+1:]
		}
	}
	return key, ""
}

// The fixtures' two objects (installations): Home holds MOD1 (and MOD3 in
// catalogSnapshot), Cottage holds MOD2.
const (
	homeID    = 1001
	cottageID = 1002
)

func onlineModule(devid, name string) ModuleState {
	return ModuleState{
		Devid: devid, ObjectID: homeID, Name: name, Title: name + " boiler room", Version: "3.1.4", GatewayVersion: "V2.08",
		OnlineKnown: true, Online: true, ConnectedAt: t0.Add(-48 * time.Hour).Unix(),
		LastUpdate: t0.Add(-2 * time.Second),
		Params:     5, NonNumeric: 1,
		Alarms: 0, AlarmsKnown: true,
	}
}

// healthySnapshot: two objects, each with its session up and push healthy,
// one module each, online. Home had a 42 s outage and three blinks and has
// seen more events than Cottage, so each object's series carry its own
// values.
func healthySnapshot() Snapshot {
	mod2 := onlineModule("MOD2", "Garage")
	mod2.ObjectID = cottageID
	return Snapshot{
		Now: t0,
		Objects: []ObjectState{
			{
				ID: homeID, Name: "Home",
				Session: SessionState{
					Up:              true,
					Outage:          Outage{HasLast: true, LastDownFor: 42 * time.Second, LastReason: "eio_close"},
					OutagesByReason: map[string]uint64{"eio_close": 1},
					Blinks:          3,
				},
				Push: PushState{
					Known: true, Healthy: true,
					LastLiveUpdate: t0.Add(-2 * time.Second), LastUpdate: t0.Add(-2 * time.Second),
				},
				PrimeFailures: map[string]uint64{"connect": 0, "memory_updated": 0, "overflow": 0, "tick": 0},
				Events: map[string]uint64{"connect": 2, "disconnect": 1, "params_change": 120, "snapshot": 2,
					"connection_status": 1, "memory_updated": 3, "alarms_quantity": 1},
				Connected: true, Ready: true,
			},
			{
				ID: cottageID, Name: "Cottage",
				Session: SessionState{Up: true},
				Push: PushState{
					Known: true, Healthy: true,
					LastLiveUpdate: t0.Add(-7 * time.Second), LastUpdate: t0.Add(-7 * time.Second),
				},
				PrimeFailures: map[string]uint64{"connect": 0, "memory_updated": 0, "overflow": 0, "tick": 0},
				Events:        map[string]uint64{"connect": 1, "params_change": 40, "snapshot": 1},
				Connected:     true, Ready: true,
			},
		},
		Modules:     []ModuleState{onlineModule("MOD1", "Kitchen"), mod2},
		TokenExpiry: t0.Add(50 * time.Minute),
	}
}

// home and cottage are the fixture's objects of s.
func home(s *Snapshot) *ObjectState    { return &s.Objects[0] }
func cottage(s *Snapshot) *ObjectState { return &s.Objects[1] }

func healthyParams() paramList {
	return paramList{
		num("MOD1", "P4.v1", 21.5), num("MOD1", "P4.v8", 55), num("MOD1", "P4.s40", 1),
		num("MOD1", "P5.v3", -4.25), text("MOD1", "P6.x2"),
		num("MOD2", "P4.v1", 19), num("MOD2", "P4.v8", 48.5), num("MOD2", "P4.s40", 0),
		num("MOD2", "P5.v3", 1e6), text("MOD2", "P6.x2"),
		// A module not in the snapshot (it left the account): never exported.
		num("GONE", "P4.v1", 7),
	}
}

// sessionDownSnapshot: Home's session ended 95 s ago (a plain disconnect)
// and every reconnect since was answered 503 at the handshake; its push
// health is false (never a stale true), its module keeps its last state,
// two primes of its poll tick failed meanwhile and two module-list polls
// were unusable. Cottage's session stays up and healthy; the account's
// object list failed once.
func sessionDownSnapshot() Snapshot {
	s := healthySnapshot()
	h := home(&s)
	h.Session = SessionState{
		Up: false,
		Outage: Outage{
			Down: true, DownSince: t0.Add(-95 * time.Second), DownFor: 95 * time.Second, Reason: "disconnect",
			HasLast: true, LastDownFor: 42 * time.Second, LastReason: "eio_close",
		},
		OutagesByReason:  map[string]uint64{"eio_close": 1, "disconnect": 1},
		Blinks:           3,
		ReconnectFailure: "handshake_503",
	}
	h.PrimeFailures["tick"] = 2
	h.Push = PushState{Known: true, Healthy: false, StaleFor: 97 * time.Second,
		LastLiveUpdate: t0.Add(-97 * time.Second), LastUpdate: t0.Add(-30 * time.Second)}
	h.PollFailureStreak = 2
	h.Connected = false
	h.Events["disconnect"]++
	h.Events["connect_error"] = 4
	s.ObjectListFailureStreak = 1
	return s
}

// moduleOfflineSnapshot: MOD1 offline for 10 min (seen by a ws event) after a
// earlier 8 s outage; MOD2 listed but its link state not known yet.
func moduleOfflineSnapshot() Snapshot {
	s := healthySnapshot()
	m1 := onlineModule("MOD1", "Kitchen")
	m1.Online = false
	m1.ConnectedAt = 0
	m1.Outage = Outage{
		Down: true, DownSince: t0.Add(-10 * time.Minute), DownFor: 10 * time.Minute, Reason: "ws",
		HasLast: true, LastDownFor: 8 * time.Second, LastReason: "rest",
	}
	m1.OutagesByReason = map[string]uint64{"rest": 1, "ws": 1}
	m1.LastUpdate = t0.Add(-10 * time.Minute)
	m1.Alarms = 2
	m2 := ModuleState{Devid: "MOD2", ObjectID: cottageID, Name: "Garage", Params: 0}
	s.Modules = []ModuleState{m1, m2}
	return s
}

// pushUnknownSnapshot: right after a reconnect of Home's session, no live
// update in this up-window yet; Cottage's session just came up and has had
// no update at all.
func pushUnknownSnapshot() Snapshot {
	s := healthySnapshot()
	home(&s).Push = PushState{Known: false, LastUpdate: t0.Add(-5 * time.Second)}
	cottage(&s).Push = PushState{}
	s.TokenExpiry = time.Time{}
	return s
}

// zombieSnapshot: Home's session up, no live update for 200 s; Cottage
// healthy.
func zombieSnapshot() Snapshot {
	s := healthySnapshot()
	h := home(&s)
	h.Push = PushState{Known: true, Healthy: false, StaleFor: 200 * time.Second,
		LastLiveUpdate: t0.Add(-200 * time.Second), LastUpdate: t0.Add(-20 * time.Second),
		LastResumedAfter: 185 * time.Second}
	h.Recovery = RecoveryState{
		Actions:     map[ActionKey]uint64{{StepZombiePrime, ResultOK}: 1},
		PrimeStreak: 1,
	}
	return s
}

// quarantineSnapshot: the ladder of Home's session ran out of rebuilds and
// paused realtime recovery; the session is up but silent. Cottage's ladder
// is in the cooldown after one failed hard restart.
func quarantineSnapshot() Snapshot {
	s := zombieSnapshot()
	h := home(&s)
	h.Push.StaleFor = 2 * time.Hour
	h.Push.LastLiveUpdate = t0.Add(-2 * time.Hour)
	h.Recovery = RecoveryState{
		Actions: map[ActionKey]uint64{
			{StepZombiePrime, ResultOK}:          8,
			{StepHardRestart, ResultFailed}:      2,
			{StepHardRestart, ResultAborted}:     1,
			{StepTransportRecycle, ResultFailed}: 2,
			{StepManagerRebuild, ResultFailed}:   3,
			{StepQuarantine, ResultOK}:           1,
		},
		Quarantined:    true,
		QuarantineLeft: 5*time.Hour + 30*time.Minute,
		CooldownLeft:   90 * time.Second,
		RebuildCount:   3,
	}
	cottage(&s).Recovery = RecoveryState{
		Actions:           map[ActionKey]uint64{{StepZombiePrime, ResultOK}: 2, {StepHardRestart, ResultFailed}: 1},
		CooldownLeft:      20 * time.Second,
		HardRestartStreak: 1,
	}
	s.Episodes = []Episode{
		{Layer: LayerCloud, ObjectID: homeID, Reason: "force_reconnect", ID: "cloud-0000beef", StartedAt: t0.Add(-90 * time.Minute), EndedAt: t0.Add(-89 * time.Minute), DownFor: time.Minute},
	}
	return s
}

// fewestAllocs is the fewest allocations f made in one of runs calls.
// testing.AllocsPerRun counts the allocations of every goroutine of the test
// binary, so one call can carry allocations that are not f's (the race
// detector's runtime, a goroutine an earlier test left behind); such noise
// only ever adds, so the fewest of several calls is what f itself needs.
func fewestAllocs(runs int, f func()) float64 {
	least := math.Inf(1)
	for range runs {
		least = min(least, testing.AllocsPerRun(1, f))
	}
	return least
}
