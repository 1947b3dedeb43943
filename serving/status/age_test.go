package status

import (
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// arrivedAgo makes fixtureParams report every value of MOD1 as arrived d
// before t0.
func arrivedAgo(ps CatalogParams, d time.Duration) CatalogParams {
	ps.Times = func(devid string) func(string, string) (time.Time, bool) {
		return func(pool, param string) (time.Time, bool) {
			_, ok := fixtureValues[pool+"."+param]
			return t0.Add(-d), ok && devid == "MOD1"
		}
	}
	return ps
}

// paramRows reads the parameter rows of a module page: name → [value, age
// cell, row class].
func paramRows(doc *node) map[string][3]string {
	out := map[string][3]string{}
	for _, tr := range doc.find(func(n *node) bool { return n.Name == "tr" && strings.HasPrefix(n.Attr["class"], "param") }) {
		c := cells(tr)
		out[c[0]] = [3]string{c[1], c[3], tr.Attr["class"]}
	}
	return out
}

// TestStaleValuesShowTheirAge: every value on a module page says when it
// arrived; those of an offline module are marked stale with a note saying
// the module is offline; an old value of an online module is stale only
// while its object's live stream cannot vouch for it.
func TestStaleValuesShowTheirAge(t *testing.T) {
	// MOD1 (Kitchen) is offline in the scenario; its values arrived 10 min ago.
	doc := renderModule(t, moduleScenario(), arrivedAgo(fixtureParams(catalogFixture()), 10*time.Minute), "MOD1")
	rows := paramRows(doc)
	if r := rows["Boiler temperature"]; r[0] != "61.5" || r[1] != "10m00s ago stale" || r[2] != "param stale" {
		t.Errorf("offline module's boiler temperature row %q, want 61.5 · 10m00s ago stale", r)
	}
	if note := doc.byID("stalenote"); note == nil || !strings.Contains(note.Text, "This module is offline") {
		t.Errorf("stale note %v", note)
	}

	// Online, values an hour old: current while the stream is healthy...
	s := moduleScenario()
	s.Modules[1].Online = true
	s.Objects[0].Session = collector.SessionState{Up: true}
	s.Objects[0].Push = collector.PushState{Known: true, Healthy: true}
	doc = renderModule(t, s, arrivedAgo(fixtureParams(catalogFixture()), time.Hour), "MOD1")
	if r := paramRows(doc)["Boiler temperature"]; r[1] != "1h00m ago" || r[2] != "param" {
		t.Errorf("healthy stream: row %q, want 1h00m ago and not stale", r)
	}
	if doc.byID("stalenote") != nil {
		t.Error("a stale note while the values are current")
	}
	// ...stale once the session is down, beyond the bound only.
	s.Objects[0].Session.Up = false
	doc = renderModule(t, s, arrivedAgo(fixtureParams(catalogFixture()), time.Hour), "MOD1")
	if r := paramRows(doc)["Boiler temperature"]; r[2] != "param stale" {
		t.Errorf("session down, value 1h old: row %q, want stale", r)
	}
	doc = renderModule(t, s, arrivedAgo(fixtureParams(catalogFixture()), store.StaleValueAfter-time.Second), "MOD1")
	if r := paramRows(doc)["Boiler temperature"]; r[2] != "param" {
		t.Errorf("session down, value within the bound: row %q, want not stale", r)
	}
}
