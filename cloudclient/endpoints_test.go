package cloudclient_test

import (
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/wire"
)

func TestAuthedRequestHeaders(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/user", 200, `{"user":{"id":1}}`)
	fc.handleJSON("POST /v1/modules/connect", 200, `{}`)
	c, _ := newClient(t, fc)
	ctx := ctxT(t)
	if _, err := c.User(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "ns", Modules: []string{"D1"}}); err != nil {
		t.Fatal(err)
	}
	origin := fc.URL() + "/one"
	for _, route := range []string{"GET /v1/user", "POST /v1/modules/connect"} {
		h := fc.seenFor(route)[0].Header
		for k, want := range map[string]string{"Authorization": "Bearer tok-1", "Origin": origin, "Referer": origin + "/", "Accept": "application/json"} {
			if h.Get(k) != want {
				t.Errorf("%s: %s = %q, want %q", route, k, h.Get(k), want)
			}
		}
	}
	h := fc.seenFor("POST /v1/modules/connect")[0].Header
	if h.Get("Content-Type") != "application/json;charset=UTF-8" || h.Get("X-Requested-With") != "XMLHttpRequest" {
		t.Errorf("modules/connect headers %v", h)
	}
	if h := fc.seenFor("GET /v1/user")[0].Header; h.Get("X-Requested-With") != "" {
		t.Errorf("plain request sent X-Requested-With")
	}
}

func TestUserShapes(t *testing.T) {
	for name, body := range map[string]string{
		"wrapped": `{"user":{"id":1,"name":"Test User","email":"a@b","language":"en","allow_email_type_alarms":true}}`,
		"bare":    `{"id":1,"name":"Test User","email":"a@b","language":"en","allow_email_type_alarms":true}`,
	} {
		t.Run(name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.handleJSON("GET /v1/user", 200, body)
			c, _ := newClient(t, fc)
			u, err := c.User(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if u.ID != 1 || u.Name != "Test User" || u.Email != "a@b" || u.Language != "en" || u.Raw["allow_email_type_alarms"] != true {
				t.Fatalf("user %+v", u)
			}
		})
	}
}

func TestPermissionsShapes(t *testing.T) {
	for name, body := range map[string]string{
		"wrapped strings": `{"permissions":["DISPLAY_MENU_OBJECTS","SUBMISSION_CREATE"]}`,
		"bare list":       `["DISPLAY_MENU_OBJECTS","SUBMISSION_CREATE"]`,
		"name objects":    `{"permissions":[{"name":"DISPLAY_MENU_OBJECTS"},"SUBMISSION_CREATE",{"id":3},7]}`,
	} {
		t.Run(name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.handleJSON("GET /v1/user/permissions", 200, body)
			fc.handleJSON("GET /v1/objects/12/permissions", 200, body)
			c, _ := newClient(t, fc)
			want := []string{"DISPLAY_MENU_OBJECTS", "SUBMISSION_CREATE"}
			p, err := c.Permissions(ctxT(t))
			if err != nil || !reflect.DeepEqual(p, want) {
				t.Fatalf("Permissions = %v, %v", p, err)
			}
			p, err = c.ObjectPermissions(ctxT(t), 12)
			if err != nil || !reflect.DeepEqual(p, want) {
				t.Fatalf("ObjectPermissions = %v, %v", p, err)
			}
		})
	}
}

func TestObjectsShapes(t *testing.T) {
	rec := `{"id":1,"name":"Home","addressCountry":"PL","addressCity":"Warsaw","addressPostCode":null}`
	cases := []struct {
		name   string
		status int
		body   string
		want   int
	}{
		{"data", 200, `{"data":[` + rec + `]}`, 1},
		{"objects", 200, `{"objects":[` + rec + `,` + rec + `]}`, 2},
		{"bare list", 200, `[` + rec + `]`, 1},
		{"other object", 200, `{"unexpected":true}`, 0},
		{"201", 201, `[` + rec + `]`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.handleJSON("GET /v1/objects", tc.status, tc.body)
			c, _ := newClient(t, fc)
			objs, err := c.Objects(ctxT(t))
			if err != nil || objs == nil || len(objs) != tc.want {
				t.Fatalf("Objects = %v, %v; want %d", objs, err, tc.want)
			}
			if tc.want > 0 && (objs[0].ID != 1 || objs[0].Name != "Home" || objs[0].AddressCity != "Warsaw" || objs[0].AddressPostCode != "") {
				t.Fatalf("object %+v", objs[0])
			}
		})
	}
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/objects", 500, `{"message":"boom"}`)
	c, _ := newClient(t, fc)
	if _, err := c.Objects(ctxT(t)); err == nil {
		t.Fatal("status 500 must be an error")
	}
}

