package cloudsim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

func TestLoginShapeAndTokenExpiry(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 9, 10, 11, 0, 0, 0, time.UTC)}
	c := startCloud(t, Options{TokenTTL: 30 * time.Minute, Now: clk.Now})
	r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": DefaultPassword})
	if r.status != 200 {
		t.Fatalf("login = %d %s", r.status, r.body)
	}
	m := r.json(t)
	if m["type"] != "bearer" || m["refreshToken"] == "" || m["accessToken"] == "" {
		t.Fatalf("login body: %s", r.body)
	}
	if m["expiresAt"] != "2026-09-10T11:30:00Z" {
		t.Fatalf("expiresAt = %v, want now+TokenTTL 2026-09-10T11:30:00Z", m["expiresAt"])
	}
	user := m["user"].(map[string]any)
	for _, k := range []string{"id", "name", "email", "language", "allow_email_type_informations", "allow_email_type_alarms",
		"allow_email_type_marketing", "allow_email_type_warnings", "activated_at", "show_rate_us_modal"} {
		if _, ok := user[k]; !ok {
			t.Errorf("user lacks %q: %v", k, user)
		}
	}
	objs := m["objects"].([]any)
	if len(objs) != 1 || objs[0].(map[string]any)["id"] != float64(c.ObjectID()) || objs[0].(map[string]any)["addressCountry"] != "PL" {
		t.Fatalf("objects = %v", objs)
	}
	tok := m["accessToken"].(string)
	if r := call(t, c, "GET", "/v1/user", tok, nil); r.status != 200 {
		t.Fatalf("fresh token refused: %d", r.status)
	}
	clk.Add(30 * time.Minute)
	if r := call(t, c, "GET", "/v1/user", tok, nil); r.status != 401 || string(r.body) != `{"message":"Unauthorized"}` {
		t.Fatalf("expired token: %d %s, want 401 Unauthorized", r.status, r.body)
	}

	if r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": "wrong"}); r.status != 401 {
		t.Fatalf("wrong password = %d, want 401", r.status)
	}
	if r := call(t, c, "POST", "/v1/auth/user", "", "{not json"); r.status != 400 {
		t.Fatalf("bad login body = %d, want 400", r.status)
	}
	if got := c.Requests("POST /v1/auth/user"); got != 3 {
		t.Fatalf("Requests(login) = %d, want 3", got)
	}
}

func TestNonExpiringTokenHasNoExpiresAt(t *testing.T) {
	c := startCloud(t, Options{TokenTTL: -1})
	r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": DefaultPassword})
	if _, ok := r.json(t)["expiresAt"]; ok {
		t.Fatalf("expiresAt present with a negative TokenTTL: %s", r.body)
	}
}

func TestCustomCredentials(t *testing.T) {
	c := startCloud(t, Options{Email: "a@b", Password: "pw"})
	if r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": DefaultPassword}); r.status != 401 {
		t.Fatalf("default credentials accepted by a cloud with its own: %d", r.status)
	}
	if r := call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": "a@b", "password": "pw"}); r.status != 200 {
		t.Fatalf("own credentials refused: %d", r.status)
	}
}

// authedEndpoints are every endpoint that needs a bearer token.
func authedEndpoints(c *Cloud) [][2]string {
	d := c.Devids()[0]
	id := strconv.Itoa(c.ObjectID())
	return [][2]string{
		{"GET", "/v1/user"}, {"GET", "/v1/user/permissions"}, {"GET", "/v1/objects"},
		{"GET", "/v1/objects/" + id}, {"GET", "/v1/objects/" + id + "/permissions"}, {"GET", "/v1/modules?page=1&limit=999&group_id=" + id},
		{"POST", "/v1/modules/connect"}, {"POST", "/v1/modules/parameters"}, {"POST", "/v1/modules/activity/quantity"},
		{"POST", "/v1/modules/alarms/quantity"}, {"POST", "/v1/modules/activity"}, {"POST", "/v1/modules/alarms"},
		{"POST", "/v1/modules/alarms/history"}, {"GET", "/v1/modules/" + d + "/card"}, {"POST", "/v1/module/command"},
		{"POST", "/v1/module/command/raw"},
		{"POST", "/v1/auth/revoke"}, // last: with the good token it ends that token
	}
}

