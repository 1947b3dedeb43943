package cloudsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// The demo world of `simulate` and `serve --simulate` (seed 1, three modules
// of 800 parameters, DemoObjects): the boiler and its neighbour at "Home",
// the third module at "Cottage"; the first object is the one-object world's.
func TestDemoObjects(t *testing.T) {
	one := New(Options{Seed: DefaultSeed})
	two := New(Options{Seed: DefaultSeed, Objects: DemoObjects})
	defer one.Close()
	defer two.Close()
	if !reflect.DeepEqual(one.Devids(), two.Devids()) || one.ObjectID() != two.ObjectID() {
		t.Fatalf("objects changed the world: devids %v / %v, first object %d / %d", one.Devids(), two.Devids(), one.ObjectID(), two.ObjectID())
	}
	if got := one.Objects(); len(got) != 1 || got[0].ID != one.ObjectID() || got[0].Name != "Home" || !reflect.DeepEqual(got[0].Devids, sorted(one.Devids())) {
		t.Fatalf("one object = %+v, want Home with every module", got)
	}
	want := []ObjectInfo{
		{ID: two.ObjectID(), Name: "Home", Devids: []string{"RDXEQRXNOP", "RHFTDIXKIY"}},
		{ID: two.Objects()[1].ID, Name: "Cottage", Devids: []string{"YSKRFJZEUQ"}},
	}
	if got := two.Objects(); !reflect.DeepEqual(got, want) || got[1].ID == got[0].ID || got[1].ID <= 0 {
		t.Fatalf("demo objects = %+v, want %+v", got, want)
	}
	for _, o := range want {
		for _, d := range o.Devids {
			if got := two.ObjectOf(d); got != o.ID {
				t.Errorf("ObjectOf(%s) = %d, want %d", d, got, o.ID)
			}
		}
	}
	if got := two.ObjectOf("NOSUCHDEVI"); got != 0 {
		t.Errorf("ObjectOf(unknown) = %d, want 0", got)
	}
}

// The modules are split over the objects in devid order, contiguous runs,
// the first objects taking the remainder; ids and names are unique and
// follow from the seed; more objects than modules are as many as modules.
func TestObjectsSplitTheModules(t *testing.T) {
	for _, tc := range []struct{ modules, objects, wantObjects int }{
		{100, 50, 50}, {7, 3, 3}, {3, 2, 2}, {5, 1, 1}, {2, 5, 2}, {4, 0, 1},
	} {
		t.Run(fmt.Sprintf("%d over %d", tc.modules, tc.objects), func(t *testing.T) {
			c := New(Options{Seed: 3, Modules: tc.modules, Objects: tc.objects, ParamsPerModule: 5})
			defer c.Close()
			objs := c.Objects()
			if len(objs) != tc.wantObjects {
				t.Fatalf("%d objects, want %d", len(objs), tc.wantObjects)
			}
			next := 0
			ids, names := map[int]bool{}, map[string]bool{}
			for i, o := range objs {
				want := tc.modules / tc.wantObjects
				if i < tc.modules%tc.wantObjects {
					want++
				}
				// A contiguous run of the modules in devid order, listed sorted.
				if run := sorted(c.Devids()[next : next+want]); !reflect.DeepEqual(o.Devids, run) {
					t.Errorf("object %d (%s) has modules %v, want %v", i, o.Name, o.Devids, run)
				}
				next += want
				if ids[o.ID] || names[o.Name] || o.Name == "" || o.ID <= 0 || o.Hidden {
					t.Errorf("object %d = %+v: id or name repeated or empty, or hidden", i, o)
				}
				ids[o.ID], names[o.Name] = true, true
			}
			if next != tc.modules {
				t.Fatalf("objects hold %d modules, want %d", next, tc.modules)
			}
			if objs[0].ID != c.ObjectID() || objs[0].Name != "Home" || (len(objs) > 1 && objs[1].Name != "Cottage") {
				t.Fatalf("first objects = %+v", objs[:min(2, len(objs))])
			}
			again := New(Options{Seed: 3, Modules: tc.modules, Objects: tc.objects, ParamsPerModule: 5})
			defer again.Close()
			if !reflect.DeepEqual(again.Objects(), objs) {
				t.Fatal("same seed, different objects")
			}
		})
	}
	a := New(Options{Seed: 3, Modules: 8, Objects: 8, ParamsPerModule: 5})
	b := New(Options{Seed: 4, Modules: 8, Objects: 8, ParamsPerModule: 5})
	defer a.Close()
	defer b.Close()
	same := 0
	for i, o := range a.Objects()[2:] {
		if o.Name == b.Objects()[i+2].Name && o.ID == b.Objects()[i+2].ID {
			same++
		}
	}
	if same == 6 {
		t.Fatal("another seed gave the same generated objects")
	}
}

