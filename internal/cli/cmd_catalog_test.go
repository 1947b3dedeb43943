package cli

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// The simulated cloud's first module is a boiler seen by an installer (every
// menu and parameter level); its second is the same boiler seen by a user
// (the boiler menu, level 1 parameters only). Their registers and the web
// app's assets describing them come from the same tables (cloudsim), so the
// names, units and transforms below are the simulator's.

// table parses a tool's aligned table by the columns of its header, so that
// cells and headings may hold spaces: a column starts after two spaces (the
// tables' padding). Columns are counted in runes, as tabwriter does.
func table(t *testing.T, out string) (header []string, rows []map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 {
		t.Fatalf("no table:\n%s", out)
	}
	head := []rune(lines[0])
	var starts []int
	for i, r := range head {
		if r != ' ' && (i == 0 || i >= 2 && head[i-1] == ' ' && head[i-2] == ' ') {
			starts = append(starts, i)
		}
	}
	for i, s := range starts {
		end := len(head)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		header = append(header, strings.TrimSpace(string(head[s:end])))
	}
	for _, l := range lines[1:] {
		r := []rune(l)
		row := map[string]string{}
		for i, s := range starts {
			end := len(r)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(r))
			}
			if s < len(r) {
				row[header[i]] = strings.TrimSpace(string(r[s:end]))
			}
		}
		rows = append(rows, row)
	}
	return header, rows
}

func rowWhere(rows []map[string]string, col, value string) map[string]string {
	for _, r := range rows {
		if r[col] == value {
			return r
		}
	}
	return nil
}

// rawOf is a register's raw value in the simulated cloud.
func rawOf(t *testing.T, params map[string]any, key string) float64 {
	t.Helper()
	switch v := params[key].(type) {
	case float64:
		return v
	case int:
		return float64(v)
	}
	t.Fatalf("the simulated cloud holds %s = %#v, want a number", key, params[key])
	return 0
}

// startNamedCloud is startToolCloud with modules large enough to carry every
// register the catalog describes.
func startNamedCloud(t *testing.T, tune ...func(*cloudsim.Options)) *cloudsim.Cloud {
	t.Helper()
	return startToolCloud(t, append([]func(*cloudsim.Options){func(o *cloudsim.Options) { o.ParamsPerModule = 400 }}, tune...)...)
}

