package cloudsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

const html503 = `<html><body><h1>503 Service Unavailable</h1></body></html>`

func TestHTTPStatusFault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	id := c.Inject(Fault{Kind: FaultHTTPStatus, Path: "POST /v1/modules/parameters", Count: 2})
	if id <= 0 {
		t.Fatalf("Inject = %d", id)
	}
	body := map[string]any{"modules": c.Devids()}
	for i := 0; i < 2; i++ {
		r := call(t, c, "POST", "/v1/modules/parameters", tok, body)
		if r.status != 503 || string(r.body) != html503 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Fatalf("faulted prime %d = %d %q %s", i, r.status, r.header.Get("Content-Type"), r.body)
		}
	}
	if r := call(t, c, "POST", "/v1/modules/parameters", tok, body); r.status != 200 {
		t.Fatalf("prime after Count ran out = %d, want 200", r.status)
	}
	if len(c.Faults()) != 0 {
		t.Fatalf("spent fault still listed: %v", c.Faults())
	}

	// A method-qualified path leaves other methods and paths alone; a
	// template-only path selects any method; "" selects every /v1 path.
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: "GET /v1/modules/parameters", Status: 502})
	if r := call(t, c, "POST", "/v1/modules/parameters", tok, body); r.status != 200 {
		t.Fatalf("GET fault hit a POST: %d", r.status)
	}
	c.ClearAll()
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: "/v1/objects/{id}", Status: 504})
	if r := call(t, c, "GET", fmt.Sprintf("/v1/objects/%d", c.ObjectID()), tok, nil); r.status != 504 || !strings.Contains(string(r.body), "<h1>504 Gateway Timeout</h1>") {
		t.Fatalf("template fault = %d %s", r.status, r.body)
	}
	if r := call(t, c, "GET", "/v1/objects", tok, nil); r.status != 200 {
		t.Fatalf("template fault hit another template: %d", r.status)
	}
	c.ClearAll()
	c.Inject(Fault{Kind: FaultHTTPStatus, Status: 404, Body: "gone"})
	r := call(t, c, "GET", "/v1/objects", tok, nil)
	if r.status != 404 || string(r.body) != `{"message":"gone"}` {
		t.Fatalf("4xx fault = %d %s", r.status, r.body)
	}
	if r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": DefaultPassword}); r.status != 404 {
		t.Fatalf("every-path fault spared login: %d", r.status)
	}
	if r := call(t, c, "GET", "/assets/"+webapp.IndexName(), "", nil); r.status != 200 {
		t.Fatalf("every-path fault hit assets: %d", r.status)
	}
	c.ClearAll()
	c.Inject(Fault{Kind: FaultHTTPStatus, Status: 401})
	if r := call(t, c, "GET", "/v1/objects", tok, nil); r.status != 401 || string(r.body) != `{"message":"Unauthorized"}` {
		t.Fatalf("401 fault = %d %s", r.status, r.body)
	}
}

func TestDispatchTimeoutAndLoginDupEntry(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	c.Inject(Fault{Kind: FaultDispatchTimeout, Path: "/v1/modules/parameters", Count: 1})
	r := call(t, c, "POST", "/v1/modules/parameters", tok, map[string]any{"modules": c.Devids()})
	var b map[string]any
	_ = json.Unmarshal(r.body, &b)
	if r.status != 408 || b["status"] != "E_DISPATCH_EVENT_TIMEOUT" || b["message"] != "upstream timeout" {
		t.Fatalf("dispatch timeout = %d %s", r.status, r.body)
	}

	c.Inject(Fault{Kind: FaultLoginDupEntry, Count: 2})
	if r := call(t, c, "GET", "/v1/user", tok, nil); r.status != 200 {
		t.Fatalf("login fault hit GET /v1/user: %d", r.status)
	}
	creds := map[string]string{"email": DefaultEmail, "password": DefaultPassword}
	for i := 0; i < 2; i++ {
		r := call(t, c, "POST", "/v1/auth/user", "", creds)
		if r.status != 500 || string(r.body) != `{"message":"ER_DUP_ENTRY: Duplicate entry"}` {
			t.Fatalf("dup entry %d = %d %s", i, r.status, r.body)
		}
	}
	if r := call(t, c, "POST", "/v1/auth/user", "", creds); r.status != 200 {
		t.Fatalf("third login = %d, want 200", r.status)
	}
}

func TestLatencyFault(t *testing.T) {
	c := startCloud(t, Options{})
	c.Inject(Fault{Kind: FaultLatency, Path: "/v1/system/version", DelayMS: 3_600_000, Count: 1})
	hc := &http.Client{Timeout: 50 * time.Millisecond}
	if _, err := hc.Get(c.URL() + "/v1/system/version"); err == nil {
		t.Fatal("answer came back despite an hour of fault latency")
	}
	if r := call(t, c, "GET", "/v1/system/version", "", nil); r.status != 200 {
		t.Fatalf("after the one delayed request = %d", r.status)
	}
}