// objectIDs returns the ids of the object records of a list answer.
func objectIDs(t *testing.T, r resp, key string) []int {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("object list = %d %s", r.status, r.body)
	}
	list, _ := r.json(t)[key].([]any)
	var ids []int
	for _, o := range list {
		rec := o.(map[string]any)
		if rec["name"] == nil || rec["addressCountry"] != "PL" {
			t.Fatalf("object record %v lacks a required field", rec)
		}
		ids = append(ids, int(rec["id"].(float64)))
	}
	return ids
}

// rowDevids lists the devids of a module listing.
func rowDevids(t *testing.T, c *Cloud, tok, query string) []string {
	t.Helper()
	r := call(t, c, "GET", "/v1/modules"+query, tok, nil)
	if r.status != 200 {
		t.Fatalf("GET /v1/modules%s = %d %s", query, r.status, r.body)
	}
	var out []string
	for _, row := range r.json(t)["data"].([]any) {
		out = append(out, row.(map[string]any)["devid"].(string))
	}
	return out
}

func groupQuery(id int) string { return "?page=1&limit=999&group_id=" + strconv.Itoa(id) }

// Every object is listed (login and GET /v1/objects), has its own details and
// its own module listing; no group_id lists the account's modules.
func TestObjectsOverREST(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, Objects: 2})
	home, cottage := c.Objects()[0], c.Objects()[1]
	r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": DefaultPassword})
	if got := objectIDs(t, r, "objects"); !reflect.DeepEqual(got, []int{home.ID, cottage.ID}) {
		t.Fatalf("login objects = %v", got)
	}
	tok := r.json(t)["accessToken"].(string)
	if got := objectIDs(t, call(t, c, "GET", "/v1/objects", tok, nil), "objects"); !reflect.DeepEqual(got, []int{home.ID, cottage.ID}) {
		t.Fatalf("GET /v1/objects = %v", got)
	}
	for _, o := range []ObjectInfo{home, cottage} {
		if got := sorted(rowDevids(t, c, tok, groupQuery(o.ID))); !reflect.DeepEqual(got, o.Devids) {
			t.Errorf("listing of %s = %v, want %v", o.Name, got, o.Devids)
		}
		obj := call(t, c, "GET", "/v1/objects/"+strconv.Itoa(o.ID), tok, nil).json(t)
		if rec := obj["object"].(map[string]any); rec["id"] != float64(o.ID) || rec["name"] != o.Name || obj["status"] != "SUCCESS" {
			t.Errorf("object %s = %v", o.Name, obj)
		}
		if r := call(t, c, "GET", "/v1/objects/"+strconv.Itoa(o.ID)+"/permissions", tok, nil); r.status != 200 {
			t.Errorf("permissions of %s = %d", o.Name, r.status)
		}
	}
	if got := rowDevids(t, c, tok, "?page=1&limit=999"); !reflect.DeepEqual(got, c.Devids()) {
		t.Errorf("listing without group_id = %v, want every module", got)
	}
	// An object's status is its own modules'.
	c.SetModuleOnline(cottage.Devids[0], false)
	if st := call(t, c, "GET", "/v1/objects/"+strconv.Itoa(cottage.ID), tok, nil).json(t)["status"]; st != "OFFLINE" {
		t.Errorf("cottage with its module offline = %v", st)
	}
	if st := call(t, c, "GET", "/v1/objects/"+strconv.Itoa(home.ID), tok, nil).json(t)["status"]; st != "SUCCESS" {
		t.Errorf("home with the cottage's module offline = %v", st)
	}
	// An unnamed missing_row drops the first row of the listing it hits.
	c.Inject(Fault{Kind: FaultMissingRow, Count: 1})
	if got := rowDevids(t, c, tok, groupQuery(cottage.ID)); len(got) != 0 {
		t.Errorf("cottage listing with a missing_row = %v, want its one row gone", got)
	}
}

