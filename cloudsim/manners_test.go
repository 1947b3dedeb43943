package cloudsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// The failures a client must meet with manners toward the real cloud:
// throttling, a firewall's page, a login outage, revoked tokens, and the
// counters that show what a client cost the cloud.

var credentials = map[string]string{"email": DefaultEmail, "password": DefaultPassword}

func TestThrottleFaults(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 29, 6, 30, 0, 0, time.UTC)}
	c := startCloud(t, Options{Now: clock.Now, TokenTTL: -1})
	tok := login(t, c)
	body := map[string]any{"modules": c.Devids()}

	// 429 with Retry-After in seconds, JSON like an API gateway's, for its
	// Count only and on its path only.
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: cloudapi.EndpointParameters, Status: 429, RetryAfterS: 30, Count: 2})
	if r := call(t, c, "GET", "/v1/objects", tok, nil); r.status != 200 {
		t.Fatalf("throttle of another path hit GET /v1/objects: %d", r.status)
	}
	for i := 0; i < 2; i++ {
		r := call(t, c, "POST", "/v1/modules/parameters", tok, body)
		if r.status != 429 || r.header.Get("Retry-After") != "30" || string(r.body) != `{"message":"Too Many Requests"}` ||
			!strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Fatalf("throttled %d = %d Retry-After %q %q %s", i, r.status, r.header.Get("Retry-After"), r.header.Get("Content-Type"), r.body)
		}
	}
	if r := call(t, c, "POST", "/v1/modules/parameters", tok, body); r.status != 200 {
		t.Fatalf("after Count ran out = %d", r.status)
	}

	// 429 without Retry-After, until cleared; Body replaces the message.
	id := c.Inject(Fault{Kind: FaultHTTPStatus, Path: "/v1/objects", Status: 429, Body: "Rate exceeded"})
	for i := 0; i < 3; i++ {
		r := call(t, c, "GET", "/v1/objects", tok, nil)
		if r.status != 429 || r.header.Values("Retry-After") != nil || string(r.body) != `{"message":"Rate exceeded"}` {
			t.Fatalf("bare 429 = %d %v %s", r.status, r.header.Values("Retry-After"), r.body)
		}
	}
	c.Clear(id)

	// Retry-After as an HTTP date, that far ahead of the cloud's clock
	// (not the test's: the fake clock is hours away from it).
	clock.Add(90 * time.Minute)
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: "GET /v1/objects", Status: 429, RetryAfterS: 120, RetryAfterDate: true, Count: 1})
	r := call(t, c, "GET", "/v1/objects", tok, nil)
	want := time.Date(2026, 11, 29, 8, 2, 0, 0, time.UTC).Format(http.TimeFormat)
	if r.status != 429 || r.header.Get("Retry-After") != want {
		t.Fatalf("dated 429 = %d Retry-After %q, want %q", r.status, r.header.Get("Retry-After"), want)
	}
	if at, err := http.ParseTime(r.header.Get("Retry-After")); err != nil || !at.Equal(clock.Now().Add(2*time.Minute)) {
		t.Fatalf("Retry-After %q does not parse to the cloud's clock + 120s: %v %v", r.header.Get("Retry-After"), at, err)
	}

	// 503 with Retry-After: the front end's HTML page, and the header.
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: cloudapi.EndpointModules, Status: 503, RetryAfterS: 5, Count: 1})
	r = call(t, c, "GET", "/v1/modules", tok, nil)
	if r.status != 503 || r.header.Get("Retry-After") != "5" || string(r.body) != html503 {
		t.Fatalf("503 with Retry-After = %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}

	// Over the control endpoint, with the JSON names.
	r = call(t, c, "POST", "/control/faults", "", `{"kind":"http_status","path":"POST /v1/auth/user","status":429,"retry_after_s":7,"count":1}`)
	if r.status != 200 {
		t.Fatalf("control inject = %d %s", r.status, r.body)
	}
	r = call(t, c, "POST", "/v1/auth/user", "", credentials)
	if r.status != 429 || r.header.Get("Retry-After") != "7" {
		t.Fatalf("throttled login = %d %q", r.status, r.header.Get("Retry-After"))
	}
	if k := c.Counters(); k.LoginsFaulted != 1 || k.Logins != 1 {
		t.Fatalf("throttled login counted as %+v", k)
	}
}

func TestFirewallHTML403(t *testing.T) {
	c := startCloud(t, Options{})
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: cloudapi.EndpointLogin, Status: 403, HTML: true, Count: 1})
	r := call(t, c, "POST", "/v1/auth/user", "", credentials)
	if r.status != 403 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(r.body), "Access denied") || json.Valid(r.body) {
		t.Fatalf("firewall 403 = %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if k := c.Counters(); k.LoginAttempts != 1 || k.LoginsFaulted != 1 || k.LoginsRejected != 0 || k.TokensIssued != 0 {
		t.Fatalf("firewall 403 counted as %+v", k)
	}
	tok := login(t, c) // the fault was for one request: the password is good

	// Another 4xx as HTML gets the plain page; Body is the page verbatim.
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: "/v1/objects", Status: 404, HTML: true, Count: 1})
	if r := call(t, c, "GET", "/v1/objects", tok, nil); r.status != 404 || string(r.body) != "<html><body><h1>404 Not Found</h1></body></html>" {
		t.Fatalf("HTML 404 = %d %s", r.status, r.body)
	}
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: "/v1/objects", Status: 403, HTML: true, Body: "<p>blocked</p>", Count: 1})
	if r := call(t, c, "GET", "/v1/objects", tok, nil); r.status != 403 || string(r.body) != "<p>blocked</p>" ||
		!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("HTML 403 with Body = %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	// Without HTML a 403 is still the API's JSON.
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: "/v1/objects", Status: 403, Count: 1})
	if r := call(t, c, "GET", "/v1/objects", tok, nil); r.status != 403 || string(r.body) != `{"message":"Forbidden"}` {
		t.Fatalf("JSON 403 = %d %s", r.status, r.body)
	}
	// The empty variant.
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: cloudapi.EndpointLogin, Status: 403, EmptyBody: true, Count: 1})
	if r := call(t, c, "POST", "/v1/auth/user", "", credentials); r.status != 403 || len(r.body) != 0 {
		t.Fatalf("empty 403 = %d %q", r.status, r.body)
	}
}

