package status

import (
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

// TestDepartedObjectsAreSaid: an object that left the account, with a
// module that had "Out of fuel" active, and a module that left its watched
// object each get a line naming them, their id, since when and the alarm
// that left with them; with nothing departed there is no such part.
func TestDepartedObjectsAreSaid(t *testing.T) {
	s := twoObjects(func(*collector.ObjectState) {})
	s.Objects = s.Objects[:1] // Cottage left
	s.Modules = s.Modules[:2]
	s.DepartedObjects = []collector.DepartedObject{{ID: cottageObj, Name: "Cottage", Since: t0.Add(-20 * time.Minute),
		Modules: []string{"COTTAGE1"}, Alarms: []collector.DepartedAlarm{{Devid: "COTTAGE1", Code: "38", Symbol: "ERROR_BRAK_PALIWA"}}}}
	s.DepartedModules = []collector.DepartedModule{{Devid: "HOMECELLAR", Name: "Cellar", ObjectID: homeObj, Since: t0.Add(-5 * time.Minute)}}

	doc := parsePage(t, render(t, s, Options{Alarms: namer{"38": "Out of fuel"}}))
	lines := part(t, doc, "departed", "").find(func(n *node) bool { return n.Attr["class"] == "departure" })
	if len(lines) != 2 {
		t.Fatalf("departure lines %d, want 2", len(lines))
	}
	text := func(n *node) string { return strings.Join(strings.Fields(n.Text), " ") }
	obj := text(lines[0])
	for _, want := range []string{"Object Cottage (object 1002) is no longer listed by the account", "since 20m00s ago (2026-11-21 13:40:00 UTC)",
		"1 module no longer watched", "alarms active when it left: Out of fuel"} {
		if !strings.Contains(obj, want) {
			t.Errorf("object line %q lacks %q", obj, want)
		}
	}
	mod := text(lines[1])
	if !strings.Contains(mod, "Module Cellar (HOMECELLAR) left Home (object 1001)") || !strings.Contains(mod, "since 5m00s ago") {
		t.Errorf("module line %q", mod)
	}
	if sum := part(t, doc, "summary", "").Text; !strings.Contains(sum, "Watching 1 object") {
		t.Errorf("summary %q", sum)
	}

	// Listed again, but its requested modules are not in its module list.
	s.DepartedObjects[0].Reason = collector.DepartureModulesMissing
	doc = parsePage(t, render(t, s, Options{Alarms: namer{"38": "Out of fuel"}}))
	lines = part(t, doc, "departed", "").find(func(n *node) bool { return n.Attr["class"] == "departure" })
	if obj := text(lines[0]); !strings.Contains(obj, "Object Cottage (object 1002) is listed, but none of the modules --cloud.modules asks for is in its module list") ||
		strings.Contains(obj, "no longer listed") || !strings.Contains(obj, "since 20m00s ago") {
		t.Errorf("object line %q, reason %s", obj, collector.DepartureModulesMissing)
	}

	doc = parsePage(t, render(t, twoObjects(func(*collector.ObjectState) {}), Options{}))
	if doc.byID("departed") != nil {
		t.Error("a departures part with nothing departed")
	}
}
