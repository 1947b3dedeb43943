package ladder

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// zombie is the input of a tick at s seconds with the session up and the
// last live update at t0.
func zombie(s float64) Input {
	return Input{Now: at(s), SessionUp: true, AnyLiveSeen: true, LiveAge: secs(s)}
}

func acts(as ...Action) []Action { return as }

func mustActions(t *testing.T, d Decision, want ...Action) {
	t.Helper()
	if !reflect.DeepEqual(d.Actions, []Action(want)) && !(len(d.Actions) == 0 && len(want) == 0) {
		t.Fatalf("actions %v, want %v (decision %+v)", d.Actions, want, d)
	}
}

// ---- Zombie recovery ladder table, one test per row ----

func TestLadderStep1_NoLiveFor180s_SessionUp_RESTPrime_NoCooldown(t *testing.T) {
	c := DefaultConfig()
	st, d := c.OnTick(State{}, zombie(179.999))
	mustActions(t, d)
	if d.Skipped != SkipFresh || d.Zombie || st.PrimeStreak != 0 {
		t.Fatalf("below 180 s nothing happens: %+v %+v", d, st)
	}
	st, d = c.OnTick(st, zombie(180))
	mustActions(t, d, ZombiePrime)
	if !d.Zombie || d.Age != secs(180) || st.PrimeStreak != 1 || d.PrimeStreak != 1 || d.ForceLogin || !st.CooldownUntil.IsZero() {
		t.Fatalf("first zombie prime: %+v %+v", d, st)
	}
	st, _ = c.OnActionResult(st, ZombiePrime, Result{OK: true}, at(180))
	if st.CoolingDown(at(181)) || st.Count(ZombiePrime, OK) != 1 {
		t.Fatalf("zombie prime arms no cooldown: %+v", st)
	}
}

func TestLadderStep2_TwoConsecutiveZombiePrimes_HardRestart(t *testing.T) {
	c := DefaultConfig()
	st, _ := c.OnTick(State{}, zombie(180))
	st, d := c.OnTick(st, zombie(240))
	mustActions(t, d, HardRestart, ZombiePrime)
	if !d.ForceLogin || d.PrimeStreak != 2 || st.PrimeStreak != 0 || st.HardRestartStreak != 1 || d.Step() != HardRestart || !d.ShouldPrime() {
		t.Fatalf("hard restart: %+v %+v", d, st)
	}
}

func TestLadderStep2_HardRestartSuccess_ArmsNoCooldown(t *testing.T) {
	c := DefaultConfig()
	st := State{HardRestartStreak: 1}
	st, d := c.OnActionResult(st, HardRestart, Result{OK: true}, at(240))
	if st.CoolingDown(at(241)) || d.CooldownFor != 0 || st.Count(HardRestart, OK) != 1 {
		t.Fatalf("success arms no cooldown: %+v %+v", st, d)
	}
}

func TestLadderStep2_HardRestartAborted_ArmsCooldown(t *testing.T) {
	c := DefaultConfig()
	st, d := c.OnActionResult(State{HardRestartStreak: 1}, HardRestart, Result{Aborted: true}, at(240))
	if !st.CooldownUntil.Equal(at(540)) || d.CooldownFor != secs(300) || st.Count(HardRestart, Aborted) != 1 {
		t.Fatalf("aborted (forced re-login failed) arms 300 s: %+v %+v", st, d)
	}
	// While cooling down the next tick only primes.
	_, d = c.OnTick(st, zombie(300))
	mustActions(t, d, ZombiePrime)
	if d.Skipped != SkipCooldown {
		t.Fatalf("skip %q", d.Skipped)
	}
}

func TestLadderStep2_HardRestartFailed_ArmsNoCooldown_Escalates(t *testing.T) {
	c := DefaultConfig()
	st, d := c.OnActionResult(State{HardRestartStreak: 1}, HardRestart, Result{}, at(240))
	if st.CoolingDown(at(241)) || d.CooldownFor != 0 || st.Count(HardRestart, Failed) != 1 {
		t.Fatalf("a failed reconnect arms no cooldown: %+v", st)
	}
}

