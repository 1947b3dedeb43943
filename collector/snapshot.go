package collector

import (
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
)

// SnapshotSource hands out a consistent copy of the exporter's health state.
// It is called once per scrape and once per status page request, from any
// goroutine; the returned value must not share mutable memory with the gateway
// (maps and slices are read without a lock).
type SnapshotSource interface {
	Snapshot() Snapshot
}

// SnapshotFunc adapts a function to SnapshotSource.
type SnapshotFunc func() Snapshot

// Snapshot implements SnapshotSource.
func (f SnapshotFunc) Snapshot() Snapshot { return f() }

// AccountSource hands out the account's standing with the cloud at scrape
// time (in serve, the REST client's gate: cloudclient.Client.Account). It
// is called from any goroutine; the value shares nothing mutable.
type AccountSource interface {
	Account() AccountState
}

// AccountSourceFunc adapts a function to AccountSource.
type AccountSourceFunc func() AccountState

// Account implements AccountSource.
func (f AccountSourceFunc) Account() AccountState { return f() }

// AccountState and LoginState are the account's standing with the cloud,
// as package cloudapi defines it.
type (
	AccountState = cloudapi.AccountState
	LoginState   = cloudapi.LoginState
)

// ParamSource is the parameter store as the collector sees it.
//
// Each (devid, pool, param) must be reported at most once per call: two
// samples of one series would make the registry reject the scrape.
//
// ForEachParam calls fn once for every stored parameter of every module, at
// scrape time. pool is the pool token ("P4"), param the channel letter and
// index ("v8"); together they name "P4.v8". numeric is false when the stored
// value is not a number (text, object, null); value is then ignored. Booleans
// are numeric (0/1). fn is fast and never blocks, but it is called while the
// store may hold its lock, so the store should not call back into the gateway.
// The strings passed are used as label values as they are: the collector does
// not copy them, so they must stay unchanged after fn returns (ordinary Go
// strings do).
type ParamSource interface {
	ForEachParam(fn func(devid, pool, param string, value float64, numeric bool))
}

// ParamSourceFunc adapts a function to ParamSource.
type ParamSourceFunc func(fn func(devid, pool, param string, value float64, numeric bool))

// ForEachParam implements ParamSource.
func (f ParamSourceFunc) ForEachParam(fn func(devid, pool, param string, value float64, numeric bool)) {
	f(fn)
}

// Snapshot is the exporter's health state at one instant. The zero value is
// valid: a session that is down with no outage recorded yet, push health
// unknown, no modules.
type Snapshot struct {
	// Now is when the snapshot was taken. The status page measures ages and
	// draws its timeline against it; metrics never carry it as a timestamp.
	Now time.Time

	// Objects are the watched objects (installations), one realtime session
	// each, in ID order. Every session, push-health and recovery series
	// carries the object's ID.
	Objects []ObjectState

	Modules []ModuleState // one entry per watched module of every object; a module not listed is not exported

	// ObjectListFailureStreak counts unusable listings of the account's
	// objects in a row (errors, empty or unrecognised answers); a usable
	// listing resets it to 0. An unusable listing never stops an object.
	ObjectListFailureStreak int

	// TokenExpiry is when the current access token expires; zero when the
	// token never expires or there is none. While Account is set, the
	// collector and the status page read the token from Account instead,
	// so a snapshot never speaks of a token the account does not hold.
	TokenExpiry time.Time

	// Account is the account's standing with the cloud (its login, its
	// token, the cloud's throttling); nil when the source does not know it
	// (no account series are exported then).
	Account *AccountState

	// Episodes are the most recent finished outages (the episode ring), in any
	// order; the status page sorts them.
	Episodes []Episode

	// Unwatched are the IDs of the objects the account lists that the
	// exporter does not watch (none of the modules it was asked to watch
	// is in their module list, or their gateway could not start); nil when
	// the source does not read the account's listing. Departures reads it
	// for the reason of a departure.
	Unwatched []int

	// DepartedObjects are watched objects that are no longer watched, by
	// ID; DepartedModules are modules that left their still watched
	// object, by devid. Departures fills both; they stay until the object
	// or module returns, the departure is forgotten or the process ends.
	DepartedObjects []DepartedObject
	DepartedModules []DepartedModule
}

// ObjectState is one watched object (installation) of the account and its
// own realtime session: each object has its session, its push health, its
// recovery ladder and its module-list poll, and one object's never changes
// another's.
type ObjectState struct {
	ID   int    // the cloud's object id, the object_id label
	Name string // the object's name in the account; "" when the listing gave none

	Session  SessionState
	Push     PushState
	Recovery RecoveryState

	// PollFailureStreak counts unusable module-list polls of this object in
	// a row; a usable listing resets it to 0.
	PollFailureStreak int
	// PrimeFailures counts this object's failed primes by trigger; every
	// trigger the source knows is present, at 0 until it fails.
	PrimeFailures map[string]uint64
	// Events counts realtime events received on this object's session, by
	// the kind's name (cloudapi.EventKind.String); counts only grow.
	Events map[string]uint64

	// Connected says a realtime session is open now (Session.Up stays true
	// inside the hysteresis); Binding counts binds and their primes in
	// flight (0 once the session is bound and primed); Ready is true once
	// the object's first parameter snapshot is stored.
	Connected bool
	Binding   int
	Ready     bool
	// Recovering is the ladder step in flight, "" when none.
	Recovering string
}