func TestCatalogCommandTable(t *testing.T) {
	sim := startNamedCloud(t)
	installer, user := sim.Devids()[0], sim.Devids()[1]
	raw := sim.Params(installer)

	code, out, errOut := runArgs(t, toolArgs(sim, "catalog", installer)...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	// One module keeps the DEVID column: a table's columns do not depend
	// on how many modules it shows.
	header, rows := table(t, out)
	if want := []string{"DEVID", "SYMBOL", "REGISTER", "NAME", "VALUE", "UNIT", "STALE", "MENU"}; !slices.Equal(header, want) {
		t.Fatalf("header %q, want %q:\n%s", header, want, out)
	}
	round1 := func(f float64) string { return formatFloat(math.Round(f*10) / 10) }
	for _, want := range []map[string]string{
		{"SYMBOL": "PARAM_P4_1", "REGISTER": "P4.v1", "NAME": "Boiler temperature", "VALUE": formatFloat(rawOf(t, raw, "P4.v1")), "UNIT": "°C", "MENU": "Boiler"},
		// Scaled ×0.1 to one decimal, and offset by −127.
		{"SYMBOL": "PARAM_P4_7", "REGISTER": "P4.v7", "NAME": "Boiler power", "VALUE": round1(rawOf(t, raw, "P4.v7") * 0.1), "UNIT": "kW", "MENU": "Boiler"},
		{"SYMBOL": "PARAM_P4_4", "REGISTER": "P4.v4", "NAME": "Outdoor temperature", "VALUE": formatFloat(rawOf(t, raw, "P4.v4") - 127), "UNIT": "°C", "MENU": "Boiler"},
		{"SYMBOL": "PARAM_P6_1", "REGISTER": "P6.v1", "NAME": "Boiler set temperature", "VALUE": formatFloat(rawOf(t, raw, "P6.v1")), "UNIT": "°C", "MENU": "Boiler"},
		// A computed state: its label, no unit.
		{"SYMBOL": "STATUS_P5_0", "REGISTER": "P5.s0", "NAME": "Boiler state", "VALUE": "Alarm", "UNIT": "-", "MENU": "Boiler"},
		// The INVISIBLE bit is set: listed, marked.
		{"SYMBOL": "PARAM_P6_9", "REGISTER": "P6.v9", "NAME": "Frost protection temperature (hidden)", "UNIT": "°C", "MENU": "Boiler"},
		// A nested menu is the path of its titles.
		{"SYMBOL": "PARAM_P6_8", "REGISTER": "P6.v8", "NAME": "Maximum boiler power", "VALUE": round1(rawOf(t, raw, "P6.v8") * 0.1), "UNIT": "kW", "MENU": "Service parameters/Burner"},
	} {
		got := rowWhere(rows, "SYMBOL", want["SYMBOL"])
		if got == nil {
			t.Errorf("no row for %s:\n%s", want["SYMBOL"], out)
			continue
		}
		for col, v := range want {
			if got[col] != v {
				t.Errorf("%s %s = %q, want %q", want["SYMBOL"], col, got[col], v)
			}
		}
	}

	// The user's own menu and permissions show less: the level-2 flue gas
	// temperature and the service menu are not described for that module.
	code, out, errOut = runArgs(t, toolArgs(sim, "catalog", user)...)
	if code != exitOK {
		t.Fatalf("user: code=%d stderr=%q", code, errOut)
	}
	_, userRows := table(t, out)
	if rowWhere(userRows, "SYMBOL", "PARAM_P4_1") == nil {
		t.Errorf("the user's module lacks its boiler temperature:\n%s", out)
	}
	for _, hidden := range []string{"PARAM_P4_2", "PARAM_P6_8", "PARAM_P4_3"} {
		if rowWhere(userRows, "SYMBOL", hidden) != nil {
			t.Errorf("%s is described for a module whose permissions hide it:\n%s", hidden, out)
		}
		if rowWhere(rows, "SYMBOL", hidden) == nil {
			t.Errorf("%s is missing for the installer's module", hidden)
		}
	}

	for _, r := range rows {
		if r["DEVID"] != installer {
			t.Fatalf("row %v is not of %s", r, installer)
		}
	}

	// Without a devid: every module; with several, those.
	for _, args := range [][]string{nil, {user, installer}} {
		code, out, _ = runArgs(t, toolArgs(sim, "catalog", args...)...)
		header, allRows := table(t, out)
		if code != exitOK || header[0] != "DEVID" || len(allRows) != len(rows)+len(userRows) {
			t.Fatalf("catalog %v: code=%d header %q, %d rows, want %d", args, code, header, len(allRows), len(rows)+len(userRows))
		}
	}
}

// catalogDoc is the document of `catalog --output=json`.
type catalogDoc struct {
	IndexAsset string `json:"index_asset"`
	Language   string `json:"language"`
	Modules    []struct {
		Devid  string         `json:"devid"`
		Name   *string        `json:"name"`
		Params []catalogEntry `json:"params"`
	} `json:"modules"`
}

type catalogEntry struct {
	Symbol   string   `json:"symbol"`
	Register string   `json:"register"`
	Parts    []string `json:"parts"`
	Computed *string  `json:"computed_primary"`
	Name     string   `json:"name"`
	Raw      any      `json:"raw"`
	Value    any      `json:"value"`
	Unit     *string  `json:"unit"`
	Menu     []string `json:"menu"`
	Min      *float64 `json:"min"`
	Max      *float64 `json:"max"`
	Visible  bool     `json:"visible"`
	Writable bool     `json:"writable"`
}

func TestCatalogCommandJSON(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	raw := sim.Params(d)
	code, out, errOut := runArgs(t, toolArgs(sim, "catalog", d, "--output=json", "--catalog.language=pl")...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	var doc catalogDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.Language != "pl" || !strings.HasPrefix(doc.IndexAsset, "index-") || len(doc.Modules) != 1 || doc.Modules[0].Devid != d {
		t.Fatalf("document %+v", doc)
	}
	byRegister := map[string]catalogEntry{}
	for _, p := range doc.Modules[0].Params {
		if p.Symbol == "" || p.Name == "" || len(p.Menu) == 0 {
			t.Errorf("incomplete parameter %+v", p)
		}
		byRegister[p.Register] = p
	}
	power := byRegister["P4.v7"]
	if power.Name != "Moc kotła" || power.Unit == nil || *power.Unit != "kW" || rawOf(t, map[string]any{"x": power.Raw}, "x") != rawOf(t, raw, "P4.v7") ||
		power.Value != math.Round(rawOf(t, raw, "P4.v7"))/10 || power.Writable {
		t.Errorf("P4.v7 = %+v", power)
	}
	set := byRegister["P6.v1"]
	if !set.Writable || set.Min == nil || set.Max == nil || *set.Min != rawOf(t, raw, "P6.n1") || *set.Max != rawOf(t, raw, "P6.x1") {
		t.Errorf("P6.v1 = %+v, want writable within the n and x channels' limits", set)
	}
	// A state shows as its label, with no unit: value is what the app shows.
	if st, ok := byRegister["P5.s0"].Value.(string); !ok || st == "" || byRegister["P5.s0"].Unit != nil {
		t.Errorf("P5.s0 = %+v, want a state label and no unit", byRegister["P5.s0"])
	}
}

// A status symbol whose definition names another register (the valve's
// STATUS_P5_21 names P4.v21) is read at its status register, which the
// valve does not report: the tool shows no value, as /metrics and the
// module page do, and names the register the definition points at.
func TestCatalogStatusSymbolReadAtItsStatusRegister(t *testing.T) {
	sim := startNamedCloud(t, func(o *cloudsim.Options) { o.Modules = 3 })
	valve := sim.Devids()[2]
	raw := sim.Params(valve)
	if _, ok := raw["P5.s21"]; ok {
		t.Fatalf("the simulated valve reports P5.s21")
	}
	room := rawOf(t, raw, "P4.v21")

	code, out, errOut := runArgs(t, toolArgs(sim, "catalog", valve, "-o", "json")...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	var doc catalogDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var status, reading *catalogEntry
	for i, p := range doc.Modules[0].Params {
		switch p.Symbol {
		case "STATUS_P5_21":
			status = &doc.Modules[0].Params[i]
		case "PARAM_P4_21":
			reading = &doc.Modules[0].Params[i]
		}
	}
	if status == nil || reading == nil {
		t.Fatalf("STATUS_P5_21 %v, PARAM_P4_21 %v:\n%s", status, reading, out)
	}
	if status.Register != "P5.s21" || status.Computed == nil || *status.Computed != "P4.v21" || status.Value != nil || status.Raw != nil {
		t.Errorf("STATUS_P5_21 = %+v, want register P5.s21, computed_primary P4.v21 and no value", *status)
	}
	if reading.Computed != nil || reading.Value != room {
		t.Errorf("PARAM_P4_21 = %+v, want the room temperature %v and no computed_primary", *reading, room)
	}

	code, out, errOut = runArgs(t, toolArgs(sim, "catalog", valve)...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	_, rows := table(t, out)
	if r := rowWhere(rows, "SYMBOL", "STATUS_P5_21"); r == nil || r["REGISTER"] != "P5.s21" || r["VALUE"] != "-" {
		t.Errorf("STATUS_P5_21 row %v, want register P5.s21 and no value:\n%s", r, out)
	}
	// The empty row is explained, once.
	if n := strings.Count(errOut, "symbol=STATUS_P5_21 register=P5.s21 computed_primary=P4.v21"); n != 1 {
		t.Errorf("the note on STATUS_P5_21 appears %d times, want once:\n%s", n, errOut)
	}
}

func TestCatalogCommandFailures(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	t.Run("unknown module", func(t *testing.T) {
		code, _, errOut := runArgs(t, toolArgs(sim, "catalog", "NOSUCHDEV")...)
		if code != exitUsage || !strings.Contains(errOut, "NOSUCHDEV is not in the module list") {
			t.Fatalf("code=%d stderr=%q", code, errOut)
		}
		oneLine(t, errOut)
	})
	t.Run("language not offered", func(t *testing.T) {
		code, _, errOut := runArgs(t, toolArgs(sim, "catalog", d, "--catalog.language=xx")...)
		if code != exitUsage || !strings.Contains(errOut, `"xx"`) || !strings.Contains(errOut, "en, pl") {
			t.Fatalf("code=%d stderr=%q, want a usage error listing the offered languages", code, errOut)
		}
		oneLine(t, errOut)
	})
	t.Run("assets unreachable", func(t *testing.T) {
		code, _, errOut := runArgs(t, toolArgs(sim, "catalog", d, "--cloud.assets-url="+unreachableURL(t))...)
		if code != exitRuntime || !strings.Contains(errOut, "parameter catalog") {
			t.Fatalf("code=%d stderr=%q", code, errOut)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		before := totalRequests(sim)
		code, _, errOut := runArgs(t, toolArgs(sim, "catalog", d, "--catalog.disable")...)
		if code != exitUsage || totalRequests(sim) != before {
			t.Fatalf("code=%d stderr=%q requests %d→%d", code, errOut, before, totalRequests(sim))
		}
	})
}

func TestParamsNamesAndUnits(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	raw := rawOf(t, sim.Params(d), "P4.v7")
	sim.SetParam(d, "P4.v199", 5.0) // a register no symbol describes

	code, out, errOut := runArgs(t, toolArgs(sim, "params", "--cloud.modules="+d, "--filter=P4.v7", "--filter=P4.v199")...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	header, rows := table(t, out)
	if want := []string{"DEVID", "REGISTER", "RAW", "NAME", "VALUE", "UNIT", "STALE"}; !slices.Equal(header, want) {
		t.Fatalf("header %q, want %q", header, want)
	}
	power := rowWhere(rows, "REGISTER", "P4.v7")
	if power == nil || power["RAW"] != formatFloat(raw) || power["NAME"] != "Boiler power" ||
		power["VALUE"] != formatFloat(math.Round(raw)/10) || power["UNIT"] != "kW" {
		t.Errorf("P4.v7 row %v (raw %v):\n%s", power, raw, out)
	}
	// Registers the catalog does not describe keep their raw value only.
	if other := rowWhere(rows, "REGISTER", "P4.v199"); other == nil || other["RAW"] != "5" || other["NAME"] != "-" || other["VALUE"] != "-" || other["UNIT"] != "-" {
		t.Errorf("P4.v199 row %v:\n%s", other, out)
	}

	// The displayed value is a JSON number, as in catalog.
	code, out, _ = runArgs(t, toolArgs(sim, "params", d, "--filter=P4.v7", "-o", "json")...)
	var doc paramsDoc
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || len(doc.Modules) != 1 || len(doc.Modules[0].Params) != 1 {
		t.Fatalf("json: code=%d err=%v\n%s", code, err, out)
	}
	if p := doc.Modules[0].Params[0]; p.Name == nil || *p.Name != "Boiler power" || p.Symbol == nil || *p.Symbol != "PARAM_P4_7" ||
		p.Unit == nil || *p.Unit != "kW" || p.Value != math.Round(raw)/10 {
		t.Errorf("json P4.v7 = %+v", p)
	}

	// No catalog: the plain snapshot, as before.
	code, out, _ = runArgs(t, toolArgs(sim, "params", "--cloud.modules="+d, "--filter=P4.v7", "--catalog.disable")...)
	if header, _ := table(t, out); code != exitOK || !slices.Equal(header, []string{"DEVID", "REGISTER", "RAW", "STALE"}) {
		t.Errorf("--catalog.disable: code=%d header %q", code, header)
	}
	// An unreachable catalog costs the names only.
	code, out, errOut = runArgs(t, toolArgs(sim, "params", "--cloud.modules="+d, "--filter=P4.v7", "--cloud.assets-url="+unreachableURL(t))...)
	if header, rows := table(t, out); code != exitOK || !slices.Equal(header, []string{"DEVID", "REGISTER", "RAW", "STALE"}) || len(rows) != 1 ||
		!strings.Contains(errOut, "without names") {
		t.Errorf("assets unreachable: code=%d header %q rows %v stderr %q", code, header, rows, errOut)
	}
}

func TestSetBySymbolOrName(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	writes := func() int { return sim.Requests("POST /v1/module/command") }

	for _, c := range []struct {
		arg, key string
		raw      float64
		says     string
	}{
		// Displayed in kW with one decimal; the register holds tenths.
		{"PARAM_P6_8=20", "P6.v8", 200, "Maximum boiler power 20 kW → raw 200 (PARAM_P6_8, P6.v8)"},
		{"Boiler set temperature=65", "P6.v1", 65, "Boiler set temperature 65 °C → raw 65 (PARAM_P6_1, P6.v1)"},
		// Names and symbols ignore case, as state labels do.
		{"boiler SET temperature=66", "P6.v1", 66, "Boiler set temperature 66 °C → raw 66 (PARAM_P6_1, P6.v1)"},
		{"param_p6_1=67", "P6.v1", 67, "Boiler set temperature 67 °C → raw 67 (PARAM_P6_1, P6.v1)"},
		// A state by its label.
		{"Operating mode=summer", "P6.v5", 1, "Operating mode Summer → raw 1 (PARAM_P6_5, P6.v5)"},
		// A time of day: raw n shows (n-1)×10 minutes after midnight.
		{"Night setback start=22:30", "P6.v7", 136, "Night setback start 22:30 → raw 136 (PARAM_P6_7, P6.v7)"},
	} {
		before := writes()
		code, out, errOut := runArgs(t, toolArgs(sim, "set", d, c.arg)...)
		if code != exitOK {
			t.Fatalf("%s: code=%d stderr=%q", c.arg, code, errOut)
		}
		if got := sim.Params(d)[c.key]; got != c.raw || writes() != before+1 {
			t.Errorf("%s: the cloud holds %s = %#v after %d writes, want %v after one", c.arg, c.key, got, writes()-before, c.raw)
		}
		if !strings.Contains(out, d+" "+c.says) || !strings.Contains(out, "HTTP 200") {
			t.Errorf("%s: output %q, want it to say %q", c.arg, out, c.says)
		}
	}

	maxPower := sim.Params(d)["P6.v8"]
	for name, c := range map[string]struct {
		arg, says string
	}{
		"above the maximum":     {"PARAM_P6_8=30", "outside its limits, 5 to 25"},
		"below the minimum":     {"Maximum boiler power=4.9", "outside its limits, 5 to 25"},
		"a measurement":         {"Boiler temperature=65", "not a setting"},
		"an unknown name":       {"Boiler set temprature=65", `no parameter "Boiler set temprature", did you mean "Boiler set temperature"?`},
		"nothing like it":       {"Flux capacitor=1", `no parameter "Flux capacitor": not a symbol or a name its menu shows`},
		"a state it lacks":      {"Operating mode=Spring", "not one of its states (Automatic, Off, Summer, Winter)"},
		"not a number":          {"PARAM_P6_8=lots", `"lots" is not a number`},
		"off the clock's steps": {"PARAM_P6_7=22:35", `"22:35" is not a time of day it can hold (HH:MM in steps of 10 minutes)`},
		"a number for a clock":  {"PARAM_P6_7=133", `"133" is not a time of day it can hold`},
		"hidden by permission":  {"PARAM_P6_8=20", "no parameter"}, // on the user's module
	} {
		t.Run(name, func(t *testing.T) {
			dev := d
			if name == "hidden by permission" {
				dev = sim.Devids()[1]
			}
			before := writes()
			code, _, errOut := runArgs(t, toolArgs(sim, "set", dev, c.arg)...)
			if code != exitUsage || !strings.Contains(errOut, c.says) {
				t.Fatalf("code=%d stderr=%q, want a usage error saying %q", code, errOut, c.says)
			}
			oneLine(t, errOut)
			if writes() != before {
				t.Fatal("a refused write reached the cloud")
			}
		})
	}
	if sim.Params(d)["P6.v8"] != maxPower {
		t.Errorf("P6.v8 changed by refused writes: %v → %v", maxPower, sim.Params(d)["P6.v8"])
	}

	// Without the catalog a name cannot be resolved, and nothing is asked.
	before := totalRequests(sim)
	code, _, errOut := runArgs(t, toolArgs(sim, "set", d, "PARAM_P6_8=20", "--catalog.disable")...)
	if code != exitUsage || totalRequests(sim) != before {
		t.Errorf("--catalog.disable: code=%d stderr=%q, %d requests", code, errOut, totalRequests(sim)-before)
	}
}

func TestWatchNamesChanges(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	w := startWatch(t, toolArgs(sim, "watch", "--poll.interval=50ms", "--filter=P4.v7", "--filter=P4.v99")...)
	w.waitFor("the catalog read", func() bool { return strings.Contains(w.out.String(), "# catalog: ") })
	sim.SetParam(d, "P4.v7", 123.0)
	w.waitLine(d + " P4.v7 = 123 (live) · Boiler power 12.3 kW")
	sim.SetParam(d, "P4.v99", 7.0) // not described: the raw line only
	w.waitLine(d + " P4.v99 = 7 (live)")
	if n := strconv.Itoa(strings.Count(w.out.String(), "# catalog: ")); n != "1" {
		t.Errorf("catalog lines: %s", n)
	}
}

// A module that does not report a parameter's register leaves its unit and
// limits unknown: a write in displayed units cannot be converted, nor a raw
// one checked, and either is refused rather than sent unconverted or
// unchecked; --raw-unchecked is named as the way to write it anyway.
func TestSetRefusesAnUnreportedRegister(t *testing.T) {
	sim := startToolCloud(t) // 60 registers a module: P6.v8 is not among them
	d := sim.Devids()[0]
	if _, ok := sim.Params(d)["P6.v8"]; ok {
		t.Fatal("the fixture reports P6.v8")
	}
	for _, arg := range []string{"PARAM_P6_8=20", "P6.v8=200"} {
		code, _, errOut := runArgs(t, toolArgs(sim, "set", d, arg)...)
		if code != exitUsage || !strings.Contains(errOut, "does not report Maximum boiler power (PARAM_P6_8, P6.v8), so its unit and limits are unknown; nothing written (P6.v8=RAW with --raw-unchecked") {
			t.Fatalf("%s: code=%d stderr=%q", arg, code, errOut)
		}
		oneLine(t, errOut)
	}
	if n := sim.Requests("POST /v1/module/command"); n != 0 {
		t.Fatalf("%d writes reached the cloud", n)
	}
}
