// Package ladder owns the zombie recovery ladder as a pure decision
// function: given the ladder state, the configuration and what the gateway
// observes (session up, live and overall update ages, module connectivity),
// it returns the next state and the actions to run. It starts nothing, reads
// no clock and does no I/O; the gateway runs the actions and reports their
// results back through OnActionResult.
//
// Rules implement docs/spec.md I-3.4a to I-3.4h ("Zombie recovery ladder" table and its
// rules) and docs/spec.md W-4.7a, W-7.1, W-7.10 to W-7.12; each rule cites
// the line it implements.
package ladder

import (
	"fmt"
	"time"
)

// Defaults (docs/spec.md I-8b, W-4.1a).
const (
	DefaultStaleAfter                = 180 * time.Second
	DefaultZombiePrimes              = 2
	DefaultHardRestartsBeforeRecycle = 3
	DefaultRecyclesBeforeRebuild     = 2
	DefaultRebuildsBeforeQuarantine  = 3
	DefaultCooldownBase              = 300 * time.Second
	DefaultCooldownMax               = 1800 * time.Second
	DefaultQuarantineFor             = 6 * time.Hour
	DefaultModuleOnlineDebounce      = 90 * time.Second
)

// Config holds the ladder's knobs. A zero field means what "0 means" says
// in docs/spec.md W-4.1c, not the default: use DefaultConfig for the
// defaults.
type Config struct {
	// StaleAfter: live silence before zombie handling; 0 disables it.
	StaleAfter time.Duration
	// ZombiePrimes: consecutive zombie primes before escalating; 0 = REST-prime only.
	ZombiePrimes int
	// HardRestartsBeforeRecycle: hard restarts before a transport recycle; 0 = never recycle.
	HardRestartsBeforeRecycle int
	// RecyclesBeforeRebuild: the recycle escalation in a row that is a
	// manager rebuild instead, so N-1 transport recycles run before the
	// first rebuild (1 = rebuild without recycling); 0 = never rebuild.
	// The spec's knob has this meaning: with its default 2, one recycle runs
	// (docs/spec.md W-4.7d, W-4.7f recycle 1 and timeline).
	RecyclesBeforeRebuild int
	// RebuildsBeforeQuarantine: rebuilds without live traffic before quarantine; 0 = no quarantine.
	RebuildsBeforeQuarantine int
	// CooldownBase: cooldown at recycle streak ≤ 1; 0 = no cooldown.
	CooldownBase time.Duration
	// CooldownMax caps the exponential cooldown; 0 = no cap.
	CooldownMax time.Duration
	// QuarantineFor: length of the REST-only quarantine; 0 = no pause.
	QuarantineFor time.Duration
	// ModuleOnlineDebounce: minimum gap between module-online recoveries; 0 = none.
	ModuleOnlineDebounce time.Duration
}

// DefaultConfig returns the spec defaults.
func DefaultConfig() Config {
	return Config{
		StaleAfter:                DefaultStaleAfter,
		ZombiePrimes:              DefaultZombiePrimes,
		HardRestartsBeforeRecycle: DefaultHardRestartsBeforeRecycle,
		RecyclesBeforeRebuild:     DefaultRecyclesBeforeRebuild,
		RebuildsBeforeQuarantine:  DefaultRebuildsBeforeQuarantine,
		CooldownBase:              DefaultCooldownBase,
		CooldownMax:               DefaultCooldownMax,
		QuarantineFor:             DefaultQuarantineFor,
		ModuleOnlineDebounce:      DefaultModuleOnlineDebounce,
	}
}

// Action is something the gateway runs. The values of the recovery steps
// are the `step` label values of bragerone_recovery_actions_total.
type Action string

// Actions.
const (
	// Prime: a plain REST prime while the session is down (not a recovery step).
	Prime Action = "prime"
	// ZombiePrime: step 1, a REST prime because the session is up but silent.
	ZombiePrime Action = "zombie_prime"
	// HardRestart: step 2, reconnect the Socket.IO client, modules/connect
	// with the current namespace SID, await resubscribe, REST prime.
	HardRestart Action = "hard_restart"
	// Recycle: step 3, hard-reset (replace) the Socket.IO client.
	Recycle Action = "transport_recycle"
	// Rebuild: step 4, rebuild the realtime manager. Every connect already
	// builds a fresh library manager, so its session work is a recycle's
	// (see package lifecycle); it differs in the ladder's accounting: it
	// counts towards quarantine and has its own, longer cooldown.
	Rebuild Action = "manager_rebuild"
	// EnterQuarantine: step 5, pause realtime recovery; REST primes go on.
	EnterQuarantine Action = "quarantine"
	// Resubscribe: module-online recovery out of cooldown or quarantine.
	Resubscribe Action = "resubscribe"
)

