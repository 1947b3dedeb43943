package cloudclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/wire"
)

// connectCloud answers modules/connect with status(body) per request.
func connectCloud(t *testing.T, status func(body map[string]any) int) *fakeCloud {
	fc := newFakeCloud(t)
	fc.handle("POST /v1/modules/connect", func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		w.Header().Set("Content-Type", "application/json")
		st := status(b)
		w.WriteHeader(st)
		if st == 201 {
			io.WriteString(w, `{"message":"accepted-not-bound"}`)
		} else if st != 204 {
			io.WriteString(w, `{}`)
		}
	})
	return fc
}

func connectBodies(t *testing.T, fc *fakeCloud) []map[string]any {
	var out []map[string]any
	for _, s := range fc.seenFor("POST /v1/modules/connect") {
		out = append(out, s.json(t))
	}
	return out
}

func TestModulesConnectCandidateOrder(t *testing.T) {
	fc := connectCloud(t, func(map[string]any) int { return 201 })
	c, _ := newClient(t, fc)
	bound, err := c.ModulesConnect(ctxT(t), cloudclient.BindRequest{NamespaceSID: "NS", EngineSID: "EN", Modules: []string{"D2", "D1", "D2"}, GroupID: 42})
	if err != nil || bound {
		t.Fatalf("bound %v err %v; want false, nil when every candidate is accepted-not-bound", bound, err)
	}
	mods := []any{"D1", "D2"}
	want := []map[string]any{
		{"wsid": "NS", "modules": mods},
		{"sid": "NS", "modules": mods},
		{"wsid": "NS", "group_id": "42", "modules": mods},
	}
	// The Engine SID is never posted while a namespace SID is known: the
	// spec has modules/connect always carry the current namespace SID.
	if got := connectBodies(t, fc); !reflect.DeepEqual(got, want) {
		t.Fatalf("bodies\n got %v\nwant %v", got, want)
	}
}

func TestModulesConnectEngineSIDOnlyWithoutNamespaceSID(t *testing.T) {
	fc := connectCloud(t, func(map[string]any) int { return 201 })
	c, _ := newClient(t, fc)
	if _, err := c.ModulesConnect(ctxT(t), cloudclient.BindRequest{EngineSID: "EN", Modules: []string{"D1"}}); err != nil {
		t.Fatal(err)
	}
	mods := []any{"D1"}
	want := []map[string]any{{"wsid": "EN", "modules": mods}, {"sid": "EN", "modules": mods}}
	if got := connectBodies(t, fc); !reflect.DeepEqual(got, want) {
		t.Fatalf("bodies\n got %v\nwant %v", got, want)
	}
}

func TestModulesConnectRemembersShapeNotSID(t *testing.T) {
	// This cloud binds only the sid shape.
	fc := connectCloud(t, func(b map[string]any) int {
		if _, ok := b["sid"]; ok {
			return 200
		}
		return 201
	})
	c, _ := newClient(t, fc)
	ctx := ctxT(t)
	bound, err := c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "OLD", Modules: []string{"D1"}, GroupID: 1})
	if err != nil || !bound {
		t.Fatalf("first bind: %v %v", bound, err)
	}
	// After a reconnect, the new SID is posted first in the shape that worked.
	bound, err = c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "NEW", EngineSID: "ENG", Modules: []string{"D1"}, GroupID: 1})
	if err != nil || !bound {
		t.Fatalf("second bind: %v %v", bound, err)
	}
	got := connectBodies(t, fc)
	want := []map[string]any{
		{"wsid": "OLD", "modules": []any{"D1"}},
		{"sid": "OLD", "modules": []any{"D1"}},
		{"sid": "NEW", "modules": []any{"D1"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("bodies\n got %v\nwant %v", got, want)
	}
}

func TestModulesConnectRememberedGroupShape(t *testing.T) {
	fc := connectCloud(t, func(b map[string]any) int {
		if _, ok := b["group_id"]; ok {
			return 204
		}
		return 201
	})
	c, _ := newClient(t, fc)
	ctx := ctxT(t)
	if bound, err := c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "A", Modules: []string{"D1"}, GroupID: 9}); !bound || err != nil {
		t.Fatalf("%v %v", bound, err)
	}
	if bound, err := c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "B", Modules: []string{"D1"}, GroupID: 9}); !bound || err != nil {
		t.Fatalf("%v %v", bound, err)
	}
	got := connectBodies(t, fc)
	if len(got) != 4 || !reflect.DeepEqual(got[3], map[string]any{"wsid": "B", "group_id": "9", "modules": []any{"D1"}}) {
		t.Fatalf("bodies %v", got)
	}
}