// refusedModules are the calls that name modules, each with one devid.
var refusedModules = []struct {
	method, path string
	body         func(devid string) any
}{
	{"POST", "/v1/modules/parameters", func(d string) any { return map[string]any{"modules": []string{d}} }},
	{"POST", "/v1/modules/activity/quantity", func(d string) any { return map[string]any{"modules": []string{d}} }},
	{"POST", "/v1/modules/alarms/quantity", func(d string) any { return map[string]any{"modules": []string{d}} }},
	{"POST", "/v1/modules/activity", func(d string) any { return map[string]any{"modules": []string{d}} }},
	{"POST", "/v1/modules/alarms", func(d string) any { return map[string]any{"modules": []string{d}} }},
	{"POST", "/v1/modules/alarms/history", func(d string) any { return map[string]any{"modules": []string{d}} }},
	{"GET", "/v1/modules/{devid}/card", func(string) any { return nil }},
	{"POST", "/v1/module/command", func(d string) any {
		return map[string]any{"devid": d, "pool": "P4", "parameter": "v1", "value": 1}
	}},
	{"POST", "/v1/module/command/raw", func(d string) any { return map[string]any{"devid": d, "command": "MODULE_RESTART"} }},
	{"POST", "/v1/modules/connect", func(d string) any { return map[string]any{"wsid": "any", "modules": []string{d}} }},
}

