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

func onlineModule(devid, name string) ModuleState {
	return ModuleState{
		Devid: devid, Name: name, Title: name + " boiler room", Version: "3.1.4", GatewayVersion: "V2.08",
		OnlineKnown: true, Online: true, ConnectedAt: t0.Add(-48 * time.Hour).Unix(),
		LastUpdate: t0.Add(-2 * time.Second),
		Params:     5, NonNumeric: 1,
		Alarms: 0, AlarmsKnown: true,
	}
}

// healthySnapshot: session up, push healthy, two modules online.
func healthySnapshot() Snapshot {
	return Snapshot{
		Now: t0,
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
		Modules:       []ModuleState{onlineModule("MOD1", "Kitchen"), onlineModule("MOD2", "Garage")},
		TokenExpiry:   t0.Add(50 * time.Minute),
		PrimeFailures: map[string]uint64{"connect": 0, "memory_updated": 0, "overflow": 0, "tick": 0},
	}
}

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

// sessionDownSnapshot: the session ended 95 s ago (a plain disconnect) and
// every reconnect since was answered 503 at the handshake; push health is
// false (never a stale true), the modules keep their last state, and two
// primes of the poll tick failed meanwhile.
func sessionDownSnapshot() Snapshot {
	s := healthySnapshot()
	s.Session = SessionState{
		Up: false,
		Outage: Outage{
			Down: true, DownSince: t0.Add(-95 * time.Second), DownFor: 95 * time.Second, Reason: "disconnect",
			HasLast: true, LastDownFor: 42 * time.Second, LastReason: "eio_close",
		},
		OutagesByReason:  map[string]uint64{"eio_close": 1, "disconnect": 1},
		Blinks:           3,
		ReconnectFailure: "handshake_503",
	}
	s.PrimeFailures["tick"] = 2
	s.Push = PushState{Known: true, Healthy: false, StaleFor: 97 * time.Second,
		LastLiveUpdate: t0.Add(-97 * time.Second), LastUpdate: t0.Add(-30 * time.Second)}
	s.PollFailureStreak = 2
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
	m2 := ModuleState{Devid: "MOD2", Name: "Garage", Params: 0}
	s.Modules = []ModuleState{m1, m2}
	return s
}

// pushUnknownSnapshot: right after a reconnect, no live update in this
// up-window yet.
func pushUnknownSnapshot() Snapshot {
	s := healthySnapshot()
	s.Push = PushState{Known: false, LastUpdate: t0.Add(-5 * time.Second)}
	s.TokenExpiry = time.Time{}
	return s
}

// zombieSnapshot: session up, no live update for 200 s.
func zombieSnapshot() Snapshot {
	s := healthySnapshot()
	s.Push = PushState{Known: true, Healthy: false, StaleFor: 200 * time.Second,
		LastLiveUpdate: t0.Add(-200 * time.Second), LastUpdate: t0.Add(-20 * time.Second),
		LastResumedAfter: 185 * time.Second}
	s.Recovery = RecoveryState{
		Actions:     map[ActionKey]uint64{{StepZombiePrime, ResultOK}: 1},
		PrimeStreak: 1,
	}
	return s
}

// quarantineSnapshot: the ladder ran out of rebuilds and paused realtime
// recovery; the session is up but silent.
func quarantineSnapshot() Snapshot {
	s := zombieSnapshot()
	s.Push.StaleFor = 2 * time.Hour
	s.Push.LastLiveUpdate = t0.Add(-2 * time.Hour)
	s.Recovery = RecoveryState{
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
	s.Episodes = []Episode{
		{Layer: LayerCloud, Reason: "force_reconnect", ID: "cloud-0000beef", StartedAt: t0.Add(-90 * time.Minute), EndedAt: t0.Add(-89 * time.Minute), DownFor: time.Minute},
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
