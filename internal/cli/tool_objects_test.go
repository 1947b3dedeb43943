package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// startTwoObjects runs a simulated account of two objects, as --simulate
// shows it: Home with two modules, Cottage with one.
func startTwoObjects(t *testing.T) (sim *cloudsim.Cloud, home, cottage cloudsim.ObjectInfo) {
	t.Helper()
	sim = startToolCloud(t, func(o *cloudsim.Options) { o.Modules, o.Objects, o.ParamsPerModule = 3, 2, 400 })
	objects := sim.Objects()
	if len(objects) != 2 || objects[0].Name != "Home" || objects[1].Name != "Cottage" || len(objects[0].Devids) != 2 || len(objects[1].Devids) != 1 {
		t.Fatalf("the simulator's objects: %+v", objects)
	}
	return sim, objects[0], objects[1]
}

// moduleListFront passes every request to sim, except that it answers the
// module list of one object with body: one object's list unusable or empty
// while the others' are whole.
func moduleListFront(t *testing.T, sim *cloudsim.Cloud, objectID int, body string) string {
	return answeringFront(t, sim, func(r *http.Request) bool {
		return r.URL.Path == "/v1/modules" && r.URL.Query().Get("group_id") == strconv.Itoa(objectID)
	}, body)
}

// answeringFront passes every request to sim, except that it answers the
// GET requests answer selects with body.
func answeringFront(t *testing.T, sim *cloudsim.Cloud, answer func(*http.Request) bool, body string) string {
	t.Helper()
	target, err := url.Parse(sim.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && answer(r) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// While GET /v1/objects answers a list of an unknown shape, the login
// answer's objects stand in for it: the tools work on every object, and an
// unknown id is still refused; check fails (exit 1), since serve starts
// from a usable object listing.
func TestToolsWhenTheObjectListIsUnusable(t *testing.T) {
	sim, home, cottage := startTwoObjects(t)
	front := answeringFront(t, sim, func(r *http.Request) bool { return r.URL.Path == "/v1/objects" }, `{"weird":true}`)
	code, out, errOut := runArgs(t, objectArgs(front, "modules")...)
	if _, rows := table(t, out); code != exitOK || len(rows) != 3 || rows[2]["OBJECT ID"] != strconv.Itoa(cottage.ID) {
		t.Fatalf("modules: code=%d stderr=%q, want the three modules of both objects:\n%s", code, errOut, out)
	}
	code, _, errOut = runArgs(t, objectArgs(front, "modules", "--cloud.object-id=99")...)
	if code != exitUsage || !strings.Contains(errOut, "(it lists "+strconv.Itoa(home.ID)+" Home, "+strconv.Itoa(cottage.ID)+" Cottage)") {
		t.Errorf("an unknown id: code=%d stderr=%q", code, errOut)
	}
	code, out, errOut = runArgs(t, objectArgs(front, "check")...)
	const says = "listing the account's objects: the list is of an unknown shape or dropped rows"
	if code != exitRuntime || !strings.Contains(out, "FAIL: "+says) || !strings.Contains(errOut, says) || !lineWith(out, "Cottage", "yes", "ok") {
		t.Errorf("check: code=%d stderr=%q, want exit 1 naming the object listing:\n%s", code, errOut, out)
	}
}

// runBounded is runArgs for a command that could run until interrupted
// (watch): one that does not stop by itself within a minute is
// interrupted, and its exit then fails the test's expectations.
func runBounded(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb syncBuffer
	code = runContext(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// objectArgs is a command line addressing the cloud at url with the demo
// account.
func objectArgs(url, cmd string, extra ...string) []string {
	return append([]string{cmd, "--cloud.url=" + url, "--cloud.email=demo@example.com"}, extra...)
}

// checkDoc is the document of `check --output=json`.
type checkDoc struct {
	Objects []struct {
		ObjectID    int     `json:"object_id"`
		Name        *string `json:"name"`
		Watched     bool    `json:"watched"`
		ModuleCount *int    `json:"module_count"`
		Online      *int    `json:"online"`
		Result      *string `json:"result"`
		Reason      *string `json:"reason"`
	} `json:"objects"`
	Modules []struct {
		ObjectID   int    `json:"object_id"`
		ObjectName string `json:"object_name"`
		Devid      string `json:"devid"`
		State      string `json:"state"`
	} `json:"modules"`
	Result string  `json:"result"`
	Reason *string `json:"reason"`
}

func decodeCheck(t *testing.T, out string) checkDoc {
	t.Helper()
	var doc checkDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check -o json: %v\n%s", err, out)
	}
	return doc
}

// check lists every object of the account with its module count, how many
// are online and its result, and every module with its object; one login
// serves all of it, and each object's module list is read once.
func TestCheckListsEveryObject(t *testing.T) {
	sim, home, cottage := startTwoObjects(t)
	sim.SetModuleOnline(home.Devids[1], false)

	code, out, errOut := runArgs(t, toolArgs(sim, "check")...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q\n%s", code, errOut, out)
	}
	if sim.Logins() != 1 || sim.Requests("GET /v1/modules") != 2 {
		t.Errorf("logins %d, module listings %d; want one login and a listing per object: %v", sim.Logins(), sim.Requests("GET /v1/modules"), sim.RequestCounts())
	}
	for _, want := range [][]string{
		{"objects    2 listed, 2 watched"},
		{strconv.Itoa(home.ID) + "  ", "Home", "yes", "2  ", "1  ", "ok"},
		{strconv.Itoa(cottage.ID) + "  ", "Cottage", "yes", "1  ", "1  ", "ok"},
		{"modules    3 listed, 3 watched, 2 online"},
		{strconv.Itoa(home.ID) + "  ", home.Devids[0], "online"},
		{strconv.Itoa(home.ID) + "  ", home.Devids[1], "offline"},
		{strconv.Itoa(cottage.ID) + "  ", cottage.Devids[0], "online"},
		{"warning: 1 of 3 watched modules are offline"},
		{"OK: login and module listing work"},
	} {
		if !lineWith(out, want...) {
			t.Errorf("no line with %q:\n%s", want, out)
		}
	}

	code, out, _ = runArgs(t, toolArgs(sim, "check", "--output=json")...)
	doc := decodeCheck(t, out)
	if code != exitOK || doc.Result != "ok" || doc.Reason != nil || len(doc.Objects) != 2 || len(doc.Modules) != 3 {
		t.Fatalf("code=%d doc=%+v", code, doc)
	}
	for i, want := range []struct {
		info          cloudsim.ObjectInfo
		count, online int
	}{{home, 2, 1}, {cottage, 1, 1}} {
		o := doc.Objects[i]
		if o.ObjectID != want.info.ID || o.Name == nil || *o.Name != want.info.Name || !o.Watched ||
			o.ModuleCount == nil || *o.ModuleCount != want.count || o.Online == nil || *o.Online != want.online ||
			o.Result == nil || *o.Result != "ok" || o.Reason != nil {
			t.Errorf("object %d = %+v, want %s with %d modules, %d online", i, o, want.info.Name, want.count, want.online)
		}
	}
	for _, m := range doc.Modules {
		if m.ObjectID != sim.ObjectOf(m.Devid) || (m.ObjectName == "Home") != (m.ObjectID == home.ID) {
			t.Errorf("module %s: object %d %s, the cloud puts it in %d", m.Devid, m.ObjectID, m.ObjectName, sim.ObjectOf(m.Devid))
		}
	}
}

// One object whose module list is unusable, or empty, fails the check
// with exit 1 naming that object, while the other object is reported as
// fine.
func TestCheckFailsNamingTheObjectWhoseListIsUnusable(t *testing.T) {
	sim, home, cottage := startTwoObjects(t)
	for name, c := range map[string]struct{ body, says string }{
		"unknown shape": {`{"weird":true}`, "the module list of object " + strconv.Itoa(cottage.ID) + " has an unknown shape"},
		"empty":         {`{"data":[]}`, "lists no modules; the exporter would have nothing to watch"},
	} {
		t.Run(name, func(t *testing.T) {
			front := moduleListFront(t, sim, cottage.ID, c.body)
			code, out, errOut := runArgs(t, objectArgs(front, "check")...)
			cottageRef := "object " + strconv.Itoa(cottage.ID) + " Cottage"
			if code != exitRuntime || !lineWith(out, "FAIL: "+cottageRef, c.says) || strings.Contains(out, "OK:") {
				t.Fatalf("code=%d, want %d and a FAIL line naming %s:\n%s", code, exitRuntime, cottageRef, out)
			}
			oneLine(t, errOut)
			if !strings.Contains(errOut, cottageRef) || strings.Contains(errOut, "object "+strconv.Itoa(home.ID)) {
				t.Errorf("stderr %q does not name %s alone", errOut, cottageRef)
			}
			if !lineWith(out, strconv.Itoa(home.ID)+"  ", "Home", "ok") || !lineWith(out, strconv.Itoa(cottage.ID)+"  ", "Cottage", "failed") {
				t.Errorf("the objects' results are not Home ok, Cottage failed:\n%s", out)
			}

			code, out, _ = runArgs(t, objectArgs(front, "check", "-o", "json")...)
			doc := decodeCheck(t, out)
			if code != exitRuntime || doc.Result != "failed" || doc.Reason == nil || !strings.Contains(*doc.Reason, cottageRef) ||
				len(doc.Objects) != 2 || *doc.Objects[0].Result != "ok" || *doc.Objects[1].Result != "failed" ||
				doc.Objects[1].Reason == nil || !strings.Contains(*doc.Objects[1].Reason, strings.TrimPrefix(c.says, "the ")) {
				t.Errorf("json: code=%d doc=%+v", code, doc)
			}
		})
	}
}

// --cloud.object-id restricts the objects, from the command line and from
// BRAGERONE_CLOUD_OBJECT_ID: only the chosen object's modules are listed
// and read; an id the account does not list is exit 2 naming the objects
// it does.
func TestObjectIDRestrictsTheObjects(t *testing.T) {
	sim, home, cottage := startTwoObjects(t)
	byFlag := func(extra ...string) []string { return append(extra, "--cloud.object-id="+strconv.Itoa(cottage.ID)) }
	for name, setup := range map[string]func(t *testing.T) func(...string) []string{
		"flag": func(*testing.T) func(...string) []string { return byFlag },
		"environment": func(t *testing.T) func(...string) []string {
			t.Setenv("BRAGERONE_CLOUD_OBJECT_ID", strconv.Itoa(cottage.ID))
			return func(extra ...string) []string { return extra }
		},
	} {
		t.Run(name, func(t *testing.T) {
			with := setup(t)
			listings := sim.Requests("GET /v1/modules")
			code, out, errOut := runArgs(t, toolArgs(sim, "modules", with()...)...)
			_, rows := table(t, out)
			if code != exitOK || len(rows) != 1 || rows[0]["DEVID"] != cottage.Devids[0] || rows[0]["OBJECT ID"] != strconv.Itoa(cottage.ID) {
				t.Fatalf("code=%d stderr=%q, want the Cottage's module alone:\n%s", code, errOut, out)
			}
			if n := sim.Requests("GET /v1/modules") - listings; n != 1 {
				t.Errorf("%d module lists read, want the chosen object's alone", n)
			}
			code, out, _ = runArgs(t, toolArgs(sim, "check", with()...)...)
			if code != exitOK || !lineWith(out, strconv.Itoa(home.ID)+"  ", "Home", "no") || !lineWith(out, strconv.Itoa(cottage.ID)+"  ", "Cottage", "yes", "ok") ||
				!strings.Contains(out, "objects    2 listed, 1 watched") {
				t.Errorf("check: code=%d, want Home listed unwatched and Cottage watched:\n%s", code, out)
			}
			// A module of an object left out is not found.
			code, _, errOut = runArgs(t, toolArgs(sim, "params", with(home.Devids[0], "--catalog.disable")...)...)
			want := "module " + home.Devids[0] + " is not in the module list of object " + strconv.Itoa(cottage.ID) + " (it lists " + cottage.Devids[0] + ")"
			if code != exitUsage || !strings.Contains(errOut, want) {
				t.Errorf("a module of the object left out: code=%d stderr=%q, want %q", code, errOut, want)
			}
		})
	}

	// The words serve refuses it with.
	want := "bragerone_exporter: --cloud.object-id: object 99 is not one of the account's objects (it lists " +
		strconv.Itoa(home.ID) + " Home, " + strconv.Itoa(cottage.ID) + " Cottage)\n"
	for _, cmd := range [][]string{{"check"}, {"modules"}, {"params"}, {"catalog"}, {"set", cottage.Devids[0], "P6.v1=65"}, {"watch"}} {
		code, _, errOut := runBounded(t, toolArgs(sim, cmd[0], append(cmd[1:], "--cloud.object-id=99,"+strconv.Itoa(home.ID))...)...)
		if code != exitUsage || errOut != want {
			t.Errorf("%s: code=%d stderr %q, want %q", cmd[0], code, errOut, want)
		}
	}
	t.Setenv("BRAGERONE_CLOUD_OBJECT_ID", "99")
	if code, _, errOut := runArgs(t, toolArgs(sim, "modules")...); code != exitUsage || errOut != want {
		t.Errorf("from the environment: code=%d stderr %q, want %q", code, errOut, want)
	}
	if n := sim.Requests("POST /v1/modules/parameters") + commandWrites(sim); n != 0 {
		t.Errorf("an unknown object id still read or wrote parameters: %v", sim.RequestCounts())
	}
}

// BRAGERONE_CLOUD_OBJECT_ID takes several ids, comma-separated, as the flag
// does.
func TestObjectIDFromTheEnvironment(t *testing.T) {
	t.Setenv("BRAGERONE_CLOUD_OBJECT_ID", "12,34")
	for _, cmd := range []string{"check", "modules", "watch", "serve"} {
		cli, err := parseForTest(t, cmd)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		got := map[string][]int{"check": cli.Check.ObjectIDs, "modules": cli.Modules.ObjectIDs, "watch": cli.Watch.ObjectIDs, "serve": cli.Serve.ObjectIDs}[cmd]
		if !slices.Equal(got, []int{12, 34}) {
			t.Errorf("%s: object ids %v, want [12 34]", cmd, got)
		}
	}
}

// A devid finds its object by itself: every tool works on a module of the
// second object without --cloud.object-id, and a devid no object lists is
// exit 2 naming every object searched and the devids they list.
func TestDevidsFindTheirObject(t *testing.T) {
	sim, home, cottage := startTwoObjects(t)
	c := cottage.Devids[0]

	code, out, errOut := runArgs(t, toolArgs(sim, "modules", "--cloud.modules="+c)...)
	if _, rows := table(t, out); code != exitOK || len(rows) != 1 || rows[0]["OBJECT ID"] != strconv.Itoa(cottage.ID) {
		t.Errorf("modules --cloud.modules=%s: code=%d stderr=%q\n%s", c, code, errOut, out)
	}
	code, out, errOut = runArgs(t, toolArgs(sim, "params", c, "--filter=P4.v20")...)
	if registers, _ := paramRows(t, out); code != exitOK || !slices.Equal(registers[c], []string{"P4.v20"}) || !lineWith(out, c, "P4.v20", "Valve 1 temperature") {
		t.Errorf("params %s: code=%d stderr=%q, want its P4.v20 named by the catalog:\n%s", c, code, errOut, out)
	}
	code, out, errOut = runArgs(t, toolArgs(sim, "catalog", c)...)
	if _, rows := table(t, out); code != exitOK || len(rows) == 0 || rows[0]["DEVID"] != c {
		t.Errorf("catalog %s: code=%d stderr=%q\n%s", c, code, errOut, out)
	}
	code, out, errOut = runArgs(t, toolArgs(sim, "set", c, "Valve 1 set temperature=55")...)
	if code != exitOK || !strings.Contains(out, "HTTP 200") || sim.Params(c)["P6.v20"] != 55.0 {
		t.Errorf("set %s: code=%d stderr=%q out=%q, P6.v20 = %v", c, code, errOut, out, sim.Params(c)["P6.v20"])
	}
	if sim.Logins() != 4 {
		t.Errorf("%d logins for four tool runs, want one each", sim.Logins())
	}

	offered := "(they list " + strings.Join(slices.Sorted(slices.Values(append(append([]string{}, home.Devids...), cottage.Devids...))), ", ") + ")"
	where := "not in the module lists of objects " + strconv.Itoa(home.ID) + ", " + strconv.Itoa(cottage.ID) + " "
	for _, args := range [][]string{
		{"modules", "--cloud.modules=NOSUCHDEV," + c},
		{"params", "NOSUCHDEV", c},
		{"catalog", c, "NOSUCHDEV"},
		{"set", "NOSUCHDEV", "P6.v1=65"},
		{"check", "--cloud.modules=" + c + ",NOSUCHDEV"},
		{"watch", "--cloud.modules=NOSUCHDEV"},
	} {
		primes, writes := sim.Requests("POST /v1/modules/parameters"), commandWrites(sim)
		code, _, errOut := runBounded(t, toolArgs(sim, args[0], args[1:]...)...)
		if want := "module NOSUCHDEV is " + where + offered; code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%q: code=%d stderr=%q, want exit 2 and %q", args, code, errOut, want)
		}
		oneLine(t, errOut)
		if sim.Requests("POST /v1/modules/parameters") != primes || commandWrites(sim) != writes {
			t.Errorf("%q: parameters were read or written for a devid no object lists", args)
		}
	}
}

// A devid on an object whose list is whole is found even while another
// object's list is unusable; one that no readable list holds is not taken
// for a typo: the unreadable list is the error (exit 1).
func TestDevidsWithAnObjectsListUnusable(t *testing.T) {
	sim, home, cottage := startTwoObjects(t)
	front := moduleListFront(t, sim, home.ID, `{"weird":true}`)
	c := cottage.Devids[0]
	code, out, errOut := runArgs(t, objectArgs(front, "set", c, "P6.v20=56")...)
	if code != exitOK || sim.Params(c)["P6.v20"] != 56.0 {
		t.Fatalf("set %s with the other object's list unusable: code=%d stderr=%q out=%q", c, code, errOut, out)
	}
	for _, args := range [][]string{{"set", home.Devids[0], "P6.v1=66"}, {"catalog", "NOSUCHDEV"}, {"modules"}} {
		code, _, errOut := runArgs(t, objectArgs(front, args[0], args[1:]...)...)
		if code != exitRuntime || !strings.Contains(errOut, "the module list of object "+strconv.Itoa(home.ID)+" has an unknown shape") {
			t.Errorf("%q: code=%d stderr=%q, want exit 1 naming object %d's list", args, code, errOut, home.ID)
		}
		oneLine(t, errOut)
	}
}

// watch runs a session for each object, each bound to its own object's
// modules, and prints the live changes of both; the text of a session's
// events names its object. With --cloud.modules it runs only the objects
// holding them.
func TestWatchRunsASessionPerObject(t *testing.T) {
	sim, home, cottage := startTwoObjects(t)
	h, c := home.Devids[0], cottage.Devids[0]
	w := startWatch(t, toolArgs(sim, "watch", "--poll.interval=50ms", "--filter=P4.v8", "--catalog.disable")...)
	var homeSID, cottageSID string
	w.waitFor("a session bound to each object", func() bool {
		homeSID, cottageSID = boundSession(sim, h, ""), boundSession(sim, c, "")
		return homeSID != "" && cottageSID != ""
	})
	for _, s := range sim.Sessions() {
		if s.SID == homeSID && slices.Contains(s.Bound, c) || s.SID == cottageSID && slices.Contains(s.Bound, h) {
			t.Fatalf("a session is bound to another object's module: %+v", s)
		}
	}
	if homeSID == cottageSID {
		t.Fatal("one session serves both objects")
	}
	w.waitLine("# object " + strconv.Itoa(home.ID) + " Home: session up")
	w.waitLine("# object " + strconv.Itoa(cottage.ID) + " Cottage: session up")
	w.waitLine("# ready: object " + strconv.Itoa(cottage.ID) + ", modules [" + c + "], 400 parameters primed")
	sim.SetParam(h, "P4.v8", 21.5)
	sim.SetParam(c, "P4.v8", 22.5)
	w.waitLine(h + " P4.v8 = 21.5 (live)")
	w.waitLine(c + " P4.v8 = 22.5 (live)")
	if sim.Logins() != 1 {
		t.Errorf("%d logins for two sessions, want one", sim.Logins())
	}
	w.cancel()
	<-w.done
	if w.code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", w.code, w.errOut.String())
	}

	w = startWatch(t, toolArgs(sim, "watch", "--cloud.modules="+c, "--catalog.disable", "-o", "json")...)
	w.waitFor("the Cottage's session up", func() bool {
		return strings.Contains(w.out.String(), `"event":"session_up","object_id":`+strconv.Itoa(cottage.ID)+`}`)
	})
	var bound []string
	for _, s := range sim.Sessions() {
		if s.Connected {
			bound = append(bound, s.Bound...)
		}
	}
	if !slices.Equal(bound, []string{c}) {
		t.Errorf("connected sessions are bound to %v, want %s alone", bound, c)
	}
	if strings.Contains(w.out.String(), `"object_id":`+strconv.Itoa(home.ID)) {
		t.Errorf("watch --cloud.modules=%s ran the other object:\n%s", c, w.out.String())
	}
}
