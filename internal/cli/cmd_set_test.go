package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// commandWrites counts the parameter writes that reached the cloud.
func commandWrites(sim *cloudsim.Cloud) int { return sim.Requests("POST /v1/module/command") }

// A write by register is checked as a write by name is: every unsafe write
// is refused with exit 2 on one line saying what was asked, what the
// register allows and that nothing was written, and the cloud receives
// nothing. A register the catalog cannot check points at --raw-unchecked.
func TestSetByRegisterRefusesUnsafeWrites(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	sim.SetParam(d, "P4.v99", 7.0) // reported, not described
	cases := map[string]struct {
		args []string
		says []string
	}{
		"a read-only measurement": {[]string{"P4.v1=999"},
			[]string{"Boiler temperature (PARAM_P4_1, P4.v1) is not a setting the app writes"}},
		"the water-pressure sensor": {[]string{"P4.v8=21.5"},
			[]string{"Water pressure (PARAM_P4_8, P4.v8) is not a setting the app writes"}},
		"beyond the limits": {[]string{"P6.v8=99999"},
			[]string{"Maximum boiler power (PARAM_P6_8, P6.v8): raw 99999 (9999.9 kW) is outside its limits, 5 to 25 kW"}},
		"below the limits": {[]string{"P6.v8=49"},
			[]string{"raw 49 (4.9 kW) is outside its limits, 5 to 25 kW"}},
		"off the register's step": {[]string{"P6.v8=200.5"},
			[]string{"raw 200.5 falls between the register's steps (whole raw numbers); nearest: 200 (20 kW) or 201 (20.1 kW)"}},
		"off the step, by name": {[]string{"Maximum boiler power=20.05"},
			[]string{"Maximum boiler power (PARAM_P6_8, P6.v8): 20.05 kW falls between the register's steps (whole raw numbers); nearest: 20 kW or 20.1 kW"}},
		"off the step of a minutes register": {[]string{"Pump run-on time=20"},
			[]string{"Pump run-on time (PARAM_P6_6, P6.v6): 20 min falls between the register's steps", "nearest: 18 min or 24 min"}},
		"a register the module does not have": {[]string{"P9.z1=1"},
			[]string{"module " + d + " does not report P9.z1 and the catalog describes no parameter there", "--raw-unchecked"}},
		"a register the catalog does not describe": {[]string{"P4.v99=1"},
			[]string{"the catalog describes no parameter of module " + d + " at P4.v99, so what its value means is unknown", "--raw-unchecked"}},
		"a register a parameter reads": {[]string{"P6.s8=0"},
			[]string{"at P6.s8; it is read by Maximum boiler power (PARAM_P6_8, P6.v8)", "--raw-unchecked"}},
		"a time of day outside its limits": {[]string{"P6.v7=145"},
			[]string{"Night setback start (PARAM_P6_7, P6.v7): raw 145", "outside its limits, Off to 23:50"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			before, held := commandWrites(sim), sim.Params(d)
			code, out, errOut := runArgs(t, toolArgs(sim, "set", append([]string{d}, c.args...)...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, exitUsage, out, errOut)
			}
			oneLine(t, errOut)
			for _, want := range append(c.says, "nothing written") {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not say %q", errOut, want)
				}
			}
			if n := commandWrites(sim) - before; n != 0 {
				t.Fatalf("%d writes reached the cloud", n)
			}
			key, _, _ := strings.Cut(c.args[0], "=")
			if now := sim.Params(d); fmt.Sprint(now[key]) != fmt.Sprint(held[key]) {
				t.Fatalf("%s changed from %v to %v", key, held[key], now[key])
			}
		})
	}
}

// Mistakes a register write shows on its face are refused before any
// request: a register write without the catalog, text where the raw
// number goes, and --raw-unchecked where it does not belong.
func TestSetRegisterMistakesNeedNoCloud(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	for name, c := range map[string]struct {
		args []string
		says string
	}{
		"the catalog disabled": {[]string{d, "P6.v1=65", "--catalog.disable"},
			"P6.v1: a register write is checked against the parameter catalog, which --catalog.disable leaves out; nothing written (--raw-unchecked writes the raw value as given)"},
		"a label for a register": {[]string{d, "P6.v5=Summer"}, `P6.v5: "Summer" is not a number; a register write takes the register's raw number`},
		"unchecked by name":      {[]string{d, "Boiler set temperature=65", "--raw-unchecked"}, "a write by symbol or name (\"Boiler set temperature\") is always checked"},
		"unchecked command":      {[]string{d, "--command=MODULE_RESTART", "--raw-unchecked"}, "--raw-unchecked belongs to a register write"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runArgs(t, toolArgs(sim, "set", c.args...)...)
			if code != exitUsage || !strings.Contains(errOut, c.says) {
				t.Fatalf("exit %d stderr %q, want exit 2 saying %q", code, errOut, c.says)
			}
			oneLine(t, errOut)
		})
	}
	if n := totalRequests(sim); n != 0 {
		t.Fatalf("%d requests reached the cloud: %v", n, sim.RequestCounts())
	}
}

