package collector

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// DepartedObject is a watched object that is no longer watched: the
// account's listing stopped naming it, or the account lists it but the
// exporter cannot watch it (Reason). Its own series have left /metrics;
// this record says that it left.
type DepartedObject struct {
	ID     int
	Name   string    // its name when it was last watched
	Since  time.Time // when it was first seen gone
	Reason string    // why it is not watched now: DepartureUnlisted or DepartureModulesMissing
	// Modules are the devids it held when it left; Alarms the alarms active
	// on them then (the alarms that would otherwise vanish unsaid).
	Modules []string
	Alarms  []DepartedAlarm
}

// DepartedModule is a module that left its object while the object is
// still watched (the object's module list stopped naming it and the
// exporter stopped exporting it).
type DepartedModule struct {
	Devid    string
	Name     string // its name when it was last watched
	ObjectID int    // the object it left
	Since    time.Time
	Alarms   []DepartedAlarm // active when it left
}

// DepartedAlarm is an alarm that was active on a module when the module
// (or its object) left.
type DepartedAlarm struct {
	Devid        string
	Code, Symbol string
}

// Why a watched object is no longer watched: DepartedObject.Reason, the
// reason label of bragerone_object_departed_timestamp_seconds.
const (
	// DepartureUnlisted: the account no longer lists the object.
	DepartureUnlisted = "unlisted"
	// DepartureModulesMissing: the account lists the object, but none of
	// the modules the exporter was asked to watch (--cloud.modules) is in
	// its module list, so no gateway watches it.
	DepartureModulesMissing = "modules_missing"
)

// DepartureReasons lists every DepartedObject.Reason.
func DepartureReasons() []string { return []string{DepartureUnlisted, DepartureModulesMissing} }

// DefaultDepartedForgetAfter is how long a departure is remembered when
// Departures.ForgetAfter is not set: a week, time to notice an
// installation that left over a long weekend.
const DefaultDepartedForgetAfter = 7 * 24 * time.Hour

// Departures remembers the objects and modules that left the snapshots of
// a running exporter, from the first snapshot that lacks them until they
// come back, ForgetAfter passes or the process ends. It has no clock of its
// own: each Observe takes the snapshot's Now. Safe for concurrent use.
type Departures struct {
	// ForgetAfter: a departure older than this is forgotten; 0 keeps it
	// until the process ends.
	ForgetAfter time.Duration

	mu      sync.Mutex
	seen    bool
	objects map[int]seenObject    // watched at the last snapshot
	modules map[string]seenModule // exported at the last snapshot
	goneObj map[int]DepartedObject
	goneMod map[string]DepartedModule
}

type seenObject struct{ name string }

type seenModule struct {
	name   string
	object int
	alarms []DepartedAlarm
}

// NewDepartures returns an empty memory that forgets after forgetAfter
// (0: never).
func NewDepartures(forgetAfter time.Duration) *Departures {
	return &Departures{ForgetAfter: forgetAfter}
}

// Observe compares s with the previous snapshot and fills
// s.DepartedObjects and s.DepartedModules: what was there and is gone. An
// object or module that is back is no longer departed. A module that left
// with its object is part of the object's departure, not one of its own.
// A departed object's Reason follows s.Unwatched at every snapshot: an
// object the account lists again that still cannot be watched stays
// departed, for that reason.
func (d *Departures) Observe(s *Snapshot) {
	if d == nil {
		return
	}
	now := s.Now
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.goneObj == nil {
		d.goneObj, d.goneMod = map[int]DepartedObject{}, map[string]DepartedModule{}
	}

	objects := make(map[int]seenObject, len(s.Objects))
	for _, o := range s.Objects {
		objects[o.ID] = seenObject{name: o.Name}
		delete(d.goneObj, o.ID)
	}
	modules := make(map[string]seenModule, len(s.Modules))
	for _, m := range s.Modules {
		sm := seenModule{name: m.Name, object: m.ObjectID}
		for _, a := range m.ActiveAlarms {
			sm.alarms = append(sm.alarms, DepartedAlarm{Devid: m.Devid, Code: a.Code, Symbol: a.Symbol})
		}
		modules[m.Devid] = sm
		delete(d.goneMod, m.Devid)
	}

	listedUnwatched := make(map[int]bool, len(s.Unwatched))
	for _, id := range s.Unwatched {
		listedUnwatched[id] = true
	}
	if d.seen {
		for id, o := range d.objects {
			if _, still := objects[id]; still {
				continue
			}
			gone := DepartedObject{ID: id, Name: o.name, Since: now}
			for devid, m := range d.modules {
				if m.object == id {
					gone.Modules = append(gone.Modules, devid)
					gone.Alarms = append(gone.Alarms, m.alarms...)
				}
			}
			slices.Sort(gone.Modules)
			sortDepartedAlarms(gone.Alarms)
			d.goneObj[id] = gone
		}
		for devid, m := range d.modules {
			if _, still := modules[devid]; still {
				continue
			}
			if _, objectStill := objects[m.object]; !objectStill {
				continue // left with its object
			}
			d.goneMod[devid] = DepartedModule{Devid: devid, Name: m.name, ObjectID: m.object, Since: now, Alarms: m.alarms}
		}
	}
	d.seen, d.objects, d.modules = true, objects, modules

	if d.ForgetAfter > 0 {
		for id, o := range d.goneObj {
			if now.Sub(o.Since) >= d.ForgetAfter {
				delete(d.goneObj, id)
			}
		}
		for devid, m := range d.goneMod {
			if now.Sub(m.Since) >= d.ForgetAfter {
				delete(d.goneMod, devid)
			}
		}
	}

	s.DepartedObjects = s.DepartedObjects[:0]
	for id, o := range d.goneObj {
		o.Reason = DepartureUnlisted
		if listedUnwatched[id] {
			o.Reason = DepartureModulesMissing
		}
		d.goneObj[id] = o
		o.Modules = slices.Clone(o.Modules)
		o.Alarms = slices.Clone(o.Alarms)
		s.DepartedObjects = append(s.DepartedObjects, o)
	}
	slices.SortFunc(s.DepartedObjects, func(a, b DepartedObject) int { return a.ID - b.ID })
	s.DepartedModules = s.DepartedModules[:0]
	for _, m := range d.goneMod {
		m.Alarms = slices.Clone(m.Alarms)
		s.DepartedModules = append(s.DepartedModules, m)
	}
	slices.SortFunc(s.DepartedModules, func(a, b DepartedModule) int { return strings.Compare(a.Devid, b.Devid) })
}

func sortDepartedAlarms(as []DepartedAlarm) {
	slices.SortFunc(as, func(a, b DepartedAlarm) int {
		if c := strings.Compare(a.Devid, b.Devid); c != 0 {
			return c
		}
		return strings.Compare(a.Code, b.Code)
	})
}