func TestModulesConnectErrorsAbort(t *testing.T) {
	for _, st := range []int{400, 404, 503} {
		fc := connectCloud(t, func(map[string]any) int { return st })
		c, _ := newClient(t, fc)
		bound, err := c.ModulesConnect(ctxT(t), cloudclient.BindRequest{NamespaceSID: "NS", EngineSID: "EN", Modules: []string{"D1"}, GroupID: 1})
		var ae *cloudclient.APIError
		if bound || !errors.As(err, &ae) || ae.Status != st {
			t.Fatalf("status %d: bound %v err %v", st, bound, err)
		}
		if n := len(connectBodies(t, fc)); n != 1 {
			t.Fatalf("status %d: %d requests, want the chain aborted after 1", st, n)
		}
	}
}

func TestModulesConnectEmptyAndMissingSID(t *testing.T) {
	fc := connectCloud(t, func(map[string]any) int { return 200 })
	c, _ := newClient(t, fc)
	if bound, err := c.ModulesConnect(ctxT(t), cloudclient.BindRequest{NamespaceSID: "NS", Modules: []string{"", ""}}); !bound || err != nil {
		t.Fatalf("empty module list: %v %v", bound, err)
	}
	if _, err := c.ModulesConnect(ctxT(t), cloudclient.BindRequest{Modules: []string{"D1"}}); err == nil {
		t.Fatal("no SID accepted")
	}
	if fc.total() != 0 {
		t.Fatalf("%d requests made", fc.total())
	}
}

// primeExample is the prime example of docs/spec.md W-2.1a; its decoding is
// tested in wire/.
const primeExample = `{"FTTCTBSLCE":{"P4":{"v1":{"value":21.5,"storable":true,"updatedAt":1757000000},"s1":3,"u1":{"value":1}},
               "P5":{"s40":{"value":10}},
               "P6":{"u13":{"storable":1}}}}`

func TestPrime(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("POST /v1/modules/parameters", 200, primeExample)
	c, _ := newClient(t, fc)
	ups, err := c.Prime(ctxT(t), []string{"Z", "FTTCTBSLCE", "Z"})
	if err != nil || len(ups) != 5 || ups[0].Devid != "FTTCTBSLCE" {
		t.Fatalf("Prime = %v, %v", ups, err)
	}
	body := fc.seenFor("POST /v1/modules/parameters")[0].json(t)
	if !reflect.DeepEqual(body, map[string]any{"modules": []any{"FTTCTBSLCE", "Z"}}) {
		t.Fatalf("prime body %v", body)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		check  func(error) bool
	}{
		{"204 without body is not a snapshot", 204, ``, func(err error) bool { var de *cloudclient.DecodeError; return errors.As(err, &de) }},
		{"list body", 200, `[]`, func(err error) bool { var de *cloudclient.DecodeError; return errors.As(err, &de) }},
		{"malformed", 200, `{"D1":{`, func(err error) bool { var de *cloudclient.DecodeError; return errors.As(err, &de) }},
		{"201", 201, `{}`, func(err error) bool { var ae *cloudclient.APIError; return errors.As(err, &ae) && ae.Status == 201 }},
		{"408 dispatch timeout", 408, `{"status":"E_DISPATCH_EVENT_TIMEOUT","message":"upstream timeout"}`, cloudclient.IsExpectedUpstream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc.handleJSON("POST /v1/modules/parameters", tc.status, tc.body)
			if ups, err := c.Prime(ctxT(t), []string{"D1"}); ups != nil || !tc.check(err) {
				t.Fatalf("Prime = %v, %v", ups, err)
			}
		})
	}
}