func TestModuleRowFaults(t *testing.T) {
	c := startCloud(t, Options{Modules: 3})
	tok := login(t, c)
	d := c.Devids()

	c.Inject(Fault{Kind: FaultDegradedRow, Devid: d[1], Count: 1})
	rows, _ := modulesRows(t, c, tok, "")
	var row map[string]any
	_ = json.Unmarshal(rows[1], &row)
	for _, k := range []string{"gateway", "connectedAt", "moduleAddress", "moduleInterface", "moduleVersion", "isConnectedAt"} {
		if v, ok := row[k]; !ok || v != nil {
			t.Errorf("degraded row %s = %v, want null", k, v)
		}
	}
	_ = json.Unmarshal(rows[0], &row)
	if row["gateway"] == nil {
		t.Fatal("degraded_row for one devid degraded a sibling")
	}
	rows, _ = modulesRows(t, c, tok, "")
	_ = json.Unmarshal(rows[1], &row)
	if row["connectedAt"] == nil {
		t.Fatal("degraded_row outlived its Count")
	}

	c.Inject(Fault{Kind: FaultMissingRow, Devid: d[2]})
	rows, _ = modulesRows(t, c, tok, "")
	if len(rows) != 2 || strings.Contains(string(rows[0])+string(rows[1]), d[2]) {
		t.Fatalf("missing_row left %d rows", len(rows))
	}
	c.ClearAll()
	c.Inject(Fault{Kind: FaultMissingRow})
	rows, _ = modulesRows(t, c, tok, "")
	if len(rows) != 2 || strings.Contains(string(rows[0]), d[0]) {
		t.Fatalf("missing_row without devid should drop the first module: %d rows", len(rows))
	}
	c.ClearAll()

	for _, body := range []string{`[]`, `{"unexpected":true}`, `{"data":[{"devid":"X","connectedAt":"soon"}]}`} {
		c.Inject(Fault{Kind: FaultListing, Body: body, Count: 1})
		r := call(t, c, "GET", "/v1/modules", tok, nil)
		if r.status != 200 || string(r.body) != body {
			t.Fatalf("listing fault = %d %s, want %s", r.status, r.body, body)
		}
	}
	if rows, _ := modulesRows(t, c, tok, ""); len(rows) != 3 {
		t.Fatalf("after listing faults: %d rows", len(rows))
	}
}

func TestConnectNotBoundFault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	c.Inject(Fault{Kind: FaultConnectNotBound, Count: 1})
	r := call(t, c, "POST", "/v1/modules/connect", tok, map[string]any{"wsid": "x", "modules": c.Devids()})
	if r.status != 201 || string(r.body) != `{"message":"accepted-not-bound"}` {
		t.Fatalf("connect_not_bound = %d %s", r.status, r.body)
	}
	if r := call(t, c, "POST", "/v1/modules/connect", tok, map[string]any{"wsid": "x", "modules": c.Devids()}); r.status != 200 {
		t.Fatalf("connect after the fault = %d", r.status)
	}
}

func TestFaultValidationAndClear(t *testing.T) {
	c := New(Options{ParamsPerModule: 10})
	defer c.Close()
	for _, f := range []Fault{
		{Kind: "nope"}, {Kind: FaultHTTPStatus, Status: 200}, {Kind: FaultLatency}, {Kind: FaultHTTPStatus, Count: -1},
		{Kind: FaultHTTPStatus, Path: "modules"},
		{Kind: FaultHTTPStatus, RetryAfterS: -1}, {Kind: FaultHTTPStatus, RetryAfterDate: true},
		{Kind: FaultLatency, DelayMS: 5, RetryAfterS: 3}, {Kind: FaultResetConnection, HTML: true},
		{Kind: FaultHTTPStatus, HTML: true, EmptyBody: true}, {Kind: FaultHTTPStatus, EmptyBody: true, Body: "x"},
		{Kind: FaultRevokeAllSessions, Path: "GET /v1/user"},
	} {
		_, err := c.InjectFault(f)
		var fe *FaultError
		if !errors.As(err, &fe) {
			t.Errorf("InjectFault(%+v) = %v, want *FaultError", f, err)
		}
		if c.Inject(f) != 0 {
			t.Errorf("Inject(%+v) accepted an invalid fault", f)
		}
	}
	a := c.Inject(Fault{Kind: FaultMutePushes})
	b := c.Inject(Fault{Kind: FaultHTTPStatus})
	if a != 1 || b != 2 {
		t.Fatalf("ids = %d, %d, want 1, 2", a, b)
	}
	c.Clear(a)
	if fs := c.Faults(); len(fs) != 1 || fs[0].ID != b {
		t.Fatalf("after Clear(%d): %v", a, fs)
	}
	c.Clear(999)
	c.ClearAll()
	if len(c.Faults()) != 0 {
		t.Fatal("ClearAll left faults")
	}
}

