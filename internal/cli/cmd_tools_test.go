package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// startToolCloud runs a simulated cloud on loopback for one test and puts
// the demo password in the environment, as an operator would.
func startToolCloud(t *testing.T, tune ...func(*cloudsim.Options)) *cloudsim.Cloud {
	t.Helper()
	opts := cloudsim.Options{Modules: 2, ParamsPerModule: 60, Seed: 7, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range tune {
		f(&opts)
	}
	sim := cloudsim.New(opts)
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	t.Setenv(passwordEnv, cloudsim.DefaultPassword)
	return sim
}

// toolArgs is a command line addressing sim with the demo account.
func toolArgs(sim *cloudsim.Cloud, cmd string, extra ...string) []string {
	return append([]string{cmd, "--cloud.url=" + sim.URL(), "--cloud.email=demo@example.com"}, extra...)
}

func totalRequests(sim *cloudsim.Cloud) int {
	n := 0
	for _, c := range sim.RequestCounts() {
		n += c
	}
	return n
}

// unreachableURL is a loopback address where no HTTP server answers: every
// connection is closed at once. The port stays held for the test, so no
// other process (a test's exporter, say) can take it and answer instead.
func unreachableURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String()
}

// oneLine asserts that stderr is a single line, without a stack trace.
func oneLine(t *testing.T, stderr string) {
	t.Helper()
	s := strings.TrimSpace(stderr)
	if s == "" || strings.Contains(s, "\n") || strings.Contains(s, "goroutine ") || strings.Contains(s, "panic") {
		t.Fatalf("want one error line, got %q", stderr)
	}
}

// Every cloud tool, with arguments that would succeed.
func toolCommands(sim *cloudsim.Cloud) map[string][]string {
	d := sim.Devids()[0]
	return map[string][]string{
		"check":   {"check"},
		"modules": {"modules"},
		"params":  {"params"},
		"watch":   {"watch"},
		"set":     {"set", d, "P6.v1=65"},
	}
}

func TestToolsWrongPasswordExitTwoOnOneLine(t *testing.T) {
	sim := startToolCloud(t)
	t.Setenv(passwordEnv, "not-the-password")
	for name, args := range toolCommands(sim) {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runArgs(t, toolArgs(sim, args[0], args[1:]...)...)
			if code != exitUsage {
				t.Fatalf("code = %d, want %d; stderr %q", code, exitUsage, errOut)
			}
			oneLine(t, errOut)
			// The line serve prints for the same mistake (one message, the exporter's).
			if !strings.Contains(errOut, "login rejected by the cloud: check the email and password") {
				t.Fatalf("stderr %q does not say the login was rejected and what to check", errOut)
			}
			if strings.Contains(out+errOut, "not-the-password") {
				t.Fatal("the password was printed")
			}
		})
	}
	if n := sim.Requests("POST /v1/module/command"); n != 0 {
		t.Fatalf("a write reached the cloud after a rejected login: %d", n)
	}
}

func TestToolsUnreachableCloudExitOne(t *testing.T) {
	sim := startToolCloud(t)
	url := unreachableURL(t)
	for name, args := range toolCommands(sim) {
		t.Run(name, func(t *testing.T) {
			argv := append([]string{args[0], "--cloud.url=" + url, "--cloud.email=demo@example.com"}, args[1:]...)
			code, _, errOut := runArgs(t, argv...)
			if code != exitRuntime {
				t.Fatalf("code = %d, want %d; stderr %q", code, exitRuntime, errOut)
			}
			oneLine(t, errOut)
			if !strings.Contains(errOut, "login failed") {
				t.Fatalf("stderr %q does not name the failed login", errOut)
			}
		})
	}
}

// The password is never a flag: it would show in a process listing.
func TestToolsRejectPasswordFlag(t *testing.T) {
	sim := startToolCloud(t)
	for name, args := range toolCommands(sim) {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runArgs(t, toolArgs(sim, args[0], append(args[1:], "--cloud.password=hunter2-secret")...)...)
			if code != exitUsage || !strings.Contains(errOut, "unknown flag --cloud.password") {
				t.Fatalf("code=%d stderr=%q, want exit 2 for an unknown flag", code, errOut)
			}
			if strings.Contains(out+errOut, "hunter2-secret") {
				t.Fatal("the rejected password was echoed")
			}
		})
	}
	if n := totalRequests(sim); n != 0 {
		t.Fatalf("%d requests reached the cloud; want none", n)
	}
}

