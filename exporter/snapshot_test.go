package exporter

import (
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/history"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

func TestFromStatusRecomputesDurationsAtScrapeTime(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	cfg := ladder.DefaultConfig()
	// Counters come from the ladder's own bookkeeping.
	st := ladder.State{}
	st, _ = cfg.OnActionResult(st, ladder.Rebuild, ladder.Result{OK: true}, t0)
	st, _ = cfg.OnActionResult(st, ladder.Rebuild, ladder.Result{OK: true}, t0)
	st, _ = cfg.OnActionResult(st, ladder.Rebuild, ladder.Result{OK: true}, t0)
	st.QuarantineUntil = t0.Add(time.Hour)
	status := &realtime.Status{
		At: t0,
		Session: outage.SessionSnapshot{
			Up:      false,
			Outage:  outage.Record{Down: true, DownSince: t0.Add(-10 * time.Second), DownFor: 10 * time.Second, Reason: "eio_close"},
			Outages: map[string]uint64{"eio_close": 1},
		},
		Push:   outage.PushStatus{State: outage.PushUnhealthy},
		Ladder: st,
		Modules: []realtime.ModuleStatus{{
			ModuleSnapshot: outage.ModuleSnapshot{Devid: "D1", Known: true, Online: false, Gateway: outage.Gateway{Version: "V2.08"},
				Outage: outage.Record{Down: true, DownSince: t0.Add(-5 * time.Second), Reason: "ws"}, Outages: map[string]uint64{"ws": 1}},
			Name: "Boiler", Alarms: 2, AlarmsKnown: true,
		}},
		Episodes: []outage.Episode{{ID: "cloud-1", Layer: outage.LayerCloud, Reason: "disconnect", DownFor: time.Second}},
	}
	stats := map[string]store.ModuleStats{"D1": {Params: 10, NonNumeric: 2, LastUpdate: t0}}
	scrape := t0.Add(20 * time.Second)
	s := FromStatus(status, stats, scrape)

	if s.Objects[0].Session.Outage.DownFor != 30*time.Second {
		t.Errorf("session DownFor = %v, want 30s (measured at the scrape)", s.Objects[0].Session.Outage.DownFor)
	}
	m := s.Modules[0]
	if m.Outage.DownFor != 25*time.Second || m.Outage.Reason != "ws" || m.GatewayVersion != "V2.08" || m.Params != 10 || m.NonNumeric != 2 || !m.AlarmsKnown || m.Alarms != 2 {
		t.Errorf("module = %+v", m)
	}
	if !s.Objects[0].Push.Known || s.Objects[0].Push.Healthy {
		t.Errorf("push = %+v", s.Objects[0].Push)
	}
	if !s.Objects[0].Recovery.Quarantined || s.Objects[0].Recovery.QuarantineLeft != 59*time.Minute+40*time.Second {
		t.Errorf("recovery = %+v", s.Objects[0].Recovery)
	}
	if s.Objects[0].Recovery.Actions[collector.ActionKey{Step: collector.StepManagerRebuild, Result: collector.ResultOK}] != 3 {
		t.Errorf("actions = %v", s.Objects[0].Recovery.Actions)
	}
	if len(s.Episodes) != 1 || s.Episodes[0].Layer != collector.LayerCloud {
		t.Errorf("episodes = %+v", s.Episodes)
	}
	// Copies: changing the snapshot does not reach the gateway's status.
	s.Objects[0].Session.OutagesByReason["eio_close"] = 99
	if status.Session.Outages["eio_close"] != 1 {
		t.Error("snapshot shares its counters map with the status")
	}
}

func TestFromStatusUnknownPushAndNilStatus(t *testing.T) {
	if s := FromStatus(nil, nil, time.Unix(1, 0)); len(s.Modules) != 0 || len(s.Objects) != 0 {
		t.Fatalf("nil status: %+v", s)
	}
	s := FromStatus(&realtime.Status{Push: outage.PushStatus{State: outage.PushUnknown}}, nil, time.Unix(1, 0))
	if s.Objects[0].Push.Known {
		t.Fatal("unknown push exported as known")
	}
}

func TestFromStatusCarriesZombieSilenceToScrapeTime(t *testing.T) {
	at := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	st := &realtime.Status{At: at, Session: outage.SessionSnapshot{Up: true},
		Push: outage.PushStatus{State: outage.PushUnhealthy, HasStaleFor: true, LiveStaleFor: 200 * time.Second}}
	s := FromStatus(st, nil, at.Add(5*time.Second))
	if s.Objects[0].Push.StaleFor != 205*time.Second {
		t.Fatalf("StaleFor = %v, want 205s", s.Objects[0].Push.StaleFor)
	}
}

// TestFromStatusCountsEveryLadderAction counts every recovery step with
// every outcome through the ladder's own bookkeeping and checks that each
// reaches the snapshot under the ladder's step name and outcome, the labels
// of bragerone_recovery_actions_total.
func TestFromStatusCountsEveryLadderAction(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	cfg := ladder.DefaultConfig()
	st := ladder.State{}
	results := map[ladder.Outcome]ladder.Result{ladder.OK: {OK: true}, ladder.Failed: {}, ladder.Aborted: {Aborted: true}}
	for _, step := range ladder.RecoverySteps() {
		for _, o := range ladder.Outcomes() {
			st, _ = cfg.OnActionResult(st, step, results[o], t0)
		}
	}
	s := FromStatus(&realtime.Status{At: t0, Ladder: st}, nil, t0)
	if len(s.Objects[0].Recovery.Actions) != len(ladder.RecoverySteps())*len(ladder.Outcomes()) {
		t.Errorf("%d kinds of action, want steps × outcomes = %d: %v",
			len(s.Objects[0].Recovery.Actions), len(ladder.RecoverySteps())*len(ladder.Outcomes()), s.Objects[0].Recovery.Actions)
	}
	for _, step := range ladder.RecoverySteps() {
		for _, o := range ladder.Outcomes() {
			if n := s.Objects[0].Recovery.Actions[collector.ActionKey{Step: string(step), Result: o.String()}]; n < 1 {
				t.Errorf("%s %s counted %d times, want the counted action", step, o, n)
			}
		}
	}
}

// A module's published history reaches the snapshot as copies; a module
// whose history was not read yet has none.
func TestFromStatusCarriesModuleHistory(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	hist := &realtime.History{
		Alarms: history.AlarmsSnapshot{
			Counts: map[string]uint64{"38": 2}, LastDuration: map[string]time.Duration{"38": time.Minute},
			Recent:  []history.Occurrence{{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Start: t0, End: t0.Add(time.Minute)}},
			Dropped: 4,
		},
		Activity: history.ActivitySnapshot{
			ByState: map[string]uint64{"success": 1}, LastChange: t0,
			Recent:  []history.Change{{ID: 9, At: t0, Register: "P6.v219", Symbol: "PARAM_66", Old: "1", New: "2", Unit: 1, User: "Jan", State: "success"}},
			Dropped: 1,
		},
	}
	status := &realtime.Status{At: t0, Modules: []realtime.ModuleStatus{
		{ModuleSnapshot: outage.ModuleSnapshot{Devid: "D1"}, History: hist},
		{ModuleSnapshot: outage.ModuleSnapshot{Devid: "D2"}},
	}}
	s := FromStatus(status, nil, t0)
	h := s.Modules[0].History
	if h == nil || h.AlarmCounts["38"] != 2 || h.AlarmLastDuration["38"] != time.Minute || h.ChangesByState["success"] != 1 || !h.LastChange.Equal(t0) {
		t.Fatalf("history = %+v", h)
	}
	if h.RowsDropped[history.ListAlarmHistory] != 4 || h.RowsDropped[history.ListActivity] != 1 {
		t.Errorf("dropped = %v", h.RowsDropped)
	}
	want := collector.Change{At: t0, Register: "P6.v219", Symbol: "PARAM_66", Old: "1", New: "2", Unit: 1, User: "Jan", State: "success"}
	if len(h.Changes) != 1 || h.Changes[0] != want || len(h.Alarms) != 1 || h.Alarms[0].Symbol != "ERROR_BRAK_PALIWA" || !h.Alarms[0].End.Equal(t0.Add(time.Minute)) {
		t.Errorf("recent = %+v / %+v", h.Alarms, h.Changes)
	}
	if s.Modules[1].History != nil {
		t.Errorf("a module not read yet has history %+v", s.Modules[1].History)
	}
	h.AlarmCounts["38"] = 99
	if hist.Alarms.Counts["38"] != 2 {
		t.Error("the snapshot shares its counts with the gateway's status")
	}
}