func TestObjectDetails(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/objects/1", 200, `{"object":{"id":1,"name":"Home","addressCountry":"PL"},"status":"SUCCESS"}`)
	fc.handleJSON("GET /v1/objects/2", 200, `[1]`)
	var endpoints []string
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
		cfg.Observer = func(e string, code int, _ time.Duration) { endpoints = append(endpoints, e) }
	})
	d, err := c.Object(ctxT(t), 1)
	if err != nil || d.Status != "SUCCESS" || d.Object.ID != 1 || d.Object.Name != "Home" {
		t.Fatalf("Object = %+v, %v", d, err)
	}
	var de *cloudclient.DecodeError
	if _, err := c.Object(ctxT(t), 2); !errors.As(err, &de) {
		t.Fatalf("non-object body: err = %v", err)
	}
	if endpoints[len(endpoints)-1] != "GET /v1/objects/{id}" {
		t.Fatalf("endpoints %v", endpoints)
	}
}

const healthyRow = `{"devid":"FTTCTBSLCE","name":"Module name","gateway":{"address":"gateway-addr","interface":null,"version":"1.0"},
 "deviceMenu":0,"deviceLanguageVariant":0,"devices":[],"services":[],"permissions":["P1"],"acceptedAt":0,
 "connectedAt":1757000000,"moduleAlarms":0,"parameterSchemas":[{"name":"s","id":3,"value":{}}],"id":1,"moduleAddress":"module-addr",
 "moduleInterface":null,"moduleVersion":"2.08","moduleServices":[],"moduleTitle":"HT DasPell GL 37kW",
 "isAcceptedAt":"2026-04-06T00:00:00Z","isConnectedAt":"2026-04-06T00:00:00Z"}`

const degradedRow = `{"devid":"DEGRADED01","name":"x","gateway":{},"connectedAt":null,"moduleAddress":null,"moduleInterface":null,"moduleVersion":null,"isConnectedAt":null}`