func TestBearerAuthOnEveryEndpoint(t *testing.T) {
	c := startCloud(t, Options{})
	good := login(t, c)
	revoked := login(t, c)
	if r := call(t, c, "POST", "/v1/auth/revoke", revoked, nil); r.status/100 != 2 {
		t.Fatalf("revoke = %d", r.status)
	}
	for _, ep := range authedEndpoints(c) {
		for name, tok := range map[string]string{"missing": "", "invalid": "nope", "revoked": revoked} {
			r := call(t, c, ep[0], ep[1], tok, map[string]any{})
			if r.status != 401 || string(r.body) != `{"message":"Unauthorized"}` {
				t.Errorf("%s %s with %s token = %d %s, want 401", ep[0], ep[1], name, r.status, r.body)
			}
		}
		if r := call(t, c, ep[0], ep[1], good, map[string]any{}); r.status == 401 {
			t.Errorf("%s %s refused a good token", ep[0], ep[1])
		}
	}
	// A scheme other than Bearer is no token at all.
	req, _ := http.NewRequest("GET", c.URL()+"/v1/user", nil)
	req.Header.Set("Authorization", "Basic "+good)
	res, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 401 {
		t.Fatalf("Basic scheme = %d, want 401", res.StatusCode)
	}

	if r := call(t, c, "GET", "/v1/user", good, nil); r.status != 401 {
		t.Fatalf("token after its own revoke = %d, want 401", r.status)
	}
	good = login(t, c)
	c.RevokeTokens()
	if r := call(t, c, "GET", "/v1/user", good, nil); r.status != 401 {
		t.Fatalf("token after RevokeTokens = %d, want 401", r.status)
	}
	// Public endpoints need no token.
	for _, p := range []string{"/v1/system/version?container=BragerOne&platform=0", "/", "/assets/" + webapp.IndexName()} {
		if r := call(t, c, "GET", p, "", nil); r.status != 200 {
			t.Errorf("GET %s without token = %d, want 200", p, r.status)
		}
	}
}

func TestUserObjectsPermissionsShapes(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	id := strconv.Itoa(c.ObjectID())

	u := call(t, c, "GET", "/v1/user", tok, nil).json(t)
	if u["user"].(map[string]any)["email"] != DefaultEmail {
		t.Fatalf("user = %v", u)
	}
	for _, p := range []string{"/v1/user/permissions", "/v1/objects/" + id + "/permissions"} {
		perms := call(t, c, "GET", p, tok, nil).json(t)["permissions"].([]any)
		if len(perms) == 0 || !regexp.MustCompile(`^[A-Z0-9_]+$`).MatchString(perms[0].(string)) {
			t.Fatalf("%s permissions = %v", p, perms)
		}
	}
	objs := call(t, c, "GET", "/v1/objects", tok, nil).json(t)["objects"].([]any)
	if len(objs) != 1 || objs[0].(map[string]any)["name"] != "Home" {
		t.Fatalf("objects = %v", objs)
	}
	obj := call(t, c, "GET", "/v1/objects/"+id, tok, nil).json(t)
	if obj["status"] != "SUCCESS" || obj["object"].(map[string]any)["id"] != float64(c.ObjectID()) {
		t.Fatalf("object = %v", obj)
	}
	for _, d := range c.Devids() {
		c.SetModuleOnline(d, false)
	}
	if st := call(t, c, "GET", "/v1/objects/"+id, tok, nil).json(t)["status"]; st != "OFFLINE" {
		t.Fatalf("object status with every module offline = %v, want OFFLINE", st)
	}
	if r := call(t, c, "GET", "/v1/objects/1", tok, nil); r.status != 404 {
		t.Fatalf("unknown object = %d, want 404", r.status)
	}
	if r := call(t, c, "GET", "/v1/objects/x", tok, nil); r.status != 400 {
		t.Fatalf("non-integer object id = %d, want 400", r.status)
	}
}