// Outage is the outage record of one layer (the session, or one module),
// following the spec's "Outage record": the current outage while down and the
// last finished one after a restore.
type Outage struct {
	Down      bool          // an outage is in progress
	DownSince time.Time     // start of the current outage; meaningful only while Down
	DownFor   time.Duration // length of the current outage so far, computed at snapshot time; only while Down
	Reason    string        // cause token of the current outage ("disconnect", "handshake_503", "rest", "ws", ...); only while Down

	HasLast     bool          // a finished outage has been recorded (set on the first restore)
	LastDownFor time.Duration // length of the last finished outage; only with HasLast
	LastReason  string        // reason of the last finished outage; only with HasLast
}

// SessionState is the exporter↔cloud Socket.IO session.
type SessionState struct {
	// Up is the published session state, after the down-hysteresis: a
	// disconnect that reconnects inside the hysteresis window never makes it false.
	Up     bool
	Outage Outage
	// OutagesByReason counts published session outages by reason token since
	// the exporter started. Counts only grow.
	OutagesByReason map[string]uint64
	// Blinks counts disconnects absorbed by the hysteresis (never outages).
	Blinks uint64
	// ReconnectFailure is the reason token of the latest failed connect
	// attempt since the session was last up ("" when none failed): why it
	// is still down, while Outage.Reason says why it went down.
	ReconnectFailure string
}

// PushState is live push health, a signal separate from the session and
// module online bits.
type PushState struct {
	Known   bool // false while health is unknown (session up but no live update yet in this up-window)
	Healthy bool // meaningful only when Known; false whenever the session is down
	// StaleFor is how long no live update has arrived; exported only while
	// Known, not Healthy and the session is up (the zombie).
	StaleFor time.Duration
	// LastLiveUpdate is the last live (pushed) parameter update; zero if none yet.
	LastLiveUpdate time.Time
	// LastUpdate is the last parameter update from any source (prime or live); zero if none yet.
	LastUpdate time.Time
	// LastResumedAfter is the stale gap before the last resume of live
	// updates; zero if push never resumed after going stale.
	LastResumedAfter time.Duration
}

// ModuleState is one module of the account.
type ModuleState struct {
	Devid          string // module device identifier, as sent by the cloud
	ObjectID       int    // the object (installation) the module belongs to
	Name           string
	Title          string
	Version        string
	GatewayVersion string // gateway.version of the module row; "" when absent

	// OnlineKnown is false until the first usable observation of the module's
	// link to the cloud (a listing row or a connection-status event).
	OnlineKnown bool
	Online      bool  // meaningful only with OnlineKnown
	ConnectedAt int64 // the cloud's connectedAt, epoch seconds; 0 while offline

	Outage Outage // reasons: "rest", "ws", "derived"
	// OutagesByReason counts module outages begun, by reason, since the
	// exporter started. Counts only grow.
	OutagesByReason map[string]uint64

	// LastUpdate is the last time any parameter of the module was updated
	// (prime or live); zero if none yet.
	LastUpdate time.Time
	Params     int // parameters stored for the module, numeric or not
	NonNumeric int // stored parameters whose value is not numeric
	// Refused counts parameter updates refused because the module held the
	// store's bound of keys or an event carried more than that. Only grows.
	Refused uint64

	Alarms      int  // active alarms from the cloud's alarm quantity
	AlarmsKnown bool // false until an alarm quantity was received for the module

	// ActiveAlarms are the module's alarms from the cloud's active alarm
	// list, one per alarm code; ActiveAlarmsKnown is false until a list
	// was read.
	ActiveAlarms      []Alarm
	ActiveAlarmsKnown bool

	// History is what the module's alarm history and activity (change) log
	// said since the exporter began watching the module; nil until the
	// module's history was first read.
	History *ModuleHistory
}

// ModuleHistory is the past of one module as the cloud's alarm history and
// activity log tell it, read incrementally. Counts only grow while the
// module is watched; rows older than the start of the watch are shown (in
// Alarms and Changes) but never counted.
type ModuleHistory struct {
	// AlarmCounts counts alarm occurrences by alarm code ("38") that began
	// since the watch began, whether seen active, only in the history, or
	// both (counted once).
	AlarmCounts map[string]uint64
	// AlarmLastDuration is the duration of the last finished occurrence of
	// each alarm code.
	AlarmLastDuration map[string]time.Duration
	// Alarms are the most recent occurrences, newest first, bounded.
	Alarms []AlarmOccurrence
	// ChangesByState counts changes of the activity log by outcome (the
	// row's state token: "success", "failed", …) since the watch began.
	ChangesByState map[string]uint64
	// LastChange is when the newest change of the log was made; zero when
	// none is known.
	LastChange time.Time
	// Changes are the most recent changes, newest first, bounded.
	Changes []Change
	// RowsDropped counts history and activity rows that could not be used
	// (missing or wrong-typed fields, future timestamps), by list
	// ("alarm_history", "activity").
	RowsDropped map[string]uint64
}