func TestLoginOutageFiveConcurrentLogins(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	c.Inject(Fault{Kind: FaultHTTPStatus, Path: cloudapi.EndpointLogin}) // 503 HTML until cleared
	const n = 5
	var wg sync.WaitGroup
	results := make([]resp, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = call(t, c, "POST", "/v1/auth/user", "", credentials)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.status != 503 || string(r.body) != html503 {
			t.Errorf("login %d during the outage = %d %s", i, r.status, r.body)
		}
	}
	if r := call(t, c, "GET", "/v1/objects", tok, nil); r.status != 200 {
		t.Fatalf("the login outage hit the rest of the API: %d", r.status)
	}
	k := c.Counters()
	if k.LoginAttempts != n+1 || k.LoginsFaulted != n || k.Logins != 1 || k.TokensIssued != 1 {
		t.Fatalf("counters after the outage: %+v", k)
	}
	c.ClearAll()
	login(t, c)
}

func TestResetConnectionFault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	c.Inject(Fault{Kind: FaultResetConnection, Path: cloudapi.EndpointLogin, Count: 1})
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	data, _ := json.Marshal(credentials)
	res, err := hc.Post(c.URL()+"/v1/auth/user", "application/json", strings.NewReader(string(data)))
	if err == nil {
		res.Body.Close()
		t.Fatalf("reset login answered %d", res.StatusCode)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("reset login timed out instead of failing at once: %v", err)
	}
	if r := call(t, c, "GET", "/v1/objects", tok, nil); r.status != 200 {
		t.Fatalf("reset_connection of the login hit GET /v1/objects: %d", r.status)
	}
	login(t, c) // Count 1 is spent
	if k := c.Counters(); k.LoginsFaulted != 1 || k.Logins != 2 {
		t.Fatalf("counters: %+v", k)
	}
}

func TestRevokeEndsOnlyItsToken(t *testing.T) {
	c := startCloud(t, Options{})
	a, b := login(t, c), login(t, c)
	if r := call(t, c, "POST", "/v1/auth/revoke", a, nil); r.status != 204 {
		t.Fatalf("revoke = %d %s", r.status, r.body)
	}
	if r := call(t, c, "GET", "/v1/user", a, nil); r.status != 401 {
		t.Fatalf("revoked token on REST = %d", r.status)
	}
	if r := call(t, c, "GET", "/v1/user", b, nil); r.status != 200 {
		t.Fatalf("the other token after a revoke = %d", r.status)
	}
	if e := rawRefused(t, c, a); !strings.Contains(e, "Unauthorized") {
		t.Fatalf("revoked token's join refused with %q", e)
	}
	rawDial(t, c, b).join()
	// A second revoke with the dead token is a 401 and ends nothing.
	if r := call(t, c, "POST", "/v1/auth/revoke", a, nil); r.status != 401 {
		t.Fatalf("revoke with a revoked token = %d", r.status)
	}
	k := c.Counters()
	if k.TokensIssued != 2 || k.TokensValid != 1 || k.Revokes != 1 || k.TokensRevoked != 1 || k.Requests[cloudapi.EndpointRevoke] != 2 {
		t.Fatalf("counters: %+v", k)
	}
}

