package lifecycle

import (
	"reflect"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
)

var t0 = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// cfg is the gateway's default: 250 ms first pause, capped at the 15 s
// supervisor interval.
var cfg = Config{ReconnectBackoff: 250 * time.Millisecond, ReconnectMax: 15 * time.Second, SilentGrace: time.Second}

// up is a state with session 3 up and bound, on transport 1.
var up = State{SessionUp: true, Session: 3, Transport: 1}

func acts(a ...Action) []Action { return a }

// with returns st changed by f (rows read as "this state, but …").
func with(st State, f func(*State)) State {
	f(&st)
	return st
}

// TestLifecycleTable: each row is one step of the machine: a state, an
// event and the time, and the state and actions the rule wants.
func TestLifecycleTable(t *testing.T) {
	tests := []struct {
		name    string
		st      State
		ev      Event
		now     float64
		want    State
		actions []Action
	}{
		// ---- connect: one dial at a time, none while up or stopping ----
		{
			name: "Connect_Idle_Dials",
			st:   State{Transport: 1, ReconnectAt: at(5)},
			ev:   ConnectWanted{}, now: 1,
			want:    State{Transport: 1, Connecting: true},
			actions: acts(Dial{Transport: 1}),
		},
		{
			name: "Connect_WhileDialling_Nothing",
			st:   State{Connecting: true},
			ev:   ConnectWanted{}, now: 1,
			want: State{Connecting: true},
		},
		{
			name: "Connect_WhileUp_Nothing",
			st:   up, ev: ConnectWanted{}, now: 1,
			want: up,
		},
		{
			name: "Connect_Stopping_Nothing",
			st:   State{Stopping: true}, ev: ConnectWanted{}, now: 1,
			want: State{Stopping: true},
		},
		{
			name: "Connect_ContextEnded_Nothing",
			st:   State{}, ev: ConnectWanted{Cancelled: true}, now: 1,
			want: State{},
		},
		{
			name: "ReconnectDue_ClearsScheduleAndDials",
			st:   State{ReconnectFails: 2, ReconnectAt: at(1)},
			ev:   ReconnectDue{}, now: 1,
			want:    State{ReconnectFails: 2, Connecting: true},
			actions: acts(Dial{}),
		},
		{
			name: "ReconnectDue_WhileDialling_ClearsScheduleOnly",
			st:   State{Connecting: true, ReconnectAt: at(1)},
			ev:   ReconnectDue{}, now: 1,
			want: State{Connecting: true},
		},
		{
			name: "DialUnavailable_BacksOffWithoutCountingAFailure",
			st:   State{Connecting: true, ReconnectFails: 1},
			ev:   DialUnavailable{}, now: 10,
			want: State{ReconnectFails: 1, ReconnectAt: at(10.25)},
		},

		// ---- dial ends: a session joined ----
		{
			// The failures are forgiven once the session has lasted (see
			// the SessionEnded rows).
			name: "DialOK_Attach_Bind_UpSince",
			st:   State{Connecting: true, ReconnectFails: 4, Session: 2, Transport: 1},
			ev:   DialOK{Transport: 1}, now: 1,
			want:    State{SessionUp: true, Session: 3, Transport: 1, Binding: 1, ReconnectFails: 4, UpSince: at(1)},
			actions: acts(Attach{Session: 3}, Bind{Session: 3}),
		},
		{
			name: "DialOK_TransportReplacedMeanwhile_Discarded",
			st:   State{Connecting: true, Session: 2, Transport: 2, Step: ladder.Recycle, StepAwaitsConnect: true},
			ev:   DialOK{Transport: 1}, now: 1,
			want:    State{Session: 2, Transport: 2, Step: ladder.Recycle, StepAwaitsConnect: true},
			actions: acts(DiscardDialled{}),
		},
		{
			name: "DialOK_Stopping_Discarded",
			st:   State{Connecting: true, Stopping: true},
			ev:   DialOK{}, now: 1,
			want:    State{Stopping: true},
			actions: acts(DiscardDialled{}),
		},
		{
			name: "DialOK_ContextEnded_Discarded",
			st:   State{Connecting: true},
			ev:   DialOK{Cancelled: true}, now: 1,
			want:    State{},
			actions: acts(DiscardDialled{}),
		},

		// ---- dial ends: failed; the reconnect backoff ----
		{
			name: "DialFailed_First_Counted_PausesBackoff",
			st:   State{Connecting: true},
			ev:   DialFailed{Reason: outage.ReasonHandshake503, PrimedOnce: true}, now: 10,
			want:    State{ReconnectFails: 1, ReconnectAt: at(10.25)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonHandshake503, Attempt: 1}),
		},
		{
			name: "DialFailed_Third_BackoffDoubles",
			st:   State{Connecting: true, ReconnectFails: 2},
			ev:   DialFailed{Reason: outage.ReasonConnectError, PrimedOnce: true}, now: 10,
			want:    State{ReconnectFails: 3, ReconnectAt: at(11)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 3}),
		},
		{
			name: "DialFailed_Many_BackoffCappedAtSupervisorInterval",
			st:   State{Connecting: true, ReconnectFails: 6},
			ev:   DialFailed{Reason: outage.ReasonConnectError, PrimedOnce: true}, now: 10,
			want:    State{ReconnectFails: 7, ReconnectAt: at(25)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 7}),
		},
		{
			name: "DialFailed_Hundredth_ShiftBoundedStillCapped",
			st:   State{Connecting: true, ReconnectFails: 99},
			ev:   DialFailed{Reason: outage.ReasonConnectError, PrimedOnce: true}, now: 10,
			want:    State{ReconnectFails: 100, ReconnectAt: at(25)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 100}),
		},
		{
			name: "DialFailed_NeverPrimed_PrimesOverRESTWhileDown",
			st:   State{Connecting: true},
			ev:   DialFailed{Reason: outage.ReasonConnectError}, now: 0,
			want:    State{ReconnectFails: 1, ReconnectAt: at(0.25)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 1}, PrimeWhileDown{}),
		},
		{
			name: "DialFailed_TooManyAbandoned_ReplacesTransport",
			st:   State{Connecting: true, Transport: 4},
			ev:   DialFailed{Reason: outage.ReasonConnectError, TooManyAbandoned: true, PrimedOnce: true}, now: 0,
			want:    State{Transport: 5, ReconnectFails: 1, ReconnectAt: at(0.25)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 1}, ReplaceTransport{}),
		},
		{
			name: "DialFailed_TokenRefused_Relogin",
			st:   State{Connecting: true},
			ev:   DialFailed{Reason: outage.ReasonConnectError, AuthRejected: true, PrimedOnce: true}, now: 0,
			want:    State{Relogging: true, ReconnectFails: 1, ReconnectAt: at(0.25)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 1}, Relogin{}),
		},
		{
			name: "DialFailed_TokenRefused_ReloginAlreadyRunning_NoSecond",
			st:   State{Connecting: true, Relogging: true, ReconnectFails: 1},
			ev:   DialFailed{Reason: outage.ReasonConnectError, AuthRejected: true, PrimedOnce: true}, now: 0,
			want:    State{Relogging: true, ReconnectFails: 2, ReconnectAt: at(0.5)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 2}),
		},
		{
			name: "ReloginFinished_AllowsTheNext",
			st:   State{Relogging: true}, ev: ReloginFinished{}, now: 0,
			want: State{},
		},
		{
			name: "DialFailed_StepsReconnect_StepFailed",
			st:   State{Connecting: true, Step: ladder.HardRestart, StepAwaitsConnect: true},
			ev:   DialFailed{Reason: outage.ReasonConnectError, PrimedOnce: true}, now: 0,
			want: State{ReconnectFails: 1, ReconnectAt: at(0.25)},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 1},
				FinishStep{Step: ladder.HardRestart, Result: ladder.Result{OK: false}}),
		},
		{
			name: "DialFailed_Stopping_NoReconnect",
			st:   State{Connecting: true, Stopping: true},
			ev:   DialFailed{Reason: outage.ReasonConnectError, PrimedOnce: true}, now: 0,
			want:    State{Stopping: true, ReconnectFails: 1},
			actions: acts(RecordConnectFailure{Reason: outage.ReasonConnectError, Attempt: 1}),
		},

		// ---- the session ends by itself ----
		{
			name: "SessionEnded_Up_GoneAndReconnectAtOnce",
			st:   with(up, func(s *State) { s.Binding = 1 }),
			ev:   SessionEnded{Reason: outage.ReasonEIOClose, Detail: "transport error"}, now: 7,
			want:    State{Session: 3, Transport: 1, Binding: 1, ReconnectAt: at(7)},
			actions: acts(SessionGone{Reason: outage.ReasonEIOClose, Detail: "transport error"}),
		},
		{
			name: "SessionEnded_UpLongerThanTheLongestPause_BackoffReset_ReconnectAtOnce",
			st:   with(up, func(s *State) { s.ReconnectFails, s.UpSince = 4, at(1) }),
			ev:   SessionEnded{Reason: outage.ReasonServerStop}, now: 16,
			want:    State{Session: 3, Transport: 1, UpSince: at(1), ReconnectAt: at(16)},
			actions: acts(SessionGone{Reason: outage.ReasonServerStop}),
		},
		{
			name: "SessionEnded_SoonAfterItCameUp_CountsAsAFailure_BacksOff",
			st:   with(up, func(s *State) { s.UpSince = at(1) }),
			ev:   SessionEnded{Reason: outage.ReasonEIOClose}, now: 1.5,
			want:    State{Session: 3, Transport: 1, UpSince: at(1), ReconnectFails: 1, ReconnectAt: at(1.75)},
			actions: acts(SessionGone{Reason: outage.ReasonEIOClose}),
		},
		{
			name: "SessionEnded_SoonAgain_BackoffGrows",
			st:   with(up, func(s *State) { s.ReconnectFails, s.UpSince = 3, at(1) }),
			ev:   SessionEnded{Reason: outage.ReasonEIOClose}, now: 2,
			want:    State{Session: 3, Transport: 1, UpSince: at(1), ReconnectFails: 4, ReconnectAt: at(4)},
			actions: acts(SessionGone{Reason: outage.ReasonEIOClose}),
		},
		{
			name: "SessionEnded_AlreadyDown_Nothing",
			st:   State{Session: 3}, ev: SessionEnded{Reason: outage.ReasonDisconnect}, now: 7,
			want: State{Session: 3},
		},
		{
			name: "SessionEnded_DuringStep_StepsConnectFollows_NoSchedule",
			st:   with(up, func(s *State) { s.Step, s.StepAwaitsConnect = ladder.HardRestart, true }),
			ev:   SessionEnded{}, now: 7,
			want:    State{Session: 3, Transport: 1, Step: ladder.HardRestart, StepAwaitsConnect: true},
			actions: acts(SessionGone{}),
		},

		// ---- binds and the connect prime owed ----
		{
			name: "BindFinished_BoundAndPrimed_PaysOwed",
			st:   with(up, func(s *State) { s.Binding, s.PrimeOwed, s.OwedMark = 1, true, 5 }),
			ev:   BindFinished{Session: 3, Mark: 9, Bound: true, Primed: true}, now: 1,
			want: with(up, func(s *State) { s.OwedMark = 5 }),
		},
		{
			name: "BindFinished_PrimeFailed_CurrentSession_PrimeOwed",
			st:   with(up, func(s *State) { s.Binding = 1 }),
			ev:   BindFinished{Session: 3, Mark: 9, Bound: true, Failed: true}, now: 1,
			want: with(up, func(s *State) { s.PrimeOwed, s.OwedMark = true, 9 }),
		},
		{
			name: "BindFinished_Failed_OlderSession_NothingOwed",
			st:   with(up, func(s *State) { s.Binding = 1 }),
			ev:   BindFinished{Session: 2, Mark: 9, Failed: true}, now: 1,
			want: up,
		},
		{
			name: "BindFinished_AcceptedNotBound_NoErrorPrimed_NothingOwed",
			st:   with(up, func(s *State) { s.Binding = 1 }),
			ev:   BindFinished{Session: 3, Mark: 9, Primed: true}, now: 1,
			want: up,
		},
		{
			name: "BindFinished_StepsBind_FinishesStepWithBound",
			st:   with(up, func(s *State) { s.Binding, s.Step, s.StepAwaitsConnect = 1, ladder.Recycle, true }),
			ev:   BindFinished{Session: 3, Mark: 9, Bound: true, Primed: true}, now: 1,
			want:    up,
			actions: acts(FinishStep{Step: ladder.Recycle, Result: ladder.Result{OK: true}}),
		},
		{
			name: "BindFinished_StepsBind_NotBound_StepFailed",
			st:   with(up, func(s *State) { s.Binding, s.Step, s.StepAwaitsConnect = 1, ladder.HardRestart, true }),
			ev:   BindFinished{Session: 3, Mark: 9, Primed: true}, now: 1,
			want:    up,
			actions: acts(FinishStep{Step: ladder.HardRestart, Result: ladder.Result{OK: false}}),
		},
		{
			name: "BindFinished_OlderSession_StepKeepsWaiting",
			st:   with(up, func(s *State) { s.Binding, s.Step, s.StepAwaitsConnect = 1, ladder.HardRestart, true }),
			ev:   BindFinished{Session: 2, Bound: true, Primed: true}, now: 1,
			want: with(up, func(s *State) { s.Step, s.StepAwaitsConnect = ladder.HardRestart, true }),
		},
		{
			name: "PrimeFinished_LaterFullPrime_PaysOwed",
			st:   State{PrimeOwed: true, OwedMark: 5},
			ev:   PrimeFinished{Mark: 6, OK: true, CoversAll: true}, now: 1,
			want: State{OwedMark: 5},
		},
		{
			name: "PrimeFinished_EarlierPrime_StillOwed",
			st:   State{PrimeOwed: true, OwedMark: 5},
			ev:   PrimeFinished{Mark: 4, OK: true, CoversAll: true}, now: 1,
			want: State{PrimeOwed: true, OwedMark: 5},
		},
		{
			name: "PrimeFinished_SomeModulesOnly_StillOwed",
			st:   State{PrimeOwed: true, OwedMark: 5},
			ev:   PrimeFinished{Mark: 6, OK: true}, now: 1,
			want: State{PrimeOwed: true, OwedMark: 5},
		},
		{
			name: "ModulesChanged_Up_BindsTheNewSet",
			st:   up, ev: ModulesChanged{}, now: 1,
			want:    with(up, func(s *State) { s.Binding = 1 }),
			actions: acts(Bind{Session: 3}),
		},
		{
			name: "ModulesChanged_Down_Nothing",
			st:   State{}, ev: ModulesChanged{}, now: 1,
			want: State{},
		},

		// ---- supervisor and health ticks ----
		{
			name: "Supervisor_SilentlyDead_MarkedForTheHealthTick",
			st:   up, ev: SupervisorTick{SilentlyDead: true, HaveModules: true}, now: 1,
			want: with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(1) }),
		},
		{
			name: "Supervisor_SilentlyDeadAgain_KeepsTheFirstSighting",
			st:   with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(1) }),
			ev:   SupervisorTick{SilentlyDead: true, HaveModules: true}, now: 1.5,
			want: with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(1) }),
		},
		{
			name: "Supervisor_SilentlyDead_AnOlderSessionsSightingReplaced",
			st:   with(up, func(s *State) { s.SilentSession, s.SilentSince = 2, at(1) }),
			ev:   SupervisorTick{SilentlyDead: true, HaveModules: true}, now: 3,
			want: with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(3) }),
		},
		{
			name: "Supervisor_DownNothingScheduled_Connects",
			st:   State{Transport: 1}, ev: SupervisorTick{HaveModules: true}, now: 1,
			want:    State{Transport: 1, Connecting: true},
			actions: acts(Dial{Transport: 1}),
		},
		{
			name: "Supervisor_DownReconnectScheduled_Waits",
			st:   State{ReconnectAt: at(5)}, ev: SupervisorTick{HaveModules: true}, now: 1,
			want: State{ReconnectAt: at(5)},
		},
		{
			name: "Supervisor_UpNotBound_BindsAgain",
			st:   up, ev: SupervisorTick{HaveModules: true}, now: 1,
			want:    with(up, func(s *State) { s.Binding = 1 }),
			actions: acts(Bind{Session: 3, Rebind: true}),
		},
		{
			name: "Supervisor_UpBound_Nothing",
			st:   up, ev: SupervisorTick{Bound: true, HaveModules: true}, now: 1,
			want: up,
		},
		{
			name: "Supervisor_UpNotBound_BindInFlight_Waits",
			st:   with(up, func(s *State) { s.Binding = 1 }), ev: SupervisorTick{HaveModules: true}, now: 1,
			want: with(up, func(s *State) { s.Binding = 1 }),
		},
		{
			name: "Supervisor_UpNotBound_StepInFlight_Waits",
			st:   with(up, func(s *State) { s.Step = ladder.HardRestart }), ev: SupervisorTick{HaveModules: true}, now: 1,
			want: with(up, func(s *State) { s.Step = ladder.HardRestart }),
		},
		{
			name: "Supervisor_NoModules_NoBind",
			st:   up, ev: SupervisorTick{}, now: 1,
			want: up,
		},
		{
			name: "Supervisor_Stopping_Nothing",
			st:   State{Stopping: true}, ev: SupervisorTick{HaveModules: true}, now: 1,
			want: State{Stopping: true},
		},
		{
			name: "Health_StillSilentlyDead_WithinTheGrace_Waits",
			st:   with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(1) }),
			ev:   HealthTick{SilentlyDead: true}, now: 1.9,
			want: with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(1) }),
		},
		{
			name: "Health_StillSilentlyDead_AbortedAndReconnected",
			st:   with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(1) }),
			ev:   HealthTick{SilentlyDead: true}, now: 2,
			want:    State{Session: 3, Transport: 1, ReconnectAt: at(2)},
			actions: acts(TearDown{Reason: outage.ReasonSupervisorStale, Abort: true}),
		},
		{
			name: "Health_SilentlyDeadSoonAfterItCameUp_BacksOff",
			st:   with(up, func(s *State) { s.SilentSession, s.UpSince = 3, at(1) }),
			ev:   HealthTick{SilentlyDead: true}, now: 2,
			want:    State{Session: 3, Transport: 1, UpSince: at(1), ReconnectFails: 1, ReconnectAt: at(2.25)},
			actions: acts(TearDown{Reason: outage.ReasonSupervisorStale, Abort: true}),
		},
		{
			name: "Health_SilentlyDead_StuckCalls_TransportReplaced",
			st:   with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(1) }),
			ev:   HealthTick{SilentlyDead: true, Abandoned: true}, now: 2,
			want:    State{Session: 3, Transport: 2, ReconnectAt: at(2)},
			actions: acts(TearDown{Reason: outage.ReasonSupervisorStale, Abort: true}, ReplaceTransport{}),
		},
		{
			name: "Health_NoLongerDead_Forgotten",
			st:   with(up, func(s *State) { s.SilentSession, s.SilentSince = 3, at(1) }),
			ev:   HealthTick{}, now: 2,
			want: up,
		},
		{
			name: "Health_AnotherSessionSinceTheSighting_Forgotten",
			st:   with(up, func(s *State) { s.SilentSession = 2 }),
			ev:   HealthTick{SilentlyDead: true}, now: 2,
			want: up,
		},
		{
			name: "Health_NothingSighted_Nothing",
			st:   up, ev: HealthTick{SilentlyDead: true}, now: 2,
			want: up,
		},

		// ---- recovery steps (docs/spec.md I-3.4b to I-3.4f, W-4.7c to W-4.7h) ----
		{
			name: "StepChosen_Idle_StartsWithForcedLogin",
			st:   up, ev: StepChosen{Step: ladder.HardRestart, ForceLogin: true}, now: 1,
			want:    with(up, func(s *State) { s.Step = ladder.HardRestart }),
			actions: acts(StartStep{Step: ladder.HardRestart, ForceLogin: true}),
		},
		{
			name: "StepChosen_StepInFlight_Nothing",
			st:   with(up, func(s *State) { s.Step = ladder.HardRestart }),
			ev:   StepChosen{Step: ladder.Recycle, ForceLogin: true}, now: 1,
			want: with(up, func(s *State) { s.Step = ladder.HardRestart }),
		},
		{
			name: "StepChosen_Stopping_Nothing",
			st:   State{Stopping: true}, ev: StepChosen{Step: ladder.HardRestart}, now: 1,
			want: State{Stopping: true},
		},
		{
			name: "StepReady_LoginFailed_Aborted",
			st:   with(up, func(s *State) { s.Step = ladder.HardRestart }),
			ev:   StepReady{Step: ladder.HardRestart, Aborted: true}, now: 1,
			want:    up,
			actions: acts(FinishStep{Step: ladder.HardRestart, Result: ladder.Result{Aborted: true}}),
		},
		{
			name: "StepReady_Stopping_Dropped",
			st:   State{Stopping: true, Step: ladder.HardRestart},
			ev:   StepReady{Step: ladder.HardRestart}, now: 1,
			want: State{Stopping: true},
		},
		{
			name: "StepReady_HardRestart_ForceReconnectSameTransport",
			st:   with(up, func(s *State) { s.Step, s.ReconnectFails = ladder.HardRestart, 2 }),
			ev:   StepReady{Step: ladder.HardRestart}, now: 1,
			want: State{Session: 3, Transport: 1, Connecting: true, Step: ladder.HardRestart, StepAwaitsConnect: true},
			actions: acts(RunStep{Step: ladder.HardRestart},
				TearDown{Reason: outage.ReasonForceReconnect}, Dial{Transport: 1}),
		},
		{
			name: "StepReady_Recycle_HardResetNewTransport",
			st:   with(up, func(s *State) { s.Step = ladder.Recycle }),
			ev:   StepReady{Step: ladder.Recycle}, now: 1,
			want: State{Session: 3, Transport: 2, Connecting: true, Step: ladder.Recycle, StepAwaitsConnect: true},
			actions: acts(RunStep{Step: ladder.Recycle},
				TearDown{Reason: outage.ReasonHardReset}, ReplaceTransport{}, Dial{Transport: 2}),
		},
		{
			name: "StepReady_Rebuild_SameSessionWorkAsRecycle",
			st:   with(up, func(s *State) { s.Step = ladder.Rebuild }),
			ev:   StepReady{Step: ladder.Rebuild}, now: 1,
			want: State{Session: 3, Transport: 2, Connecting: true, Step: ladder.Rebuild, StepAwaitsConnect: true},
			actions: acts(RunStep{Step: ladder.Rebuild},
				TearDown{Reason: outage.ReasonHardReset}, ReplaceTransport{}, Dial{Transport: 2}),
		},
		{
			name: "StepReady_Recycle_SessionAlreadyDown_NewTransportAndDial",
			st:   State{Session: 3, Transport: 1, Step: ladder.Recycle, ReconnectFails: 3, ReconnectAt: at(9)},
			ev:   StepReady{Step: ladder.Recycle}, now: 1,
			want:    State{Session: 3, Transport: 2, Connecting: true, Step: ladder.Recycle, StepAwaitsConnect: true},
			actions: acts(RunStep{Step: ladder.Recycle}, ReplaceTransport{}, Dial{Transport: 2}),
		},
		{
			name: "StepReady_HardRestart_DialStillRunning_WaitsForIt",
			st:   State{Session: 3, Transport: 1, Connecting: true, Step: ladder.HardRestart, ReconnectFails: 1, ReconnectAt: at(9)},
			ev:   StepReady{Step: ladder.HardRestart}, now: 1,
			want:    State{Session: 3, Transport: 1, Connecting: true, Step: ladder.HardRestart, StepAwaitsConnect: true},
			actions: acts(RunStep{Step: ladder.HardRestart}),
		},
		{
			name: "StepReady_Resubscribe_ForcedBindOfTheLiveSession",
			st:   with(up, func(s *State) { s.Step = ladder.Resubscribe }),
			ev:   StepReady{Step: ladder.Resubscribe}, now: 1,
			want:    with(up, func(s *State) { s.Step, s.StepAwaitsConnect, s.Binding = ladder.Resubscribe, true, 1 }),
			actions: acts(RunStep{Step: ladder.Resubscribe}, Bind{Session: 3, Force: true}),
		},
		{
			name: "StepReady_Resubscribe_NoSession_Failed",
			st:   State{Step: ladder.Resubscribe},
			ev:   StepReady{Step: ladder.Resubscribe}, now: 1,
			want: State{},
			actions: acts(RunStep{Step: ladder.Resubscribe},
				FinishStep{Step: ladder.Resubscribe, Result: ladder.Result{OK: false}}),
		},
		{
			name: "StepReady_NotASessionStep_Dropped",
			st:   with(up, func(s *State) { s.Step = ladder.ZombiePrime }),
			ev:   StepReady{Step: ladder.ZombiePrime}, now: 1,
			want: up,
		},

		// ---- stop ----
		{
			name: "Stop_Up_DownAndNothingScheduled",
			st:   with(up, func(s *State) { s.ReconnectAt = at(3) }),
			ev:   Stop{}, now: 1,
			want: State{Stopping: true, Session: 3, Transport: 1},
		},
		{
			name: "Stop_ThenSessionEnds_NoReconnect",
			st:   State{Stopping: true, Session: 3},
			ev:   SessionEnded{}, now: 1,
			want: State{Stopping: true, Session: 3},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, actions := cfg.Step(tc.st, tc.ev, at(tc.now))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("state\n got %+v\nwant %+v", got, tc.want)
			}
			if len(actions) != 0 || len(tc.actions) != 0 {
				if !reflect.DeepEqual(actions, tc.actions) {
					t.Errorf("actions\n got %#v\nwant %#v", actions, tc.actions)
				}
			}
		})
	}
}