func TestCheckPasses(t *testing.T) {
	const secret = "s3cret-Passw0rd"
	sim := startToolCloud(t, func(o *cloudsim.Options) { o.Password = secret })
	t.Setenv(passwordEnv, secret)
	code, out, errOut := runArgs(t, toolArgs(sim, "check", "--log.level=debug")...)
	if code != exitOK {
		t.Fatalf("code = %d; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"login      ok as demo@example.com",
		"version    1.0.",
		"user       id ",
		"OK: login and module listing work",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !lineWith(out, strconv.Itoa(sim.ObjectID())+"  ", "Home", "yes", "2  ", "ok") {
		t.Errorf("no row of the watched object %d with its two modules online:\n%s", sim.ObjectID(), out)
	}
	for _, d := range sim.Devids() {
		if !lineWith(out, d, "online") {
			t.Errorf("no online row for %s:\n%s", d, out)
		}
	}
	if strings.Contains(out+errOut, secret) {
		t.Fatalf("the password was printed:\n%s\n%s", out, errOut)
	}
	if sim.Requests("GET /v1/modules") != 1 || sim.Requests("POST /v1/auth/revoke") != 1 {
		t.Errorf("requests = %v; want one module listing and a logout", sim.RequestCounts())
	}
}

func lineWith(out string, parts ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		ok := true
		for _, p := range parts {
			if !strings.Contains(l, p) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func TestCheckOfflineModuleWarnsAndPasses(t *testing.T) {
	sim := startToolCloud(t)
	off := sim.Devids()[1]
	sim.SetModuleOnline(off, false)
	code, out, _ := runArgs(t, toolArgs(sim, "check")...)
	if code != exitOK {
		t.Fatalf("code = %d:\n%s", code, out)
	}
	if !lineWith(out, off, "offline", " -") || !strings.Contains(out, "warning: 1 of 2 watched modules are offline") {
		t.Fatalf("offline module not reported:\n%s", out)
	}
}

func TestCheckFailures(t *testing.T) {
	sim := startToolCloud(t)
	t.Run("module not on the object", func(t *testing.T) {
		code, out, _ := runArgs(t, toolArgs(sim, "check", "--cloud.modules=NOSUCHDEV")...)
		if code != exitUsage || !strings.Contains(out, "FAIL: --cloud.modules: module NOSUCHDEV is not in the module list of object") {
			t.Fatalf("code=%d:\n%s", code, out)
		}
	})
	t.Run("empty module list", func(t *testing.T) {
		id := sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultListing, Path: "GET /v1/modules", Body: `{"data":[]}`})
		defer sim.Clear(id)
		code, out, _ := runArgs(t, toolArgs(sim, "check")...)
		if code != exitRuntime || !strings.Contains(out, "lists no modules") {
			t.Fatalf("code=%d:\n%s", code, out)
		}
	})
	t.Run("unrecognised module list", func(t *testing.T) {
		id := sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultListing, Path: "GET /v1/modules", Body: `{"weird":true}`})
		defer sim.Clear(id)
		code, _, errOut := runArgs(t, toolArgs(sim, "check")...)
		if code != exitRuntime || !strings.Contains(errOut, "unknown shape") {
			t.Fatalf("code=%d stderr=%q", code, errOut)
		}
	})
	t.Run("object id not on the account", func(t *testing.T) {
		code, _, errOut := runArgs(t, toolArgs(sim, "check", "--cloud.object-id=999999")...)
		if code != exitUsage || !strings.Contains(errOut, "--cloud.object-id: object 999999 is not one of the account's objects") {
			t.Fatalf("code=%d stderr=%q", code, errOut)
		}
		oneLine(t, errOut)
	})
}