var rowKeys = []string{"devid", "name", "gateway", "deviceMenu", "deviceLanguageVariant", "devices", "services", "permissions",
	"acceptedAt", "connectedAt", "moduleAlarms", "parameterSchemas", "id", "moduleAddress", "moduleInterface", "moduleVersion",
	"moduleServices", "moduleTitle", "isAcceptedAt", "isConnectedAt"}

func modulesRows(t *testing.T, c *Cloud, tok, query string) ([]json.RawMessage, resp) {
	t.Helper()
	r := call(t, c, "GET", "/v1/modules"+query, tok, nil)
	if r.status != 200 {
		t.Fatalf("GET /v1/modules%s = %d %s", query, r.status, r.body)
	}
	var body struct{ Data []json.RawMessage }
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("listing %s: %v", r.body, err)
	}
	return body.Data, r
}

func TestModulesListing(t *testing.T) {
	c := startCloud(t, Options{Modules: 3})
	tok := login(t, c)
	q := fmt.Sprintf("?page=1&limit=999&group_id=%d", c.ObjectID())
	rows, _ := modulesRows(t, c, tok, q)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for i, raw := range rows {
		if got := keysInOrder(t, raw); !reflect.DeepEqual(got, rowKeys) {
			t.Fatalf("row keys = %v, want %v", got, rowKeys)
		}
		var row map[string]any
		_ = json.Unmarshal(raw, &row)
		if row["devid"] != c.Devids()[i] || row["connectedAt"].(float64) <= 1e9 || row["moduleInterface"] != nil {
			t.Fatalf("row %d = %v", i, row)
		}
		gw := row["gateway"].(map[string]any)
		if gw["address"] == "" || gw["version"] == "" {
			t.Fatalf("gateway = %v", gw)
		}
		if _, err := time.Parse(time.RFC3339, row["isConnectedAt"].(string)); err != nil {
			t.Fatalf("isConnectedAt: %v", err)
		}
		if !regexp.MustCompile(`^[A-Z]{10}$`).MatchString(row["devid"].(string)) {
			t.Fatalf("devid %v is not 10 uppercase letters", row["devid"])
		}
	}

	c.SetModuleOnline(c.Devids()[1], false)
	rows, _ = modulesRows(t, c, tok, q)
	var row map[string]any
	_ = json.Unmarshal(rows[1], &row)
	if row["connectedAt"] != float64(0) || row["isConnectedAt"] != nil {
		t.Fatalf("offline row: connectedAt=%v isConnectedAt=%v, want 0 and null", row["connectedAt"], row["isConnectedAt"])
	}
	c.SetModuleOnline(c.Devids()[1], true)
	rows, _ = modulesRows(t, c, tok, q)
	_ = json.Unmarshal(rows[1], &row)
	if row["connectedAt"].(float64) == 0 {
		t.Fatal("module back online still has connectedAt 0")
	}

	if r := call(t, c, "GET", "/v1/modules?page=1&limit=999&group_id=1", tok, nil); r.status != 404 || string(r.body) != `{"message":"Object not found"}` {
		t.Fatalf("foreign group_id = %d %s, want 404 Object not found", r.status, r.body)
	}
	if r := call(t, c, "GET", "/v1/modules?page=1&limit=999&group_id=x", tok, nil); r.status != 400 {
		t.Fatalf("group_id x = %d %s, want 400", r.status, r.body)
	}
	rows, _ = modulesRows(t, c, tok, "?page=2&limit=1")
	_ = json.Unmarshal(rows[0], &row)
	if len(rows) != 1 || row["devid"] != c.Devids()[1] {
		t.Fatalf("page 2 limit 1 = %d rows, devid %v", len(rows), row["devid"])
	}
	if r := call(t, c, "GET", "/v1/modules?page=x", tok, nil); r.status != 400 {
		t.Fatalf("bad page = %d, want 400", r.status)
	}
}