func TestLadderStep3_RepeatedFailedHardRestarts_Recycle_Cooldown(t *testing.T) {
	c := DefaultConfig()
	st := State{PrimeStreak: 1, HardRestartStreak: 3}
	st, d := c.OnTick(st, zombie(600))
	mustActions(t, d, Recycle, ZombiePrime)
	if !d.ForceLogin || st.RecycleStreak != 1 || st.HardRestartStreak != 0 || st.PrimeStreak != 0 {
		t.Fatalf("recycle: %+v %+v", d, st)
	}
	for _, r := range []Result{{OK: true}, {}, {Aborted: true}} {
		got, d := c.OnActionResult(st, Recycle, r, at(600))
		if !got.CooldownUntil.Equal(at(900)) || d.CooldownFor != secs(300) {
			t.Fatalf("recycle %+v always arms 300 s at streak 1: %+v", r, got)
		}
	}
}

func TestLadderStep3_RecycleCooldownIsExponential(t *testing.T) {
	c := DefaultConfig()
	c.RecyclesBeforeRebuild = 0 // never rebuild: recycles repeat
	want := []float64{300, 600, 1200, 1800, 1800}
	st := State{}
	for i, w := range want {
		st.HardRestartStreak = 3
		st.PrimeStreak = 1
		var d Decision
		st, d = c.OnTick(st, zombie(float64(10000*(i+1))))
		if d.Step() != Recycle {
			t.Fatalf("round %d: %+v", i, d)
		}
		st, d = c.OnActionResult(st, Recycle, Result{}, at(float64(10000*(i+1))))
		if d.CooldownFor != secs(w) {
			t.Fatalf("recycle #%d cooldown %v, want %vs", i+1, d.CooldownFor, w)
		}
	}
}

func TestLadderStep4_RepeatedFailedResets_Rebuild_ExponentialCooldown(t *testing.T) {
	c := DefaultConfig()
	st := State{PrimeStreak: 1, HardRestartStreak: 3, RecycleStreak: 1}
	st, d := c.OnTick(st, zombie(2000))
	mustActions(t, d, Rebuild, ZombiePrime)
	if !d.ForceLogin || st.RebuildCount != 1 || st.RecycleStreak != 2 || st.HardRestartStreak != 0 || st.PrimeStreak != 0 {
		t.Fatalf("rebuild #1: %+v %+v", d, st)
	}
	st, d = c.OnActionResult(st, Rebuild, Result{OK: true}, at(2000))
	if d.CooldownFor != secs(600) || !st.CooldownUntil.Equal(at(2600)) {
		t.Fatalf("600 s after the first rebuild: %+v", d)
	}
	st.HardRestartStreak, st.PrimeStreak, st.CooldownUntil = 3, 1, time.Time{}
	st, d = c.OnTick(st, zombie(5000))
	if d.Step() != Rebuild || st.RebuildCount != 2 {
		t.Fatalf("rebuild #2: %+v", d)
	}
	_, d = c.OnActionResult(st, Rebuild, Result{OK: true}, at(5000))
	if d.CooldownFor != secs(1200) {
		t.Fatalf("1200 s after the second rebuild: %+v", d)
	}
}

func TestLadderStep4_RebuildAborted_ArmsCooldownNotQuarantine(t *testing.T) {
	c := DefaultConfig()
	st := State{RebuildCount: 3, RecycleStreak: 4}
	st, d := c.OnActionResult(st, Rebuild, Result{Aborted: true}, at(0))
	if st.Quarantined(at(1)) || d.CooldownFor != secs(1800) || d.Has(EnterQuarantine) || st.Count(Rebuild, Aborted) != 1 {
		t.Fatalf("aborted rebuild: cooldown, no quarantine: %+v %+v", st, d)
	}
}