func TestControlEndpoint(t *testing.T) {
	c := startCloud(t, Options{Modules: 2})
	tok := login(t, c)
	d := c.Devids()

	r := call(t, c, "POST", "/control/faults", "", map[string]any{"kind": "http_status", "path": "GET /v1/user", "status": 503})
	var inj struct{ ID int }
	if err := json.Unmarshal(r.body, &inj); r.status != 200 || err != nil || inj.ID == 0 {
		t.Fatalf("inject = %d %s", r.status, r.body)
	}
	if r := call(t, c, "GET", "/v1/user", tok, nil); r.status != 503 {
		t.Fatalf("control-injected fault not active: %d", r.status)
	}
	var st State
	if err := json.Unmarshal(call(t, c, "GET", "/control/state", "", nil).body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Faults) != 1 || st.Faults[0].ID != inj.ID || st.Faults[0].Path != "GET /v1/user" || len(st.Modules) != 2 || st.ObjectID != c.ObjectID() {
		t.Fatalf("state = %+v", st)
	}
	if r := call(t, c, "DELETE", fmt.Sprintf("/control/faults/%d", inj.ID), "", nil); r.status != 200 {
		t.Fatalf("delete fault = %d", r.status)
	}
	if r := call(t, c, "DELETE", fmt.Sprintf("/control/faults/%d", inj.ID), "", nil); r.status != 404 {
		t.Fatalf("delete of a cleared fault = %d, want 404", r.status)
	}
	if r := call(t, c, "GET", "/v1/user", tok, nil); r.status != 200 {
		t.Fatalf("fault survived DELETE: %d", r.status)
	}
	call(t, c, "POST", "/control/faults", "", map[string]any{"kind": "mute_pushes"})
	call(t, c, "POST", "/control/faults", "", map[string]any{"kind": "listing", "body": "[]"})
	if r := call(t, c, "DELETE", "/control/faults", "", nil); r.status != 200 || len(c.Faults()) != 0 {
		t.Fatalf("DELETE /control/faults = %d, left %v", r.status, c.Faults())
	}
	for _, bad := range []string{`{"kind":"nope"}`, `{"kind":"http_status","bogus":1}`, `not json`} {
		if r := call(t, c, "POST", "/control/faults", "", bad); r.status != 400 {
			t.Errorf("inject %s = %d, want 400", bad, r.status)
		}
	}

	if r := call(t, c, "POST", "/control/modules/"+d[1]+"/offline", "", nil); r.status != 200 || c.ModuleOnline(d[1]) {
		t.Fatalf("offline = %d online=%v", r.status, c.ModuleOnline(d[1]))
	}
	_ = json.Unmarshal(call(t, c, "GET", "/control/state", "", nil).body, &st)
	if st.Modules[1].Online || st.Modules[1].ConnectedAt != 0 || !st.Modules[0].Online {
		t.Fatalf("state modules = %+v", st.Modules)
	}
	if r := call(t, c, "POST", "/control/modules/"+d[1]+"/online", "", nil); r.status != 200 || !c.ModuleOnline(d[1]) {
		t.Fatalf("online = %d", r.status)
	}
	if r := call(t, c, "POST", "/control/modules/NOPE/online", "", nil); r.status != 404 {
		t.Fatalf("unknown module = %d", r.status)
	}
	if r := call(t, c, "POST", "/control/modules/"+d[0]+"/sideways", "", nil); r.status != 404 {
		t.Fatalf("unknown action = %d", r.status)
	}
	before := c.Params(d[0])
	if r := call(t, c, "POST", "/control/drift", "", nil); r.status != 200 || fmt.Sprint(before) == fmt.Sprint(c.Params(d[0])) {
		t.Fatalf("drift = %d, params changed: %v", r.status, fmt.Sprint(before) != fmt.Sprint(c.Params(d[0])))
	}
	if r := call(t, c, "POST", "/control/revoke-tokens", "", nil); r.status != 200 {
		t.Fatalf("revoke-tokens = %d", r.status)
	}
	if r := call(t, c, "GET", "/v1/user", tok, nil); r.status != 401 {
		t.Fatalf("token after revoke-tokens = %d, want 401", r.status)
	}
}

// A non-loopback peer cannot be produced on a loopback-only test machine,
// so this drives the real handler with a request from a remote address.
func TestControlEndpointLoopbackOnly(t *testing.T) {
	for _, allow := range []bool{false, true} {
		c := New(Options{ParamsPerModule: 10, AllowRemoteControl: allow})
		for _, remote := range []string{"192.0.2.10:5000", "[2001:db8::1]:5000", "127.0.0.1:5000", "[::1]:5000"} {
			req := httptest.NewRequest("GET", "/control/state", nil)
			req.RemoteAddr = remote
			rec := httptest.NewRecorder()
			c.Handler().ServeHTTP(rec, req)
			loop := strings.HasPrefix(remote, "127.") || strings.HasPrefix(remote, "[::1]")
			want := 200
			if !allow && !loop {
				want = 403
			}
			if rec.Code != want {
				t.Errorf("allow=%v remote=%s: %d, want %d", allow, remote, rec.Code, want)
			}
		}
		req := httptest.NewRequest("POST", "/control/revoke-tokens", nil)
		req.RemoteAddr = "192.0.2.10:5000"
		rec := httptest.NewRecorder()
		c.Handler().ServeHTTP(rec, req)
		if !allow && rec.Code != 403 {
			t.Errorf("remote revoke-tokens = %d, want 403", rec.Code)
		}
		_ = c.Close()
	}
}