// A hidden object is gone from the account: absent from the lists, 404 for
// the object and its listing, every call naming one of its modules refused,
// its sessions' bindings dropped; the other object is untouched. Shown
// again, it is back, and a session that binds it receives its events.
func TestHideAndShowObject(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, Objects: 2})
	tok := login(t, c)
	home, cottage := c.Objects()[0], c.Objects()[1]
	hd, cd := home.Devids[0], cottage.Devids[0]
	a := connected(t, c, tok)
	b := connected(t, c, tok)
	bind(t, c, tok, "wsid", a.SID(), home.Devids)
	bind(t, c, tok, "wsid", b.SID(), cottage.Devids)

	if err := c.HideObject(cottage.ID); err != nil {
		t.Fatal(err)
	}
	if got := c.Objects()[1]; !got.Hidden || c.Objects()[0].Hidden {
		t.Fatalf("objects after hiding the cottage = %+v", c.Objects())
	}
	r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": DefaultPassword})
	if got := objectIDs(t, r, "objects"); !reflect.DeepEqual(got, []int{home.ID}) {
		t.Fatalf("login objects with the cottage hidden = %v", got)
	}
	if got := objectIDs(t, call(t, c, "GET", "/v1/objects", tok, nil), "objects"); !reflect.DeepEqual(got, []int{home.ID}) {
		t.Fatalf("GET /v1/objects with the cottage hidden = %v", got)
	}
	for _, path := range []string{"/v1/objects/" + strconv.Itoa(cottage.ID), "/v1/objects/" + strconv.Itoa(cottage.ID) + "/permissions", "/v1/modules" + groupQuery(cottage.ID)} {
		if r := call(t, c, "GET", path, tok, nil); r.status != 404 || string(r.body) != `{"message":"Object not found"}` {
			t.Errorf("GET %s of a hidden object = %d %s, want 404 Object not found", path, r.status, r.body)
		}
	}
	if got := sorted(rowDevids(t, c, tok, "?page=1&limit=999")); !reflect.DeepEqual(got, home.Devids) {
		t.Errorf("account listing with the cottage hidden = %v, want home's %v", got, home.Devids)
	}
	for _, call1 := range refusedModules {
		path := strings.ReplaceAll(call1.path, "{devid}", cd)
		if r := call(t, c, call1.method, path, tok, call1.body(cd)); r.status != 404 || string(r.body) != `{"message":"Module not found"}` {
			t.Errorf("%s %s for a hidden object's module = %d %s, want 404 Module not found", call1.method, path, r.status, r.body)
		}
		path = strings.ReplaceAll(call1.path, "{devid}", hd)
		if r := call(t, c, call1.method, path, tok, call1.body(hd)); r.status != 200 {
			t.Errorf("%s %s for a visible module = %d %s", call1.method, path, r.status, r.body)
		}
	}
	if r := call(t, c, "POST", "/v1/modules/connect", tok, map[string]any{"wsid": b.SID(), "group_id": strconv.Itoa(cottage.ID), "modules": []string{}}); r.status != 404 {
		t.Errorf("connect to a hidden group_id = %d %s, want 404", r.status, r.body)
	}
	if s, _ := sessionBySID(c, b.SID()); len(s.Bound) != 0 || s.ObjectID != 0 || !s.Connected {
		t.Fatalf("cottage session after the hide = %+v, want connected and bound to nothing", s)
	}
	if s, _ := sessionBySID(c, a.SID()); !reflect.DeepEqual(s.Bound, home.Devids) {
		t.Fatalf("home session after the hide = %v, want %v", s.Bound, home.Devids)
	}
	c.SetParam(cd, "P4.v1", 1.5) // must reach nobody
	c.EmitAlarmsQuantity(cd, 4)
	c.SetParam(hd, "P4.v1", 2.5)
	if ev := a.next(cloudapi.WireParamsChange); ev.payload[hd] == nil {
		t.Fatalf("home session got %s", mustJSON(ev.payload))
	}

	// Back: listed, answered, and a fresh bind gets the events again.
	if r := call(t, c, "POST", "/control/objects/"+strconv.Itoa(cottage.ID)+"/show", "", nil); r.status != 200 {
		t.Fatalf("control show = %d %s", r.status, r.body)
	}
	if got := objectIDs(t, call(t, c, "GET", "/v1/objects", tok, nil), "objects"); !reflect.DeepEqual(got, []int{home.ID, cottage.ID}) {
		t.Fatalf("GET /v1/objects after the show = %v", got)
	}
	if got := sorted(rowDevids(t, c, tok, groupQuery(cottage.ID))); !reflect.DeepEqual(got, cottage.Devids) {
		t.Fatalf("cottage listing after the show = %v", got)
	}
	bind(t, c, tok, "wsid", b.SID(), cottage.Devids)
	c.SetParam(cd, "P4.v1", 3.5)
	if ev := b.nextAny(); paramValue(ev.payload, cd, "P4", "v1") != 3.5 {
		t.Fatalf("first cottage event after the show = %q %s, want the 3.5 (an event of the hidden time leaked)", ev.name, mustJSON(ev.payload))
	}

	// The control endpoint hides too, and names unknown objects.
	if r := call(t, c, "POST", "/control/objects/"+strconv.Itoa(cottage.ID)+"/hide", "", nil); r.status != 200 || !c.Objects()[1].Hidden {
		t.Fatalf("control hide = %d %s, hidden %v", r.status, r.body, c.Objects()[1].Hidden)
	}
	for path, want := range map[string]int{"/control/objects/1/hide": 404, "/control/objects/1/show": 404, "/control/objects/x/hide": 400, "/control/objects/" + strconv.Itoa(home.ID) + "/delete": 404} {
		if r := call(t, c, "POST", path, "", nil); r.status != want {
			t.Errorf("POST %s = %d %s, want %d", path, r.status, r.body, want)
		}
	}
	var oe *ObjectError
	if err := c.HideObject(1); !errors.As(err, &oe) || oe.ID != 1 {
		t.Errorf("HideObject(1) = %v, want an *ObjectError", err)
	}
	if err := c.ShowObject(1); !errors.As(err, &oe) {
		t.Errorf("ShowObject(1) = %v, want an *ObjectError", err)
	}
}