func TestPrimeWithRetry(t *testing.T) {
	for _, tc := range []struct {
		name      string
		failures  int
		backoff   []time.Duration
		wantOK    bool
		wantSleep []time.Duration
	}{
		{"succeeds on the 4th attempt", 3, nil, true, []time.Duration{200 * time.Millisecond, 500 * time.Millisecond, 800 * time.Millisecond}},
		{"succeeds at once", 0, nil, true, nil},
		{"gives up after the schedule", 99, nil, false, []time.Duration{200 * time.Millisecond, 500 * time.Millisecond, 800 * time.Millisecond}},
		{"custom schedule", 99, []time.Duration{time.Second}, false, []time.Duration{time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			var mu sync.Mutex
			n := 0
			fc.handle("POST /v1/modules/parameters", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n++
				fail := n <= tc.failures
				last := n
				mu.Unlock()
				if fail {
					w.WriteHeader(503)
					io.WriteString(w, "<html>attempt "+string(rune('0'+last%10))+"</html>")
					return
				}
				io.WriteString(w, `{"D1":{"P4":{"v1":1}}}`)
			})
			c, sl := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.PrimeBackoff = tc.backoff })
			ups, err := c.PrimeWithRetry(ctxT(t), []string{"D1"})
			if tc.wantOK != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if tc.wantOK && len(ups) != 1 {
				t.Fatalf("updates %v", ups)
			}
			var ae *cloudclient.APIError
			if !tc.wantOK && (!errors.As(err, &ae) || ae.Status != 503 || ae.Data != "<html>attempt "+string(rune('0'+(len(tc.wantSleep)+1)%10))+"</html>") {
				t.Fatalf("want the last error, got %#v", err)
			}
			if got := sl.got(); !reflect.DeepEqual(got, tc.wantSleep) {
				t.Fatalf("sleeps %v, want %v", got, tc.wantSleep)
			}
		})
	}
}