var actionIndex = map[Action]int{
	Prime: 0, ZombiePrime: 1, HardRestart: 2, Recycle: 3, Rebuild: 4, EnterQuarantine: 5, Resubscribe: 6,
}

// RecoverySteps lists the recovery steps in ladder order: the `step` label
// values of bragerone_recovery_actions_total. Prime and Resubscribe are
// actions but not steps.
func RecoverySteps() []Action {
	return []Action{ZombiePrime, HardRestart, Recycle, Rebuild, EnterQuarantine}
}

// Actions lists every action in counter order.
func Actions() []Action {
	return []Action{Prime, ZombiePrime, HardRestart, Recycle, Rebuild, EnterQuarantine, Resubscribe}
}

// Outcome classifies an action result for counting.
type Outcome int

// Result label values of bragerone_recovery_actions_total: the String of
// each Outcome.
const (
	ResultOK      = "ok"
	ResultFailed  = "failed"
	ResultAborted = "aborted"
)

// Outcomes; their String values are the `result` label values.
const (
	OK Outcome = iota
	Failed
	Aborted
	numOutcomes
)

// Outcomes lists every outcome in counter order.
func Outcomes() []Outcome {
	return []Outcome{OK, Failed, Aborted}
}

func (o Outcome) String() string {
	switch o {
	case OK:
		return ResultOK
	case Failed:
		return ResultFailed
	case Aborted:
		return ResultAborted
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Skip says why a tick or module-online event ran no recovery step.
type Skip string

// Skip reasons.
const (
	SkipNone           Skip = ""
	SkipDisabled       Skip = "disabled"        // StaleAfter ≤ 0
	SkipSessionDown    Skip = "session_down"    // plain prime only
	SkipNoAge          Skip = "no_age"          // nothing was ever published
	SkipFresh          Skip = "fresh"           // age < StaleAfter: not a zombie
	SkipModulesOffline Skip = "modules_offline" // every subscribed module known offline
	SkipQuarantine     Skip = "quarantine"
	SkipCooldown       Skip = "cooldown"
	SkipInFlight       Skip = "in_flight" // a recovery step is still running
	SkipStreak         Skip = "streak"    // zombie prime counted, streak below ZombiePrimes
	SkipPrimeOnly      Skip = "prime_only"
	SkipDebounce       Skip = "debounce"
)

// State is the ladder state. It is a plain value: copies are independent.
type State struct {
	PrimeStreak       int
	HardRestartStreak int
	RecycleStreak     int
	RebuildCount      int

	CooldownUntil   time.Time // zero = none
	QuarantineUntil time.Time // zero = none

	// LastModuleOnlineRecovery is when the last module-online recovery ran
	// (zero = never, or cleared by a live update).
	LastModuleOnlineRecovery time.Time

	counts [7][numOutcomes]uint64
}

// Count returns how many times action a finished with outcome o.
func (s State) Count(a Action, o Outcome) uint64 {
	i, ok := actionIndex[a]
	if !ok || o < 0 || o >= numOutcomes {
		return 0
	}
	return s.counts[i][o]
}

func (s *State) count(a Action, o Outcome) {
	if i, ok := actionIndex[a]; ok && o >= 0 && o < numOutcomes {
		s.counts[i][o]++
	}
}

// CoolingDown reports whether a cooldown is active at now.
func (s State) CoolingDown(now time.Time) bool {
	return !s.CooldownUntil.IsZero() && now.Before(s.CooldownUntil)
}

// CooldownLeft is the time left of the cooldown (0 when none).
func (s State) CooldownLeft(now time.Time) time.Duration {
	if !s.CoolingDown(now) {
		return 0
	}
	return s.CooldownUntil.Sub(now)
}

// Quarantined reports whether the REST-only quarantine is active at now.
func (s State) Quarantined(now time.Time) bool {
	return !s.QuarantineUntil.IsZero() && now.Before(s.QuarantineUntil)
}

// Input is what the gateway observes at a tick.
type Input struct {
	Now       time.Time
	SessionUp bool
	// AnyLiveSeen: a live update was ever seen; then LiveAge is its age.
	AnyLiveSeen bool
	LiveAge     time.Duration
	// AnyUpdateSeen: any update (REST primes included) was ever published;
	// then OverallAge is its age. Used only when no live update was seen.
	AnyUpdateSeen bool
	OverallAge    time.Duration
	// AllSubscribedOffline: every subscribed module is known offline
	// (unknown counts as online).
	AllSubscribedOffline bool
	// InFlight: a recovery step started earlier has not reported its result.
	InFlight bool
}

// age is the zombie age of docs/spec.md W-4.7a: the live age if any live update was ever
// seen, otherwise the overall publish age.
func (in Input) age() (time.Duration, bool) {
	if in.AnyLiveSeen {
		return in.LiveAge, true
	}
	return in.OverallAge, in.AnyUpdateSeen
}

// Decision is what to do now.
type Decision struct {
	// Actions to run, in order: at most one recovery step, then the prime.
	Actions []Action
	// ForceLogin: the recovery step (hard restart, recycle, rebuild,
	// resubscribe) must attempt a fresh login first when credentials are
	// available (docs/spec.md I-3.4f, ladder rules, first bullet).
	ForceLogin bool
	// Zombie: the session is up and silent for at least StaleAfter.
	Zombie bool
	// Age is the zombie age used for the decision.
	Age time.Duration
	// PrimeStreak is the zombie prime streak that led to this decision
	// (for the "zombie_streak=k" log).
	PrimeStreak int
	// Skipped says why no recovery step was chosen (SkipNone if one was).
	Skipped Skip
	// CooldownFor / QuarantineFor are set by OnActionResult when it armed one.
	CooldownFor   time.Duration
	QuarantineFor time.Duration
}

// Has reports whether d includes action a.
func (d Decision) Has(a Action) bool {
	for _, x := range d.Actions {
		if x == a {
			return true
		}
	}
	return false
}

// Step returns the recovery step of d (hard restart, recycle, rebuild,
// resubscribe) or "" when there is none.
func (d Decision) Step() Action {
	for _, x := range d.Actions {
		switch x {
		case HardRestart, Recycle, Rebuild, Resubscribe:
			return x
		}
	}
	return ""
}

// ShouldPrime reports whether d asks for a REST prime.
func (d Decision) ShouldPrime() bool { return d.Has(Prime) || d.Has(ZombiePrime) }

// OnTick decides what one connectivity poll tick does
// (docs/spec.md W-4.7a, W-4.7b "Per poll tick").
func (c Config) OnTick(st State, in Input) (State, Decision) {
	// docs/spec.md I-3.2g: "If the session is down, just REST-prime."
	if !in.SessionUp {
		return st, Decision{Actions: []Action{Prime}, Skipped: SkipSessionDown}
	}
	// docs/spec.md W-4.7a: "if stale ≤ 0, or age is null, or age < 180, skip
	// (no prime this tick)".
	if c.StaleAfter <= 0 {
		return st, Decision{Skipped: SkipDisabled}
	}
	age, ok := in.age()
	if !ok {
		return st, Decision{Skipped: SkipNoAge}
	}
	if age < c.StaleAfter {
		return st, Decision{Age: age, Skipped: SkipFresh}
	}
	d := Decision{Zombie: true, Age: age, PrimeStreak: st.PrimeStreak}
	primeOnly := func(why Skip) (State, Decision) {
		d.Actions = []Action{ZombiePrime}
		d.Skipped = why
		return st, d
	}
	switch {
	// docs/spec.md I-3.4h: "all known subscribed modules offline (unknown counts as
	// online): skip recovery and just prime"; spec: "Recovery is skipped
	// while every subscribed module is known offline."
	case in.AllSubscribedOffline:
		return primeOnly(SkipModulesOffline)
	// docs/spec.md I-3.4e, W-4.7b: "in quarantine: prime only"; spec step 5
	// "realtime recovery is paused and REST primes continue".
	case st.Quarantined(in.Now):
		return primeOnly(SkipQuarantine)
	// docs/spec.md W-4.7b: "in cooldown: prime only. The streak is not
	// increased" (docs/spec.md W-7.12).
	case st.CoolingDown(in.Now):
		return primeOnly(SkipCooldown)
	case in.InFlight:
		return primeOnly(SkipInFlight)
	}
	// docs/spec.md I-3.4b: "prime_streak += 1 … If prime_streak ≥ 2, reset it and call
	// _recover_zombie_session"; spec step 2 "two consecutive zombie primes".
	st.PrimeStreak++
	d.PrimeStreak = st.PrimeStreak
	if c.ZombiePrimes <= 0 { // docs/spec.md W-4.1c: zombie_hard_restart_after 0 = REST-prime only
		return primeOnly(SkipPrimeOnly)
	}
	if st.PrimeStreak < c.ZombiePrimes {
		return primeOnly(SkipStreak)
	}
	st.PrimeStreak = 0
	st, step := c.escalate(st)
	d.Actions = []Action{step, ZombiePrime}
	d.ForceLogin = true
	return st, d
}

// escalate is _recover_zombie_session up to the forced login: it advances
// the streaks and picks the step. Cooldown and quarantine are armed by
// OnActionResult, once the step's outcome is known.
func (c Config) escalate(st State) (State, Action) {
	// docs/spec.md W-4.7c: "If hard_restart_streak ≥ 3, go to recycle";
	// docs/spec.md W-4.1c: 0 = never recycle.
	if c.HardRestartsBeforeRecycle <= 0 || st.HardRestartStreak < c.HardRestartsBeforeRecycle {
		// docs/spec.md W-4.7c hard restart 1: "hard_restart_streak += 1".
		st.HardRestartStreak++
		return st, HardRestart
	}
	// docs/spec.md W-4.7d recycle 1: "recycle_streak += 1. If recycle_streak ≥ 2 … go to
	// rebuild instead"; docs/spec.md W-4.1c: 0 = never rebuild.
	st.RecycleStreak++
	if c.RecyclesBeforeRebuild > 0 && st.RecycleStreak >= c.RecyclesBeforeRebuild {
		// docs/spec.md W-4.7e rebuild 1: "Reset the streaks; rebuild_count += 1". The
		// recycle streak is kept: it is the cooldown exponent that gives
		// 600 s after the first rebuild and 1200 s after the second.
		st.PrimeStreak, st.HardRestartStreak = 0, 0
		st.RebuildCount++
		return st, Rebuild
	}
	// docs/spec.md W-4.7d recycle 2: "Otherwise reset the hard and prime streaks."
	st.PrimeStreak, st.HardRestartStreak = 0, 0
	return st, Recycle
}

// Cooldown is the cooldown armed at the given recycle streak (docs/spec.md W-4.1b:
// min(base · 2^max(0, recycle_streak − 1), max)).
func (c Config) Cooldown(recycleStreak int) time.Duration {
	if c.CooldownBase <= 0 {
		return 0 // docs/spec.md W-4.1c: zombie_recovery_cooldown_s 0 = no cooldown
	}
	d := c.CooldownBase
	for i := 1; i < recycleStreak; i++ {
		if c.CooldownMax > 0 && d >= c.CooldownMax {
			break
		}
		if d > (1<<62)/2 {
			break // saturate instead of overflowing
		}
		d *= 2
	}
	if c.CooldownMax > 0 && d > c.CooldownMax {
		d = c.CooldownMax
	}
	return d
}

func (c Config) armCooldown(st *State, now time.Time, d *Decision) {
	cd := c.Cooldown(st.RecycleStreak)
	if cd <= 0 {
		return
	}
	st.CooldownUntil = now.Add(cd)
	d.CooldownFor = cd
}

// Result is the outcome of a recovery action run by the gateway.
type Result struct {
	// OK: the step completed (for resubscribe: connect bound).
	OK bool
	// Aborted: the forced re-login failed, so the step did not run.
	Aborted bool
}

func (r Result) outcome() Outcome {
	switch {
	case r.Aborted:
		return Aborted
	case r.OK:
		return OK
	}
	return Failed
}

// OnActionResult records the outcome of action a and arms cooldown or
// quarantine as docs/spec.md W-4.7c to W-4.7e prescribes. The returned Decision carries
// CooldownFor/QuarantineFor and, when quarantine was entered, the action
// EnterQuarantine (for logs and counters); it never asks to run anything.
func (c Config) OnActionResult(st State, a Action, r Result, now time.Time) (State, Decision) {
	st.count(a, r.outcome())
	var d Decision
	switch a {
	case HardRestart:
		// Spec step 2 cooldown column: "success arms no cooldown; aborted
		// (forced re-login failed) arms cooldown". docs/spec.md W-4.7c hard
		// restart 2: "if that fails, arm cooldown and abort". A failed reconnect arms
		// nothing: the streak escalates to step 3 instead.
		if r.Aborted {
			c.armCooldown(&st, now, &d)
		}
	case Recycle:
		// docs/spec.md W-4.7d recycle 3: "on failure arm cooldown and abort"; recycle 6:
		// "Always arm cooldown (300 s when recycle_streak=1)".
		c.armCooldown(&st, now, &d)
	case Rebuild:
		// docs/spec.md W-4.7e rebuild 2: "Forced login; on failure arm cooldown
		// and abort."
		if r.Aborted {
			c.armCooldown(&st, now, &d)
			break
		}
		// docs/spec.md I-3.4e, W-4.7e rebuild 6: "If rebuild_count ≥ 3, arm
		// quarantine (6 h; the prime and hard streaks reset). Otherwise arm
		// cooldown"; docs/spec.md W-4.1c: 0 = no quarantine / no pause, so a
		// cooldown is armed instead.
		if c.RebuildsBeforeQuarantine > 0 && c.QuarantineFor > 0 && st.RebuildCount >= c.RebuildsBeforeQuarantine {
			st.QuarantineUntil = now.Add(c.QuarantineFor)
			st.PrimeStreak, st.HardRestartStreak = 0, 0
			st.count(EnterQuarantine, OK)
			d.Actions = []Action{EnterQuarantine}
			d.QuarantineFor = c.QuarantineFor
			break
		}
		c.armCooldown(&st, now, &d)
	case Resubscribe:
		// Spec ladder rules: "Failed auth or resubscribe re-arms cooldown";
		// docs/spec.md I-3.4g module-online: "An exception or a False result
		// re-arms cooldown."
		if !r.OK || r.Aborted {
			c.armCooldown(&st, now, &d)
		}
	}
	return st, d
}

// OnLiveUpdate resets all zombie state on a live update (docs/spec.md W-4.6d: "Every live
// update also resets all zombie state: prime, hard and recycle streaks,
// rebuild count, cooldown, quarantine and the module-online debounce";
// spec step 5 "cleared by a live parameter update"). Counters are kept.
func OnLiveUpdate(st State) State {
	return State{counts: st.counts}
}

// OnModuleOnline decides the module-online recovery when a subscribed
// module flips offline→online (docs/spec.md I-3.4g, W-4.7g "Module-online
// recovery"; spec: "If a subscribed module returns online while still zombie, cooldown or
// quarantine is cleared and recovery runs at once"; docs/spec.md W-7.11).
func (c Config) OnModuleOnline(st State, in Input) (State, Decision) {
	// docs/spec.md W-4.7g: "Skipped if: a recovery is already in flight; … the session is
	// down; the last such attempt was less than 90 s ago; or age < 180 s".
	if in.InFlight {
		return st, Decision{Skipped: SkipInFlight}
	}
	if !in.SessionUp {
		return st, Decision{Skipped: SkipSessionDown}
	}
	if c.ModuleOnlineDebounce > 0 && !st.LastModuleOnlineRecovery.IsZero() &&
		in.Now.Sub(st.LastModuleOnlineRecovery) < c.ModuleOnlineDebounce {
		return st, Decision{Skipped: SkipDebounce}
	}
	if c.StaleAfter <= 0 {
		return st, Decision{Skipped: SkipDisabled}
	}
	age, ok := in.age()
	if !ok {
		return st, Decision{Skipped: SkipNoAge}
	}
	if age < c.StaleAfter {
		return st, Decision{Age: age, Skipped: SkipFresh}
	}
	st.LastModuleOnlineRecovery = in.Now
	d := Decision{Zombie: true, Age: age, ForceLogin: true}
	// docs/spec.md I-3.4g: "If cooling down or quarantined: clear both, do a forced login
	// (failure → cooldown), then resubscribe()."
	if st.CoolingDown(in.Now) || st.Quarantined(in.Now) {
		st.CooldownUntil, st.QuarantineUntil = time.Time{}, time.Time{}
		d.Actions = []Action{Resubscribe}
		d.PrimeStreak = st.PrimeStreak
		return st, d
	}
	// docs/spec.md W-4.7g: "Otherwise: _recover_zombie_session(max(1, prime_streak))."
	d.PrimeStreak = max(1, st.PrimeStreak)
	st, step := c.escalate(st)
	d.Actions = []Action{step}
	return st, d
}