// A checked register write sends the raw value and says what it means, as
// the app shows it: a number with its unit, a state's label, a time of day.
func TestSetByRegisterSaysWhatTheValueMeans(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	for _, c := range []struct {
		arg  string
		raw  float64
		says string
	}{
		{"P6.v8=200", 200, d + " Maximum boiler power 20 kW → raw 200 (PARAM_P6_8, P6.v8): HTTP 200"},
		{"P6.v8=2.01e2", 201, d + " Maximum boiler power 20.1 kW → raw 201 (PARAM_P6_8, P6.v8): HTTP 200"},
		{"P6.v5=1", 1, d + " Operating mode Summer → raw 1 (PARAM_P6_5, P6.v5): HTTP 200"},
		{"P6.v7=136", 136, d + " Night setback start 22:30 → raw 136 (PARAM_P6_7, P6.v7): HTTP 200"},
		{"P6.v6=4", 4, d + " Pump run-on time 24 min → raw 4 (PARAM_P6_6, P6.v6): HTTP 200"},
	} {
		before := commandWrites(sim)
		code, out, errOut := runArgs(t, toolArgs(sim, "set", d, c.arg)...)
		if code != exitOK {
			t.Fatalf("%s: exit %d stderr %q", c.arg, code, errOut)
		}
		key, _, _ := strings.Cut(c.arg, "=")
		if got := sim.Params(d)[key]; got != c.raw || commandWrites(sim) != before+1 {
			t.Errorf("%s: the cloud holds %#v after %d writes, want %v after one", c.arg, got, commandWrites(sim)-before, c.raw)
		}
		if !strings.Contains(out, c.says) {
			t.Errorf("%s: output %q, want %q", c.arg, out, c.says)
		}
	}
}