func TestRevokeAllSessions(t *testing.T) {
	t.Run("fault", func(t *testing.T) {
		c := startCloud(t, Options{})
		a, b, d := login(t, c), login(t, c), login(t, c)
		r := call(t, c, "POST", "/control/faults", "", `{"kind":"revoke_all_sessions","count":1}`)
		if r.status != 200 {
			t.Fatalf("inject = %d %s", r.status, r.body)
		}
		if r := call(t, c, "POST", "/v1/auth/revoke", a, nil); r.status != 204 {
			t.Fatalf("revoke = %d", r.status)
		}
		for _, tok := range []string{a, b, d} {
			if r := call(t, c, "GET", "/v1/user", tok, nil); r.status != 401 {
				t.Fatalf("a token of the user after revoke-all = %d", r.status)
			}
		}
		if e := rawRefused(t, c, b); !strings.Contains(e, "Unauthorized") {
			t.Fatalf("join after revoke-all: %q", e)
		}
		if k := c.Counters(); k.Revokes != 1 || k.TokensRevoked != 3 || k.TokensValid != 0 {
			t.Fatalf("counters: %+v", k)
		}
		// The fault was for one revoke: the next ends its own token only.
		e, f := login(t, c), login(t, c)
		call(t, c, "POST", "/v1/auth/revoke", e, nil)
		if r := call(t, c, "GET", "/v1/user", f, nil); r.status != 200 {
			t.Fatalf("spent revoke_all_sessions still ended other tokens: %d", r.status)
		}
	})
	t.Run("option", func(t *testing.T) {
		c := startCloud(t, Options{RevokeAllSessions: true})
		a, b := login(t, c), login(t, c)
		call(t, c, "POST", "/v1/auth/revoke", b, nil)
		if r := call(t, c, "GET", "/v1/user", a, nil); r.status != 401 {
			t.Fatalf("RevokeAllSessions left a token valid: %d", r.status)
		}
		if k := c.Counters(); k.TokensValid != 0 || k.TokensRevoked != 2 {
			t.Fatalf("counters: %+v", k)
		}
	})
}

func TestCountersRequestsByObject(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, Objects: 2})
	objs := c.Objects()
	home, cottage := objs[0], objs[1]
	hk, ck := strconv.Itoa(home.ID), strconv.Itoa(cottage.ID)
	tok := login(t, c)
	call(t, c, "GET", "/v1/objects", tok, nil)
	call(t, c, "GET", fmt.Sprintf("/v1/objects/%d", home.ID), tok, nil)
	call(t, c, "GET", fmt.Sprintf("/v1/objects/%d/permissions", cottage.ID), tok, nil)
	call(t, c, "GET", fmt.Sprintf("/v1/modules?group_id=%d", cottage.ID), tok, nil)
	call(t, c, "POST", "/v1/modules/parameters", tok, map[string]any{"modules": home.Devids})
	call(t, c, "POST", "/v1/modules/alarms/quantity", tok, map[string]any{"modules": cottage.Devids})
	call(t, c, "GET", "/v1/modules/"+cottage.Devids[0]+"/card", tok, nil)
	call(t, c, "POST", "/v1/modules/connect", tok, map[string]any{"wsid": "stale", "modules": home.Devids, "group_id": strconv.Itoa(home.ID)})
	r := call(t, c, "POST", "/v1/module/command/raw", tok, map[string]any{"devid": home.Devids[0], "command": "X"})
	if r.status != 200 {
		t.Fatalf("the handler lost the body the counting read: %d %s", r.status, r.body)
	}
	k := c.Counters()
	want := map[string]map[string]int{
		"": {cloudapi.EndpointLogin: 1, cloudapi.EndpointObjects: 1},
		hk: {cloudapi.EndpointObject: 1, cloudapi.EndpointParameters: 1, cloudapi.EndpointModulesConnect: 1, cloudapi.EndpointCommandRaw: 1},
		ck: {cloudapi.EndpointObjectPermissions: 1, cloudapi.EndpointModules: 1, cloudapi.EndpointAlarmsQuantity: 1, cloudapi.EndpointModuleCard: 1},
	}
	if got, w := mustJSON(k.RequestsByObject), mustJSON(want); got != w {
		t.Fatalf("requests by object\n got %s\nwant %s", got, w)
	}
	if k.Requests[cloudapi.EndpointParameters] != 1 || k.Requests[cloudapi.EndpointLogin] != 1 {
		t.Fatalf("requests: %v", k.Requests)
	}
}

