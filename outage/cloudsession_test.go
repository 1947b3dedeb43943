package outage

import (
	"testing"
	"time"
)

type sessionOp struct {
	at     float64
	op     string // connect, disconnect, abort, tick, stop
	reason string
}

func runSession(s *Session, ops []sessionOp) []SessionResult {
	var out []SessionResult
	for _, o := range ops {
		now := at(o.at)
		var r SessionResult
		switch o.op {
		case "connect":
			r = s.Connected(now)
		case "disconnect":
			r = s.Disconnected(now, o.reason)
		case "abort":
			r = s.Abort(now, o.reason)
		case "tick":
			r = s.Tick(now)
		case "stop":
			r = s.Stop(now)
		default:
			panic("unknown op " + o.op)
		}
		out = append(out, r)
	}
	return out
}

// TestSessionTable covers every row of the spec's "Client session state"
// table and the rules of docs/spec.md W-4.4a, W-4.4b, W-4.5 listed with it.
func TestSessionTable(t *testing.T) {
	type check func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode)
	tests := []struct {
		name       string
		hysteresis time.Duration
		ops        []sessionOp
		readAt     float64
		check      check
	}{
		{
			name:       "Row1_Up_Disconnect_HysteresisElapsed_Down_OutageRecorded",
			hysteresis: 15 * time.Second,
			ops: []sessionOp{{0, "connect", ""}, {100, "disconnect", ReasonEIOClose},
				{114.9, "tick", ""}, {115, "tick", ""}},
			readAt: 130,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				if !rs[1].Pending || !rs[1].Up || rs[1].Changed {
					t.Fatalf("disconnect inside hysteresis must stay published up and pending: %+v", rs[1])
				}
				if !rs[2].Ignored || !rs[2].Up {
					t.Fatalf("tick before the hysteresis elapsed must not publish: %+v", rs[2])
				}
				r := rs[3]
				if !r.WentDown || !r.Changed || r.Up || r.Reason != ReasonEIOClose || !r.DownSince.Equal(at(100)) {
					t.Fatalf("tick at hysteresis must publish down since the disconnect: %+v", r)
				}
				o := snap.Outage
				if !o.Down || !o.DownSince.Equal(at(100)) || o.DownFor != secs(30) || o.Reason != ReasonEIOClose || o.HasLast {
					t.Fatalf("outage record: %+v", o)
				}
				if snap.Outages[ReasonEIOClose] != 1 || snap.Blinks != 0 {
					t.Fatalf("counters: outages=%v blinks=%d", snap.Outages, snap.Blinks)
				}
			},
		},
		{
			name:       "Row2_Up_Disconnect_ReconnectInsideHysteresis_BlinkAbsorbed",
			hysteresis: 15 * time.Second,
			ops: []sessionOp{{0, "connect", ""}, {100, "disconnect", ReasonForceReconnect},
				{110, "tick", ""}, {114.999, "connect", ""}, {200, "tick", ""}},
			readAt: 200,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				r := rs[3]
				if !r.Blink || r.Changed || r.Restored || r.Episode != nil || !r.Up {
					t.Fatalf("reconnect inside hysteresis must be an absorbed blink: %+v", r)
				}
				if snap.Blinks != 1 || len(snap.Outages) != 0 {
					t.Fatalf("blink must be counted, no outage: blinks=%d outages=%v", snap.Blinks, snap.Outages)
				}
				if snap.Outage.Down || snap.Outage.HasLast || len(eps) != 0 {
					t.Fatalf("blink must not touch last_* or episodes: %+v %v", snap.Outage, eps)
				}
				if !snap.UpSince.Equal(at(0)) {
					t.Fatalf("a blink must not start a new up-window: %v", snap.UpSince)
				}
				if rs[4].Changed || !rs[4].Up {
					t.Fatalf("no late publication after a blink: %+v", rs[4])
				}
			},
		},
		{
			name:       "Row3_Up_Disconnect_HysteresisZero_DownImmediately",
			hysteresis: 0,
			ops:        []sessionOp{{0, "connect", ""}, {50, "disconnect", ReasonHandshake503}},
			readAt:     60,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				r := rs[1]
				if !r.WentDown || r.Up || r.Pending || r.Reason != ReasonHandshake503 || !r.DownSince.Equal(at(50)) {
					t.Fatalf("hysteresis 0 must publish at once: %+v", r)
				}
				if snap.Outage.DownFor != secs(10) || snap.Outages[ReasonHandshake503] != 1 {
					t.Fatalf("snapshot: %+v", snap)
				}
			},
		},
		{
			name:       "Row4_Up_Stop_DownImmediately_WindowDroppedWithoutLast",
			hysteresis: 15 * time.Second,
			ops:        []sessionOp{{0, "connect", ""}, {10, "stop", ""}},
			readAt:     100,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				r := rs[1]
				if !r.WentDown || !r.Changed || r.Up || r.Reason != ReasonStop || r.Episode != nil {
					t.Fatalf("stop while up must publish down with reason stop at once: %+v", r)
				}
				if snap.Up || snap.Outage.Down || snap.Outage.HasLast || len(eps) != 0 {
					t.Fatalf("stop while up drops the window without touching last_*: %+v %v", snap, eps)
				}
				if snap.Outages[ReasonStop] != 1 {
					t.Fatalf("stop is a published outage: %v", snap.Outages)
				}
			},
		},
		{
			name:       "Row4_PendingDown_Stop_DownImmediately_NoLast",
			hysteresis: 15 * time.Second,
			ops:        []sessionOp{{0, "connect", ""}, {10, "disconnect", ReasonEIOClose}, {12, "stop", ""}, {40, "tick", ""}},
			readAt:     40,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				if r := rs[2]; !r.WentDown || r.Reason != ReasonStop || r.Up {
					t.Fatalf("stop while pending must publish stop at once: %+v", r)
				}
				if rs[3].Changed || snap.Outage.Down || snap.Outage.HasLast || snap.Outages[ReasonEIOClose] != 0 {
					t.Fatalf("the pending disconnect must not be published after stop: %+v %+v", rs[3], snap)
				}
			},
		},
		{
			name:       "Row5_Up_EngineIOAbort_DownImmediately",
			hysteresis: 15 * time.Second,
			ops:        []sessionOp{{0, "connect", ""}, {30, "abort", ReasonSupervisorStale}},
			readAt:     31,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				r := rs[1]
				if !r.WentDown || r.Up || r.Pending || r.Reason != ReasonSupervisorStale || !r.DownSince.Equal(at(30)) {
					t.Fatalf("abort must publish down without hysteresis: %+v", r)
				}
				if snap.Outage.DownFor != secs(1) {
					t.Fatalf("snapshot: %+v", snap.Outage)
				}
			},
		},
		{
			name:       "Row5_PendingDown_EngineIOAbort_PublishesPendingDisconnect",
			hysteresis: 15 * time.Second,
			ops:        []sessionOp{{0, "connect", ""}, {30, "disconnect", ReasonDisconnect}, {33, "abort", ReasonEIOClose}},
			readAt:     40,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				r := rs[2]
				if !r.WentDown || r.Reason != ReasonDisconnect || !r.DownSince.Equal(at(30)) {
					t.Fatalf("abort while pending publishes the pending outage at once: %+v", r)
				}
			},
		},
		{
			name:       "Row6_Down_Reconnect_Up_LastFieldsEpisodeRestoredFlag",
			hysteresis: 15 * time.Second,
			ops: []sessionOp{{0, "connect", ""}, {100, "disconnect", ReasonEIOClose},
				{115, "tick", ""}, {160, "connect", ""}},
			readAt: 170,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				r := rs[3]
				if !r.Restored || !r.Changed || !r.Up || r.RestoredAfter != secs(60) || r.RestoredReason != ReasonEIOClose {
					t.Fatalf("down→up must flag restored after 60 s (eio_close): %+v", r)
				}
				o := snap.Outage
				if o.Down || !o.HasLast || o.LastDownFor != secs(60) || o.LastReason != ReasonEIOClose {
					t.Fatalf("last_* after restore: %+v", o)
				}
				if len(eps) != 1 || eps[0].Layer != LayerCloud || eps[0].Reason != ReasonEIOClose ||
					!eps[0].StartedAt.Equal(at(100)) || !eps[0].EndedAt.Equal(at(160)) || eps[0].DownFor != secs(60) {
					t.Fatalf("cloud episode: %+v", eps)
				}
				if r.Episode == nil || r.Episode.ID != eps[0].ID {
					t.Fatalf("result must carry the recorded episode: %+v", r.Episode)
				}
				if !snap.UpSince.Equal(at(160)) {
					t.Fatalf("restore starts a new up-window: %v", snap.UpSince)
				}
			},
		},
		{
			name:       "Rule_StopWhileDown_FinalisesLastWithOriginalReason_Episode",
			hysteresis: 0,
			ops:        []sessionOp{{0, "connect", ""}, {10, "disconnect", ReasonEmptyQueue}, {40, "stop", ""}, {100, "connect", ""}},
			readAt:     100,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				r := rs[2]
				if r.Changed || r.Up || r.Episode == nil || r.Restored {
					t.Fatalf("stop while down finalises without a restore: %+v", r)
				}
				if rs[3].Restored {
					t.Fatalf("start after stop must not report a restore spanning the stopped time: %+v", rs[3])
				}
				o := snap.Outage
				if !o.HasLast || o.LastDownFor != secs(30) || o.LastReason != ReasonEmptyQueue {
					t.Fatalf("last_* after stop while down: %+v", o)
				}
				if len(eps) != 1 || eps[0].DownFor != secs(30) || eps[0].Reason != ReasonEmptyQueue {
					t.Fatalf("episodes: %+v", eps)
				}
			},
		},
		{
			name:       "Rule_DuplicateDisconnectWhileDown_NoOp",
			hysteresis: 0,
			ops:        []sessionOp{{0, "connect", ""}, {10, "disconnect", ReasonEIOClose}, {20, "disconnect", ReasonConnectError}, {25, "abort", ReasonSupervisorStale}},
			readAt:     30,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				if !rs[2].Ignored || rs[2].Changed || !rs[3].Ignored {
					t.Fatalf("duplicates must be no-ops: %+v %+v", rs[2], rs[3])
				}
				if snap.Outage.Reason != ReasonEIOClose || !snap.Outage.DownSince.Equal(at(10)) || snap.Outages[ReasonEIOClose] != 1 || len(snap.Outages) != 1 {
					t.Fatalf("duplicate must not change the window or counts: %+v", snap)
				}
			},
		},
		{
			name:       "Rule_DuplicateDisconnectWhilePending_NoOp",
			hysteresis: 15 * time.Second,
			ops:        []sessionOp{{0, "connect", ""}, {10, "disconnect", ReasonEIOClose}, {20, "disconnect", ReasonConnectError}, {25, "tick", ""}},
			readAt:     30,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				if !rs[2].Ignored {
					t.Fatalf("duplicate while pending must be a no-op: %+v", rs[2])
				}
				if !rs[3].WentDown || !rs[3].DownSince.Equal(at(10)) || rs[3].Reason != ReasonEIOClose {
					t.Fatalf("the first disconnect's time and reason are published: %+v", rs[3])
				}
			},
		},
		{
			name:       "Rule_ConnectIsNeverAReason",
			hysteresis: 0,
			ops:        []sessionOp{{0, "connect", ""}, {10, "disconnect", "connect"}, {20, "connect", ""}, {30, "disconnect", ""}, {31, "connect", ""}, {32, "disconnect", "weird"}},
			readAt:     40,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				for _, i := range []int{1, 3, 5} {
					if rs[i].Reason != ReasonDisconnect {
						t.Fatalf("op %d: reason %q, want disconnect", i, rs[i].Reason)
					}
				}
				if snap.Outages["connect"] != 0 || snap.Outages[ReasonDisconnect] != 3 {
					t.Fatalf("counts: %v", snap.Outages)
				}
			},
		},
		{
			name:       "Rule_OutagesCountedByReason_PublishedOnly",
			hysteresis: 15 * time.Second,
			ops: []sessionOp{
				{0, "connect", ""},
				{10, "disconnect", ReasonForceReconnect}, {12, "connect", ""}, // blink
				{20, "disconnect", ReasonHardReset}, {40, "tick", ""}, {50, "connect", ""},
				{60, "disconnect", ReasonHandshake503}, {80, "tick", ""}, {90, "connect", ""},
				{100, "abort", ReasonEIOClose}, {101, "connect", ""},
			},
			readAt: 110,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				want := map[string]uint64{ReasonHardReset: 1, ReasonHandshake503: 1, ReasonEIOClose: 1}
				if len(snap.Outages) != len(want) {
					t.Fatalf("outages %v, want %v", snap.Outages, want)
				}
				for k, v := range want {
					if snap.Outages[k] != v {
						t.Fatalf("outages %v, want %v", snap.Outages, want)
					}
				}
				if snap.Blinks != 1 || len(eps) != 3 {
					t.Fatalf("blinks=%d episodes=%d", snap.Blinks, len(eps))
				}
			},
		},
		{
			name:       "Rule_ReconnectAfterMissedDeadline_IsAnOutageNotABlink",
			hysteresis: 15 * time.Second,
			ops:        []sessionOp{{0, "connect", ""}, {10, "disconnect", ReasonEIOClose}, {30, "connect", ""}},
			readAt:     30,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				r := rs[2]
				if r.Blink || !r.Restored || !r.WentDown || r.RestoredAfter != secs(20) || !r.DownSince.Equal(at(10)) {
					t.Fatalf("a reconnect after the hysteresis is an outage of 20 s: %+v", r)
				}
				if snap.Blinks != 0 || snap.Outages[ReasonEIOClose] != 1 {
					t.Fatalf("snapshot: %+v", snap)
				}
			},
		},
		{
			name:       "Rule_EventsWhileIdleIgnored",
			hysteresis: 15 * time.Second,
			ops:        []sessionOp{{0, "disconnect", ReasonEIOClose}, {1, "abort", ""}, {2, "stop", ""}, {3, "tick", ""}},
			readAt:     5,
			check: func(t *testing.T, rs []SessionResult, snap SessionSnapshot, eps []Episode) {
				for i, r := range rs {
					if !r.Ignored || r.Changed {
						t.Fatalf("op %d while idle must be ignored: %+v", i, r)
					}
				}
				if snap.State != SessionIdle || snap.Up || snap.Outage.Down || len(snap.Outages) != 0 {
					t.Fatalf("snapshot: %+v", snap)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eps := NewEpisodes(DefaultEpisodeLimit)
			s := NewSession(SessionConfig{Hysteresis: tc.hysteresis, Episodes: eps})
			rs := runSession(s, tc.ops)
			tc.check(t, rs, s.Snapshot(at(tc.readAt)), eps.Snapshot())
		})
	}
}

func TestSessionNextDeadline(t *testing.T) {
	s := NewSession(DefaultSessionConfig(nil))
	if _, ok := s.NextDeadline(); ok {
		t.Fatal("no deadline while idle")
	}
	s.Connected(at(0))
	s.Disconnected(at(5), ReasonEIOClose)
	d, ok := s.NextDeadline()
	if !ok || !d.Equal(at(20)) {
		t.Fatalf("deadline %v %v, want t0+20s", d, ok)
	}
	if r := s.Tick(d); !r.WentDown {
		t.Fatalf("tick at the deadline must publish: %+v", r)
	}
	if _, ok := s.NextDeadline(); ok {
		t.Fatal("no deadline once published")
	}
}

func TestSessionSnapshotIsACopy(t *testing.T) {
	s := NewSession(SessionConfig{})
	s.Connected(at(0))
	s.Disconnected(at(1), ReasonEIOClose)
	snap := s.Snapshot(at(2))
	snap.Outages[ReasonEIOClose] = 99
	if s.Snapshot(at(2)).Outages[ReasonEIOClose] != 1 {
		t.Fatal("snapshot map aliases the machine's counters")
	}
}