// AlarmOccurrence is one occurrence of a module's alarm.
type AlarmOccurrence struct {
	Code   string    // the alarm type code, e.g. "38"
	Symbol string    // the cloud's symbolic name, "" when none
	Start  time.Time // when it began
	End    time.Time // when it finished; zero while active
}

// Change is one entry of a module's activity (change) log.
type Change struct {
	At       time.Time
	Register string // "P6.v8" when the row names one, else ""
	Symbol   string // the catalog symbol or the row's i18n token's key ("PARAM_6_8")
	Old, New string // the raw values as the row gives them, as text; "" when absent
	Unit     int    // the row's unit code
	User     string // who made it, as the cloud names them (never a label value)
	State    string // outcome token ("success", "failed", …)
}

// Alarm is one active alarm of a module.
type Alarm struct {
	Code   string    // the alarm type code, e.g. "38"
	Symbol string    // symbolic name sent by the cloud ("ERROR_BRAK_PALIWA"); "" when none
	Since  time.Time // when it began; zero when unknown
}

// ActionKey names one kind of recovery ladder action and its outcome.
type ActionKey struct {
	Step   string // StepZombiePrime, StepHardRestart, StepTransportRecycle, StepManagerRebuild, StepQuarantine
	Result string // ResultOK, ResultFailed, ResultAborted
}

// MarshalText keys an action as text, "hard_restart/ok": a JSON object's
// key (the diagnostics bundle's status.json) must be text.
func (k ActionKey) MarshalText() ([]byte, error) { return []byte(k.Step + "/" + k.Result), nil }

// Recovery ladder steps and results, the label values of
// bragerone_recovery_actions_total. The ladder owns them (ladder.RecoverySteps,
// ladder.Outcomes); these names refer to its values. Every combination is
// exported from the first scrape on (as 0), so increase() sees the first action.
const (
	StepZombiePrime      = string(ladder.ZombiePrime)
	StepHardRestart      = string(ladder.HardRestart)
	StepTransportRecycle = string(ladder.Recycle)
	StepManagerRebuild   = string(ladder.Rebuild)
	StepQuarantine       = string(ladder.EnterQuarantine)

	ResultOK      = ladder.ResultOK
	ResultFailed  = ladder.ResultFailed
	ResultAborted = ladder.ResultAborted
)

// RecoverySteps and RecoveryResults list the ladder's step and result label
// values in ladder order.
var (
	RecoverySteps   = recoveryStepLabels()
	RecoveryResults = recoveryResultLabels()
)

func recoveryStepLabels() []string {
	var out []string
	for _, a := range ladder.RecoverySteps() {
		out = append(out, string(a))
	}
	return out
}

func recoveryResultLabels() []string {
	var out []string
	for _, o := range ladder.Outcomes() {
		out = append(out, o.String())
	}
	return out
}

// SessionReasons are the session outage reason tokens package outage owns.
// Each is exported from the first scrape on (as 0) in
// bragerone_session_outages_total; other reasons in
// SessionState.OutagesByReason are exported as they appear.
var SessionReasons = outage.SessionReasons()

// ModuleReasons are the module outage reasons (the observation source,
// outage.Sources), exported from the first scrape on (as 0) in
// bragerone_module_outages_total.
var ModuleReasons = outage.Sources()

// RecoveryState is the recovery ladder's state and history.
type RecoveryState struct {
	// Actions counts ladder actions by step and result since the exporter
	// started. Counts only grow.
	Actions map[ActionKey]uint64

	Quarantined    bool          // realtime recovery paused in REST-only quarantine
	QuarantineLeft time.Duration // time left of the quarantine; only while Quarantined
	CooldownLeft   time.Duration // time left of the recovery cooldown; 0 when none

	// The ladder's streaks: the runs of each step since live updates
	// stopped, whatever their result; a step's streak starts afresh when
	// the ladder climbs past it.
	PrimeStreak       int // zombie primes since the last recovery step
	HardRestartStreak int // hard restarts since the last recycle or rebuild
	RecycleStreak     int // transport recycles without live traffic
	RebuildCount      int // manager rebuilds without live traffic
}

// Episode layers, the values package outage owns (outage.Layer).
const (
	LayerCloud     = string(outage.LayerCloud)     // the exporter↔cloud session
	LayerModule    = string(outage.LayerModule)    // one module's link to the cloud
	LayerLiveStale = string(outage.LayerLiveStale) // live push silent while the session was up
)

// Episode is one finished outage from the episode ring.
type Episode struct {
	Layer     string // LayerCloud, LayerModule or LayerLiveStale
	ObjectID  int    // the object whose session or module it was
	Devid     string // for LayerModule; "" otherwise
	Reason    string
	ID        string // "<layer>-<8 hex>"
	StartedAt time.Time
	EndedAt   time.Time
	DownFor   time.Duration
}
