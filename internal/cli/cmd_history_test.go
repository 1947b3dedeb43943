package cli

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
	"github.com/bragerone/bragerone_exporter/redact"
)

// historyTables splits the history table output into its two tables.
func historyTables(t *testing.T, out string) (changes, alarms string) {
	t.Helper()
	changes, alarms, ok := strings.Cut(out, "\n\n")
	if !ok {
		t.Fatalf("not two tables:\n%s", out)
	}
	return changes + "\n", alarms
}

// A change made with set shows in the log with its parameter's name, the
// old and new values as the app displays them, who made it and the
// outcome; the alarms show active (with the catalog's name) and finished.
func TestHistoryCommandShowsAChangeAndTheAlarms(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	old := rawOf(t, sim.Params(d), "P6.v1")
	if code, _, errOut := runArgs(t, toolArgs(sim, "set", d, "Boiler set temperature=55")...); code != exitOK {
		t.Fatalf("set: %d %s", code, errOut)
	}
	code, out, errOut := runArgs(t, toolArgs(sim, "history", d)...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	ct, at := historyTables(t, out)
	header, rows := table(t, ct)
	if want := "TIME DEVID REGISTER NAME OLD VALUE NEW VALUE UNIT USER STATE"; strings.Join(header, " ") != want {
		t.Fatalf("changes header %q", header)
	}
	if len(rows) != 4 { // the simulator's three and the write
		t.Fatalf("changes %v", rows)
	}
	first := rows[0]
	if first["NAME"] != "Boiler set temperature" || first["REGISTER"] != "P6.v1" || first["OLD VALUE"] != formatFloat(old) ||
		first["NEW VALUE"] != "55" || first["UNIT"] != "°C" || first["USER"] != "Demo User" || first["STATE"] != "success" {
		t.Fatalf("the write: %v\n%s", first, out)
	}
	if at, err := time.Parse(time.RFC3339, first["TIME"]); err != nil || time.Since(at) > time.Minute {
		t.Errorf("the write's time %q: %v", first["TIME"], err)
	}
	header, alarms := table(t, at)
	if want := "FROM TO DEVID CODE NAME DURATION SECONDS"; strings.Join(header, " ") != want {
		t.Fatalf("alarms header %q", header)
	}
	var active, finished int
	for _, a := range alarms {
		switch a["TO"] {
		case "active":
			active++
		default:
			if a["CODE"] != "12" || a["NAME"] != "Boiler temperature sensor fault" || a["DURATION SECONDS"] != "900" {
				t.Errorf("finished alarm %v", a)
			}
			finished++
		}
	}
	if active == 0 || finished != 1 {
		t.Fatalf("alarms %v", alarms)
	}

	// JSON: numbers as numbers, null for nothing, the raw values with
	// the displayed ones.
	code, out, errOut = runArgs(t, toolArgs(sim, "history", d, "--limit=1", "-o", "json")...)
	if code != exitOK {
		t.Fatalf("json: code=%d stderr=%q", code, errOut)
	}
	var doc struct {
		Modules []struct {
			Devid    string           `json:"devid"`
			ObjectID int              `json:"object_id"`
			Changes  []map[string]any `json:"changes"`
			Alarms   []map[string]any `json:"alarms"`
			LeftOut  *int             `json:"rows_left_out"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Modules) != 1 {
		t.Fatalf("%v\n%s", err, out)
	}
	m := doc.Modules[0]
	if m.Devid != d || m.ObjectID != sim.ObjectID() || len(m.Changes) != 1 || m.LeftOut == nil || *m.LeftOut != 0 {
		t.Fatalf("module %+v", m)
	}
	c := m.Changes[0]
	if c["symbol"] != "PARAM_P6_1" || c["old_raw"] != old || c["new_raw"] != 55.0 || c["new_value"] != 55.0 || c["unit"] != "°C" || c["user"] != "Demo User" {
		t.Fatalf("change %v", c)
	}
	for _, a := range m.Alarms {
		if a["state"] == "active" && (a["to"] != nil || a["duration_seconds"].(float64) < 0) || a["state"] == "finished" && a["to"] == nil {
			t.Errorf("alarm %v", a)
		}
	}
}

// --since keeps the rows from that time on: a duration back from now or an
// RFC 3339 time; anything else is a usage error.
func TestHistorySince(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	count := func(args ...string) int {
		t.Helper()
		code, out, errOut := runArgs(t, toolArgs(sim, "history", append([]string{d, "-o", "json"}, args...)...)...)
		if code != exitOK {
			t.Fatalf("%v: code=%d stderr=%q", args, code, errOut)
		}
		var doc struct {
			Modules []struct {
				Changes []any `json:"changes"`
			} `json:"modules"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		return len(doc.Modules[0].Changes)
	}
	// The simulator's changes were made 1, 2 and 3 hours ago.
	for args, want := range map[string]int{"": 3, "--since=90m": 1, "--since=150m": 2, "--since=10m": 0,
		"--since=" + time.Now().Add(-150*time.Minute).UTC().Format(time.RFC3339): 2, "--limit=2": 2} {
		var a []string
		if args != "" {
			a = []string{args}
		}
		if got := count(a...); got != want {
			t.Errorf("%s: %d changes, want %d", args, got, want)
		}
	}
	for _, bad := range []string{"--since=yesterday", "--since=-5h", "--limit=0", "--limit=100000"} {
		if code, _, errOut := runArgs(t, toolArgs(sim, "history", d, bad)...); code != exitUsage || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: code=%d stderr=%q", bad, code, errOut)
		}
	}
}

// A devid finds its object by itself: a module of the second object is
// read without --cloud.object-id; a devid no object lists is a usage error
// naming what they do list.
func TestHistoryFindsTheModulesObject(t *testing.T) {
	sim := startToolCloud(t, func(o *cloudsim.Options) { o.Modules, o.Objects = 3, 2 })
	objects := sim.Objects()
	last := objects[len(objects)-1]
	d := last.Devids[0]
	code, out, errOut := runArgs(t, toolArgs(sim, "history", d, "-o", "json")...)
	if code != exitOK || !strings.Contains(out, `"object_id": `+strconv.Itoa(last.ID)) {
		t.Fatalf("code=%d stderr=%q\n%s", code, errOut, out)
	}
	code, _, errOut = runArgs(t, toolArgs(sim, "history", "NOSUCHDEV")...)
	if code != exitUsage || !strings.Contains(errOut, "NOSUCHDEV") || !strings.Contains(errOut, d) {
		t.Fatalf("unknown devid: code=%d stderr=%q", code, errOut)
	}
}

// A secret the cloud echoes into a change (here the password, sent by a
// write as the parameter's name and value) is masked in the table and the
// JSON; the user's name is shown.
func TestHistoryMasksSecrets(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	if code, _, errOut := runArgs(t, toolArgs(sim, "set", d, `P6.v1="x `+cloudsim.DefaultPassword+`"`, "--raw-unchecked",
		"--parameter-name=PW_"+cloudsim.DefaultPassword)...); code != exitOK {
		t.Fatalf("set: %d %s", code, errOut)
	}
	for _, o := range []string{"table", "json"} {
		code, out, errOut := runArgs(t, toolArgs(sim, "history", d, "-o", o)...)
		if code != exitOK {
			t.Fatalf("%s: code=%d stderr=%q", o, code, errOut)
		}
		if strings.Contains(out+errOut, cloudsim.DefaultPassword) {
			t.Errorf("%s: the password is shown:\n%s", o, out)
		}
		if !strings.Contains(out, redact.Mask) || !strings.Contains(out, "Demo User") {
			t.Errorf("%s: the echoing row is not shown masked, with its user:\n%s", o, out)
		}
	}
}

// Alarm names come from wherever the web app's translations file them: the
// simulated web app files one under a token of another namespace (21), one
// only in the app namespace by type id (57), one in English only (14, which
// the Polish app shows in English, its fallback language), and knows none
// for 91.
func TestHistoryNamesAlarmsWhereverTheAssetsDo(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	codes := []int{14, 21, 57, 91}
	for _, code := range codes {
		if err := sim.RaiseAlarm(d, code); err != nil {
			t.Fatal(err)
		}
	}
	for _, lang := range []string{"en", "pl"} {
		code, out, errOut := runArgs(t, toolArgs(sim, "history", d, "--catalog.language="+lang, "-o", "json")...)
		if code != exitOK {
			t.Fatalf("%s: code=%d stderr=%q", lang, code, errOut)
		}
		var doc struct {
			Modules []struct {
				Alarms []map[string]any `json:"alarms"`
			} `json:"modules"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Modules) != 1 {
			t.Fatalf("%s: %v\n%s", lang, err, out)
		}
		byCode := map[float64]map[string]any{}
		for _, a := range doc.Modules[0].Alarms {
			if a["state"] == "active" {
				byCode[a["code"].(float64)] = a
			}
		}
		for _, code := range codes {
			a, want := byCode[float64(code)], webapp.AlarmByID(code)
			name := want.EN
			if lang == "pl" {
				name = want.PL
			}
			untranslated := any(nil)
			if name == "" {
				name, untranslated = want.Code, "no translation in "+lang
			}
			if a == nil || a["name"] != name || a["untranslated"] != untranslated {
				t.Errorf("%s: alarm %d (%s) = %v, want name %q, untranslated %v", lang, code, want.Where, a, name, untranslated)
			}
		}
	}
}