// check without an email or a password says which is missing, tries no
// login and exits 2; it never reports a login that was not tried as failed.
func TestCheckWithoutCredentialsSaysWhatIsMissing(t *testing.T) {
	sim := startToolCloud(t)
	cases := map[string]struct {
		args     []string
		password string
		want     string
	}{
		"no email":    {[]string{"check", "--cloud.url=" + sim.URL()}, cloudsim.DefaultPassword, "no account email: set --cloud.email or BRAGERONE_EMAIL"},
		"no password": {toolArgs(sim, "check"), "", "no account password: set BRAGERONE_PASSWORD or --cloud.password-file"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("BRAGERONE_EMAIL", "")
			t.Setenv(passwordEnv, tc.password)
			before := totalRequests(sim)
			code, out, errOut := runArgs(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			// Said once: stdout says the login was not tried, the one
			// error line what is missing.
			if !lineWith(out, "login", "not tried", "credentials missing") || strings.Contains(out, tc.want) || strings.Contains(out, "FAILED") {
				t.Errorf("stdout does not say the login was not tried, or repeats the error:\n%s", out)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q does not say what is missing", errOut)
			}
			oneLine(t, errOut)
			if n := totalRequests(sim) - before; n != 0 {
				t.Errorf("%d requests reached the cloud; no login should be tried", n)
			}
		})
	}
}