// paramValue digs one value out of a parameters:change payload; nil when
// it is not there.
func paramValue(payload map[string]any, devid, pool, key string) any {
	pools, _ := payload[devid].(map[string]any)
	entries, _ := pools[pool].(map[string]any)
	body, _ := entries[key].(map[string]any)
	return body["value"]
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// modules/connect binds the modules of one object to a session: the
// group_id's when given, refusing any other; a session bound to one object
// is not bound to another; each session receives only its object's events.
func TestModulesConnectBindsOneObject(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, Objects: 2})
	tok := login(t, c)
	home, cottage := c.Objects()[0], c.Objects()[1]
	hd, cd := home.Devids[0], cottage.Devids[0]
	a := connected(t, c, tok)
	b := connected(t, c, tok)
	connect := func(body map[string]any) resp {
		return call(t, c, "POST", "/v1/modules/connect", tok, body)
	}
	for name, tc := range map[string]struct {
		body map[string]any
		want int
	}{
		"another object's devid":  {map[string]any{"wsid": a.SID(), "group_id": strconv.Itoa(home.ID), "modules": []string{hd, cd}}, 400},
		"unknown devid and group": {map[string]any{"wsid": a.SID(), "group_id": strconv.Itoa(home.ID), "modules": []string{hd, "NOSUCHDEVI"}}, 400},
		"two objects, no group":   {map[string]any{"wsid": a.SID(), "modules": []string{hd, cd}}, 400},
		"unknown group":           {map[string]any{"wsid": a.SID(), "group_id": "1", "modules": []string{}}, 404},
		"group not a number":      {map[string]any{"wsid": a.SID(), "group_id": "home", "modules": []string{hd}}, 400},
		"group a fraction":        {map[string]any{"wsid": a.SID(), "group_id": 1.5, "modules": []string{hd}}, 400},
	} {
		if r := connect(tc.body); r.status != tc.want {
			t.Errorf("%s: connect = %d %s, want %d", name, r.status, r.body, tc.want)
		}
	}
	if s, _ := sessionBySID(c, a.SID()); len(s.Bound) != 0 {
		t.Fatalf("refused connects bound %v", s.Bound)
	}
	// The group_id as the reference client sends it (a string), and as a number.
	if r := connect(map[string]any{"wsid": a.SID(), "group_id": strconv.Itoa(home.ID), "modules": home.Devids}); r.status != 200 {
		t.Fatalf("home connect = %d %s", r.status, r.body)
	}
	if r := connect(map[string]any{"sid": b.SID(), "group_id": cottage.ID, "modules": cottage.Devids}); r.status != 200 {
		t.Fatalf("cottage connect = %d %s", r.status, r.body)
	}
	if r := connect(map[string]any{"wsid": a.SID(), "modules": cottage.Devids}); r.status != 409 {
		t.Fatalf("binding a home session to the cottage = %d %s, want 409", r.status, r.body)
	}
	// Without group_id an unknown devid is ignored, as it always was.
	if r := connect(map[string]any{"wsid": a.SID(), "modules": []string{hd, "NOSUCHDEVI"}}); r.status != 200 {
		t.Fatalf("connect with an unknown devid and no group_id = %d %s", r.status, r.body)
	}
	sa, _ := sessionBySID(c, a.SID())
	sb, _ := sessionBySID(c, b.SID())
	if !reflect.DeepEqual(sa.Bound, home.Devids) || sa.ObjectID != home.ID || !reflect.DeepEqual(sb.Bound, cottage.Devids) || sb.ObjectID != cottage.ID {
		t.Fatalf("sessions: a bound %v to %d, b bound %v to %d", sa.Bound, sa.ObjectID, sb.Bound, sb.ObjectID)
	}

	// Each session gets its own object's events: parameters, drift,
	// connection status, event 22, alarms. A leak would arrive before the
	// marker each session waits for (one connection keeps its order).
	c.SetParam(cd, "P4.v1", 1.0)
	c.EmitAlarmsQuantity(cd, 2)
	c.EmitMemoryUpdated(cd)
	c.SetModuleOnline(cd, false)
	c.Drift() // only the home modules are online now
	c.SetParam(hd, "P4.v1", 9.0)
	for {
		ev := a.nextAny()
		if strings.Contains(mustJSON(ev.payload), cd) {
			t.Fatalf("home session got a cottage event %q: %s", ev.name, mustJSON(ev.payload))
		}
		if paramValue(ev.payload, hd, "P4", "v1") == 9.0 {
			break
		}
	}
	var names []string
	for range 4 {
		ev := b.nextAny()
		if len(ev.payload) != 1 || !strings.Contains(mustJSON(ev.payload), cd) {
			t.Fatalf("cottage session got %q %s", ev.name, mustJSON(ev.payload))
		}
		names = append(names, ev.name)
	}
	if want := []string{cloudapi.WireParamsChange, cloudapi.WireAlarmsQuantity, "22", cloudapi.WireConnectionStatus}; !reflect.DeepEqual(names, want) {
		t.Fatalf("cottage session's events = %v, want %v", names, want)
	}
	c.SetParam(cd, "P4.v1", 2.0)
	if ev := b.nextAny(); ev.payload[cd] == nil {
		t.Fatalf("cottage session got %q %s, want its own parameter change (home's leaked)", ev.name, mustJSON(ev.payload))
	}
}