func TestSeedGivesStableWorld(t *testing.T) {
	a, b, other := New(Options{Seed: 7, ParamsPerModule: 50}), New(Options{Seed: 7, ParamsPerModule: 50}), New(Options{Seed: 8, ParamsPerModule: 50})
	defer a.Close()
	defer b.Close()
	defer other.Close()
	if !reflect.DeepEqual(a.Devids(), b.Devids()) || a.ObjectID() != b.ObjectID() {
		t.Fatalf("same seed, different world: %v %v", a.Devids(), b.Devids())
	}
	if !reflect.DeepEqual(a.Params(a.Devids()[0]), b.Params(b.Devids()[0])) {
		t.Fatal("same seed, different parameters")
	}
	if reflect.DeepEqual(a.Devids(), other.Devids()) {
		t.Fatal("different seeds gave the same devids")
	}
	if len(a.Devids()) != DefaultModules {
		t.Fatalf("%d modules by default, want %d", len(a.Devids()), DefaultModules)
	}
}

func TestPrimeShape(t *testing.T) {
	c := startCloud(t, Options{Modules: 2, ParamsPerModule: DefaultParamsPerModule})
	tok := login(t, c)
	d := c.Devids()
	r := call(t, c, "POST", "/v1/modules/parameters", tok, map[string]any{"modules": []string{d[0], "UNKNOWNDEV"}})
	if r.status != 200 {
		t.Fatalf("prime = %d", r.status)
	}
	var body map[string]map[string]map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatalf("prime is not {devid:{pool:{key:body}}}: %v", err)
	}
	if len(body) != 1 || body[d[0]] == nil {
		t.Fatalf("prime modules = %v, want only %s", slices.Sorted(maps.Keys(body)), d[0])
	}
	keyRE := regexp.MustCompile(`^[vsunx][0-9]+$`)
	chans := map[byte]int{}
	forms := map[string]int{}
	total := 0
	want := c.Params(d[0])
	for pool, entries := range body[d[0]] {
		if pool != "P4" && pool != "P5" && pool != "P6" {
			t.Fatalf("pool %q", pool)
		}
		for k, v := range entries {
			total++
			if !keyRE.MatchString(k) {
				t.Fatalf("key %s.%s", pool, k)
			}
			chans[k[0]]++
			var val any
			hasVal := true
			switch b := v.(type) {
			case map[string]any:
				val, hasVal = b["value"]
				if hasVal {
					forms["object"]++
				} else {
					forms["meta-only"]++
				}
				if _, ok := b["updatedAt"]; ok {
					forms["updatedAt"]++
				}
				if _, ok := b["storable"]; ok {
					forms["storable"]++
				}
			default:
				val = b
				forms["bare"]++
			}
			if hasVal && val != nil {
				w, ok := want[pool+"."+k]
				if !ok || fmt.Sprint(w) != fmt.Sprint(val) {
					t.Fatalf("%s.%s = %v in prime, %v in Params", pool, k, val, w)
				}
			} else if _, ok := want[pool+"."+k]; ok {
				t.Fatalf("%s.%s has no value in prime but is in Params", pool, k)
			}
			if hasVal && val == nil {
				forms["null"]++
			}
			if s, ok := val.(string); ok && s != "" {
				forms["string"]++
			}
			if f, ok := val.(float64); ok && f != math.Trunc(f) {
				forms["float"]++
			}
		}
	}
	if total != DefaultParamsPerModule {
		t.Fatalf("%d entries, want %d", total, DefaultParamsPerModule)
	}
	for _, ch := range []byte("vsunx") {
		if chans[ch] == 0 {
			t.Errorf("no %q channel", ch)
		}
	}
	for _, f := range []string{"object", "meta-only", "bare", "updatedAt", "storable", "null", "string", "float"} {
		if forms[f] == 0 {
			t.Errorf("no %s entries in the prime: %v", f, forms)
		}
	}
	if r := call(t, c, "POST", "/v1/modules/parameters", tok, `{"modules":"x"}`); r.status != 400 {
		t.Fatalf("bad prime body = %d, want 400", r.status)
	}
}

