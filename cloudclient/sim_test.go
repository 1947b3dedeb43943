package cloudclient_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// startSim runs the simulated cloud on loopback.
func startSim(t *testing.T, opts cloudsim.Options) *cloudsim.Cloud {
	t.Helper()
	if opts.Modules == 0 {
		opts.Modules = 2
	}
	if opts.ParamsPerModule == 0 {
		opts.ParamsPerModule = 60
	}
	sim := cloudsim.New(opts)
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	return sim
}

func simClient(t *testing.T, sim *cloudsim.Cloud) (*cloudclient.Client, *sleeps, *logBuffer) {
	t.Helper()
	sl := &sleeps{}
	logs := &logBuffer{}
	c, err := cloudclient.New(cloudclient.Config{
		BaseURL:     sim.URL(),
		AssetsURL:   sim.URL(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
		Sleep:       sl.sleep,
		WriteRate:   -1,
		Logger:      logs.logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, sl, logs
}

// sameJSON compares two decoded values by their JSON encoding.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func TestSimEveryEndpoint(t *testing.T) {
	sim := startSim(t, cloudsim.Options{})
	c, _, _ := simClient(t, sim)
	ctx := ctxT(t)
	devids := sim.Devids()
	obj := sim.ObjectID()

	res, err := c.Login(ctx)
	if err != nil || res.Token.AccessToken == "" || res.Token.ExpiresAt.IsZero() {
		t.Fatalf("Login = %+v, %v", res, err)
	}
	if u, err := c.User(ctx); err != nil || u.ID == 0 || u.Email != cloudsim.DefaultEmail {
		t.Fatalf("User = %+v, %v", u, err)
	}
	if p, err := c.Permissions(ctx); err != nil || len(p) == 0 {
		t.Fatalf("Permissions = %v, %v", p, err)
	}
	if o, err := c.Objects(ctx); err != nil || len(o) != 1 || o[0].ID != obj {
		t.Fatalf("Objects = %+v, %v", o, err)
	}
	if d, err := c.Object(ctx, obj); err != nil || d.Object.ID != obj || d.Status == "" {
		t.Fatalf("Object = %+v, %v", d, err)
	}
	if p, err := c.ObjectPermissions(ctx, obj); err != nil || len(p) == 0 {
		t.Fatalf("ObjectPermissions = %v, %v", p, err)
	}
	l, err := c.Modules(ctx, obj)
	if err != nil || !l.Recognised || len(l.Modules) != len(devids) || l.Dropped != 0 {
		t.Fatalf("Modules = %+v, %v", l, err)
	}
	for _, m := range l.Modules {
		if !m.Online() || m.Devid == "" {
			t.Fatalf("module row %+v", m)
		}
	}
	if bound, err := c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "any-sid", Modules: devids, GroupID: obj}); err != nil || !bound {
		t.Fatalf("ModulesConnect = %v, %v", bound, err)
	}
	ups, err := c.PrimeWithRetry(ctx, devids)
	if err != nil || len(ups) == 0 {
		t.Fatalf("Prime = %d updates, %v", len(ups), err)
	}
	for _, d := range devids {
		want := sim.Params(d)
		got := map[string]any{}
		for _, u := range ups {
			if u.Devid == d && u.HasValue && u.Value != nil {
				got[u.Key()] = u.Value
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s: prime gave %d values, the cloud holds %d", d, len(got), len(want))
		}
		for k, v := range want {
			if !sameJSON(got[k], v) {
				t.Fatalf("%s %s: prime %#v, cloud %#v", d, k, got[k], v)
			}
		}
	}
	if q, err := c.ActivityQuantity(ctx, devids); err != nil {
		t.Fatalf("ActivityQuantity = %v, %v", q, err)
	}
	if q, err := c.AlarmQuantity(ctx, devids); err != nil || len(q) != len(devids) {
		t.Fatalf("AlarmQuantity = %v, %v", q, err)
	}
	if _, err := c.Alarms(ctx, cloudclient.ListRequest{Modules: devids}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AlarmHistory(ctx, cloudclient.ListRequest{Modules: devids}); err != nil {
		t.Fatal(err)
	}
	if card, err := c.ModuleCard(ctx, devids[0]); err != nil || card.ID == 0 {
		t.Fatalf("ModuleCard = %+v, %v", card, err)
	}
	if v, err := c.SystemVersion(ctx); err != nil || v.Version == "" {
		t.Fatalf("SystemVersion = %+v, %v", v, err)
	}

	// A plain write changes the value at the cloud and shows in the activity log.
	var key string
	for k := range sim.Params(devids[0]) {
		if strings.Contains(k, ".v") {
			key = k
			break
		}
	}
	pool, param, _ := strings.Cut(key, ".")
	if r, err := c.Command(ctx, cloudclient.Command{Devid: devids[0], Pool: pool, Parameter: param, Value: 42.0, ParameterName: "PARAM_X"}); err != nil || r.Status != 200 {
		t.Fatalf("Command = %+v, %v", r, err)
	}
	if v := sim.Params(devids[0])[key]; !sameJSON(v, 42.0) {
		t.Fatalf("%s after the write = %#v", key, v)
	}
	act, err := c.Activity(ctx, cloudclient.ListRequest{Modules: devids[:1]})
	if err != nil || len(act) == 0 || !sameJSON(act[len(act)-1].Value, 42.0) && !sameJSON(act[0].Value, 42.0) {
		t.Fatalf("Activity = %+v, %v", act, err)
	}
	if r, err := c.Command(ctx, cloudclient.Command{Devid: devids[0], Command: "MODULE_RESTART"}); err != nil || r.Status != 200 {
		t.Fatalf("raw Command = %+v, %v", r, err)
	}

	// Assets: the second fetch is revalidated (304) and served from the cache.
	name := "/assets/" + webapp.IndexName()
	a1, err := c.Asset(ctx, name)
	if err != nil || len(a1) == 0 {
		t.Fatalf("Asset = %d bytes, %v", len(a1), err)
	}
	a2, err := c.Asset(ctx, name)
	if err != nil || !bytes.Equal(a1, a2) {
		t.Fatalf("cached Asset: %v", err)
	}
	if n := sim.Requests("GET /assets/{name}"); n != 2 {
		t.Fatalf("asset requests %d", n)
	}

	if err := c.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AccessToken(); !errors.Is(err, cloudclient.ErrNotAuthenticated) {
		t.Fatalf("token after logout: %v", err)
	}
	if sim.Requests("POST /v1/auth/revoke") != 1 {
		t.Fatal("logout did not reach the cloud")
	}
}

func TestSimFaults(t *testing.T) {
	sim := startSim(t, cloudsim.Options{})
	c, sl, logs := simClient(t, sim)
	ctx := ctxT(t)
	obj := sim.ObjectID()
	devids := sim.Devids()
	if err := c.EnsureAuth(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("503 storm with HTML", func(t *testing.T) {
		id := sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 503})
		for range 3 {
			_, err := c.Modules(ctx, obj)
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 503 || !cloudclient.IsExpectedUpstream(err) || strings.Contains(err.Error(), "<") {
				t.Fatalf("err = %v", err)
			}
		}
		sim.Clear(id)
		if strings.Contains(logs.String(), "<html") || !strings.Contains(logs.String(), "status=503") {
			t.Fatalf("logs: %s", logs.String())
		}
		if l, err := c.Modules(ctx, obj); err != nil || len(l.Modules) != len(devids) {
			t.Fatalf("after the storm: %+v %v", l, err)
		}
	})
	t.Run("dispatch timeout on prime is retried", func(t *testing.T) {
		before := len(sl.got())
		sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultDispatchTimeout, Path: "POST /v1/modules/parameters", Count: 2})
		ups, err := c.PrimeWithRetry(ctx, devids)
		if err != nil || len(ups) == 0 || len(sl.got())-before != 2 {
			t.Fatalf("PrimeWithRetry = %d, %v after sleeps %v", len(ups), err, sl.got()[before:])
		}
		sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultDispatchTimeout, Path: "POST /v1/modules/parameters", Count: 1})
		if _, err := c.Prime(ctx, devids); !cloudclient.IsExpectedUpstream(err) {
			t.Fatalf("dispatch timeout not expected-upstream: %v", err)
		}
	})
	t.Run("login duplicate entry", func(t *testing.T) {
		before := sim.Requests("POST /v1/auth/user")
		sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLoginDupEntry, Count: 2})
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		if n := sim.Requests("POST /v1/auth/user") - before; n != 3 {
			t.Fatalf("%d login attempts, want 3", n)
		}
	})
	t.Run("revoked tokens are cured by a fresh login", func(t *testing.T) {
		before := sim.Requests("POST /v1/auth/user")
		old, _ := c.AccessToken()
		sim.RevokeTokens()
		if _, err := c.User(ctx); err != nil {
			t.Fatalf("User after revocation: %v", err)
		}
		if n := sim.Requests("POST /v1/auth/user") - before; n != 1 {
			t.Fatalf("%d logins, want 1", n)
		}
		if tok, _ := c.AccessToken(); tok == old {
			t.Fatal("the revoked token is still in use")
		}
	})
	t.Run("degraded row is offline, not dropped", func(t *testing.T) {
		sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultDegradedRow, Devid: devids[0], Count: 1})
		l, err := c.Modules(ctx, obj)
		if err != nil || len(l.Modules) != len(devids) || l.Dropped != 0 {
			t.Fatalf("Modules = %+v, %v", l, err)
		}
		for _, m := range l.Modules {
			if (m.Devid == devids[0]) == m.Online() {
				t.Fatalf("row %+v", m)
			}
		}
	})
	t.Run("missing row", func(t *testing.T) {
		sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: devids[0], Count: 1})
		l, err := c.Modules(ctx, obj)
		if err != nil || !l.Recognised || len(l.Modules) != len(devids)-1 {
			t.Fatalf("Modules = %+v, %v", l, err)
		}
		for _, m := range l.Modules {
			if m.Devid == devids[0] {
				t.Fatal("missing row present")
			}
		}
	})
	for _, tc := range []struct {
		body       string
		recognised bool
	}{{"[]", true}, {`{"unexpected":true}`, false}} {
		t.Run(fmt.Sprintf("listing %s", tc.body), func(t *testing.T) {
			sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultListing, Body: tc.body, Count: 1})
			l, err := c.Modules(ctx, obj)
			if err != nil || l.Recognised != tc.recognised || len(l.Modules) != 0 {
				t.Fatalf("Modules = %+v, %v", l, err)
			}
		})
	}
	t.Run("connect not bound", func(t *testing.T) {
		id := sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultConnectNotBound})
		before := sim.Requests("POST /v1/modules/connect")
		bound, err := c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "ns", EngineSID: "eng", Modules: devids, GroupID: obj})
		if err != nil || bound {
			t.Fatalf("ModulesConnect = %v, %v", bound, err)
		}
		if n := sim.Requests("POST /v1/modules/connect") - before; n != 3 {
			t.Fatalf("%d candidates posted, want 3 (namespace SID only)", n)
		}
		sim.Clear(id)
		if bound, err := c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "ns2", Modules: devids, GroupID: obj}); err != nil || !bound {
			t.Fatalf("after clearing: %v, %v", bound, err)
		}
	})
	t.Run("4xx aborts connect", func(t *testing.T) {
		id := sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/modules/connect", Status: 400})
		defer sim.Clear(id)
		before := sim.Requests("POST /v1/modules/connect")
		if _, err := c.ModulesConnect(ctx, cloudclient.BindRequest{NamespaceSID: "ns", EngineSID: "eng", Modules: devids, GroupID: obj}); err == nil {
			t.Fatal("no error")
		}
		if n := sim.Requests("POST /v1/modules/connect") - before; n != 1 {
			t.Fatalf("%d requests", n)
		}
	})
}