// --raw-unchecked writes a register's value as given, without the catalog:
// for a register the catalog does not describe or the module does not
// report, and with --catalog.disable. The module's values and the catalog
// are not read; the online check stays.
func TestSetRawUncheckedWritesAsGiven(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	cases := []struct {
		args []string
		key  string
		want any
	}{
		{[]string{"P9.z1=1"}, "P9.z1", 1.0},                                       // not reported, not described
		{[]string{"P6.v8=200.5"}, "P6.v8", 200.5},                                 // described, not reported, off-step
		{[]string{"P4.v9=true", "--catalog.disable"}, "P4.v9", true},              // a measurement, without the catalog
		{[]string{`P4.v10="21"`, "--unit=1"}, "P4.v10", "21"},                     // a JSON string
		{[]string{"P4.v11=ECO mode", "--parameter-name=X"}, "P4.v11", "ECO mode"}, // text
	}
	for i, c := range cases {
		args := append(append([]string{d}, c.args...), "--raw-unchecked")
		code, out, errOut := runArgs(t, toolArgs(sim, "set", args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d stderr %q", c.args, code, errOut)
		}
		if got := sim.Params(d)[c.key]; got != c.want {
			t.Fatalf("%v: the cloud holds %#v, want %#v", c.args, got, c.want)
		}
		if n := commandWrites(sim); n != i+1 {
			t.Fatalf("%v: %d writes, want %d", c.args, n, i+1)
		}
		if !strings.Contains(out, d+" "+c.key+" = ") || !strings.Contains(out, "(raw, unchecked): HTTP 200") {
			t.Fatalf("%v: output %q", c.args, out)
		}
	}
	if n := sim.Requests("POST /v1/modules/parameters"); n != 0 {
		t.Errorf("unchecked writes read the module's values %d times", n)
	}
	if n := sim.Requests("GET /v1/modules"); n != len(cases) {
		t.Errorf("%d module listings for %d writes: the online check is still wanted", n, len(cases))
	}
}

// --force keeps its meaning: a checked write goes to an offline module (the
// cloud answers it), but a module the list lacks has no catalog, so a
// register write to it needs --raw-unchecked as well.
func TestSetForceWithChecks(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	sim.SetModuleOnline(d, false)
	code, _, errOut := runArgs(t, toolArgs(sim, "set", d, "P6.v1=65", "--force")...)
	if commandWrites(sim) != 1 || code != exitRuntime || !strings.Contains(errOut, "409") {
		t.Fatalf("--force to an offline module: exit %d stderr %q, %d writes", code, errOut, commandWrites(sim))
	}
	code, _, errOut = runArgs(t, toolArgs(sim, "set", d, "P4.v1=999", "--force")...)
	if code != exitUsage || !strings.Contains(errOut, "not a setting the app writes") || commandWrites(sim) != 1 {
		t.Fatalf("--force does not skip the catalog: exit %d stderr %q", code, errOut)
	}
	code, _, errOut = runArgs(t, toolArgs(sim, "set", "NOSUCHDEV", "P6.v1=65", "--force")...)
	if code != exitUsage || !strings.Contains(errOut, "only with --raw-unchecked") || commandWrites(sim) != 1 {
		t.Fatalf("--force to an unlisted module: exit %d stderr %q", code, errOut)
	}
	oneLine(t, errOut)
}

// A usage mistake exits 2 with one line naming the valid choices, for every
// command: a devid the object does not list, as an argument or in
// --cloud.modules, serve's start included; nothing is read for it.
func TestUnknownDevidIsAUsageErrorListingTheOffered(t *testing.T) {
	sim := startToolCloud(t)
	listed := slices.Sorted(slices.Values(sim.Devids()))
	offered := fmt.Sprintf("(it lists %s)", strings.Join(listed, ", "))
	object := strconv.Itoa(sim.ObjectID())
	for name, c := range map[string]struct {
		args []string
		says string
	}{
		"catalog DEVID":   {toolArgs(sim, "catalog", "NOPE"), "module NOPE is not in the module list of object " + object},
		"set DEVID":       {toolArgs(sim, "set", "NOPE", "P6.v1=65"), "module NOPE is not in the module list of object " + object},
		"set --command":   {toolArgs(sim, "set", "NOPE", "--command=MODULE_RESTART"), "module NOPE is not in the module list of object " + object},
		"params":          {toolArgs(sim, "params", "--cloud.modules=TYPO"), "--cloud.modules: module TYPO is not in the module list of object " + object},
		"params, no cat.": {toolArgs(sim, "params", "--cloud.modules=TYPO", "--catalog.disable"), "--cloud.modules: module TYPO is not in the module list of object " + object},
		"modules":         {toolArgs(sim, "modules", "--cloud.modules=TYPO"), "--cloud.modules: module TYPO is not in the module list of object " + object},
		"catalog":         {toolArgs(sim, "catalog", "--cloud.modules=TYPO"), "--cloud.modules: module TYPO is not in the module list of object " + object},
		"check":           {toolArgs(sim, "check", "--cloud.modules=TYPO"), "--cloud.modules: module TYPO is not in the module list of object " + object},
		"watch":           {toolArgs(sim, "watch", "--cloud.modules=TYPO", "--log.level=warn"), "--cloud.modules: module TYPO is not in the module list of object " + object},
		"serve": {append(toolArgs(sim, "serve", "--cloud.modules="+listed[0]+",TYPO", "--log.level=warn"), "--web.listen-address=127.0.0.1:0"),
			"--cloud.modules: module TYPO is not in the module list of object " + object},
	} {
		t.Run(name, func(t *testing.T) {
			primes, writes := sim.Requests("POST /v1/modules/parameters"), commandWrites(sim)+sim.Requests("POST /v1/module/command/raw")
			// A command that wrongly runs on stops at the deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errOut syncBuffer
			code := runContext(ctx, c.args, &out, &errOut)
			if code != exitUsage || !strings.Contains(errOut.String(), c.says+" "+offered) {
				t.Fatalf("exit %d stderr %q, want exit 2 and %q", code, errOut.String(), c.says+" "+offered)
			}
			oneLine(t, errOut.String())
			if strings.Contains(errOut.String(), "command failed") {
				t.Fatalf("a usage mistake logged as a failed command: %q", errOut.String())
			}
			if sim.Requests("POST /v1/modules/parameters") != primes || commandWrites(sim)+sim.Requests("POST /v1/module/command/raw") != writes {
				t.Fatalf("parameters were read or written for a devid the object lacks: %v", sim.RequestCounts())
			}
		})
	}
}

// The README's set examples are what set prints, and its examples of the
// other tools refusing a command line are the line they print, in their
// order, against the standalone simulator's world (simulate's defaults,
// without drift).
func TestREADMESetExamplesAreTrue(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sim := startToolCloud(t, func(o *cloudsim.Options) {
		o.Modules, o.Objects, o.ParamsPerModule, o.Seed = cloudsim.DefaultModules, cloudsim.DemoObjects, 800, 1
	})
	lines := strings.Split(string(readme), "\n")
	sets, refusals := 0, 0
	for i, line := range lines {
		cmdline, ok := strings.CutPrefix(line, "$ bragerone_exporter ")
		if !ok || i+1 >= len(lines) {
			continue
		}
		args, ok := shellWords(cmdline)
		if !ok || len(args) == 0 {
			t.Fatalf("README line %d: cannot read %q", i+1, line)
		}
		want := lines[i+1]
		switch {
		case args[0] == "set":
			sets++
		case strings.HasPrefix(want, "bragerone_exporter: ") && args[0] != "simulate":
			refusals++
		default:
			continue // output that depends on the time and the place
		}
		code, out, errOut := runArgs(t, toolArgs(sim, args[0], args[1:]...)...)
		got := strings.TrimSpace(out)
		if code != exitOK {
			got = strings.TrimSpace(errOut)
		}
		if got != want {
			t.Errorf("README line %d: %s\nprints (exit %d) %q\nREADME %q", i+1, line, code, got, want)
		}
	}
	if sets < 4 || refusals < 2 {
		t.Fatalf("found %d set examples and %d refusals of other tools in the README", sets, refusals)
	}
}

// shellWords splits a command line the README shows: words separated by
// spaces, single quotes keeping spaces.
func shellWords(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, !quoted
}

// A write the cloud answers 429 says so, with the time the cloud asks, and
// is not sent again; a login answered 429 says so too, and neither is a
// verdict on the credentials (exit 1, not 2).
func TestSetThrottledSaysSoAndNeverRepeats(t *testing.T) {
	for _, date := range []bool{false, true} {
		sim := startToolCloud(t)
		d := sim.Devids()[0]
		sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/module/command", Status: 429, RetryAfterS: 30, RetryAfterDate: date})
		code, _, errOut := runArgs(t, toolArgs(sim, "set", d, "P9.z1=1", "--raw-unchecked")...)
		if code != exitRuntime {
			t.Fatalf("date %v: exit %d, want %d; stderr %q", date, code, exitRuntime, errOut)
		}
		if !strings.Contains(errOut, "not written: the cloud is throttling") || !strings.Contains(errOut, "asks to wait") {
			t.Errorf("date %v: stderr %q does not say the cloud throttles and how long it asks to wait", date, errOut)
		}
		if n := commandWrites(sim); n != 1 {
			t.Errorf("date %v: %d writes sent, want 1 (never repeated)", date, n)
		}
	}
	sim := startToolCloud(t)
	sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 429, RetryAfterS: 20})
	code, _, errOut := runArgs(t, toolArgs(sim, "set", sim.Devids()[0], "P9.z1=1", "--raw-unchecked")...)
	if code != exitRuntime || !strings.Contains(errOut, "throttling") {
		t.Errorf("login answered 429: exit %d stderr %q, want exit %d saying the cloud throttles", code, errOut, exitRuntime)
	}
	if n := sim.Requests("POST /v1/auth/user"); n != 1 {
		t.Errorf("%d logins, want 1", n)
	}
}

// A firewall's HTML 403 at the login is a block (exit 1); the cloud's JSON
// 401 is a verdict on the credentials (exit 2).
func TestToolLoginBlockIsNoVerdict(t *testing.T) {
	for _, c := range []struct {
		fault cloudsim.Fault
		want  int
	}{
		{cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 403, HTML: true}, exitRuntime},
		{cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 401}, exitUsage},
	} {
		sim := startToolCloud(t)
		sim.Inject(c.fault)
		code, _, errOut := runArgs(t, toolArgs(sim, "modules")...)
		if code != c.want {
			t.Errorf("login answered %d (html %v): exit %d, want %d; stderr %q", c.fault.Status, c.fault.HTML, code, c.want, errOut)
		}
	}
}