func TestDriftChangesValuesPlausibly(t *testing.T) {
	c := New(Options{Modules: 2, ParamsPerModule: 300})
	defer c.Close()
	d := c.Devids()
	before := c.Params(d[0])
	c.SetModuleOnline(d[1], false)
	offBefore := c.Params(d[1])
	c.Drift()
	after := c.Params(d[0])
	changed := 0
	for k, v := range after {
		if fmt.Sprint(before[k]) != fmt.Sprint(v) {
			changed++
			if k[3] != 'v' {
				t.Fatalf("drift changed non-value channel %s", k)
			}
			if f, ok := v.(float64); ok && (f < -30 || f > 90) {
				t.Fatalf("%s drifted out of range: %v", k, f)
			}
		}
	}
	if changed == 0 || changed > 4 {
		t.Fatalf("drift changed %d parameters, want a few", changed)
	}
	if !reflect.DeepEqual(offBefore, c.Params(d[1])) {
		t.Fatal("an offline module drifted")
	}
}

func TestQuantitiesActivityAlarmsCardVersion(t *testing.T) {
	c := startCloud(t, Options{Modules: 3})
	tok := login(t, c)
	d := c.Devids()
	mods := map[string]any{"modules": d}

	aq := call(t, c, "POST", "/v1/modules/activity/quantity", tok, mods).json(t)["activityQuantity"].(map[string]any)
	if len(aq) != 3 || aq[d[0]] != float64(3) {
		t.Fatalf("activityQuantity = %v", aq)
	}
	alq := call(t, c, "POST", "/v1/modules/alarms/quantity", tok, mods).json(t)["alarmsQuantity"].(map[string]any)
	if len(alq) != 3 {
		t.Fatalf("alarmsQuantity = %v", alq)
	}
	act := call(t, c, "POST", "/v1/modules/activity", tok, map[string]any{"modules": d, "page": 1, "limit": 2}).json(t)
	rows := act["activities"].(map[string]any)["data"].([]any)
	if act["status"] != true || len(rows) != 2 {
		t.Fatalf("activity = %v", act)
	}
	for _, k := range []string{"id", "devid", "module_id", "name", "unit", "value", "prevValue", "prev_value", "state", "created_at", "user", "user_id"} {
		if _, ok := rows[0].(map[string]any)[k]; !ok {
			t.Fatalf("activity row lacks %q: %v", k, rows[0])
		}
	}
	al := call(t, c, "POST", "/v1/modules/alarms", tok, mods).json(t)
	active := al["alarms"].([]any)
	n := 0
	for _, q := range alq {
		n += int(q.(float64))
	}
	if al["status"] != true || len(active) != n {
		t.Fatalf("alarms = %v, quantities %v", al, alq)
	}
	for _, a := range active {
		if a.(map[string]any)["finished_at"] != nil {
			t.Fatalf("active alarm finished: %v", a)
		}
	}
	hist := call(t, c, "POST", "/v1/modules/alarms/history", tok, mods).json(t)["alarms"].(map[string]any)["data"].([]any)
	if len(hist) != 3 || hist[0].(map[string]any)["id"] == nil || hist[0].(map[string]any)["finished_at"] == nil {
		t.Fatalf("history = %v", hist)
	}

	card := call(t, c, "GET", "/v1/modules/"+d[0]+"/card", tok, nil).json(t)
	for _, k := range []string{"id", "moduleId", "clientFullName", "clientPhoneNumber", "clientAddressStreetAndNumber", "clientAddressPostalCode", "clientAddressCity", "createdAt", "updatedAt"} {
		if _, ok := card[k]; !ok {
			t.Fatalf("card lacks %q: %v", k, card)
		}
	}
	if r := call(t, c, "GET", "/v1/modules/NOPE/card", tok, nil); r.status != 404 {
		t.Fatalf("unknown card = %d, want 404", r.status)
	}
	v := call(t, c, "GET", "/v1/system/version?container=BragerOne&platform=0", "", nil)
	if string(v.body) != `{"version":{"devMode":false,"version":"1.0.2501310630"}}` {
		t.Fatalf("system version = %s", v.body)
	}
}