// A session records the group_ids its listen emits carry.
func TestListenEmitsCarryTheObject(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, Objects: 2})
	tok := login(t, c)
	cottage := c.Objects()[1]
	a := connected(t, c, tok)
	_ = a.sock.Emit("app:modules:parameters:listen", map[string]any{"modules": cottage.Devids, "group_id": cottage.ID})
	_ = a.sock.Emit("app:modules:parameters:listen", map[string]any{"devids": cottage.Devids, "group_id": cottage.ID})
	_ = a.sock.Emit("app:modules:activity:quantity:listen", map[string]any{"modules": cottage.Devids, "group_id": strconv.Itoa(c.ObjectID())})
	_ = a.sock.Emit("app:other", map[string]any{"group_id": 77})
	eventually(t, "the emits to be recorded", func() bool { s, _ := sessionBySID(c, a.SID()); return len(s.Emits) == 4 })
	if s, _ := sessionBySID(c, a.SID()); !reflect.DeepEqual(s.ListenGroups, []int{cottage.ID, c.ObjectID()}) {
		t.Fatalf("listen groups = %v, want [%d %d] (each once, listen emits only)", s.ListenGroups, cottage.ID, c.ObjectID())
	}
}

// Faults narrowed to an object: a mute swallows only its modules' pushes, a
// close drops only the sessions bound to it.
func TestObjectFaults(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, Objects: 2})
	tok := login(t, c)
	home, cottage := c.Objects()[0], c.Objects()[1]
	hd, cd := home.Devids[0], cottage.Devids[0]
	a := connected(t, c, tok)
	b := connected(t, c, tok)
	bind(t, c, tok, "wsid", a.SID(), home.Devids)
	bind(t, c, tok, "wsid", b.SID(), cottage.Devids)

	r := call(t, c, "POST", "/control/faults", "", map[string]any{"kind": "mute_pushes", "object_id": cottage.ID})
	if r.status != 200 {
		t.Fatalf("inject = %d %s", r.status, r.body)
	}
	c.SetParam(cd, "P4.v1", 1.0)
	c.SetParam(hd, "P4.v1", 2.0)
	if ev := a.next(cloudapi.WireParamsChange); ev.payload[hd] == nil {
		t.Fatalf("home push under a cottage mute = %s", mustJSON(ev.payload))
	}
	c.ClearAll()
	c.SetParam(cd, "P4.v1", 3.0)
	ev := b.nextAny()
	if got := paramValue(ev.payload, cd, "P4", "v1"); got != 3.0 {
		t.Fatalf("first cottage push after the mute = %v, want 3 (the muted one leaked)", got)
	}

	c.Inject(Fault{Kind: FaultCloseTransport, ObjectID: home.ID})
	select {
	case <-a.discs:
	case <-b.discs:
		t.Fatal("a close of home's sessions dropped the cottage's")
	case <-time.After(10 * time.Second):
		t.Fatal("close_transport for home dropped nothing")
	}
	if s, _ := sessionBySID(c, b.SID()); !s.Connected {
		t.Fatal("cottage session closed")
	}
	c.SetParam(cd, "P4.v1", 4.0)
	if ev := b.next(cloudapi.WireParamsChange); ev.payload[cd] == nil {
		t.Fatalf("cottage session after home's close = %s", mustJSON(ev.payload))
	}

	for name, f := range map[string]Fault{
		"object on a REST fault": {Kind: FaultHTTPStatus, ObjectID: home.ID},
		"object and devid":       {Kind: FaultMutePushes, ObjectID: home.ID, Devid: hd},
		"unknown object":         {Kind: FaultMutePushes, ObjectID: 1},
		"negative object":        {Kind: FaultCloseTransport, ObjectID: -1},
	} {
		var fe *FaultError
		if _, err := c.InjectFault(f); !errors.As(err, &fe) {
			t.Errorf("%s: InjectFault = %v, want a *FaultError", name, err)
		}
	}
}