func TestCountersRealtime(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, Objects: 2})
	objs := c.Objects()
	tok := login(t, c)
	w1, w2 := rawDial(t, c, tok), rawDial(t, c, tok)
	sid1, sid2 := w1.join(), w2.join()
	rawRefused(t, c, "not-a-token")
	eventually(t, "three handshakes, two joins, one refused", func() bool {
		k := c.Counters()
		return k.Handshakes == 3 && k.Joins == 2 && k.JoinsRefused == 1
	})
	if k := c.Counters(); len(k.JoinsByObject) != 0 || len(k.HandshakesByObject) != 0 {
		t.Fatalf("unbound sessions counted by object: %+v", k)
	}
	bind(t, c, tok, "wsid", sid1, objs[0].Devids)
	bind(t, c, tok, "wsid", sid1, objs[0].Devids[:1]) // a second bind of the same session counts nothing
	bind(t, c, tok, "wsid", sid2, objs[1].Devids)
	k := c.Counters()
	want := map[string]int{strconv.Itoa(objs[0].ID): 1, strconv.Itoa(objs[1].ID): 1}
	if mustJSON(k.JoinsByObject) != mustJSON(want) || mustJSON(k.HandshakesByObject) != mustJSON(want) {
		t.Fatalf("by object: joins %v handshakes %v, want %v", k.JoinsByObject, k.HandshakesByObject, want)
	}
	if k.Requests["GET /socket.io/"] != 3 {
		t.Fatalf("socket.io requests = %d", k.Requests["GET /socket.io/"])
	}
}

func TestResetCountersAndStateJSON(t *testing.T) {
	c := startCloud(t, Options{})
	a := login(t, c)
	call(t, c, "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": "wrong"})
	call(t, c, "GET", "/v1/objects", a, nil)
	rawDial(t, c, a).join()
	eventually(t, "the join counted", func() bool { return c.Counters().Joins == 1 })
	k := c.Counters()
	if k.LoginAttempts != 2 || k.Logins != 1 || k.LoginsRejected != 1 || k.TokensValid != 1 {
		t.Fatalf("before reset: %+v", k)
	}

	r := call(t, c, "POST", "/control/reset-counters", "", nil)
	if r.status != 200 {
		t.Fatalf("reset-counters = %d %s", r.status, r.body)
	}
	b := login(t, c)
	r = call(t, c, "GET", "/control/state", "", nil)
	if r.status != 200 {
		t.Fatalf("state = %d", r.status)
	}
	for _, secret := range []string{a, b, DefaultPassword} {
		if strings.Contains(string(r.body), secret) {
			t.Fatal("/control/state holds a token or the password")
		}
	}
	var st struct {
		Since         time.Time                 `json:"counters_since"`
		LoginAttempts int                       `json:"login_attempts"`
		Logins        int                       `json:"logins"`
		Rejected      int                       `json:"logins_rejected"`
		Issued        int                       `json:"tokens_issued"`
		Valid         int                       `json:"tokens_valid"`
		Handshakes    int                       `json:"handshakes"`
		Joins         int                       `json:"joins"`
		Requests      map[string]int            `json:"requests"`
		ByObject      map[string]map[string]int `json:"requests_by_object"`
	}
	if err := json.Unmarshal(r.body, &st); err != nil {
		t.Fatal(err)
	}
	// Counted afresh: the new login only; the valid tokens are the present.
	if st.LoginAttempts != 1 || st.Logins != 1 || st.Rejected != 0 || st.Issued != 1 || st.Valid != 2 ||
		st.Handshakes != 0 || st.Joins != 0 || st.Since.IsZero() {
		t.Fatalf("state after reset: %s", r.body)
	}
	if mustJSON(st.Requests) != `{"POST /v1/auth/user":1}` || mustJSON(st.ByObject) != `{"":{"POST /v1/auth/user":1}}` {
		t.Fatalf("requests after reset: %v %v", st.Requests, st.ByObject)
	}
	if c.Logins() != 1 || c.Requests(cloudapi.EndpointObjects) != 0 {
		t.Fatalf("Logins %d, Requests(objects) %d after reset", c.Logins(), c.Requests(cloudapi.EndpointObjects))
	}
}

// rawRefused opens an Engine.IO session and sends the /ws CONNECT, which
// must be refused; it returns the CONNECT_ERROR's text.
func rawRefused(t *testing.T, c *Cloud, tok string) string {
	t.Helper()
	w := rawDial(t, c, tok)
	if open := w.text(); !strings.HasPrefix(open, "0{") {
		t.Fatalf("OPEN = %q", open)
	}
	w.send("40/ws,")
	e := w.text()
	if !strings.HasPrefix(e, "44/ws,") {
		t.Fatalf("CONNECT answered %q, want a CONNECT_ERROR", e)
	}
	return e
}