func TestLadderStep5_RebuildCapReached_Quarantine6h_PrimesContinue(t *testing.T) {
	c := DefaultConfig()
	st := State{PrimeStreak: 1, HardRestartStreak: 3, RecycleStreak: 3, RebuildCount: 2}
	st, d := c.OnTick(st, zombie(4000))
	if d.Step() != Rebuild || st.RebuildCount != 3 {
		t.Fatalf("rebuild #3: %+v", d)
	}
	st, d = c.OnActionResult(st, Rebuild, Result{OK: true}, at(4000))
	mustActions(t, d, EnterQuarantine)
	if d.QuarantineFor != 6*time.Hour || !st.QuarantineUntil.Equal(at(4000+21600)) || st.CoolingDown(at(4001)) {
		t.Fatalf("quarantine 6 h: %+v %+v", d, st)
	}
	if st.Count(EnterQuarantine, OK) != 1 || st.PrimeStreak != 0 || st.HardRestartStreak != 0 {
		t.Fatalf("quarantine counted and streaks reset: %+v", st)
	}
	// Entering quarantine resets the prime and hard streaks whatever they are
	// (docs/spec.md W-4.7e rebuild 6).
	if q, _ := c.OnActionResult(State{RebuildCount: 3, PrimeStreak: 1, HardRestartStreak: 2}, Rebuild, Result{OK: true}, at(4000)); q.PrimeStreak != 0 || q.HardRestartStreak != 0 {
		t.Fatalf("quarantine must reset the prime and hard streaks: %+v", q)
	}
	// REST primes continue each tick; the streak does not grow.
	for s := 4060.0; s < 4000+21600; s += 60 {
		var d Decision
		st, d = c.OnTick(st, zombie(s))
		mustActions(t, d, ZombiePrime)
		if d.Skipped != SkipQuarantine || st.PrimeStreak != 0 {
			t.Fatalf("t=%v: quarantined tick: %+v %+v", s, d, st)
		}
	}
	// At the end of quarantine the ladder counts again.
	st, d = c.OnTick(st, zombie(4000+21600))
	if d.Skipped == SkipQuarantine || st.PrimeStreak != 1 {
		t.Fatalf("after quarantine: %+v %+v", d, st)
	}
}

func TestLadderStep5_QuarantineClearedByLiveUpdate(t *testing.T) {
	c := DefaultConfig()
	st := State{QuarantineUntil: at(21600), CooldownUntil: at(300), PrimeStreak: 1, HardRestartStreak: 2,
		RecycleStreak: 4, RebuildCount: 3, LastModuleOnlineRecovery: at(5)}
	st.count(HardRestart, OK)
	st = OnLiveUpdate(st)
	if st.Quarantined(at(10)) || st.CoolingDown(at(10)) || st.PrimeStreak+st.HardRestartStreak+st.RecycleStreak+st.RebuildCount != 0 ||
		!st.LastModuleOnlineRecovery.IsZero() {
		t.Fatalf("live update must clear everything: %+v", st)
	}
	if st.Count(HardRestart, OK) != 1 {
		t.Fatal("counters survive a live update")
	}
	if _, d := c.OnTick(st, zombie(400)); d.Skipped == SkipQuarantine || d.Skipped == SkipCooldown {
		t.Fatalf("recovery is no longer paused: %+v", d)
	}
}

func TestLadderStep5_QuarantineClearedByModuleOnlineRecovery(t *testing.T) {
	c := DefaultConfig()
	st := State{QuarantineUntil: at(21600), RebuildCount: 3, RecycleStreak: 4}
	st, d := c.OnModuleOnline(st, zombie(1000))
	mustActions(t, d, Resubscribe)
	if !d.ForceLogin || st.Quarantined(at(1000)) || st.CoolingDown(at(1000)) || !st.LastModuleOnlineRecovery.Equal(at(1000)) {
		t.Fatalf("module online out of quarantine: %+v %+v", d, st)
	}
}

// ---- Rules under the ladder table ----

func TestLadderRule_Steps234AttemptFreshLoginFirst(t *testing.T) {
	c := DefaultConfig()
	cases := []struct {
		st   State
		want Action
	}{
		{State{PrimeStreak: 1}, HardRestart},
		{State{PrimeStreak: 1, HardRestartStreak: 3}, Recycle},
		{State{PrimeStreak: 1, HardRestartStreak: 3, RecycleStreak: 1}, Rebuild},
	}
	for _, tc := range cases {
		_, d := c.OnTick(tc.st, zombie(500))
		if d.Step() != tc.want || !d.ForceLogin {
			t.Fatalf("%s must carry ForceLogin: %+v", tc.want, d)
		}
	}
	// A prime-only decision never asks for a login.
	_, d := c.OnTick(State{}, zombie(500))
	if d.ForceLogin {
		t.Fatalf("zombie prime must not force a login: %+v", d)
	}
}