// TestLifecycleStepIsPure: the machine changes only the state it returns; the
// state handed in is untouched (a plain value).
func TestLifecycleStepIsPure(t *testing.T) {
	st := with(up, func(s *State) { s.Step = ladder.Recycle })
	before := st
	cfg.Step(st, StepReady{Step: ladder.Recycle}, at(1))
	if !reflect.DeepEqual(st, before) {
		t.Fatalf("input state changed: %+v", st)
	}
}

// TestReconnectOffsetDelaysEveryReconnect: the offset an object's gateway is
// given is added to the immediate reconnect after a lost session and to
// every backed-off one, so gateways with different offsets never dial at
// the same instant.
func TestReconnectOffsetDelaysEveryReconnect(t *testing.T) {
	spread := cfg
	spread.ReconnectOffset = 2 * time.Second
	tests := []struct {
		name string
		st   State
		ev   Event
		now  float64
		want time.Time
	}{
		{"LostAfterALongSession", with(up, func(s *State) { s.UpSince = at(1) }), SessionEnded{Reason: outage.ReasonServerStop}, 16, at(18)},
		{"FirstFailedDial", State{Connecting: true}, DialFailed{Reason: outage.ReasonHandshake503, PrimedOnce: true}, 10, at(12.25)},
		{"ManyFailedDials", State{Connecting: true, ReconnectFails: 6}, DialFailed{Reason: outage.ReasonConnectError, PrimedOnce: true}, 10, at(27)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := spread.Step(tc.st, tc.ev, at(tc.now))
			if !got.ReconnectAt.Equal(tc.want) {
				t.Errorf("ReconnectAt = %v, want %v", got.ReconnectAt, tc.want)
			}
			plain, _ := cfg.Step(tc.st, tc.ev, at(tc.now))
			if d := got.ReconnectAt.Sub(plain.ReconnectAt); d != spread.ReconnectOffset {
				t.Errorf("offset added %v, want %v", d, spread.ReconnectOffset)
			}
		})
	}
}
