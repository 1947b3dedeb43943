package collector

import (
	"slices"
	"testing"
	"time"
)

// departedSnapshot is the healthy account after Cottage left it (with
// MOD2 and MOD2's alarm) and, an hour on, Home's module MOD3 left Home.
func departedSnapshot() Snapshot {
	s := healthySnapshot()
	d := NewDepartures(0)
	withMod3 := s
	withMod3.Modules = append(slices.Clone(s.Modules), onlineModule("MOD3", "Cellar"))
	for i := range withMod3.Modules {
		if withMod3.Modules[i].Devid == "MOD2" {
			withMod3.Modules[i].ActiveAlarms = []Alarm{{Code: "38", Symbol: "ERROR_BRAK_PALIWA"}}
		}
	}
	d.Observe(&withMod3)

	left := s
	left.Now = t0.Add(time.Minute)
	left.Objects = []ObjectState{*home(&s)}
	left.Modules = []ModuleState{s.Modules[0], onlineModule("MOD3", "Cellar")}
	d.Observe(&left)

	later := left
	later.Now = t0.Add(time.Hour)
	later.Modules = []ModuleState{s.Modules[0]}
	d.Observe(&later)
	return later
}

// TestDepartureReasonFollowsTheListing: a departed object that the account
// lists again but that no gateway watches (its requested modules are not in
// its module list) stays departed, for that reason, since the same moment;
// unlisted again, it is unlisted; watched again, it is no longer departed.
func TestDepartureReasonFollowsTheListing(t *testing.T) {
	d := NewDepartures(0)
	s := healthySnapshot()
	s.Unwatched = []int{}
	d.Observe(&s)
	left := s
	left.Now = t0.Add(time.Minute)
	left.Objects = []ObjectState{*home(&s)}
	left.Modules = []ModuleState{s.Modules[0]}
	step := func(at time.Duration, unwatched []int, objects []ObjectState) Snapshot {
		t.Helper()
		next := left
		next.Now = t0.Add(at)
		next.Unwatched = unwatched
		if objects != nil {
			next.Objects, next.Modules = objects, s.Modules
		}
		d.Observe(&next)
		return next
	}
	for _, tc := range []struct {
		at        time.Duration
		unwatched []int
		want      string
	}{
		{time.Minute, []int{}, DepartureUnlisted},
		{2 * time.Minute, []int{cottageID}, DepartureModulesMissing},
		{3 * time.Minute, nil, DepartureUnlisted}, // the source knows no listing
		{4 * time.Minute, []int{homeID + cottageID}, DepartureUnlisted},
		{5 * time.Minute, []int{cottageID}, DepartureModulesMissing},
		{6 * time.Minute, []int{}, DepartureUnlisted},
	} {
		got := step(tc.at, tc.unwatched, nil)
		if len(got.DepartedObjects) != 1 {
			t.Fatalf("at %v: departed %+v, want Cottage", tc.at, got.DepartedObjects)
		}
		if o := got.DepartedObjects[0]; o.ID != cottageID || o.Reason != tc.want || !o.Since.Equal(t0.Add(time.Minute)) {
			t.Errorf("at %v, unwatched %v: departed %+v, want reason %s since %v", tc.at, tc.unwatched, o, tc.want, t0.Add(time.Minute))
		}
	}
	if back := step(7*time.Minute, []int{}, s.Objects); len(back.DepartedObjects) != 0 {
		t.Errorf("watched again: departed %+v", back.DepartedObjects)
	}
}

// TestDeparturesRemembered: an object that stops being watched is
// remembered with its modules and the alarms they had; a module that leaves
// its watched object is remembered on its own; each leaves the memory when
// it returns, and after ForgetAfter.
func TestDeparturesRemembered(t *testing.T) {
	s := departedSnapshot()
	if len(s.DepartedObjects) != 1 {
		t.Fatalf("departed objects %+v, want Cottage", s.DepartedObjects)
	}
	o := s.DepartedObjects[0]
	if o.ID != cottageID || o.Name != "Cottage" || !o.Since.Equal(t0.Add(time.Minute)) || o.Reason != DepartureUnlisted ||
		!slices.Equal(o.Modules, []string{"MOD2"}) || len(o.Alarms) != 1 || o.Alarms[0].Code != "38" {
		t.Errorf("departed object %+v", o)
	}
	if len(s.DepartedModules) != 1 {
		t.Fatalf("departed modules %+v, want MOD3 alone (MOD2 left with its object)", s.DepartedModules)
	}
	if m := s.DepartedModules[0]; m.Devid != "MOD3" || m.Name != "Cellar" || m.ObjectID != homeID || !m.Since.Equal(t0.Add(time.Hour)) {
		t.Errorf("departed module %+v", m)
	}

	// Both return: nothing is departed.
	d := NewDepartures(0)
	first := healthySnapshot()
	d.Observe(&first)
	gone := healthySnapshot()
	gone.Objects, gone.Modules = gone.Objects[:1], gone.Modules[:1]
	gone.Now = t0.Add(time.Minute)
	d.Observe(&gone)
	if len(gone.DepartedObjects) != 1 {
		t.Fatalf("departed %+v, want Cottage", gone.DepartedObjects)
	}
	back := healthySnapshot()
	back.Now = t0.Add(2 * time.Minute)
	d.Observe(&back)
	if len(back.DepartedObjects)+len(back.DepartedModules) != 0 {
		t.Errorf("after the return: departed %+v %+v", back.DepartedObjects, back.DepartedModules)
	}

	// Forgotten after ForgetAfter, not before.
	d = NewDepartures(24 * time.Hour)
	first = healthySnapshot()
	d.Observe(&first)
	for _, tc := range []struct {
		after time.Duration
		want  int
	}{{time.Minute, 1}, {24*time.Hour - time.Second, 1}, {24*time.Hour + time.Minute, 0}} {
		gone := healthySnapshot()
		gone.Objects, gone.Modules = gone.Objects[:1], gone.Modules[:1]
		gone.Now = t0.Add(tc.after)
		d.Observe(&gone)
		if len(gone.DepartedObjects) != tc.want {
			t.Errorf("%v after the departure: %d departed, want %d", tc.after, len(gone.DepartedObjects), tc.want)
		}
	}
}

// TestFirstSnapshotDepartsNothing: what was never seen cannot have left.
func TestFirstSnapshotDepartsNothing(t *testing.T) {
	d := NewDepartures(0)
	s := Snapshot{Now: t0}
	d.Observe(&s)
	s2 := healthySnapshot()
	d.Observe(&s2)
	if len(s2.DepartedObjects)+len(s2.DepartedModules) != 0 {
		t.Errorf("departed %+v %+v", s2.DepartedObjects, s2.DepartedModules)
	}
}