func TestDecodeModules(t *testing.T) {
	cases := []struct {
		name       string
		body       string
		recognised bool
		devids     []string
		online     []bool
		dropped    int
	}{
		{"data wrapper", `{"data":[` + healthyRow + `]}`, true, []string{"FTTCTBSLCE"}, []bool{true}, 0},
		{"bare list", `[` + healthyRow + `]`, true, []string{"FTTCTBSLCE"}, []bool{true}, 0},
		{"empty list", `[]`, true, nil, nil, 0},
		{"unexpected object", `{"unexpected":true}`, false, nil, nil, 0},
		{"data not a list", `{"data":{"x":1}}`, false, nil, nil, 0},
		{"degraded rows parse as offline", `[` + degradedRow + `,{"devid":"NULLGW","gateway":null,"connectedAt":0}]`, true, []string{"DEGRADED01", "NULLGW"}, []bool{false, false}, 0},
		{"bad rows dropped alone", `[` + healthyRow + `,{"name":"no devid"},{"devid":5},{"devid":"X","connectedAt":"soon"},{"devid":"Y","connectedAt":true},7,null]`,
			true, []string{"FTTCTBSLCE"}, []bool{true}, 6},
		{"numeric string connectedAt", `[{"devid":"S","connectedAt":"1700000000"}]`, true, []string{"S"}, []bool{true}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := cloudclient.DecodeModules([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			var devids []string
			var online []bool
			for _, m := range l.Modules {
				devids = append(devids, m.Devid)
				online = append(online, m.Online())
			}
			if l.Recognised != tc.recognised || !reflect.DeepEqual(devids, tc.devids) || !reflect.DeepEqual(online, tc.online) || l.Dropped != tc.dropped {
				t.Fatalf("listing %+v (devids %v online %v)", l, devids, online)
			}
		})
	}
	l, _ := cloudclient.DecodeModules([]byte(`[` + healthyRow + `]`))
	m := l.Modules[0]
	if m.Name != "Module name" || m.Title != "HT DasPell GL 37kW" || m.Version != "2.08" || m.ID != 1 || m.ConnectedAt != 1757000000 ||
		m.Gateway != (wire.Gateway{Address: "gateway-addr", Version: "1.0"}) || m.Address != "module-addr" || m.Interface != "" ||
		len(m.ParameterSchemas) != 1 || m.ParameterSchemas[0].ID != 3 || m.IsConnectedAt != "2026-04-06T00:00:00Z" {
		t.Fatalf("healthy row %+v", m)
	}
	l, _ = cloudclient.DecodeModules([]byte(`[` + degradedRow + `]`))
	if g := l.Modules[0]; g.Gateway != (wire.Gateway{}) || g.Version != "" || g.ConnectedAt != 0 {
		t.Fatalf("degraded row %+v", g)
	}
	for _, bad := range []string{`<html>`, `[{"devid":"A"}`, ``} {
		if _, err := cloudclient.DecodeModules([]byte(bad)); err == nil {
			t.Errorf("DecodeModules(%q) accepted malformed JSON", bad)
		}
	}
}

func TestModulesEndpoint(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/modules", 200, `{"data":[`+healthyRow+`]}`)
	c, _ := newClient(t, fc)
	l, err := c.Modules(ctxT(t), 42)
	if err != nil || len(l.Modules) != 1 || !l.Recognised {
		t.Fatalf("Modules = %+v, %v", l, err)
	}
	if q := fc.seenFor("GET /v1/modules")[0].Query; q != "page=1&limit=999&group_id=42" {
		t.Fatalf("query %q", q)
	}
	for _, tc := range []struct {
		name   string
		status int
		ctype  string
		body   string
		check  func(error) bool
	}{
		{"201 is an error", 201, "application/json", `[]`, func(err error) bool {
			var ae *cloudclient.APIError
			return errors.As(err, &ae) && ae.Status == 201
		}},
		{"HTML 503", 503, "text/html", "<html>Service Unavailable</html>", func(err error) bool {
			return cloudclient.IsExpectedUpstream(err) && !strings.Contains(err.Error(), "html")
		}},
		{"HTML 200", 200, "text/html", "<html>hello</html>", func(err error) bool {
			var de *cloudclient.DecodeError
			return errors.As(err, &de) && de.Endpoint == "GET /v1/modules" && de.Status == 200 && !strings.Contains(err.Error(), "hello")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc.handle("GET /v1/modules", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			l, err := c.Modules(ctxT(t), 42)
			if l != nil || !tc.check(err) {
				t.Fatalf("Modules = %+v, %v", l, err)
			}
		})
	}
}

func TestModuleCardAndSystemVersion(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/modules/FTTCTBSLCE/card", 200, `{"id":175,"moduleId":302,"clientFullName":"Jan Kowalski","clientAddressCity":"Warszawa"}`)
	fc.handleJSON("GET /v1/system/version", 200, `{"version":{"version":"1.0.2501310630","devMode":false}}`)
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Container = "TisConnect" })
	ctx := ctxT(t)
	card, err := c.ModuleCard(ctx, "FTTCTBSLCE")
	if err != nil || card.ID != 175 || card.ModuleID != 302 || card.ClientFullName != "Jan Kowalski" || card.Raw["clientAddressCity"] != "Warszawa" {
		t.Fatalf("card %+v, %v", card, err)
	}
	v, err := c.SystemVersion(ctx)
	if err != nil || v.Version != "1.0.2501310630" || v.DevMode {
		t.Fatalf("version %+v, %v", v, err)
	}
	req := fc.seenFor("GET /v1/system/version")[0]
	if req.Query != "container=TisConnect&platform=0" || req.Header.Get("Authorization") != "" {
		t.Fatalf("system version request %q auth %q", req.Query, req.Header.Get("Authorization"))
	}
	if fc.loginCount() != 1 {
		t.Fatalf("logins %d", fc.loginCount())
	}
}

