package e2e

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/serving/status"
)

// englishAlarms names what the web app's English assets translate: code 38.
type englishAlarms map[string]string

func (n englishAlarms) AlarmName(code, _ string) (string, bool) { t, ok := n[code]; return t, ok }

func (n englishAlarms) ModuleParams(string) ([]status.Param, bool) { return nil, false }

func (englishAlarms) Language() string { return "en" }

// pageAccount is an account of two healthy objects, Home and Cottage, with
// "Out of fuel" active on Home's boiler and code 91 on Cottage's.
func pageAccount(now time.Time) collector.Snapshot {
	object := func(id int, name string) collector.ObjectState {
		return collector.ObjectState{ID: id, Name: name, Connected: true, Ready: true,
			Session:  collector.SessionState{Up: true},
			Push:     collector.PushState{Known: true, Healthy: true, LastLiveUpdate: now.Add(-3 * time.Second), LastUpdate: now.Add(-3 * time.Second)},
			Recovery: collector.RecoveryState{Actions: map[collector.ActionKey]uint64{}}}
	}
	module := func(devid string, object int, name string, alarms ...collector.Alarm) collector.ModuleState {
		return collector.ModuleState{Devid: devid, ObjectID: object, Name: name, OnlineKnown: true, Online: true,
			ConnectedAt: now.Add(-time.Hour).Unix(), LastUpdate: now.Add(-3 * time.Second), Params: 800,
			Alarms: len(alarms), AlarmsKnown: true, ActiveAlarms: alarms, ActiveAlarmsKnown: true}
	}
	return collector.Snapshot{
		Now:     now,
		Objects: []collector.ObjectState{object(11, "Home"), object(12, "Cottage")},
		Modules: []collector.ModuleState{
			module("HOME01", 11, "Boiler room", collector.Alarm{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Since: now.Add(-2 * time.Hour)}),
			module("HOME02", 11, "Valves"),
			module("COTT01", 12, "Cottage boiler", collector.Alarm{Code: "91", Symbol: "ERROR_MODUL_ROZSZERZEN", Since: now.Add(-10 * time.Minute)}),
		},
	}
}

// TestAlarmHeadlineInBrowser reads /status and a module page in chromium
// with two boiler alarms active and every health signal green: the first
// card is the alarms', naming both with module and object; both objects'
// sections are drawn in the alarm colour; the module page starts with its
// alarm.
func TestAlarmHeadlineInBrowser(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	src := collector.SnapshotFunc(func() collector.Snapshot { return pageAccount(now) })
	names := englishAlarms{"38": "Out of fuel"}
	mux := http.NewServeMux()
	mux.Handle("/status", status.Handler(src, status.Options{Alarms: names, Refresh: -1}))
	mux.Handle(status.ModulePath, status.ModuleHandler(src, names, status.Options{Refresh: -1}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b := newBrowser(t)
	b.open("alarms", srv.URL+"/status")
	b.noConsoleErrors()
	labels := b.texts("#cards .card .label")
	if len(labels) == 0 || !strings.EqualFold(labels[0], "Boiler alarms") {
		t.Fatalf("headline cards %q, want the boiler alarms first", labels)
	}
	card := b.texts("#cards .card.alarm")
	if len(card) != 1 || !strings.Contains(card[0], "2 ACTIVE") ||
		!strings.Contains(card[0], "Out of fuel · Boiler room · Home · since 2h00m") ||
		!strings.Contains(card[0], "ERROR_MODUL_ROZSZERZEN (code 91, no translation in en) · Cottage boiler · Cottage · since 10m00s") {
		t.Errorf("alarm card %q", card)
	}
	if got := b.attrs("section.object", "class"); !slices.Equal(got, []string{"object alarm", "object alarm"}) {
		t.Errorf("sections %q, want both in the alarm colour", got)
	}
	// The colour is drawn, not only named: the section's border is the alarm red.
	if got := b.styles("section.object.alarm", "border-left-color"); len(got) != 2 || got[0] != "rgb(164, 14, 38)" {
		t.Errorf("alarm sections drawn with border %q", got)
	}

	b.click("alarm-module", "#object-11 table.modules tr.module td.name a")
	first := b.texts("body > h1 ~ div[id], body > h1 ~ section[id]")
	if len(first) == 0 || !strings.HasPrefix(first[0], "Active alarms") || !strings.Contains(first[0], "Out of fuel") {
		t.Errorf("the module page's first part %q, want its active alarms", first)
	}
	b.noConsoleErrors()
}

// staleParams describes the offline module's parameters, as the catalog
// would, with their values' arrival times.
type staleParams struct{ arrived time.Time }

func (staleParams) AlarmName(string, string) (string, bool) { return "", false }

// Language is the catalog's language: the catalog names the parameters.
func (staleParams) Language() string { return "en" }

func (p staleParams) ModuleParams(devid string) ([]status.Param, bool) {
	if devid != "COTT01" {
		return nil, true
	}
	return []status.Param{
		{Menu: "Boiler", Name: "Boiler temperature", Symbol: "PARAM_P4_1", Unit: "°C", Pool: "P4", Param: "v1", Value: 56.6, HasValue: true, UpdatedAt: p.arrived},
		{Menu: "Boiler", Name: "Boiler set temperature", Symbol: "PARAM_P6_1", Unit: "°C", Pool: "P6", Param: "v1", Value: 70, HasValue: true, UpdatedAt: p.arrived.Add(-3 * time.Hour)},
	}, true
}

// TestOfflineModulePageInBrowser: the page of a module that went offline 25
// minutes ago shows every value with its age, marked stale, under a note
// saying the module is offline: "Boiler temperature 56.6 °C" is not shown as
// if current.
func TestOfflineModulePageInBrowser(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	src := collector.SnapshotFunc(func() collector.Snapshot {
		s := pageAccount(now)
		m := &s.Modules[2]
		m.Online, m.ConnectedAt, m.LastUpdate = false, 0, now.Add(-25*time.Minute)
		m.Outage = collector.Outage{Down: true, DownSince: now.Add(-25 * time.Minute), DownFor: 25 * time.Minute, Reason: "rest"}
		return s
	})
	mux := http.NewServeMux()
	mux.Handle(status.ModulePath, status.ModuleHandler(src, staleParams{arrived: now.Add(-25 * time.Minute)}, status.Options{Refresh: -1}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	b := newBrowser(t)
	b.open("offline-module", srv.URL+status.ModulePath+"COTT01")
	b.noConsoleErrors()
	if note := b.texts("#stalenote"); len(note) != 1 || !strings.Contains(note[0], "This module is offline") {
		t.Errorf("stale note %q", note)
	}
	rows := b.texts("table.params tr.param.stale")
	if len(rows) != 2 || !strings.Contains(rows[0], "56.6") || !strings.Contains(rows[0], "25m00s ago") || !strings.Contains(rows[0], "stale") ||
		!strings.Contains(rows[1], "3h25m ago") {
		t.Errorf("stale rows %q, want both values with their ages, marked stale", rows)
	}
	// Drawn apart from a current value: muted and italic.
	if got := b.styles("table.params tr.param.stale td.value", "font-style"); len(got) != 2 || got[0] != "italic" {
		t.Errorf("stale values drawn %q", got)
	}
}
