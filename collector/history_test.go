package collector

import (
	"maps"
	"testing"
)

var historyFamilies = []string{
	"bragerone_module_alarms_total", "bragerone_module_alarm_last_duration_seconds", "bragerone_module_changes_total",
	"bragerone_module_last_change_timestamp_seconds", "bragerone_history_rows_dropped_total",
}

// Alarm occurrences are named as the active alarm series name them: the
// catalog's translation, else the cloud's symbol, else the code; a module
// listed twice exports its history once, and one not read yet none.
func TestHistorySeries(t *testing.T) {
	s := catalogSnapshot()
	s.Modules = append(s.Modules, s.Modules[0]) // MOD1 twice
	got := gather(t, catalogCollector(t, s, catalogParams(), testCatalog, Options{}))
	want := map[string]float64{
		"code=38,devid=MOD1,name=No fuel":          2,
		"code=12,devid=MOD1,name=ERROR_CZUJNIK_CO": 1,
		"code=91,devid=MOD1,name=91":               0,
	}
	if !maps.Equal(got["bragerone_module_alarms_total"], want) {
		t.Errorf("alarms_total %v, want %v", got["bragerone_module_alarms_total"], want)
	}
	if a := got["bragerone_module_alarm_active"]["code=38,devid=MOD1,name=No fuel"]; a != 1 {
		t.Errorf("the active series names alarm 38 otherwise: %v", got["bragerone_module_alarm_active"])
	}
	if d := got["bragerone_module_alarm_last_duration_seconds"]; len(d) != 2 || d["code=38,devid=MOD1"] != 90 || d["code=91,devid=MOD1"] != 900 {
		t.Errorf("last durations %v", d)
	}
	wantChanges := map[string]float64{"devid=MOD1,state=failed": 1, "devid=MOD1,state=success": 2, "devid=MOD2,state=success": 0}
	if !maps.Equal(got["bragerone_module_changes_total"], wantChanges) {
		t.Errorf("changes %v, want %v", got["bragerone_module_changes_total"], wantChanges)
	}
	if lc := got["bragerone_module_last_change_timestamp_seconds"]["devid=MOD1"]; lc != float64(t0.Unix()-120) {
		t.Errorf("last change %v", lc)
	}
	wantDropped := map[string]float64{"devid=MOD1,list=alarm_history": 3, "devid=MOD1,list=activity": 0,
		"devid=MOD2,list=alarm_history": 0, "devid=MOD2,list=activity": 1}
	if !maps.Equal(got["bragerone_history_rows_dropped_total"], wantDropped) {
		t.Errorf("dropped %v, want %v", got["bragerone_history_rows_dropped_total"], wantDropped)
	}
	for _, f := range historyFamilies {
		for labels := range got[f] {
			if containsDevid(labels, "MOD3") {
				t.Errorf("%s exported for MOD3, whose history was never read: %s", f, labels)
			}
		}
	}
}

// A module that leaves the snapshot takes its history series with it.
func TestHistorySeriesLeaveWithTheModule(t *testing.T) {
	s := catalogSnapshot()
	s.Modules = s.Modules[1:] // MOD1 left
	got := gather(t, catalogCollector(t, s, catalogParams(), testCatalog, Options{}))
	for _, f := range historyFamilies {
		for labels := range got[f] {
			if containsDevid(labels, "MOD1") {
				t.Errorf("%s still exported for MOD1: %s", f, labels)
			}
		}
	}
	if len(got["bragerone_history_rows_dropped_total"]) != 2 {
		t.Errorf("MOD2's series went with MOD1: %v", got["bragerone_history_rows_dropped_total"])
	}
}

func containsDevid(labels, devid string) bool {
	for _, part := range splitLabels(labels) {
		if part == "devid="+devid {
			return true
		}
	}
	return false
}

func splitLabels(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