func TestCommands(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	d := c.Devids()[0]
	r := call(t, c, "POST", "/v1/module/command", tok, map[string]any{"devid": d, "pool": "P4", "parameter": "v8", "value": 42, "parameterName": "PARAM_66", "unit": 1, "note": "x"})
	if r.status != 200 || r.json(t)["status"] != true {
		t.Fatalf("command = %d %s", r.status, r.body)
	}
	if got := c.Params(d)["P4.v8"]; got != float64(42) {
		t.Fatalf("P4.v8 after command = %v, want 42", got)
	}
	act := call(t, c, "POST", "/v1/modules/activity", tok, map[string]any{"modules": []string{d}}).json(t)["activities"].(map[string]any)["data"].([]any)
	if len(act) != 4 || act[0].(map[string]any)["name"] != "parameters.PARAM_66" {
		t.Fatalf("activity after command = %v", act)
	}
	for _, bad := range []map[string]any{{"devid": d, "pool": "P4", "parameter": "v8"}, {"devid": d, "pool": "X", "parameter": "v8", "value": 1}, {"pool": "P4", "parameter": "v8", "value": 1}} {
		if r := call(t, c, "POST", "/v1/module/command", tok, bad); r.status != 400 {
			t.Errorf("command %v = %d, want 400", bad, r.status)
		}
	}
	if r := call(t, c, "POST", "/v1/module/command", tok, map[string]any{"devid": "NOPE", "pool": "P4", "parameter": "v8", "value": 1}); r.status != 404 {
		t.Fatalf("command to unknown module = %d, want 404", r.status)
	}
	r = call(t, c, "POST", "/v1/module/command/raw", tok, map[string]any{"devid": d, "command": "MODULE_RESTART"})
	if r.status != 200 || r.json(t)["data"].(map[string]any)["command"] != "MODULE_RESTART" {
		t.Fatalf("raw command = %d %s", r.status, r.body)
	}
	if r := call(t, c, "POST", "/v1/module/command/raw", tok, map[string]any{"devid": d}); r.status != 400 {
		t.Fatalf("raw without command = %d, want 400", r.status)
	}
	c.SetModuleOnline(d, false)
	if r := call(t, c, "POST", "/v1/module/command", tok, map[string]any{"devid": d, "pool": "P4", "parameter": "v8", "value": 7}); r.status != 409 {
		t.Fatalf("command to offline module = %d, want 409", r.status)
	}
	if r := call(t, c, "POST", "/v1/module/command/raw", tok, map[string]any{"devid": d, "command": "BOILER_START"}); r.status != 409 {
		t.Fatalf("raw command to offline module = %d, want 409", r.status)
	}
}

func TestModulesConnectValidationAndStaleSID(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	if r := call(t, c, "POST", "/v1/modules/connect", tok, map[string]any{"modules": c.Devids()}); r.status != 400 {
		t.Fatalf("connect without sid = %d, want 400", r.status)
	}
	for _, body := range []map[string]any{
		{"wsid": "stale", "modules": c.Devids()},
		{"sid": "stale", "modules": c.Devids()},
		{"wsid": "stale", "group_id": strconv.Itoa(c.ObjectID()), "modules": c.Devids()},
	} {
		r := call(t, c, "POST", "/v1/modules/connect", tok, body)
		if r.status != 200 || string(r.body) != "{}" {
			t.Fatalf("connect %v = %d %s, want 200 {}", body, r.status, r.body)
		}
	}
	if s := c.Sessions(); len(s) != 0 {
		t.Fatalf("a stale SID created or bound a session: %v", s)
	}
}