func TestLadderRule_ModuleOnlineWhileZombie_ClearsCooldown_RecoversAtOnce(t *testing.T) {
	c := DefaultConfig()
	st := State{CooldownUntil: at(900), RecycleStreak: 1}
	st, d := c.OnModuleOnline(st, zombie(700))
	mustActions(t, d, Resubscribe)
	if st.CoolingDown(at(700)) || !d.ForceLogin || d.Skipped != SkipNone {
		t.Fatalf("cooldown cleared, resubscribe at once: %+v %+v", d, st)
	}
	// Without the clear, the next tick would still be cooling.
	_, d = c.OnTick(st, zombie(760))
	if d.Skipped == SkipCooldown {
		t.Fatalf("cooldown must be gone: %+v", d)
	}
}

func TestLadderRule_ModuleOnlineWhileZombie_NotCooling_NextEscalationStep(t *testing.T) {
	c := DefaultConfig()
	st, d := c.OnModuleOnline(State{}, zombie(200))
	mustActions(t, d, HardRestart)
	if d.PrimeStreak != 1 || st.HardRestartStreak != 1 || !d.ForceLogin {
		t.Fatalf("max(1, prime_streak) escalation: %+v %+v", d, st)
	}
	_, d = c.OnModuleOnline(State{PrimeStreak: 1, HardRestartStreak: 3}, zombie(200))
	if d.Step() != Recycle {
		t.Fatalf("escalation follows the streaks: %+v", d)
	}
}

func TestLadderRule_ModuleOnlineSkips(t *testing.T) {
	c := DefaultConfig()
	fresh := zombie(100)
	down := zombie(500)
	down.SessionUp = false
	inflight := zombie(500)
	inflight.InFlight = true
	cases := []struct {
		name string
		st   State
		in   Input
		want Skip
	}{
		{"NotZombie", State{CooldownUntil: at(900)}, fresh, SkipFresh},
		{"SessionDown", State{CooldownUntil: at(900)}, down, SkipSessionDown},
		{"InFlight", State{CooldownUntil: at(900)}, inflight, SkipInFlight},
		{"Debounce89s", State{CooldownUntil: at(900), LastModuleOnlineRecovery: at(411)}, zombie(500), SkipDebounce},
		{"NoAge", State{}, Input{Now: at(500), SessionUp: true}, SkipNoAge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, d := c.OnModuleOnline(tc.st, tc.in)
			if d.Skipped != tc.want || len(d.Actions) != 0 || !reflect.DeepEqual(st, tc.st) {
				t.Fatalf("want skip %q with nothing changed: %+v %+v", tc.want, d, st)
			}
		})
	}
	// 90 s after the last attempt the debounce has passed.
	_, d := c.OnModuleOnline(State{LastModuleOnlineRecovery: at(410)}, zombie(500))
	if d.Skipped != SkipNone || d.Step() != HardRestart {
		t.Fatalf("debounce of exactly 90 s has passed: %+v", d)
	}
}

func TestLadderRule_FailedAuthOrResubscribe_RearmsCooldown(t *testing.T) {
	c := DefaultConfig()
	for _, r := range []Result{{Aborted: true}, {}} {
		st, d := c.OnActionResult(State{}, Resubscribe, r, at(100))
		if !st.CooldownUntil.Equal(at(400)) || d.CooldownFor != secs(300) {
			t.Fatalf("resubscribe %+v must re-arm cooldown: %+v", r, st)
		}
	}
	st, _ := c.OnActionResult(State{}, Resubscribe, Result{OK: true}, at(100))
	if st.CoolingDown(at(101)) || st.Count(Resubscribe, OK) != 1 {
		t.Fatalf("a bound resubscribe arms nothing: %+v", st)
	}
}

func TestLadderRule_AllSubscribedModulesOffline_SkipsRecovery(t *testing.T) {
	c := DefaultConfig()
	st := State{}
	for s := 180.0; s < 1200; s += 60 {
		in := zombie(s)
		in.AllSubscribedOffline = true
		var d Decision
		st, d = c.OnTick(st, in)
		mustActions(t, d, ZombiePrime)
		if d.Skipped != SkipModulesOffline || st.PrimeStreak != 0 {
			t.Fatalf("t=%v: prime only, no streak: %+v %+v", s, d, st)
		}
	}
}

