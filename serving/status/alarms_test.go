package status

import (
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

// namer translates what the web app's assets translate in English: code 38
// ("Out of fuel"), not code 91.
type namer map[string]string

func (n namer) AlarmName(code, _ string) (string, bool) { t, ok := n[code]; return t, ok }

func (namer) Language() string { return "en" }

// alarmedAccount is the two-object account, every health signal green,
// with "Out of fuel" active on Home's boiler for 2 h and code 91 on
// Cottage's for 10 min.
func alarmedAccount() collector.Snapshot {
	s := twoObjects(func(*collector.ObjectState) {})
	for i := range s.Modules {
		m := &s.Modules[i]
		switch m.Devid {
		case "HOMEBOILER":
			m.Alarms, m.ActiveAlarmsKnown = 1, true
			m.ActiveAlarms = []collector.Alarm{{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Since: t0.Add(-2 * time.Hour)}}
		case "COTTAGE1":
			m.Alarms, m.ActiveAlarmsKnown = 1, true
			m.ActiveAlarms = []collector.Alarm{{Code: "91", Symbol: "ERROR_MODUL_ROZSZERZEN", Since: t0.Add(-10 * time.Minute)}}
		}
	}
	return s
}

// TestActiveAlarmsAreTheHeadline: with every health signal green and two
// boiler alarms active, /status leads with an alarm card saying how many,
// naming each with its module, object and age, oldest first; both objects'
// sections turn to the alarm colour and each says its own alarm.
func TestActiveAlarmsAreTheHeadline(t *testing.T) {
	doc := parsePage(t, render(t, alarmedAccount(), Options{Alarms: namer{"38": "Out of fuel"}}))
	cards := part(t, doc, "cards", "").find(func(n *node) bool { return strings.HasPrefix(n.Attr["class"], "card ") })
	if len(cards) == 0 || strings.TrimSpace(cards[0].byClass("label").Text) != "Boiler alarms" {
		t.Fatalf("the first headline card is not the boiler alarms")
	}
	state, class, detail := cardStates(part(t, doc, "cards", ""))
	if state["Boiler alarms"] != "2 ACTIVE" || class["Boiler alarms"] != classAlarm {
		t.Errorf("alarm card %q (%s), want 2 ACTIVE (alarm)", state["Boiler alarms"], class["Boiler alarms"])
	}
	want := "Out of fuel · Boiler · Home · since 2h00m; ERROR_MODUL_ROZSZERZEN (code 91, no translation in en) · Cottage boiler · Cottage · since 10m00s"
	if d := detail["Boiler alarms"]; d != want {
		t.Errorf("alarm card detail\n got %q\nwant %q", d, want)
	}
	for id, want := range map[int]string{homeObj: "Out of fuel · Boiler · since 2h00m", cottageObj: "ERROR_MODUL_ROZSZERZEN (code 91, no translation in en) · Cottage boiler · since 10m00s"} {
		sec := part(t, doc, objectAnchor(id), "")
		if c := sec.Attr["class"]; c != "object alarm" {
			t.Errorf("section of object %d: class %q, want the alarm colour", id, c)
		}
		st, cl, de := cardStates(sec)
		if st["Boiler alarms"] != "1 ACTIVE" || cl["Boiler alarms"] != classAlarm || de["Boiler alarms"] != want {
			t.Errorf("object %d's alarm card %q (%s) %q, want 1 ACTIVE (alarm) %q", id, st["Boiler alarms"], cl["Boiler alarms"], de["Boiler alarms"], want)
		}
	}
}

// TestNoAlarmIsGreenAndUnreadIsNotRed: no active alarm reads NONE in green;
// alarms not read yet read UNKNOWN without colouring the sections; a count
// read before the list still counts, its names said to be unread.
func TestNoAlarmIsGreenAndUnreadIsNotRed(t *testing.T) {
	doc := parsePage(t, render(t, twoObjects(func(*collector.ObjectState) {}), Options{}))
	state, class, _ := cardStates(part(t, doc, "cards", ""))
	if state["Boiler alarms"] != "NONE" || class["Boiler alarms"] != classOK {
		t.Errorf("no alarm: card %q (%s)", state["Boiler alarms"], class["Boiler alarms"])
	}

	s := twoObjects(func(*collector.ObjectState) {})
	for i := range s.Modules {
		s.Modules[i].AlarmsKnown = false
	}
	doc = parsePage(t, render(t, s, Options{}))
	state, class, _ = cardStates(part(t, doc, "cards", ""))
	if state["Boiler alarms"] != "UNKNOWN" || class["Boiler alarms"] != classUnknown {
		t.Errorf("alarms not read: card %q (%s)", state["Boiler alarms"], class["Boiler alarms"])
	}
	if c := part(t, doc, objectAnchor(homeObj), "").Attr["class"]; c != "object ok" {
		t.Errorf("alarms not read turned Home's section %q", c)
	}

	s.Modules[0].AlarmsKnown, s.Modules[0].Alarms = true, 2
	doc = parsePage(t, render(t, s, Options{}))
	state, _, detail := cardStates(part(t, doc, "cards", ""))
	if state["Boiler alarms"] != "2 ACTIVE" || !strings.HasPrefix(detail["Boiler alarms"], "2 alarms (names not read yet) · Boiler · Home") {
		t.Errorf("counted alarms: card %q %q", state["Boiler alarms"], detail["Boiler alarms"])
	}
}

// TestModulePageStartsWithItsAlarms: a module's page shows its active
// alarms before anything else, named.
func TestModulePageStartsWithItsAlarms(t *testing.T) {
	doc := renderModule(t, moduleScenario(), fixtureParams(catalogFixture()), "MOD1")
	var order []string
	doc.find(func(n *node) bool {
		if id := n.Attr["id"]; id == "activealarms" || id == "cards" || id == "changes-heading" {
			order = append(order, id)
		}
		return false
	})
	if len(order) == 0 || order[0] != "activealarms" {
		t.Fatalf("the module page's parts in order %q, want the active alarms first", order)
	}
	rows := part(t, doc, "alarms", "").find(func(n *node) bool { return n.Name == "tr" && n.Attr["class"] == "alarm" })
	if len(rows) != 2 {
		t.Fatalf("alarm rows %d, want 2", len(rows))
	}
}