func TestAssetsConditional(t *testing.T) {
	c := startCloud(t, Options{})
	idx := call(t, c, "GET", "/", "", nil)
	m := regexp.MustCompile(`/assets/(index-[A-Za-z0-9_-]+\.js)`).FindSubmatch(idx.body)
	if idx.status != 200 || m == nil {
		t.Fatalf("index page %d has no index bundle: %s", idx.status, idx.body)
	}
	if string(m[1]) != webapp.IndexName() {
		t.Fatalf("index references %s, webapp.IndexName = %s", m[1], webapp.IndexName())
	}
	if r := call(t, c, "GET", "/assets/", "", nil); r.status != 200 || !regexp.MustCompile(`/assets/index-[A-Za-z0-9_-]+\.js`).Match(r.body) {
		t.Fatalf("/assets/ fallback = %d", r.status)
	}
	a := call(t, c, "GET", "/assets/"+string(m[1]), "", nil)
	etag, lm := a.header.Get("ETag"), a.header.Get("Last-Modified")
	if a.status != 200 || etag == "" || lm == "" || len(a.body) == 0 {
		t.Fatalf("asset = %d etag=%q last-modified=%q", a.status, etag, lm)
	}
	chunk := regexp.MustCompile(`\./(module\.menu-[A-Za-z0-9_-]+\.js)`).FindSubmatch(a.body)
	if chunk == nil {
		t.Fatalf("index bundle references no menu chunk: %s", a.body)
	}
	if r := call(t, c, "GET", "/assets/"+string(chunk[1]), "", nil); r.status != 200 {
		t.Fatalf("chunk = %d", r.status)
	}
	for name, h := range map[string][2]string{"If-None-Match": {"If-None-Match", etag}, "If-Modified-Since": {"If-Modified-Since", lm}} {
		req, _ := http.NewRequest("GET", c.URL()+"/assets/"+string(m[1]), nil)
		req.Header.Set(h[0], h[1])
		res, err := testHTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotModified {
			t.Errorf("%s = %d, want 304", name, res.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", c.URL()+"/assets/"+string(m[1]), nil)
	req.Header.Set("If-None-Match", `"other"`)
	res, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("stale ETag = %d, want 200", res.StatusCode)
	}
	if r := call(t, c, "GET", "/assets/missing.js", "", nil); r.status != 404 {
		t.Fatalf("missing asset = %d", r.status)
	}
}

func TestLatencyOption(t *testing.T) {
	c := startCloud(t, Options{Latency: time.Hour})
	hc := &http.Client{Timeout: 50 * time.Millisecond}
	if _, err := hc.Get(c.URL() + "/v1/system/version"); err == nil {
		t.Fatal("a REST answer came back despite an hour of configured latency")
	}
	// Assets and control are not the REST API and are not delayed.
	for _, p := range []string{"/control/state", "/", "/assets/" + webapp.IndexName()} {
		if r := callWith(t, testHTTP, c.URL(), "GET", p, "", nil); r.status != 200 {
			t.Fatalf("GET %s = %d", p, r.status)
		}
	}
}

func TestRequestsCountsByTemplate(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	for _, id := range []string{"1", "2", strconv.Itoa(c.ObjectID())} {
		call(t, c, "GET", "/v1/objects/"+id, tok, nil)
	}
	call(t, c, "GET", "/v1/objects", "", nil)
	if got := c.Requests("GET /v1/objects/{id}"); got != 3 {
		t.Fatalf("GET /v1/objects/{id} = %d, want 3", got)
	}
	if got := c.Requests("GET /v1/objects"); got != 1 {
		t.Fatalf("GET /v1/objects = %d, want 1 (unauthorised requests count too)", got)
	}
	keys := slices.Sorted(maps.Keys(c.RequestCounts()))
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"GET /v1/objects", "GET /v1/objects/{id}", "POST /v1/auth/user"}) {
		t.Fatalf("counted templates = %v", keys)
	}
}