func TestLadderRule_SessionDown_PrimeOnly(t *testing.T) {
	c := DefaultConfig()
	st := State{PrimeStreak: 1, HardRestartStreak: 2}
	in := zombie(1000)
	in.SessionUp = false
	got, d := c.OnTick(st, in)
	mustActions(t, d, Prime)
	if d.Skipped != SkipSessionDown || d.Zombie || !reflect.DeepEqual(got, st) {
		t.Fatalf("session down: plain prime, state kept: %+v %+v", d, got)
	}
}

// docs/spec.md W-7.12: while cooling down zombie primes are not counted, so no hard
// reconnect fires the moment the cooldown ends.
func TestLadderRule_CooldownDoesNotGrowStreak(t *testing.T) {
	c := DefaultConfig()
	st := State{PrimeStreak: 1, CooldownUntil: at(900)}
	for s := 600.0; s < 900; s += 60 {
		var d Decision
		st, d = c.OnTick(st, zombie(s))
		mustActions(t, d, ZombiePrime)
		if st.PrimeStreak != 1 {
			t.Fatalf("t=%v: streak grew to %d during cooldown", s, st.PrimeStreak)
		}
	}
	st, d := c.OnTick(st, zombie(900))
	if d.Step() != HardRestart {
		t.Fatalf("first tick after cooldown continues the streak: %+v", d)
	}
	st = State{CooldownUntil: at(900)}
	for s := 600.0; s < 900; s += 60 {
		st, _ = c.OnTick(st, zombie(s))
	}
	_, d = c.OnTick(st, zombie(900))
	if d.Step() != "" || d.PrimeStreak != 1 {
		t.Fatalf("no hard restart the moment cooldown ends: %+v", d)
	}
}

func TestLadderRule_InFlightTick_PrimeOnlyNoStreak(t *testing.T) {
	c := DefaultConfig()
	in := zombie(500)
	in.InFlight = true
	st, d := c.OnTick(State{PrimeStreak: 1}, in)
	mustActions(t, d, ZombiePrime)
	if d.Skipped != SkipInFlight || st.PrimeStreak != 1 {
		t.Fatalf("in flight: %+v %+v", d, st)
	}
}

func TestLadderRule_AgeFallsBackToOverallAgeBeforeAnyLive(t *testing.T) {
	c := DefaultConfig()
	in := Input{Now: at(500), SessionUp: true, AnyUpdateSeen: true, OverallAge: secs(200), LiveAge: secs(1)}
	_, d := c.OnTick(State{}, in)
	if !d.Zombie || d.Age != secs(200) {
		t.Fatalf("no live yet: overall age counts: %+v", d)
	}
	in = Input{Now: at(500), SessionUp: true, AnyLiveSeen: true, LiveAge: secs(10), AnyUpdateSeen: true, OverallAge: secs(400)}
	if _, d = c.OnTick(State{}, in); d.Zombie {
		t.Fatalf("live seen: live age counts: %+v", d)
	}
	if _, d = c.OnTick(State{}, Input{Now: at(500), SessionUp: true}); d.Skipped != SkipNoAge || len(d.Actions) != 0 {
		t.Fatalf("no age at all: skip without prime: %+v", d)
	}
}

func TestLadderRule_CooldownFormula(t *testing.T) {
	c := DefaultConfig()
	want := map[int]float64{0: 300, 1: 300, 2: 600, 3: 1200, 4: 1800, 5: 1800, 60: 1800}
	for streak, w := range want {
		if got := c.Cooldown(streak); got != secs(w) {
			t.Fatalf("Cooldown(%d)=%v, want %vs", streak, got, w)
		}
	}
	c.CooldownMax = 0
	if got := c.Cooldown(5); got != secs(4800) {
		t.Fatalf("no cap: %v", got)
	}
	if got := c.Cooldown(1000); got <= 0 {
		t.Fatalf("huge streak must saturate, not overflow: %v", got)
	}
}

