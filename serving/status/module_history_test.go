package status

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

// historyScenario gives MOD1 two changes (one failed, by a user with a
// hostile name) and two alarm occurrences, one active and one finished.
func historyScenario() collector.Snapshot {
	s := moduleScenario()
	for i := range s.Modules {
		if s.Modules[i].Devid == "MOD1" {
			s.Modules[i].History = &collector.ModuleHistory{
				Changes: []collector.Change{
					{At: t0.Add(-5 * time.Minute), Register: "P4.v7", Symbol: "PARAM_P4_7", Old: "150", New: "200", User: "Jan <b>Kowalski</b>", State: "success"},
					{At: t0.Add(-time.Hour), Symbol: "PARAM_P6_5", Old: "0", New: "1", User: "installer", State: "failed"},
				},
				Alarms: []collector.AlarmOccurrence{
					{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Start: t0.Add(-90 * time.Minute)},
					{Code: "12", Symbol: "ERROR_CZUJNIK_CO", Start: t0.Add(-3 * time.Hour), End: t0.Add(-3*time.Hour + 15*time.Minute)},
				},
			}
		}
	}
	return s
}

// The page shows the module's recent changes (parameter by its catalog
// name, old → new as the app displays them, who, the outcome) and its
// alarm history (name as the active alarms are named, from, to or
// "active", duration).
func TestModulePageShowsHistory(t *testing.T) {
	doc := renderModule(t, historyScenario(), fixtureParams(catalogFixture()), "MOD1")
	changes := doc.byID("changes")
	if changes == nil {
		t.Fatal("no changes table")
	}
	var got [][]string
	for _, r := range changes.find(func(n *node) bool { return n.Name == "tr" && strings.Contains(n.Attr["class"], "change") }) {
		got = append(got, cells(r))
	}
	when := func(ago time.Duration) string { return fmtAge(t0.Add(-ago), t0, time.UTC) }
	want := [][]string{
		// Scaled ×0.1 by the catalog, with its unit; the user as text.
		{when(5 * time.Minute), "Boiler power P4.v7", "15 kW → 20 kW", "Jan <b>Kowalski</b>", "success"},
		// Found by symbol; the states' labels.
		{when(time.Hour), "Operating mode P6.v5", "Winter → Summer", "installer", "failed"},
	}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Fatalf("changes\n got %q\nwant %q", got, want)
	}
	if c := changes.byClass("bad"); c == nil || strings.TrimSpace(c.Text) != "failed" {
		t.Errorf("the failed change is not marked")
	}

	alarms := doc.byID("alarmhistory")
	if alarms == nil {
		t.Fatal("no alarm history table")
	}
	got = nil
	for _, r := range alarms.find(func(n *node) bool { return n.Name == "tr" && strings.Contains(n.Attr["class"], "pastalarm") }) {
		got = append(got, cells(r))
	}
	want = [][]string{
		{"Out of fuel", "ERROR_BRAK_PALIWA 38", fmtTime(t0.Add(-90*time.Minute), time.UTC), "active", "1h30m so far"},
		{"ERROR_CZUJNIK_COcode 12, no translation in en", "ERROR_CZUJNIK_CO 12", fmtTime(t0.Add(-3*time.Hour), time.UTC), fmtTime(t0.Add(-3*time.Hour+15*time.Minute), time.UTC), "15m00s"},
	}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Fatalf("alarm history\n got %q\nwant %q", got, want)
	}
}

// Without the catalog the registers and raw values are shown; without
// history the sections say it was not read yet.
func TestModulePageHistoryWithoutCatalogOrHistory(t *testing.T) {
	doc := renderModule(t, historyScenario(), nil, "MOD1")
	rows := doc.byID("changes").find(func(n *node) bool { return n.Name == "tr" && strings.Contains(n.Attr["class"], "change") })
	if c := cells(rows[0]); c[1] != "PARAM_P4_7 P4.v7" || c[2] != "150 → 200" {
		t.Errorf("raw change %q", c)
	}
	if c := cells(rows[1]); c[1] != "PARAM_P6_5" || c[2] != "0 → 1" {
		t.Errorf("raw change without a register %q", c)
	}

	doc = renderModule(t, moduleScenario(), fixtureParams(catalogFixture()), "MOD1")
	for _, id := range []string{"changes-none", "alarmhistory-none"} {
		if n := doc.byID(id); n == nil || !strings.Contains(n.Text, "not read yet") {
			t.Errorf("%s: %v", id, n)
		}
	}
	for _, id := range []string{"changes-heading", "alarmhistory-heading"} {
		if doc.byID(id) == nil {
			t.Errorf("no %s", id)
		}
	}
}

// At most 20 of each are shown.
func TestModulePageHistoryIsBounded(t *testing.T) {
	s := historyScenario()
	h := s.Modules[slices.IndexFunc(s.Modules, func(m collector.ModuleState) bool { return m.Devid == "MOD1" })].History
	for i := range 30 {
		h.Changes = append(h.Changes, collector.Change{At: t0.Add(-time.Duration(i) * time.Hour), Symbol: "S" + strconv.Itoa(i), New: "1", State: "success"})
		h.Alarms = append(h.Alarms, collector.AlarmOccurrence{Code: "1", Start: t0.Add(-time.Duration(i) * time.Hour), End: t0})
	}
	doc := renderModule(t, s, nil, "MOD1")
	if n := len(doc.byID("changes").find(func(n *node) bool { return n.Name == "tr" && strings.Contains(n.Attr["class"], "change") })); n != maxHistoryShown {
		t.Errorf("%d changes shown", n)
	}
	if n := len(doc.byID("alarmhistory").find(func(n *node) bool { return n.Name == "tr" && strings.Contains(n.Attr["class"], "pastalarm") })); n != maxHistoryShown {
		t.Errorf("%d alarms shown", n)
	}
}
