package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// TestHistorySaysWhichAlarmsAreUntranslated: an alarm the web app names is
// shown by its translation; one it does not name (code 91 of the
// simulator's third module) keeps the cloud's symbol, as the metrics name
// it, and says there is no translation in the catalog's language, in the
// table and in JSON; with --catalog.disable every alarm says so.
func TestHistorySaysWhichAlarmsAreUntranslated(t *testing.T) {
	sim := startToolCloud(t, func(o *cloudsim.Options) { o.ParamsPerModule, o.Modules = 400, 3 })
	named, unnamed := sim.Devids()[0], sim.Devids()[2]
	activeNames := func(args ...string) []string {
		t.Helper()
		code, out, errOut := runArgs(t, toolArgs(sim, "history", args...)...)
		if code != exitOK {
			t.Fatalf("history %q: code=%d stderr=%q", args, code, errOut)
		}
		_, at := historyTables(t, out)
		_, alarms := table(t, at)
		var names []string
		for _, a := range alarms {
			if a["TO"] == "active" {
				names = append(names, a["NAME"])
			}
		}
		return names
	}
	if got := activeNames(named); len(got) != 1 || got[0] != "Out of fuel" {
		t.Errorf("%s's active alarms %q, want Out of fuel", named, got)
	}
	if got := activeNames(unnamed); len(got) != 1 || got[0] != "ERROR_MODUL_ROZSZERZEN (no translation in en)" {
		t.Errorf("%s's active alarms %q, want the symbol saying it has no translation in en", unnamed, got)
	}
	if got := activeNames(named, "--catalog.disable"); len(got) != 1 || got[0] != "ERROR_BRAK_PALIWA (not translated: no parameter catalog in use)" {
		t.Errorf("--catalog.disable: %s's active alarms %q", named, got)
	}

	code, out, _ := runArgs(t, toolArgs(sim, "history", unnamed, named, "-o", "json")...)
	if code != exitOK {
		t.Fatal(code)
	}
	var doc struct {
		Modules []struct {
			Devid  string           `json:"devid"`
			Alarms []map[string]any `json:"alarms"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range doc.Modules {
		for _, a := range m.Alarms {
			if a["state"] != "active" {
				continue
			}
			switch m.Devid {
			case unnamed:
				if a["name"] != "ERROR_MODUL_ROZSZERZEN" || a["untranslated"] != "no translation in en" {
					t.Errorf("JSON alarm of %s: %v", m.Devid, a)
				}
			case named:
				if a["name"] != "Out of fuel" || a["untranslated"] != nil {
					t.Errorf("JSON alarm of %s: %v", m.Devid, a)
				}
			}
		}
	}
	if !strings.Contains(out, `"untranslated"`) {
		t.Error("no untranslated member in JSON")
	}
}
