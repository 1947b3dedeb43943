package collector

import (
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
)

// TestRecoveryActionSeriesFollowTheLadder counts one action of every
// recovery step with every outcome, keyed by the ladder's step name and
// outcome, and checks that each lands in its own
// bragerone_recovery_actions_total series with those labels.
func TestRecoveryActionSeriesFollowTheLadder(t *testing.T) {
	t0 := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	s := Snapshot{Now: t0, Objects: []ObjectState{{ID: 7, Recovery: RecoveryState{Actions: map[ActionKey]uint64{}}}}}
	for _, step := range ladder.RecoverySteps() {
		for _, o := range ladder.Outcomes() {
			s.Objects[0].Recovery.Actions[ActionKey{Step: string(step), Result: o.String()}] = 2
		}
	}
	got := gather(t, newTestCollector(t, s, nil, Options{}))["bragerone_recovery_actions_total"]
	if len(got) != len(ladder.RecoverySteps())*len(ladder.Outcomes()) {
		t.Errorf("%d recovery action series, want steps × outcomes = %d: %v",
			len(got), len(ladder.RecoverySteps())*len(ladder.Outcomes()), got)
	}
	for _, step := range ladder.RecoverySteps() {
		for _, o := range ladder.Outcomes() {
			key := "object_id=7,result=" + o.String() + ",step=" + string(step)
			if v, ok := got[key]; !ok || v != 2 {
				t.Errorf("series {%s} = %v (present %v), want the counted actions", key, v, ok)
			}
		}
	}
}

// TestOutageReasonSeriesPreCreated checks that a fresh exporter exports a
// zero series for every reason package outage can put on a session or
// module outage, so increase() sees the first outage of each.
func TestOutageReasonSeriesPreCreated(t *testing.T) {
	s := Snapshot{Now: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC),
		Objects: []ObjectState{{ID: 7}}, Modules: []ModuleState{{Devid: "D1", ObjectID: 7}}}
	all := gather(t, newTestCollector(t, s, nil, Options{}))
	session := all["bragerone_session_outages_total"]
	for _, r := range outage.SessionReasons() {
		if v, ok := session["object_id=7,reason="+r]; !ok || v != 0 {
			t.Errorf("session outage reason %q: series %v (present %v), want 0", r, v, ok)
		}
	}
	module := all["bragerone_module_outages_total"]
	for _, r := range outage.Sources() {
		if v, ok := module["devid=D1,reason="+r]; !ok || v != 0 {
			t.Errorf("module outage reason %q: series %v (present %v), want 0", r, v, ok)
		}
	}
}
