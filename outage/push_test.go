package outage

import (
	"testing"
	"time"
)

// TestPushTable covers every row of the spec's "Live push health" table and
// the rules of docs/spec.md W-4.6a, W-4.6c.
func TestPushTable(t *testing.T) {
	up := func(since float64) Link { return Link{Up: true, UpSince: at(since)} }
	down := Link{}
	type step struct {
		at   float64
		live bool // a live update at this time; otherwise Evaluate
		link Link
	}
	tests := []struct {
		name  string
		stale time.Duration
		steps []step
		check func(t *testing.T, rs []PushResult, eps []Episode)
	}{
		{
			name:  "Row1_Healthy_NoLiveFor180s_SessionUp_UnhealthyWithStaleFor",
			stale: 180 * time.Second,
			steps: []step{{10, true, up(0)}, {189.9, false, up(0)}, {190, false, up(0)}, {250, false, up(0)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				if rs[0].Status.State != PushHealthy || !rs[0].Changed || rs[0].From != PushUnknown {
					t.Fatalf("first live update: healthy flip from unknown: %+v", rs[0])
				}
				if rs[1].Status.State != PushHealthy || rs[1].Changed {
					t.Fatalf("179.9 s of silence is still healthy: %+v", rs[1])
				}
				r := rs[2]
				if r.Status.State != PushUnhealthy || !r.Changed || r.From != PushHealthy || !r.Status.HasStaleFor || r.Status.LiveStaleFor != secs(180) {
					t.Fatalf("180 s of silence: unhealthy with live_stale_for_s=180: %+v", r)
				}
				if rs[3].Changed || rs[3].Status.LiveStaleFor != secs(240) {
					t.Fatalf("stale age grows without a new flip: %+v", rs[3])
				}
			},
		},
		{
			name:  "Row2_Any_SessionGoesDown_UnhealthyNotStaleHealthy_NoStaleFor",
			stale: 180 * time.Second,
			steps: []step{{10, true, up(0)}, {20, false, down}, {500, false, down}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				for _, r := range rs[1:] {
					if r.Status.State != PushUnhealthy || r.Status.HasStaleFor || r.Status.LiveStaleFor != 0 {
						t.Fatalf("session down: unhealthy without live_stale_for_s: %+v", r)
					}
				}
				if !rs[1].Changed || rs[1].From != PushHealthy || rs[2].Changed {
					t.Fatalf("flip reported once: %+v %+v", rs[1], rs[2])
				}
			},
		},
		{
			name:  "Row2_Any_SessionDown_StaleDisabled_StillUnhealthy",
			stale: 0,
			steps: []step{{10, false, down}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				if rs[0].Status.State != PushUnhealthy {
					t.Fatalf("session down wins over a disabled threshold: %+v", rs[0])
				}
			},
		},
		{
			name:  "Row3_Unhealthy_LiveUpdate_HealthyResumeLogged",
			stale: 180 * time.Second,
			steps: []step{{10, true, up(0)}, {200, false, up(0)}, {400, true, up(0)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				r := rs[2]
				if r.Status.State != PushHealthy || !r.Changed || r.From != PushUnhealthy {
					t.Fatalf("live update after stale: healthy flip: %+v", r)
				}
				if !r.Resumed || r.ResumedAfter != secs(390) || !r.Status.HasResumed || r.Status.LastResumedAfter != secs(390) {
					t.Fatalf("resume after 390 s: %+v", r)
				}
				if len(eps) != 1 || eps[0].Layer != LayerLiveStale || eps[0].Reason != ReasonLiveStale ||
					!eps[0].StartedAt.Equal(at(10)) || !eps[0].EndedAt.Equal(at(400)) || eps[0].DownFor != secs(390) || eps[0].Devid != "" {
					t.Fatalf("live_stale episode: %+v", eps)
				}
			},
		},
		{
			name:  "Rule_ThresholdDisabled_UpIsAlwaysHealthy",
			stale: 0,
			steps: []step{{10, false, up(0)}, {100000, false, up(0)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				for _, r := range rs {
					if r.Status.State != PushHealthy || r.Status.HasStaleFor {
						t.Fatalf("threshold ≤ 0: always healthy: %+v", r)
					}
				}
			},
		},
		{
			name:  "Rule_ThresholdNegative_UpIsAlwaysHealthy",
			stale: -time.Second,
			steps: []step{{10, true, up(0)}, {100000, true, up(0)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				if rs[1].Status.State != PushHealthy || rs[1].Resumed || len(eps) != 0 {
					t.Fatalf("threshold < 0: healthy and no resume: %+v %v", rs[1], eps)
				}
			},
		},
		{
			name:  "Rule_UpButNoLiveSinceUpWindow_UnknownUntilThresholdThenUnhealthy",
			stale: 180 * time.Second,
			steps: []step{{5, false, up(0)}, {10, true, up(0)}, {20, false, down}, {30, false, up(30)}, {200, false, up(30)}, {1000, false, up(30)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				if rs[0].Status.State != PushUnknown || rs[0].Changed {
					t.Fatalf("before first traffic: unknown: %+v", rs[0])
				}
				if rs[3].Status.State != PushUnknown || !rs[3].Changed || rs[3].From != PushUnhealthy {
					t.Fatalf("right after a reconnect: unknown: %+v", rs[3])
				}
				if rs[4].Status.State != PushUnknown || rs[4].Status.HasStaleFor {
					t.Fatalf("170 s into a silent up-window: still unknown: %+v", rs[4])
				}
				// A zombie that survived the reconnect must not hide behind
				// "unknown": after StaleAfter of silence in the window it is unhealthy.
				if rs[5].Status.State != PushUnhealthy || !rs[5].Status.HasStaleFor || rs[5].Status.LiveStaleFor != 970*time.Second {
					t.Fatalf("970 s into a silent up-window: unhealthy with the window's silence: %+v", rs[5])
				}
			},
		},
		{
			name:  "Rule_LiveAfterSilentUpWindow_Resume",
			stale: 180 * time.Second,
			steps: []step{{10, true, up(0)}, {300, false, down}, {310, false, up(310)}, {600, true, up(310)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				r := rs[3]
				if !r.Resumed || r.ResumedAfter != 290*time.Second || r.Status.State != PushHealthy {
					t.Fatalf("live after 290 s of a silent window: resumed after 290 s: %+v", r)
				}
				if len(eps) != 1 || eps[0].StartedAt != at(310) || eps[0].DownFor != 290*time.Second {
					t.Fatalf("episode = %+v", eps)
				}
			},
		},
		{
			name:  "Rule_ResumeOnlyWithinTheSameUpWindow",
			stale: 180 * time.Second,
			steps: []step{{10, true, up(0)}, {300, false, down}, {310, false, up(310)}, {320, true, up(310)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				r := rs[3]
				if r.Resumed || r.Status.HasResumed || len(eps) != 0 {
					t.Fatalf("a gap spanning a reconnect is not a resume: %+v %v", r, eps)
				}
				if r.Status.State != PushHealthy || !r.Changed || r.From != PushUnknown {
					t.Fatalf("first live update of the window: healthy: %+v", r)
				}
			},
		},
		{
			name:  "Rule_GapBelowThreshold_NoResume",
			stale: 180 * time.Second,
			steps: []step{{10, true, up(0)}, {189.9, true, up(0)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				if rs[1].Resumed || len(eps) != 0 || rs[1].Changed {
					t.Fatalf("a 179.9 s gap is no resume: %+v", rs[1])
				}
			},
		},
		{
			name:  "Rule_GapExactlyThreshold_Resume",
			stale: 180 * time.Second,
			steps: []step{{10, true, up(0)}, {190, true, up(0)}},
			check: func(t *testing.T, rs []PushResult, eps []Episode) {
				if !rs[1].Resumed || rs[1].ResumedAfter != secs(180) || len(eps) != 1 {
					t.Fatalf("a 180 s gap is a resume: %+v", rs[1])
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eps := NewEpisodes(DefaultEpisodeLimit)
			p := NewPush(PushConfig{StaleAfter: tc.stale, Episodes: eps})
			var rs []PushResult
			for _, s := range tc.steps {
				if s.live {
					rs = append(rs, p.LiveUpdate(at(s.at), s.link))
				} else {
					rs = append(rs, p.Evaluate(at(s.at), s.link))
				}
			}
			tc.check(t, rs, eps.Snapshot())
		})
	}
}

// TestPushSeparateFromSession: a zombie (push unhealthy) leaves the session
// published up; push health is never merged into the session bit.
func TestPushSeparateFromSession(t *testing.T) {
	s := NewSession(DefaultSessionConfig(nil))
	p := NewPush(DefaultPushConfig(nil))
	s.Connected(at(0))
	p.LiveUpdate(at(1), s.Link())
	r := p.Evaluate(at(1000), s.Link())
	if r.Status.State != PushUnhealthy {
		t.Fatalf("zombie: %+v", r)
	}
	if snap := s.Snapshot(at(1000)); !snap.Up || snap.Outage.Down {
		t.Fatalf("session must stay up while push is unhealthy: %+v", snap)
	}
}

// TestPushFollowsSessionBlinkAndRestore drives push health from a real
// Session: a blink keeps the up-window, a restore starts a new one.
func TestPushFollowsSessionBlinkAndRestore(t *testing.T) {
	eps := NewEpisodes(DefaultEpisodeLimit)
	s := NewSession(DefaultSessionConfig(eps))
	p := NewPush(DefaultPushConfig(eps))
	s.Connected(at(0))
	p.LiveUpdate(at(10), s.Link())
	// hard restart blink at 300 (zombie fixed by it): same up-window.
	s.Disconnected(at(300), ReasonForceReconnect)
	s.Connected(at(302))
	r := p.LiveUpdate(at(303), s.Link())
	if !r.Resumed || r.ResumedAfter != secs(293) {
		t.Fatalf("resume across a blink: %+v", r)
	}
	// a real outage: new up-window, push unknown until traffic.
	s.Disconnected(at(400), ReasonEIOClose)
	s.Tick(at(415))
	if got := p.Evaluate(at(415), s.Link()).Status; got.State != PushUnhealthy || got.HasStaleFor {
		t.Fatalf("session down: %+v", got)
	}
	s.Connected(at(420))
	if got := p.Evaluate(at(421), s.Link()).Status; got.State != PushUnknown {
		t.Fatalf("after restore: unknown, got %+v", got)
	}
}