func TestModulesTableAndJSON(t *testing.T) {
	sim := startToolCloud(t)
	devids := sim.Devids()
	sim.SetModuleOnline(devids[1], false)

	code, out, errOut := runArgs(t, toolArgs(sim, "modules")...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	header, rows := table(t, out)
	if want := []string{"OBJECT ID", "OBJECT NAME", "DEVID", "NAME", "TITLE", "VERSION", "STATE", "CONNECTED AT", "GATEWAY ADDRESS", "GATEWAY VERSION"}; !slices.Equal(header, want) || len(rows) != len(devids) {
		t.Fatalf("header %q, want %q:\n%s", header, want, out)
	}
	if !lineWith(out, devids[0], "online") || !lineWith(out, devids[1], "offline") {
		t.Fatalf("online states wrong:\n%s", out)
	}

	code, out, _ = runArgs(t, toolArgs(sim, "modules", "--output=json")...)
	if code != exitOK {
		t.Fatalf("json: code=%d", code)
	}
	var doc struct {
		Modules []struct {
			ObjectID       int     `json:"object_id"`
			ObjectName     *string `json:"object_name"`
			Devid          string  `json:"devid"`
			Name           *string `json:"name"`
			Version        *string `json:"version"`
			State          string  `json:"state"`
			ConnectedAt    *string `json:"connected_at"`
			GatewayAddress *string `json:"gateway_address"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if len(doc.Modules) != len(devids) {
		t.Fatalf("doc = %+v", doc)
	}
	for i, m := range doc.Modules {
		if m.ObjectID != sim.ObjectID() || m.ObjectName == nil || *m.ObjectName != "Home" {
			t.Errorf("module %d: object %d %v, want %d Home", i, m.ObjectID, m.ObjectName, sim.ObjectID())
		}
		online := i == 0
		if m.Devid != devids[i] || m.State != map[bool]string{true: "online", false: "offline"}[online] || (m.ConnectedAt != nil) != online {
			t.Errorf("module %d = %+v, want devid %s online %v", i, m, devids[i], online)
		}
		if m.ConnectedAt != nil {
			if _, err := time.Parse(time.RFC3339, *m.ConnectedAt); err != nil {
				t.Errorf("connected_at %q: %v", *m.ConnectedAt, err)
			}
		}
		if online && (m.GatewayAddress == nil || m.Name == nil || m.Version == nil) {
			t.Errorf("module %d lacks name, version or gateway: %+v", i, m)
		}
	}

	code, out, _ = runArgs(t, toolArgs(sim, "modules", "-o", "json", "--cloud.modules="+devids[1])...)
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK || len(doc.Modules) != 1 || doc.Modules[0].Devid != devids[1] {
		t.Fatalf("--cloud.modules: code=%d err=%v doc=%+v", code, err, doc)
	}
}

// paramRows parses the params table into devid -> ordered registers and
// their raw values.
func paramRows(t *testing.T, out string) (registers map[string][]string, raws map[string]map[string]string) {
	t.Helper()
	registers, raws = map[string][]string{}, map[string]map[string]string{}
	header, rows := table(t, out)
	if len(header) < 3 || !slices.Equal(header[:3], []string{"DEVID", "REGISTER", "RAW"}) {
		t.Fatalf("no DEVID REGISTER RAW header:\n%s", out)
	}
	for _, r := range rows {
		if r["DEVID"] == "" || r["REGISTER"] == "" || r["RAW"] == "" {
			t.Fatalf("short row %v", r)
		}
		registers[r["DEVID"]] = append(registers[r["DEVID"]], r["REGISTER"])
		if raws[r["DEVID"]] == nil {
			raws[r["DEVID"]] = map[string]string{}
		}
		raws[r["DEVID"]][r["REGISTER"]] = r["RAW"]
	}
	return registers, raws
}

// sameJSON compares a decoded JSON value with the cloud's own value.
func sameJSON(got, want any) bool {
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	return string(a) == string(b)
}

func sameValue(cell string, want any) bool {
	switch w := want.(type) {
	case float64:
		f, err := strconv.ParseFloat(cell, 64)
		return err == nil && f == w
	case string:
		return cell == w || cell == strconv.Quote(w)
	default:
		return cell == formatValue(w)
	}
}

func TestParamsTableSortedAndComplete(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	// Numeric order: v2 before v10, pool P4 before P10 would be.
	sim.SetParam(d, "P4.v10", 10.5)
	sim.SetParam(d, "P4.v2", "two words")

	code, out, errOut := runArgs(t, toolArgs(sim, "params")...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	keys, values := paramRows(t, out)
	for _, dev := range sim.Devids() {
		want := sim.Params(dev)
		if len(keys[dev]) != len(want) {
			t.Errorf("%s: %d rows, the cloud holds %d values", dev, len(keys[dev]), len(want))
		}
		for k, v := range want {
			if !sameValue(values[dev][k], v) {
				t.Errorf("%s %s = %q, cloud has %v", dev, k, values[dev][k], v)
			}
		}
		for i := 1; i < len(keys[dev]); i++ {
			if !paramKeyLess(keys[dev][i-1], keys[dev][i]) {
				t.Errorf("%s: %s listed before %s", dev, keys[dev][i-1], keys[dev][i])
			}
		}
	}
	if values[d]["P4.v2"] != `"two words"` || values[d]["P4.v10"] != "10.5" {
		t.Errorf("P4.v2=%q P4.v10=%q", values[d]["P4.v2"], values[d]["P4.v10"])
	}
	if strings.Index(out, d+"  P4.v2 ") > strings.Index(out, d+"  P4.v10 ") {
		t.Errorf("P4.v10 sorted before P4.v2:\n%s", out)
	}
}

// paramKeyLess is the exporter's order written out independently: pool
// number, channel letter, index.
func paramKeyLess(a, b string) bool {
	parse := func(k string) (pool int, ch byte, idx int) {
		p, rest, _ := strings.Cut(k, ".")
		pool, _ = strconv.Atoi(p[1:])
		idx, _ = strconv.Atoi(rest[1:])
		return pool, rest[0], idx
	}
	ap, ac, ai := parse(a)
	bp, bc, bi := parse(b)
	if ap != bp {
		return ap < bp
	}
	if ac != bc {
		return ac < bc
	}
	return ai < bi
}

func TestParamsFilterAndModules(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[1]
	code, out, _ := runArgs(t, toolArgs(sim, "params", "--cloud.modules="+d, "--filter=P4.v*", "--filter=P5.s1", "--catalog.disable")...)
	if code != exitOK {
		t.Fatalf("code=%d", code)
	}
	keys, _ := paramRows(t, out)
	if len(keys) != 1 || len(keys[d]) == 0 {
		t.Fatalf("want rows of %s only:\n%s", d, out)
	}
	want := 0
	for k := range sim.Params(d) {
		if strings.HasPrefix(k, "P4.v") || k == "P5.s1" {
			want++
		}
	}
	if len(keys[d]) != want {
		t.Fatalf("%d rows, want %d:\n%s", len(keys[d]), want, out)
	}
	for _, k := range keys[d] {
		if !strings.HasPrefix(k, "P4.v") && k != "P5.s1" {
			t.Fatalf("%s passed the filter", k)
		}
	}
	if sim.Requests("GET /v1/modules") != 1 {
		t.Errorf("the named module was not checked against the module list: %v", sim.RequestCounts())
	}

	before := totalRequests(sim)
	code, _, errOut := runArgs(t, toolArgs(sim, "params", "--filter=P4.[")...)
	if code != exitUsage || !strings.Contains(errOut, "--filter") {
		t.Fatalf("bad pattern: code=%d stderr=%q", code, errOut)
	}
	if totalRequests(sim) != before {
		t.Fatal("a bad pattern still talked to the cloud")
	}
}

// paramsDoc is the document of `params --output=json`.
type paramsDoc struct {
	Modules []struct {
		Devid       string  `json:"devid"`
		Name        *string `json:"name"`
		NullLeftOut int     `json:"null_left_out"`
		Params      []struct {
			Register string         `json:"register"`
			Raw      any            `json:"raw"`
			Symbol   *string        `json:"symbol"`
			Name     *string        `json:"name"`
			Value    any            `json:"value"`
			Unit     *string        `json:"unit"`
			Meta     map[string]any `json:"meta"`
		} `json:"params"`
	} `json:"modules"`
}

func TestParamsJSON(t *testing.T) {
	sim := startToolCloud(t)
	code, out, _ := runArgs(t, toolArgs(sim, "params", "--output=json")...)
	if code != exitOK {
		t.Fatalf("code=%d", code)
	}
	var doc paramsDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Modules) != len(sim.Devids()) {
		t.Fatalf("modules in the document: %d", len(doc.Modules))
	}
	for i, d := range sim.Devids() {
		m := doc.Modules[i]
		raws := map[string]any{}
		for _, p := range m.Params {
			raws[p.Register] = p.Raw
		}
		if m.Devid != d || len(raws) != len(sim.Params(d)) {
			t.Errorf("module %d: %s with %d registers, want %s with %d", i, m.Devid, len(raws), d, len(sim.Params(d)))
		}
		for k, v := range sim.Params(d) {
			if got, ok := raws[k]; !ok || !sameJSON(got, v) {
				t.Errorf("%s %s = %v, cloud has %v", d, k, got, v)
			}
		}
	}
	// Members keep the exporter's key order (not encoding/json's sorting).
	d := sim.Devids()[0]
	sim.SetParam(d, "P4.v10", 1.0)
	sim.SetParam(d, "P4.v9", 1.0)
	_, out, _ = runArgs(t, toolArgs(sim, "params", "-o", "json", "--cloud.modules="+d, "--filter=P4.v?", "--filter=P4.v10")...)
	if i9, i10 := strings.Index(out, `"P4.v9"`), strings.Index(out, `"P4.v10"`); i9 < 0 || i10 < 0 || i9 > i10 {
		t.Fatalf("P4.v9 not before P4.v10:\n%s", out)
	}
}

// params leaves out the registers the cloud reports without a value, and
// says so: in a log line under the table, in null_left_out in JSON.
// --include-null lists them, as null.
func TestParamsSaysWhatItLeavesOut(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	// Two registers the cloud reports as null, one with a value, in a pool
	// of their own; a null register outside the filter is not counted.
	sim.SetParam(d, "P7.v1", nil)
	sim.SetParam(d, "P7.v2", 5.0)
	sim.SetParam(d, "P7.v3", nil)
	sim.SetParam(d, "P8.v1", nil)
	base := []string{"params", d, "--filter=P7.*", "--catalog.disable"}

	code, out, errOut := runArgs(t, toolArgs(sim, base[0], base[1:]...)...)
	registers, raws := paramRows(t, out)
	if code != exitOK || !slices.Equal(registers[d], []string{"P7.v2"}) || raws[d]["P7.v2"] != "5" {
		t.Fatalf("code=%d, want P7.v2 only:\n%s\nstderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "without a value (null) are left out; --include-null lists them") || !strings.Contains(errOut, "registers=2") {
		t.Errorf("stderr %q does not say that two registers were left out", errOut)
	}

	code, out, errOut = runArgs(t, toolArgs(sim, base[0], append(base[1:], "--include-null")...)...)
	registers, raws = paramRows(t, out)
	if code != exitOK || !slices.Equal(registers[d], []string{"P7.v1", "P7.v2", "P7.v3"}) || raws[d]["P7.v1"] != "-" || strings.Contains(errOut, "left out") {
		t.Fatalf("--include-null: code=%d stderr %q:\n%s", code, errOut, out)
	}

	for flag, want := range map[string][]string{"": {"P7.v2"}, "--include-null": {"P7.v1", "P7.v2", "P7.v3"}} {
		args := append(append([]string{}, base[1:]...), "-o", "json")
		if flag != "" {
			args = append(args, flag)
		}
		code, out, _ = runArgs(t, toolArgs(sim, "params", args...)...)
		var doc paramsDoc
		if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || len(doc.Modules) != 1 {
			t.Fatalf("json %s: code=%d err=%v\n%s", flag, code, err, out)
		}
		m := doc.Modules[0]
		var listed []string
		for _, p := range m.Params {
			listed = append(listed, p.Register)
			if (p.Raw == nil) != (p.Register != "P7.v2") {
				t.Errorf("json %s: %s raw %v", flag, p.Register, p.Raw)
			}
		}
		if !slices.Equal(listed, want) || m.NullLeftOut != 3-len(want) {
			t.Errorf("json %s: listed %v, null_left_out %d; want %v and %d", flag, listed, m.NullLeftOut, want, 3-len(want))
		}
	}
}

// params takes devids as arguments, as catalog does; they narrow the
// snapshot as --cloud.modules does, and replace it.
func TestParamsTakesDevidArguments(t *testing.T) {
	sim := startToolCloud(t)
	a, b := sim.Devids()[0], sim.Devids()[1]
	code, out, errOut := runArgs(t, toolArgs(sim, "params", b, "--filter=P4.v1", "--catalog.disable", "--cloud.modules="+a)...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	registers, _ := paramRows(t, out)
	if len(registers) != 1 || len(registers[b]) != 1 {
		t.Fatalf("want %s's P4.v1 only:\n%s", b, out)
	}
	code, out, _ = runArgs(t, toolArgs(sim, "params", b, a, "--filter=P4.v1", "--catalog.disable")...)
	if registers, _ := paramRows(t, out); code != exitOK || len(registers[a]) != 1 || len(registers[b]) != 1 {
		t.Fatalf("two devids: code=%d\n%s", code, out)
	}
}

func TestSetRawCommand(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	code, out, errOut := runArgs(t, toolArgs(sim, "set", d, "--command=MODULE_RESTART", "--value=ON")...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	if sim.Requests("POST /v1/module/command/raw") != 1 || sim.Requests("POST /v1/module/command") != 0 {
		t.Fatalf("requests = %v", sim.RequestCounts())
	}
	if !strings.Contains(out, "MODULE_RESTART") || !strings.Contains(out, "HTTP 200") || !strings.Contains(out, `"value":"ON"`) {
		t.Fatalf("output %q", out)
	}
}

func TestSetRefusesOfflineModule(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	before := sim.Params(d)["P4.v8"]
	sim.SetModuleOnline(d, false)
	t.Setenv("BRAGERONE_FORCE", "true") // a write's flags come from the command line only
	for _, args := range [][]string{{d, "P6.v1=65"}, {d, "P4.v8=5", "--raw-unchecked"}, {d, "--command=MODULE_RESTART"}} {
		code, _, errOut := runArgs(t, toolArgs(sim, "set", args...)...)
		if code != exitUsage || !strings.Contains(errOut, "is offline") || !strings.Contains(errOut, "--force") {
			t.Fatalf("%v: code=%d stderr=%q", args, code, errOut)
		}
		// BRAGERONE_FORCE is warned about, not obeyed; then the one error line.
		warning, errLine, _ := strings.Cut(errOut, "\n")
		if !strings.Contains(warning, "BRAGERONE_FORCE (--force may be set only on the command line)") {
			t.Errorf("warning %q", warning)
		}
		oneLine(t, errLine)
	}
	if n := sim.Requests("POST /v1/module/command") + sim.Requests("POST /v1/module/command/raw"); n != 0 {
		t.Fatalf("%d writes reached the cloud for an offline module", n)
	}
	if sim.Params(d)["P4.v8"] != before {
		t.Fatal("the offline module's value changed")
	}

	code, _, errOut := runArgs(t, toolArgs(sim, "set", "NOSUCHDEV", "P4.v8=5", "--raw-unchecked")...)
	if code != exitUsage || !strings.Contains(errOut, "not in the module list") || sim.Requests("POST /v1/module/command") != 0 {
		t.Fatalf("unknown module: code=%d stderr=%q", code, errOut)
	}

	// --force sends an unchecked write without asking; the cloud itself
	// answers 409 for an offline module.
	listings := sim.Requests("GET /v1/modules")
	code, _, errOut = runArgs(t, toolArgs(sim, "set", d, "P4.v8=5", "--force", "--raw-unchecked")...)
	if sim.Requests("POST /v1/module/command") != 1 || sim.Requests("GET /v1/modules") != listings {
		t.Fatalf("--force: requests = %v", sim.RequestCounts())
	}
	if code != exitRuntime || !strings.Contains(errOut, "409") {
		t.Fatalf("--force to an offline module: code=%d stderr=%q", code, errOut)
	}
}

func TestSetRoutingErrorsAreUsageErrorsWithoutIO(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	for name, args := range map[string][]string{
		"both routes":              {d, "P4.v8=1", "--command=MODULE_RESTART"},
		"neither route":            {d},
		"unit with a raw command":  {d, "--command=MODULE_RESTART", "--unit=1"},
		"name with a raw command":  {d, "--command=MODULE_RESTART", "--parameter-name=X"},
		"value with a parameter":   {d, "P4.v8=1", "--value=2"},
		"no equals sign":           {d, "P4.v8"},
		"bad key":                  {d, "X4.v8=1"},
		"key without an index":     {d, "P4.v=1"},
		"no value":                 {d, "P4.v8="},
		"empty devid":              {"", "P4.v8=1"},
		"neither, with --force":    {d, "--force"},
		"register without catalog": {d, "P6.v1=65", "--catalog.disable"},
		"text for a register":      {d, "P6.v1=warm"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runArgs(t, toolArgs(sim, "set", args...)...)
			if code != exitUsage {
				t.Fatalf("code=%d stderr=%q", code, errOut)
			}
			oneLine(t, errOut)
		})
	}
	if n := totalRequests(sim); n != 0 {
		t.Fatalf("usage errors made %d requests: %v", n, sim.RequestCounts())
	}
}

// watchRun runs the watch command in the background until stopped.
type watchRun struct {
	t      *testing.T
	out    *syncBuffer
	errOut *syncBuffer
	cancel context.CancelFunc
	done   chan struct{} // closed when the command returned; code is set then
	code   int
}

func startWatch(t *testing.T, args ...string) *watchRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchRun{t: t, out: &syncBuffer{}, errOut: &syncBuffer{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.code = runContext(ctx, args, w.out, w.errOut)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(15 * time.Second):
			t.Error("watch did not return after its context was cancelled")
		}
	})
	return w
}

// waitFor polls cond with a short tick until it holds or the deadline passes.
func (w *watchRun) waitFor(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s; stdout:\n%s\nstderr:\n%s", what, w.out.String(), w.errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *watchRun) waitLine(line string) {
	w.t.Helper()
	w.waitFor(strconv.Quote(line), func() bool {
		return slices.Contains(w.lines(), line)
	})
}

// lines are the lines watch printed, without the time each starts with;
// a line without one fails the test.
func (w *watchRun) lines() []string {
	w.t.Helper()
	out := w.out.String()
	if out == "" {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		stamp, text, _ := strings.Cut(l, " ")
		if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil {
			w.t.Fatalf("line %q does not start with an RFC 3339 time: %v", l, err)
		}
		lines = append(lines, text)
	}
	return lines
}

// boundSession returns the SID of a connected session the cloud has bound
// to devid, other than not.
func boundSession(sim *cloudsim.Cloud, devid, not string) string {
	for _, s := range sim.Sessions() {
		if s.Connected && s.SID != not && slices.Contains(s.Bound, devid) {
			return s.SID
		}
	}
	return ""
}

func TestWatchPrintsLiveChangesAcrossATransportDrop(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	w := startWatch(t, toolArgs(sim, "watch",
		"--session.supervisor-interval=50ms", "--poll.interval=50ms", "--session.down-hysteresis=0",
		"--filter=P4.*", "--catalog.disable")...)

	var sid string
	w.waitFor("a bound session", func() bool { sid = boundSession(sim, d, ""); return sid != "" })
	w.waitLine("# session up")
	sim.SetParam(d, "P5.v1", 99.0) // filtered out
	sim.SetParam(d, "P4.v8", 21.5)
	w.waitLine(d + " P4.v8 = 21.5 (live)")
	if strings.Contains(w.out.String(), " P5.v1 ") {
		t.Fatalf("--filter=P4.* let P5.v1 through:\n%s", w.out.String())
	}

	sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	w.waitFor("a new bound session after the drop", func() bool { return boundSession(sim, d, sid) != "" })
	sim.SetParam(d, "P4.v9", "two words")
	w.waitLine(d + ` P4.v9 = "two words" (live)`)
	w.waitFor("the drop reported", func() bool { return strings.Contains(w.out.String(), "# session down (") })

	sim.SetModuleOnline(d, false)
	w.waitFor("the module reported offline", func() bool { return strings.Contains(w.out.String(), "# module "+d+" offline") })

	w.cancel()
	select {
	case <-w.done:
		if w.code != exitOK {
			t.Fatalf("exit code after interrupt = %d; stderr:\n%s", w.code, w.errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("watch did not return after its context was cancelled")
	}
	if !strings.Contains(w.out.String(), "# session closed") {
		t.Errorf("no closing line:\n%s", w.out.String())
	}
	if sim.Requests("POST /v1/auth/revoke") != 1 {
		t.Errorf("watch did not log out: %v", sim.RequestCounts())
	}
}

func TestWatchRejectsBadHealthFlags(t *testing.T) {
	sim := startToolCloud(t)
	code, _, errOut := runArgs(t, toolArgs(sim, "watch", "--session.supervisor-interval=0s")...)
	if code != exitUsage || totalRequests(sim) != 0 {
		t.Fatalf("code=%d stderr=%q requests=%v", code, errOut, sim.RequestCounts())
	}
}

func TestEventQueueNeverBlocksAndCountsDrops(t *testing.T) {
	seen := time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC)
	for _, asJSON := range []bool{false, true} {
		const limit = 1000
		q := newEventQueue(limit)
		events := make([]watchEvent, limit+5)
		for i := range events {
			events[i] = stateEvent(seen, eventSessionUp, "# session up")
		}
		q.push(events...) // nobody is reading: must not block
		q.close()
		var b bytes.Buffer
		q.drainTo(&b, asJSON, func() time.Time { return seen.Add(time.Second) })
		first, _, _ := strings.Cut(b.String(), "\n")
		want := "2025-01-02T03:04:06.006Z # 5 events dropped: output too slow"
		if asJSON {
			want = `{"time":"2025-01-02T03:04:06.006Z","event":"dropped","count":5}`
		}
		if first != want || strings.Count(b.String(), "\n") != limit+1 {
			t.Fatalf("json %v: got %d lines, first %q, want %q", asJSON, strings.Count(b.String(), "\n"), first, want)
		}
	}
}

// Every tool that reads the module list refuses a named module the object
// does not list, with the same words, before it asks for any parameter: a
// typo must not look like a module with nothing to show.
func TestToolsRefuseAModuleTheObjectLacks(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	for _, args := range [][]string{
		{"modules", "--cloud.modules=" + d + ",NOSUCHDEV"},
		{"params", "--cloud.modules=NOSUCHDEV," + d},
		{"catalog", "--cloud.modules=" + d + ",NOSUCHDEV"},
	} {
		t.Run(args[0], func(t *testing.T) {
			primes := sim.Requests("POST /v1/modules/parameters")
			code, out, errOut := runArgs(t, toolArgs(sim, args[0], args[1:]...)...)
			if code != exitUsage || !strings.Contains(errOut, "module NOSUCHDEV is not in the module list of object "+strconv.Itoa(sim.ObjectID())) {
				t.Fatalf("code=%d stderr=%q", code, errOut)
			}
			oneLine(t, errOut)
			if out != "" || sim.Requests("POST /v1/modules/parameters") != primes {
				t.Fatalf("a refused module list still printed %q or primed parameters", out)
			}
		})
	}
}