func TestPlatforms(t *testing.T) {
	if cloudclient.BragerOne != (cloudclient.Platform{"bragerone", "https://io.brager.pl", "https://one.brager.pl", "BragerOne"}) ||
		cloudclient.TiSConnect != (cloudclient.Platform{"tisconnect", "https://io.tisconnect.info", "https://www.tisconnect.info", "TisConnect"}) {
		t.Fatal("platform presets changed")
	}
	cfg := cloudclient.TiSConnect.Config()
	if cfg.BaseURL != "https://io.tisconnect.info" || cfg.AssetsURL != "https://www.tisconnect.info" || cfg.Container != "TisConnect" {
		t.Fatalf("config %+v", cfg)
	}
	// A base URL given with its /v1 suffix is accepted.
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/system/version", 200, `{"version":{"version":"x"}}`)
	c, err := cloudclient.New(cloudclient.Config{BaseURL: fc.URL() + "/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.SystemVersion(ctxT(t)); err != nil || v.Version != "x" {
		t.Fatalf("version %+v %v", v, err)
	}
	if req := fc.seenFor("GET /v1/system/version")[0]; req.Query != "container=BragerOne&platform=0" || req.Header.Get("Origin") != fc.URL() {
		t.Fatalf("default container / origin: %q %q", req.Query, req.Header.Get("Origin"))
	}
	for _, bad := range []string{"", "io.brager.pl", "ftp://x"} {
		if _, err := cloudclient.New(cloudclient.Config{BaseURL: bad}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}

// TestDroppedModuleRowsWarnOncePerChange: a row that stays invalid is told at
// WARN once, not at every poll; a new count is news again, and so is the end.
func TestDroppedModuleRowsWarnOncePerChange(t *testing.T) {
	fc := newFakeCloud(t)
	logs := &logBuffer{}
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Logger = logs.logger() })
	warns := func() int { return strings.Count(logs.String(), `level=WARN msg="module list rows failed validation`) }
	poll := func(body string) {
		t.Helper()
		fc.handleJSON("GET /v1/modules", 200, body)
		if _, err := c.Modules(ctxT(t), 1); err != nil {
			t.Fatal(err)
		}
	}
	oneBad := `[` + healthyRow + `,{"name":"no devid"}]`
	for range 3 {
		poll(oneBad)
	}
	if n := warns(); n != 1 {
		t.Fatalf("one invalid row over three polls: %d WARNs, want 1:\n%s", n, logs)
	}
	poll(`[` + healthyRow + `,{"name":"no devid"},{"devid":5}]`)
	if n := warns(); n != 2 {
		t.Fatalf("a second invalid row: %d WARNs, want 2:\n%s", n, logs)
	}
	poll(`[` + healthyRow + `]`)
	if !strings.Contains(logs.String(), `level=INFO msg="module list rows valid again"`) {
		t.Fatalf("the end of the invalid rows is not told:\n%s", logs)
	}
	poll(oneBad)
	if n := warns(); n != 3 {
		t.Fatalf("invalid rows again after a clean list: %d WARNs, want 3:\n%s", n, logs)
	}
}

// TestListObjectsTrust: a listing proves an object left only when its shape
// was known and no row was dropped; ListObjects says both.
func TestListObjectsTrust(t *testing.T) {
	rec := `{"id":1,"name":"Home"}`
	cases := []struct {
		name       string
		status     int
		body       string
		objects    int
		recognised bool
		dropped    int
	}{
		{"whole", 200, `{"data":[` + rec + `,{"id":2,"name":"Cottage"}]}`, 2, true, 0},
		{"empty list", 200, `[]`, 0, true, 0},
		{"row without id", 200, `[` + rec + `,{"name":"no id"},"text"]`, 1, true, 2},
		{"unknown shape", 200, `{"unexpected":[]}`, 0, false, 0},
		{"scalar", 200, `7`, 0, false, 0},
		{"204", 204, ``, 0, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.handleJSON("GET /v1/objects", tc.status, tc.body)
			c, _ := newClient(t, fc)
			l, err := c.ListObjects(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Objects) != tc.objects || l.Recognised != tc.recognised || l.Dropped != tc.dropped {
				t.Fatalf("ListObjects = %d objects, recognised %v, dropped %d; want %d, %v, %d",
					len(l.Objects), l.Recognised, l.Dropped, tc.objects, tc.recognised, tc.dropped)
			}
		})
	}
}