func TestPrimeWithRetryStopsOnCancel(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("POST /v1/modules/parameters", 503, `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
		cfg.Sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	})
	if _, err := c.PrimeWithRetry(ctx, []string{"D1"}); err == nil {
		t.Fatal("no error")
	}
	if n := len(fc.seenFor("POST /v1/modules/parameters")); n != 1 {
		t.Fatalf("%d attempts after cancel", n)
	}
}

func TestQuantities(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("POST /v1/modules/alarms/quantity", 200,
		`{"alarmsQuantity":{"I":2,"F":3.0,"S":"4","N":null,"B":true,"NEG":-1,"FR":1.5,"E":"","X":"abc","O":{},"Z":0}}`)
	fc.handleJSON("POST /v1/modules/activity/quantity", 200, `{"activityQuantity":{"D1":12}}`)
	c, _ := newClient(t, fc)
	ctx := ctxT(t)
	q, err := c.AlarmQuantity(ctx, []string{"I", "F"})
	want := map[string]int{"I": 2, "F": 3, "S": 4, "N": 0, "Z": 0}
	if err != nil || !reflect.DeepEqual(q, want) {
		t.Fatalf("AlarmQuantity = %v, %v; want %v", q, err, want)
	}
	if b := fc.seenFor("POST /v1/modules/alarms/quantity")[0].json(t); !reflect.DeepEqual(b, map[string]any{"modules": []any{"F", "I"}}) {
		t.Fatalf("body %v", b)
	}
	q, err = c.ActivityQuantity(ctx, []string{"D1"})
	if err != nil || !reflect.DeepEqual(q, map[string]int{"D1": 12}) {
		t.Fatalf("ActivityQuantity = %v, %v", q, err)
	}
	fc.handle("POST /v1/modules/activity/quantity", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	if q, err = c.ActivityQuantity(ctx, []string{"D1"}); err != nil || len(q) != 0 {
		t.Fatalf("204: %v %v", q, err)
	}
}

func TestActivityAndAlarmLists(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("POST /v1/modules/alarms", 200, `{"status":true,"alarms":[{"id":38,"devid":"D1","created_at":"2026-01-01","finished_at":null,"extra":1}]}`)
	fc.handleJSON("POST /v1/modules/alarms/history", 200, `{"status":true,"alarms":{"data":[{"id":38,"devid":"D1","finished_at":"2026-01-02"},{"id":2,"devid":"D1"}]}}`)
	fc.handleJSON("POST /v1/modules/activity", 200, `{"status":true,"activities":{"data":[
		{"id":1,"module":{"devid":"D1"},"name":"parameters.PARAM_1","unit":1,"value":{"value":21},"prevValue":20,"state":"success","created_at":"t","user":{"name":"Jan","id":3}},
		{"id":2,"devid":"D2","value":5,"user":"Ola"}]}}`)
	c, _ := newClient(t, fc)
	ctx := ctxT(t)
	a, err := c.Alarms(ctx, cloudclient.ListRequest{Modules: []string{"D1"}})
	if err != nil || len(a) != 1 || a[0].ID != 38 || a[0].Devid != "D1" || a[0].FinishedAt != "" || a[0].Raw["extra"] != 1.0 {
		t.Fatalf("Alarms = %+v, %v", a, err)
	}
	h, err := c.AlarmHistory(ctx, cloudclient.ListRequest{Modules: []string{"D1"}, Page: 2, Limit: 5})
	if err != nil || len(h) != 2 || h[0].FinishedAt != "2026-01-02" {
		t.Fatalf("AlarmHistory = %+v, %v", h, err)
	}
	act, err := c.Activity(ctx, cloudclient.ListRequest{Modules: []string{"D2", "D1"}})
	if err != nil || len(act) != 2 {
		t.Fatalf("Activity = %+v, %v", act, err)
	}
	if r := act[0]; r.Devid != "D1" || r.Value != 21.0 || r.PrevValue != 20.0 || r.User != "Jan" || r.Unit != 1 || r.State != "success" || r.Name != "parameters.PARAM_1" {
		t.Fatalf("activity row %+v", r)
	}
	if r := act[1]; r.Devid != "D2" || r.Value != 5.0 || r.User != "Ola" {
		t.Fatalf("activity row %+v", r)
	}
	if b := fc.seenFor("POST /v1/modules/alarms")[0].json(t); !reflect.DeepEqual(b, map[string]any{"modules": []any{"D1"}, "page": 1.0, "limit": 20.0}) {
		t.Fatalf("default list body %v", b)
	}
	if b := fc.seenFor("POST /v1/modules/alarms/history")[0].json(t); b["page"] != 2.0 || b["limit"] != 5.0 {
		t.Fatalf("list body %v", b)
	}
	if b := fc.seenFor("POST /v1/modules/activity")[0].json(t); !reflect.DeepEqual(b["modules"], []any{"D1", "D2"}) {
		t.Fatalf("activity body %v", b)
	}
	fc.handleJSON("POST /v1/modules/activity", 200, `{"activities":[{"id":9,"devid":"D3"}]}`)
	if act, err = c.Activity(ctx, cloudclient.ListRequest{Modules: []string{"D3"}}); err != nil || len(act) != 1 || act[0].ID != 9 {
		t.Fatalf("bare activities list: %+v %v", act, err)
	}
	fc.handleJSON("POST /v1/modules/alarms", 202, `{}`)
	if _, err = c.Alarms(ctx, cloudclient.ListRequest{Modules: []string{"D1"}}); err == nil {
		t.Fatal("202 accepted for a list")
	}
}

// A devid the listing lacks is named with every devid the listing offers,
// sorted, on one line; a long list is cut after 20 of them.
func TestMissingModules(t *testing.T) {
	listed := []cloudclient.Module{{Devid: "B2"}, {Devid: "A1"}, {Devid: "C3"}}
	if err := cloudclient.MissingModules(7, listed, []string{"C3", "A1"}); err != nil {
		t.Fatalf("all listed: %v", err)
	}
	for _, c := range []struct {
		modules []cloudclient.Module
		want    []string
		text    string
	}{
		{listed, []string{"A1", "X9"}, "module X9 is not in the module list of object 7 (it lists A1, B2, C3)"},
		{listed, []string{"X9", "Y8", "X9"}, "modules X9, Y8 are not in the module list of object 7 (it lists A1, B2, C3)"},
		{nil, []string{"X9"}, "module X9 is not in the module list of object 7 (it lists none)"},
	} {
		err := cloudclient.MissingModules(7, c.modules, c.want)
		var me *cloudclient.MissingModulesError
		if !errors.As(err, &me) || err.Error() != c.text {
			t.Errorf("%v: %v, want %q", c.want, err, c.text)
		}
	}
	var many []cloudclient.Module
	for i := range 23 {
		many = append(many, cloudclient.Module{Devid: fmt.Sprintf("D%02d", i)})
	}
	if err := cloudclient.MissingModules(7, many, []string{"X9"}); !strings.HasSuffix(err.Error(), ", D19 and 3 more)") {
		t.Errorf("long list: %v", err)
	}
}

// PrimeEach gives the same updates as Prime, a module per call; on any
// failure (status, body that is not an object, malformed body) it returns
// the error Prime returns and never calls fn, so nothing is half-stored.
func TestPrimeEach(t *testing.T) {
	fc := newFakeCloud(t)
	body := `{"B":{"P4":{"v1":2}},` + primeExample[1:]
	fc.handleJSON("POST /v1/modules/parameters", 200, body)
	c, _ := newClient(t, fc)
	want, err := c.Prime(ctxT(t), []string{"FTTCTBSLCE", "B"})
	if err != nil {
		t.Fatal(err)
	}
	var got []wire.ParamUpdate
	var calls []string
	if err := c.PrimeEach(ctxT(t), []string{"FTTCTBSLCE", "B"}, func(ups []wire.ParamUpdate) {
		calls = append(calls, ups[0].Devid)
		for _, u := range ups {
			u.Meta = maps.Clone(u.Meta)
			got = append(got, u)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []string{"B", "FTTCTBSLCE"}) {
		t.Fatalf("modules given as %v, want one call per module in payload order", calls)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PrimeEach gave %#v\nPrime gave %#v", got, want)
	}
	if err := c.PrimeEach(ctxT(t), nil, func([]wire.ParamUpdate) { t.Fatal("called for no module") }); err != nil {
		t.Fatalf("no module: %v", err)
	}
	for _, tc := range []struct {
		status int
		body   string
	}{{204, ``}, {200, `[]`}, {200, `{"D1":{"P4":{"v1":1}},"D2":{`}, {201, `{}`}, {503, `<html>busy</html>`}} {
		fc.handleJSON("POST /v1/modules/parameters", tc.status, tc.body)
		_, perr := c.Prime(ctxT(t), []string{"D1", "D2"})
		err := c.PrimeEach(ctxT(t), []string{"D1", "D2"}, func([]wire.ParamUpdate) {
			t.Errorf("%d %q: fn called for a failed prime", tc.status, tc.body)
		})
		if err == nil || perr == nil || err.Error() != perr.Error() {
			t.Errorf("%d %q: PrimeEach error %v, Prime error %v", tc.status, tc.body, err, perr)
		}
	}
}

// PrimeEachWithRetry retries as PrimeWithRetry does, and only the attempt
// that succeeds reaches fn.
func TestPrimeEachWithRetry(t *testing.T) {
	fc := newFakeCloud(t)
	var mu sync.Mutex
	n := 0
	fc.handle("POST /v1/modules/parameters", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		attempt := n
		mu.Unlock()
		switch attempt {
		case 1:
			w.WriteHeader(503)
		case 2:
			io.WriteString(w, `{"D1":{"P4":{"v1":1}},"D2":{"P4":{"v1":`) // cut short
		default:
			io.WriteString(w, `{"D1":{"P4":{"v1":3}},"D2":{"P4":{"v1":4}}}`)
		}
	})
	c, sl := newClient(t, fc)
	var got []string
	err := c.PrimeEachWithRetry(ctxT(t), []string{"D1", "D2"}, func(ups []wire.ParamUpdate) {
		for _, u := range ups {
			got = append(got, fmt.Sprintf("%s/%s=%v", u.Devid, u.Key(), u.Value))
		}
	})
	if err != nil || !slices.Equal(got, []string{"D1/P4.v1=3", "D2/P4.v1=4"}) {
		t.Fatalf("PrimeEachWithRetry = %v, %v; want only the third attempt's values", got, err)
	}
	if s := sl.got(); len(s) != 2 {
		t.Fatalf("sleeps %v, want two", s)
	}
}

// A devid is looked for in every object's list: one that any of them
// lists is found, and one none lists is named with every object searched
// and every devid they list.
func TestMissingModulesAcross(t *testing.T) {
	objects := []cloudclient.ObjectModules{
		{ObjectID: 5747, Modules: []cloudclient.Module{{Devid: "B2"}, {Devid: "A1"}}},
		{ObjectID: 6120, Modules: []cloudclient.Module{{Devid: "C3"}}},
	}
	if err := cloudclient.MissingModulesAcross(objects, []string{"C3", "A1"}); err != nil {
		t.Fatalf("all listed: %v", err)
	}
	err := cloudclient.MissingModulesAcross(objects, []string{"A1", "X9"})
	var me *cloudclient.MissingModulesError
	want := "module X9 is not in the module lists of objects 5747, 6120 (they list A1, B2, C3)"
	if !errors.As(err, &me) || err.Error() != want || me.ObjectID != 5747 || len(me.ObjectIDs) != 2 {
		t.Errorf("got %v (%+v), want %q", err, me, want)
	}
	objects[1].Modules = nil
	objects[0].Modules = nil
	if err := cloudclient.MissingModulesAcross(objects, []string{"X9"}); err == nil || err.Error() != "module X9 is not in the module lists of objects 5747, 6120 (they list none)" {
		t.Errorf("none listed: %v", err)
	}
	// One object reads as it always has.
	if err := cloudclient.MissingModulesAcross(objects[:1], []string{"X9"}); err == nil || err.Error() != "module X9 is not in the module list of object 5747 (it lists none)" {
		t.Errorf("one object: %v", err)
	}
}