// Logins counts successful login answers only; the login_dup_entry fault
// answers the next login with ER_DUP_ENTRY once.
func TestLoginsCounted(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, Objects: 2})
	if c.Logins() != 0 {
		t.Fatalf("Logins before any = %d", c.Logins())
	}
	login(t, c)
	if r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": "wrong"}); r.status != 401 {
		t.Fatalf("bad password = %d", r.status)
	}
	c.Inject(Fault{Kind: FaultLoginDupEntry, Count: 1})
	r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": DefaultPassword})
	if r.status != http.StatusInternalServerError || !strings.Contains(string(r.body), "ER_DUP_ENTRY") {
		t.Fatalf("login under login_dup_entry = %d %s", r.status, r.body)
	}
	if got := c.Logins(); got != 1 {
		t.Fatalf("Logins = %d, want 1 (refused and faulted logins do not count)", got)
	}
	login(t, c)
	var st State
	if err := json.Unmarshal(call(t, c, "GET", "/control/state", "", nil).body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Logins != 2 || c.Logins() != 2 {
		t.Fatalf("logins: state %d, Logins %d, want 2", st.Logins, c.Logins())
	}
	if !reflect.DeepEqual(st.Objects, c.Objects()) || len(st.Objects) != 2 || st.ObjectID != c.ObjectID() {
		t.Fatalf("state objects = %+v, want %+v", st.Objects, c.Objects())
	}
	for _, m := range st.Modules {
		if m.ObjectID != c.ObjectOf(m.Devid) {
			t.Fatalf("state module %s in object %d, want %d", m.Devid, m.ObjectID, c.ObjectOf(m.Devid))
		}
	}
}
