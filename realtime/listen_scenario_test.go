package realtime_test

import (
	"fmt"
	"slices"
	"testing"
)

// docs/spec.md W-3.2 and W-8c: once bound, the session emits each listen
// event twice, with {"modules":…} then {"devids":…}, and group_id is the
// object id as a JSON number (in modules/connect it is a string).
func TestListenEmitsCarryAnIntegerGroupID(t *testing.T) {
	s := startScenario(t, scenarioSetup{})
	sid := s.waitBound()
	want := s.sim.Devids()
	slices.Sort(want)
	events := []string{"app:modules:parameters:listen", "app:modules:activity:quantity:listen", "app:modules:alarms:quantity:listen"}
	s.eventually("the listen emits at the simulator", func() bool {
		ss, ok := s.simSession(sid)
		return ok && len(ss.Emits) >= 2*len(events)
	})
	ss, _ := s.simSession(sid)
	for i, e := range ss.Emits[:2*len(events)] {
		key := []string{"modules", "devids"}[i%2]
		arg, _ := e.Arg.(map[string]any)
		if e.Event != events[i/2] {
			t.Errorf("emit %d is %q, want %q", i, e.Event, events[i/2])
		}
		if gid, isNumber := arg["group_id"].(float64); !isNumber || gid != float64(s.sim.ObjectID()) {
			t.Errorf("emit %d (%s): group_id = %#v, want the number %d", i, e.Event, arg["group_id"], s.sim.ObjectID())
		}
		if got := fmt.Sprint(arg[key]); got != fmt.Sprint(want) {
			t.Errorf("emit %d (%s): %s = %s, want %v", i, e.Event, key, got, want)
		}
	}
}