func TestLadderRule_ZeroConfigMeanings(t *testing.T) {
	t.Run("StaleAfter0_Disabled", func(t *testing.T) {
		c := DefaultConfig()
		c.StaleAfter = 0
		_, d := c.OnTick(State{}, zombie(100000))
		if d.Skipped != SkipDisabled || len(d.Actions) != 0 {
			t.Fatalf("%+v", d)
		}
		if _, d = c.OnModuleOnline(State{}, zombie(100000)); d.Skipped != SkipDisabled {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("ZombiePrimes0_RESTPrimeOnly", func(t *testing.T) {
		c := DefaultConfig()
		c.ZombiePrimes = 0
		st := State{}
		for s := 180.0; s < 3000; s += 60 {
			var d Decision
			st, d = c.OnTick(st, zombie(s))
			mustActions(t, d, ZombiePrime)
		}
	})
	t.Run("HardRestartsBeforeRecycle0_NeverRecycle", func(t *testing.T) {
		c := DefaultConfig()
		c.HardRestartsBeforeRecycle = 0
		_, d := c.OnTick(State{PrimeStreak: 1, HardRestartStreak: 50}, zombie(500))
		if d.Step() != HardRestart {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("RecyclesBeforeRebuild0_NeverRebuild", func(t *testing.T) {
		c := DefaultConfig()
		c.RecyclesBeforeRebuild = 0
		_, d := c.OnTick(State{PrimeStreak: 1, HardRestartStreak: 3, RecycleStreak: 9}, zombie(500))
		if d.Step() != Recycle {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("CooldownBase0_NoCooldown", func(t *testing.T) {
		c := DefaultConfig()
		c.CooldownBase = 0
		st, d := c.OnActionResult(State{RecycleStreak: 1}, Recycle, Result{OK: true}, at(0))
		if st.CoolingDown(at(1)) || d.CooldownFor != 0 {
			t.Fatalf("%+v", st)
		}
	})
	t.Run("RebuildsBeforeQuarantine0_NoQuarantine", func(t *testing.T) {
		c := DefaultConfig()
		c.RebuildsBeforeQuarantine = 0
		st, d := c.OnActionResult(State{RebuildCount: 10, RecycleStreak: 2}, Rebuild, Result{OK: true}, at(0))
		if st.Quarantined(at(1)) || d.CooldownFor != secs(600) {
			t.Fatalf("%+v %+v", st, d)
		}
	})
	t.Run("QuarantineFor0_NoPause", func(t *testing.T) {
		c := DefaultConfig()
		c.QuarantineFor = 0
		st, d := c.OnActionResult(State{RebuildCount: 3, RecycleStreak: 4}, Rebuild, Result{OK: true}, at(0))
		if st.Quarantined(at(1)) || d.Has(EnterQuarantine) || d.CooldownFor != secs(1800) {
			t.Fatalf("%+v %+v", st, d)
		}
	})
	t.Run("ModuleOnlineDebounce0_NoDebounce", func(t *testing.T) {
		c := DefaultConfig()
		c.ModuleOnlineDebounce = 0
		_, d := c.OnModuleOnline(State{LastModuleOnlineRecovery: at(499)}, zombie(500))
		if d.Skipped == SkipDebounce {
			t.Fatalf("%+v", d)
		}
	})
}

func TestLadderCountersPerStepAndResult(t *testing.T) {
	c := DefaultConfig()
	st := State{}
	st, _ = c.OnActionResult(st, ZombiePrime, Result{OK: true}, at(0))
	st, _ = c.OnActionResult(st, ZombiePrime, Result{}, at(0))
	st, _ = c.OnActionResult(st, HardRestart, Result{Aborted: true}, at(0))
	st, _ = c.OnActionResult(st, Recycle, Result{OK: true}, at(0))
	st, _ = c.OnActionResult(st, Rebuild, Result{}, at(0))
	want := map[string]uint64{"zombie_prime/ok": 1, "zombie_prime/failed": 1, "hard_restart/aborted": 1,
		"transport_recycle/ok": 1, "manager_rebuild/failed": 1}
	for _, a := range Actions() {
		for _, o := range []Outcome{OK, Failed, Aborted} {
			k := string(a) + "/" + o.String()
			if got := st.Count(a, o); got != want[k] {
				t.Fatalf("%s = %d, want %d", k, got, want[k])
			}
		}
	}
	if st.Count("nonsense", OK) != 0 || st.Count(HardRestart, Outcome(9)) != 0 {
		t.Fatal("unknown keys count 0")
	}
	// State is a value: a copy does not share counters.
	cp := st
	cp, _ = c.OnActionResult(cp, Recycle, Result{OK: true}, at(0))
	if st.Count(Recycle, OK) != 1 || cp.Count(Recycle, OK) != 2 {
		t.Fatal("counters alias between copies")
	}
}

// TestLadderDefaultTimeline drives the full default timeline of
// docs/spec.md W-4.7f: ticks every 60 s, the stream dead from t0, every
// action succeeding without bringing live traffic back.
func TestLadderDefaultTimeline(t *testing.T) {
	c := DefaultConfig()
	st := State{}
	var log []string
	for k := 1; k <= 440; k++ {
		s := float64(60 * k)
		var d Decision
		st, d = c.OnTick(st, zombie(s))
		if !d.ShouldPrime() && s >= 180 {
			t.Fatalf("t=%v: a zombie tick always primes: %+v", s, d)
		}
		if d.Has(ZombiePrime) && d.Skipped == SkipStreak {
			log = append(log, fmt.Sprintf("%d zombie_prime_%d", k, d.PrimeStreak))
		}
		if step := d.Step(); step != "" {
			var rd Decision
			st, rd = c.OnActionResult(st, step, Result{OK: true}, at(s))
			entry := fmt.Sprintf("%d %s", k, step)
			if rd.CooldownFor > 0 {
				entry += fmt.Sprintf(" cooldown=%v", rd.CooldownFor)
			}
			if rd.Has(EnterQuarantine) {
				entry += fmt.Sprintf(" quarantine=%v", rd.QuarantineFor)
			}
			log = append(log, entry)
		}
	}
	want := []string{
		"3 zombie_prime_1",                   // t0+3 min
		"4 hard_restart",                     // +1 min: zombie prime 2 → hard #1
		"5 zombie_prime_1", "6 hard_restart", // +2 min: hard #2
		"7 zombie_prime_1", "8 hard_restart", // +2 min: hard #3
		"9 zombie_prime_1", "10 transport_recycle cooldown=5m0s", // +2 min: recycle #1
		// cooldown until k=15; then 3 hard cycles plus 2 ticks
		"15 zombie_prime_1", "16 hard_restart",
		"17 zombie_prime_1", "18 hard_restart",
		"19 zombie_prime_1", "20 hard_restart",
		"21 zombie_prime_1", "22 manager_rebuild cooldown=10m0s", // rebuild #1
		"32 zombie_prime_1", "33 hard_restart",
		"34 zombie_prime_1", "35 hard_restart",
		"36 zombie_prime_1", "37 hard_restart",
		"38 zombie_prime_1", "39 manager_rebuild cooldown=20m0s", // rebuild #2
		"59 zombie_prime_1", "60 hard_restart",
		"61 zombie_prime_1", "62 hard_restart",
		"63 zombie_prime_1", "64 hard_restart",
		"65 zombie_prime_1", "66 manager_rebuild quarantine=6h0m0s", // rebuild #3
		// quarantine 6 h from k=66 (t=3960 s) to t=25560 s = k=426
		"426 zombie_prime_1", "427 hard_restart",
		"428 zombie_prime_1", "429 hard_restart",
		"430 zombie_prime_1", "431 hard_restart",
		"432 zombie_prime_1", "433 manager_rebuild quarantine=6h0m0s",
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("timeline:\n%s\n\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	if !st.Quarantined(at(60*440)) || st.RebuildCount != 4 {
		t.Fatalf("end state: %+v", st)
	}
	if st.Count(HardRestart, OK) != 15 || st.Count(Recycle, OK) != 1 || st.Count(Rebuild, OK) != 4 || st.Count(EnterQuarantine, OK) != 2 {
		t.Fatalf("counters: hard=%d recycle=%d rebuild=%d quarantine=%d", st.Count(HardRestart, OK),
			st.Count(Recycle, OK), st.Count(Rebuild, OK), st.Count(EnterQuarantine, OK))
	}
	// A live update clears everything; the next tick is fresh.
	st = OnLiveUpdate(st)
	if st.Quarantined(at(60*441)) || st.CoolingDown(at(60*441)) || st.RebuildCount != 0 || st.RecycleStreak != 0 {
		t.Fatalf("after live update: %+v", st)
	}
	in := Input{Now: at(60 * 441), SessionUp: true, AnyLiveSeen: true, LiveAge: secs(60)}
	if st2, d := c.OnTick(st, in); len(d.Actions) != 0 || d.Zombie || st2.PrimeStreak != 0 {
		t.Fatalf("fresh after the live update: %+v", d)
	}
	// And the ladder starts over from step 1 if the stream dies again.
	live := at(60 * 441)
	var steps []Action
	for k := 442; k <= 455; k++ {
		now := at(float64(60 * k))
		var d Decision
		st, d = c.OnTick(st, Input{Now: now, SessionUp: true, AnyLiveSeen: true, LiveAge: now.Sub(live)})
		if s := d.Step(); s != "" {
			steps = append(steps, s)
			st, _ = c.OnActionResult(st, s, Result{OK: true}, now)
		}
	}
	if !reflect.DeepEqual(steps, acts(HardRestart, HardRestart, HardRestart, Recycle)) {
		t.Fatalf("after a live update the ladder starts over: %v", steps)
	}
}

func TestActionAndOutcomeLabels(t *testing.T) {
	want := map[Action]string{ZombiePrime: "zombie_prime", HardRestart: "hard_restart", Recycle: "transport_recycle",
		Rebuild: "manager_rebuild", EnterQuarantine: "quarantine"}
	for a, s := range want {
		if string(a) != s {
			t.Fatalf("%v label %q", a, s)
		}
	}
	if OK.String() != "ok" || Failed.String() != "failed" || Aborted.String() != "aborted" {
		t.Fatal("result labels")
	}
}

// climb drives the ladder with every recovery step failing to bring live
// traffic back (ticks every 60 s, cooldowns waited out) and returns the
// recovery steps in order, up to and including the first rebuild or until
// limit steps ran.
func climb(c Config, limit int) []Action {
	st := State{}
	var steps []Action
	for k := 3; len(steps) < limit; k++ {
		s := float64(60 * k)
		var d Decision
		st, d = c.OnTick(st, zombie(s))
		step := d.Step()
		if step == "" {
			continue
		}
		steps = append(steps, step)
		st, _ = c.OnActionResult(st, step, Result{}, at(s))
		if step == Rebuild {
			break
		}
	}
	return steps
}

// TestLadderRecyclesBeforeRebuildCountsTheRebuild pins what
// RecyclesBeforeRebuild (--recovery.recycles-before-rebuild) counts: the
// recycle escalations in a row, the last of which is a rebuild instead, so
// N-1 transport recycles run before the first rebuild; 1 rebuilds without
// recycling, 0 never rebuilds. Each recycle follows HardRestartsBeforeRecycle
// hard restarts.
func TestLadderRecyclesBeforeRebuildCountsTheRebuild(t *testing.T) {
	hards := func(n int) []Action {
		var as []Action
		for range n {
			as = append(as, HardRestart)
		}
		return as
	}
	for n := 1; n <= 4; n++ {
		c := DefaultConfig()
		c.RecyclesBeforeRebuild = n
		var want []Action
		for range n - 1 {
			want = append(append(want, hards(c.HardRestartsBeforeRecycle)...), Recycle)
		}
		want = append(append(want, hards(c.HardRestartsBeforeRecycle)...), Rebuild)
		if got := climb(c, 100); !reflect.DeepEqual(got, want) {
			t.Errorf("RecyclesBeforeRebuild=%d: steps\n%v\nwant %d recycles, then a rebuild:\n%v", n, got, n-1, want)
		}
	}
	c := DefaultConfig()
	c.RecyclesBeforeRebuild = 0
	for _, step := range climb(c, 40) {
		if step == Rebuild {
			t.Fatal("RecyclesBeforeRebuild=0 rebuilt")
		}
	}
	// The default: one recycle, then the second recycle in a row is a rebuild.
	if got := climb(DefaultConfig(), 100); !reflect.DeepEqual(got, acts(HardRestart, HardRestart, HardRestart, Recycle,
		HardRestart, HardRestart, HardRestart, Rebuild)) {
		t.Errorf("default ladder: %v", got)
	}
}
