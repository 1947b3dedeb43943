package cloudclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// The account's gate (gate.go, throttle.go, tokens.go and the login flight
// of auth.go): pure decisions first, then the behaviour against the fake
// cloud.

// fakeClock is a mutex-guarded clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// gateT0 is a whole second, so an HTTP date names it exactly.
var gateT0 = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

// invalidate ends one token at the fake cloud.
func (fc *fakeCloud) invalidate(tok string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	delete(fc.valid, tok)
}

// bearer is the token of a request the fake cloud received.
func bearer(s seen) string { return strings.TrimPrefix(s.Header.Get("Authorization"), "Bearer ") }

// revokedTokens lists the tokens of the revoke requests in order.
func revokedTokens(fc *fakeCloud) []string {
	var out []string
	for _, s := range fc.seenFor("POST /v1/auth/revoke") {
		out = append(out, bearer(s))
	}
	return out
}

// revokeEndsToken makes the fake cloud's revoke end the token it is given.
func revokeEndsToken(fc *fakeCloud) {
	fc.handle("POST /v1/auth/revoke", func(w http.ResponseWriter, r *http.Request) {
		fc.invalidate(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		w.WriteHeader(204)
	})
}

// answerWith is a loginHook (or handler body) writing a fixed answer.
func answerWith(status int, ctype, body string, header map[string]string) func(w http.ResponseWriter, r *http.Request, n int) bool {
	return func(w http.ResponseWriter, r *http.Request, n int) bool {
		writeAnswer(w, status, ctype, body, header)
		return true
	}
}

func writeAnswer(w http.ResponseWriter, status int, ctype, body string, header map[string]string) {
	if ctype != "" {
		w.Header().Set("Content-Type", ctype)
	}
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func TestParseRetryAfter(t *testing.T) {
	now := gateT0
	for _, tc := range []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"seconds", "120", 120 * time.Second, true},
		{"seconds with spaces", " 7 ", 7 * time.Second, true},
		{"zero", "0", 0, true},
		{"negative", "-5", 0, false},
		{"absent", "", 0, false},
		{"blank", "   ", 0, false},
		{"garbage", "soon", 0, false},
		{"fraction", "1.5", 0, false},
		{"seconds then text", "10 seconds", 0, false},
		{"IMF date in the future", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"RFC 850 date in the future", now.Add(90 * time.Second).Format(time.RFC850), 90 * time.Second, true},
		{"ANSI C date in the future", now.Add(90 * time.Second).Format(time.ANSIC), 90 * time.Second, true},
		{"date now", now.Format(http.TimeFormat), 0, true},
		{"date in the past", now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"one day", "86400", 24 * time.Hour, true},
		{"a day and a second is capped", "86401", 24 * time.Hour, true},
		{"huge is capped", "1000000000", 24 * time.Hour, true},
		{"beyond int64 is capped", "99999999999999999999", 24 * time.Hour, true},
	} {
		d, ok := cloudclient.ParseRetryAfter(tc.in, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("%s: ParseRetryAfter(%q) = %v, %v; want %v, %v", tc.name, tc.in, d, ok, tc.want, tc.ok)
		}
	}
}

func TestThrottlePause(t *testing.T) {
	now := gateT0
	const base, limit = 10 * time.Second, 15 * time.Minute
	for _, tc := range []struct {
		name   string
		status int
		ra     string
		streak int
		want   time.Duration
		ok     bool
	}{
		{"429 with Retry-After", 429, "30", 0, 30 * time.Second, true},
		{"429 with Retry-After ignores the streak", 429, "30", 5, 30 * time.Second, true},
		{"429 with Retry-After 0", 429, "0", 3, 0, true},
		{"429 with Retry-After above the cap", 429, "3600", 0, limit, true},
		{"429 with an HTTP date", 429, now.Add(time.Minute).Format(http.TimeFormat), 0, time.Minute, true},
		{"429 without Retry-After, first", 429, "", 0, base, true},
		{"429 without Retry-After, second in a row", 429, "", 1, 2 * base, true},
		{"429 without Retry-After, third in a row", 429, "", 2, 4 * base, true},
		{"429 without Retry-After, seventh in a row", 429, "", 6, 64 * base, true},
		{"429 without Retry-After, doubling reaches the cap", 429, "", 7, limit, true},
		{"429 without Retry-After, long streak stays at the cap", 429, "", 1000, limit, true},
		{"429 with an unreadable Retry-After doubles", 429, "later", 1, 2 * base, true},
		{"503 with Retry-After", 503, "5", 0, 5 * time.Second, true},
		{"503 with Retry-After above the cap", 503, "7200", 0, limit, true},
		{"503 with an HTTP date", 503, now.Add(45 * time.Second).Format(http.TimeFormat), 0, 45 * time.Second, true},
		{"503 without Retry-After is maintenance", 503, "", 0, 0, false},
		{"503 with an unreadable Retry-After", 503, "later", 0, 0, false},
		{"500 with Retry-After", 500, "5", 0, 0, false},
		{"502", 502, "", 0, 0, false},
		{"200 with Retry-After", 200, "5", 0, 0, false},
		{"401", 401, "", 0, 0, false},
	} {
		d, ok := cloudclient.ThrottlePause(tc.status, tc.ra, now, tc.streak, base, limit)
		if d != tc.want || ok != tc.ok {
			t.Errorf("%s: ThrottlePause = %v, %v; want %v, %v", tc.name, d, ok, tc.want, tc.ok)
		}
	}
}

func TestLoginRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		failures    int
		base, limit time.Duration
		want        time.Duration
	}{
		{1, time.Second, 5 * time.Minute, time.Second},
		{2, time.Second, 5 * time.Minute, 2 * time.Second},
		{3, time.Second, 5 * time.Minute, 4 * time.Second},
		{9, time.Second, 5 * time.Minute, 256 * time.Second},
		{10, time.Second, 5 * time.Minute, 5 * time.Minute},
		{100, time.Second, 5 * time.Minute, 5 * time.Minute},
		{1, 3 * time.Second, 10 * time.Second, 3 * time.Second},
		{2, 3 * time.Second, 10 * time.Second, 6 * time.Second},
		{3, 3 * time.Second, 10 * time.Second, 10 * time.Second},
		{4, 3 * time.Second, 10 * time.Second, 10 * time.Second},
		{1, time.Minute, 10 * time.Second, 10 * time.Second}, // a base above the cap is capped
	} {
		if got := cloudclient.LoginRetryAfter(tc.failures, tc.base, tc.limit); got != tc.want {
			t.Errorf("LoginRetryAfter(%d, %v, %v) = %v, want %v", tc.failures, tc.base, tc.limit, got, tc.want)
		}
	}
	if cloudclient.DefaultLoginRetryBase != time.Second || cloudclient.DefaultLoginRetryMax != 5*time.Minute {
		t.Errorf("login retry defaults %v / %v", cloudclient.DefaultLoginRetryBase, cloudclient.DefaultLoginRetryMax)
	}
}

// TestClassifyLoginOfRealAnswers: the outcome of the fake cloud's login
// answers, only a verdict on the credentials counting as one; every other
// failure arms the account-wide login backoff, a verdict holds the
// credentials instead.
func TestClassifyLoginOfRealAnswers(t *testing.T) {
	const accessDenied = `<!DOCTYPE html><html><head><title>Access denied</title></head><body><h1>Access denied</h1><p>Error 1020</p></body></html>`
	for _, tc := range []struct {
		name   string
		status int
		ctype  string
		body   string
		header map[string]string
		want   cloudapi.LoginOutcome
		// retry is the login backoff the failure arms (0: none).
		retry time.Duration
	}{
		{"401 HTML", 401, "text/html", "<html><body>Unauthorized</body></html>", nil, cloudapi.LoginRejected, 0},
		{"401 empty", 401, "", "", nil, cloudapi.LoginRejected, 0},
		{"401 JSON", 401, "application/json", `{"message":"Invalid credentials"}`, nil, cloudapi.LoginRejected, 0},
		{"403 JSON", 403, "application/json", `{"message":"Account locked"}`, nil, cloudapi.LoginRejected, 0},
		{"403 HTML access denied", 403, "text/html; charset=UTF-8", accessDenied, nil, cloudapi.LoginBlocked, time.Second},
		{"403 empty", 403, "", "", nil, cloudapi.LoginBlocked, time.Second},
		{"403 JSON type, empty body", 403, "application/json", "", nil, cloudapi.LoginBlocked, time.Second},
		{"403 JSON type, HTML body", 403, "application/json", accessDenied, nil, cloudapi.LoginBlocked, time.Second},
		{"400 empty", 400, "", "", nil, cloudapi.LoginBlocked, time.Second},
		{"400 JSON", 400, "application/json", `{"message":"email must be an email"}`, nil, cloudapi.LoginRejected, 0},
		{"422 JSON", 422, "application/json", `{"message":"Unprocessable"}`, nil, cloudapi.LoginRejected, 0},
		{"422 HTML", 422, "text/html", "<html>nope</html>", nil, cloudapi.LoginBlocked, time.Second},
		{"404 HTML", 404, "text/html", "<html><body>Not Found</body></html>", nil, cloudapi.LoginBlocked, time.Second},
		{"405 JSON", 405, "application/json", `{"message":"Method not allowed"}`, nil, cloudapi.LoginBlocked, time.Second},
		{"408", 408, "text/html", "<html>Request Timeout</html>", nil, cloudapi.LoginUnreachable, time.Second},
		{"429", 429, "application/json", `{"message":"Too many requests"}`, nil, cloudapi.LoginRateLimited, time.Second},
		{"429 with Retry-After", 429, "application/json", `{"message":"Too many requests"}`, map[string]string{"Retry-After": "30"}, cloudapi.LoginRateLimited, 30 * time.Second},
		{"503 with Retry-After", 503, "text/html", "<html>Maintenance</html>", map[string]string{"Retry-After": "2"}, cloudapi.LoginRateLimited, 2 * time.Second},
		{"503 without Retry-After", 503, "text/html", "<html>Service Unavailable</html>", nil, cloudapi.LoginUnreachable, time.Second},
		{"500", 500, "application/json", `{"message":"boom"}`, nil, cloudapi.LoginUnreachable, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.loginHook = answerWith(tc.status, tc.ctype, tc.body, tc.header)
			clk := newFakeClock(gateT0)
			var mu sync.Mutex
			var obs []cloudapi.LoginOutcome
			c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
				cfg.Now = clk.Now
				cfg.LoginObserver = func(o cloudapi.LoginOutcome) { mu.Lock(); obs = append(obs, o); mu.Unlock() }
			})
			_, err := c.Login(ctxT(t))
			if err == nil {
				t.Fatal("login succeeded")
			}
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != tc.status {
				t.Fatalf("err = %#v, want the login's APIError %d", err, tc.status)
			}
			if got := cloudclient.ClassifyLogin(err); got != tc.want {
				t.Errorf("ClassifyLogin = %q, want %q (err %v)", got, tc.want, err)
			}
			if got, want := cloudclient.IsCredentialVerdict(err), tc.want == cloudapi.LoginRejected; got != want {
				t.Errorf("IsCredentialVerdict = %v, want %v", got, want)
			}
			mu.Lock()
			if len(obs) != 1 || obs[0] != tc.want {
				t.Errorf("LoginObserver %v, want [%s]", obs, tc.want)
			}
			mu.Unlock()
			acc := c.Account()
			if acc.LastLogin.Outcome != tc.want || !acc.LastLogin.At.Equal(gateT0) {
				t.Errorf("LastLogin %+v, want %s at %v", acc.LastLogin, tc.want, gateT0)
			}
			if acc.LastLogin.Err != "POST /v1/auth/user: HTTP "+itoa(tc.status) {
				t.Errorf("LastLogin.Err %q: want the endpoint and status only", acc.LastLogin.Err)
			}
			var wantRetry, wantHeld time.Time
			if tc.retry > 0 {
				wantRetry = gateT0.Add(tc.retry)
			} else {
				wantHeld = gateT0.Add(cloudclient.DefaultRejectedRetry)
			}
			if !acc.LoginRetryAt.Equal(wantRetry) || !acc.CredentialsHeldUntil.Equal(wantHeld) {
				t.Errorf("LoginRetryAt %v CredentialsHeldUntil %v, want %v / %v", acc.LoginRetryAt, acc.CredentialsHeldUntil, wantRetry, wantHeld)
			}
			// Either way the next login is not sent at once.
			err2 := c.EnsureAuth(ctxT(t))
			var be *cloudclient.LoginBackoffError
			var he *cloudclient.CredentialsHeldError
			if tc.retry > 0 && !errors.As(err2, &be) || tc.retry == 0 && !errors.As(err2, &he) {
				t.Errorf("second login: err %v", err2)
			}
			if got := cloudclient.ClassifyLogin(err2); got != tc.want {
				t.Errorf("second login: ClassifyLogin = %q, want %q", got, tc.want)
			}
			if fc.loginCount() != 1 {
				t.Errorf("%d logins, want 1", fc.loginCount())
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestFailedLoginIsSharedAndBacksOff: concurrent callers share one failed
// login; the account-wide backoff then answers every caller at once with
// that failure, doubling with each failure in a row and ending with a
// success.
func TestFailedLoginIsSharedAndBacksOff(t *testing.T) {
	fc := newFakeCloud(t)
	clk := newFakeClock(gateT0)
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
		cfg.Now = clk.Now
		cfg.MaxInFlight = 32
		cfg.LoginRetryBase = 30 * time.Second
		cfg.LoginRetryMax = 5 * time.Minute
	})
	ctx := ctxT(t)

	const callers = 5
	var launched sync.WaitGroup
	launched.Add(callers)
	allLaunched := make(chan struct{})
	go func() { launched.Wait(); close(allLaunched) }()
	var failing atomic.Bool
	failing.Store(true)
	fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 1 {
			<-allLaunched                     // hold the login until every caller runs
			time.Sleep(50 * time.Millisecond) // and is waiting for it
		}
		if failing.Load() {
			writeAnswer(w, 503, "text/html", "<html>Service Unavailable</html>", nil)
			return true
		}
		return false
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			launched.Done()
			errs <- c.FreshLogin(ctx, clk.Now())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		var ae *cloudclient.APIError
		if !errors.As(err, &ae) || ae.Status != 503 || ae.Endpoint != cloudapi.EndpointLogin {
			t.Fatalf("caller err = %v, want the shared 503 of the login", err)
		}
		if cloudclient.ClassifyLogin(err) != cloudapi.LoginUnreachable || cloudclient.IsCredentialVerdict(err) {
			t.Fatalf("caller err %v classified %q", err, cloudclient.ClassifyLogin(err))
		}
	}
	if n := fc.loginCount(); n != 1 {
		t.Fatalf("%d login requests for %d concurrent callers, want 1", n, callers)
	}

	// The backoff answers every path at once, without a request.
	backoff := func(what string, err error, until time.Time) {
		t.Helper()
		var be *cloudclient.LoginBackoffError
		if !errors.As(err, &be) || !be.Until.Equal(until) {
			t.Fatalf("%s: err = %v, want *LoginBackoffError until %v", what, err, until)
		}
		var ae *cloudclient.APIError
		if !errors.As(err, &ae) || ae.Status != 503 {
			t.Fatalf("%s: the backoff error does not carry the last failure: %v", what, err)
		}
	}
	until := gateT0.Add(30 * time.Second)
	backoff("EnsureAuth", c.EnsureAuth(ctx), until)
	backoff("FreshLogin", c.FreshLogin(ctx, clk.Now()), until)
	_, err := c.Login(ctx)
	backoff("Login", err, until)
	_, err = c.HandshakeToken(ctx)
	backoff("HandshakeToken", err, until)
	_, err = c.User(ctx)
	backoff("User", err, until)
	if n := fc.loginCount(); n != 1 || len(fc.seenFor("GET /v1/user")) != 0 {
		t.Fatalf("%d logins, %d user requests during the backoff", n, len(fc.seenFor("GET /v1/user")))
	}
	if acc := c.Account(); !acc.LoginRetryAt.Equal(until) || acc.LastLogin.Outcome != cloudapi.LoginUnreachable {
		t.Fatalf("Account %+v", acc)
	}

	clk.Advance(30*time.Second - time.Nanosecond)
	backoff("EnsureAuth just before the end", c.EnsureAuth(ctx), until)

	// Past the backoff: one request, which fails again: the pause doubles.
	clk.Advance(time.Nanosecond)
	if err := c.EnsureAuth(ctx); err == nil || fc.loginCount() != 2 {
		t.Fatalf("after the backoff: err %v, logins %d, want one more failed login", err, fc.loginCount())
	}
	until = clk.Now().Add(60 * time.Second)
	backoff("second backoff", c.EnsureAuth(ctx), until)

	clk.Advance(60 * time.Second)
	failing.Store(false)
	if err := c.FreshLogin(ctx, clk.Now()); err != nil || fc.loginCount() != 3 {
		t.Fatalf("after the second backoff: err %v, logins %d, want exactly one more", err, fc.loginCount())
	}
	if acc := c.Account(); !acc.LoginRetryAt.IsZero() || acc.LastLogin.Outcome != cloudapi.LoginOK || !acc.HasToken {
		t.Fatalf("after the success: %+v", acc)
	}

	// A success ends the streak: the next failure pauses for the base again,
	// and keeps the token it failed to replace.
	failing.Store(true)
	clk.Advance(time.Minute)
	if err := c.ForceRelogin(ctx); err == nil || fc.loginCount() != 4 {
		t.Fatalf("forced login: err %v, logins %d", err, fc.loginCount())
	}
	if acc := c.Account(); !acc.LoginRetryAt.Equal(clk.Now().Add(30 * time.Second)) {
		t.Fatalf("LoginRetryAt %v, want the base pause after a success", acc.LoginRetryAt)
	}
	if tok, err := c.EnsureToken(ctx); err != nil || tok != "tok-1" || fc.loginCount() != 4 {
		t.Fatalf("EnsureToken during the backoff = %q, %v (logins %d): the usable token must serve", tok, err, fc.loginCount())
	}
}

// TestFreshLoginSince: a token issued at or after since is reused; an older
// one is replaced, once for every caller asking with the same since.
func TestFreshLoginSince(t *testing.T) {
	fc := newFakeCloud(t)
	clk := newFakeClock(gateT0)
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Now = clk.Now; cfg.MaxInFlight = 8 })
	ctx := ctxT(t)

	if _, err := c.Login(ctx); err != nil {
		t.Fatal(err)
	}
	t1 := gateT0
	clk.Advance(time.Minute)
	for _, since := range []time.Time{t1, t1.Add(-time.Second), time.Time{}} {
		if err := c.FreshLogin(ctx, since); err != nil || fc.loginCount() != 1 {
			t.Fatalf("FreshLogin(%v) with a token issued at %v: err %v, logins %d, want the token reused", since, t1, err, fc.loginCount())
		}
	}
	if err := c.FreshLogin(ctx, t1.Add(time.Nanosecond)); err != nil || fc.loginCount() != 2 {
		t.Fatalf("FreshLogin after the token's issue: err %v, logins %d, want one login", err, fc.loginCount())
	}
	t2 := clk.Now()
	if acc := c.Account(); !acc.TokenIssuedAt.Equal(t2) {
		t.Fatalf("TokenIssuedAt %v, want %v", acc.TokenIssuedAt, t2)
	}
	if tok, _ := c.AccessToken(); tok != "tok-2" {
		t.Fatalf("token %q", tok)
	}

	// Two recovery steps whose trouble began after tok-2 was issued ask at
	// once: one login.
	clk.Advance(time.Minute)
	since := t2.Add(time.Second)
	var launched sync.WaitGroup
	launched.Add(2)
	allLaunched := make(chan struct{})
	go func() { launched.Wait(); close(allLaunched) }()
	fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		<-allLaunched
		time.Sleep(50 * time.Millisecond)
		return false
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			launched.Done()
			errs <- c.FreshLogin(ctx, since)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := fc.loginCount(); n != 3 {
		t.Fatalf("%d logins, want 3: the two callers with the same since share one", n)
	}
	// A late caller with the same since is served by that login too.
	if err := c.FreshLogin(ctx, since); err != nil || fc.loginCount() != 3 {
		t.Fatalf("late caller: err %v, logins %d", err, fc.loginCount())
	}
	// The same object's next step (since: its previous step) logs in again.
	since = clk.Now().Add(time.Nanosecond)
	clk.Advance(time.Second)
	if err := c.FreshLogin(ctx, since); err != nil || fc.loginCount() != 4 {
		t.Fatalf("next step: err %v, logins %d", err, fc.loginCount())
	}
}

// TestRejectedCredentialsAreHeld: once the cloud rejected a password it is
// not sent again until it changes or RejectedRetry passes.
func TestRejectedCredentialsAreHeld(t *testing.T) {
	setup := func(t *testing.T) (*fakeCloud, *cloudclient.Client, *fakeClock, func(string), *atomic.Int32) {
		fc := newFakeCloud(t) // answers a wrong password with 401
		clk := newFakeClock(gateT0)
		var mu sync.Mutex
		password := "wrong"
		var asked atomic.Int32
		c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
			cfg.Now = clk.Now
			cfg.RejectedRetry = time.Hour
			cfg.Credentials = func(context.Context) (cloudclient.Credentials, error) {
				asked.Add(1)
				mu.Lock()
				defer mu.Unlock()
				return cloudclient.Credentials{Email: testEmail, Password: password}, nil
			}
		})
		setPassword := func(p string) { mu.Lock(); password = p; mu.Unlock() }
		ctx := ctxT(t)
		_, err := c.Login(ctx)
		if cloudclient.ClassifyLogin(err) != cloudapi.LoginRejected || !cloudclient.IsCredentialVerdict(err) {
			t.Fatalf("first login: %v", err)
		}
		if acc := c.Account(); !acc.CredentialsHeldUntil.Equal(gateT0.Add(time.Hour)) || acc.LastLogin.Outcome != cloudapi.LoginRejected {
			t.Fatalf("after the rejection: %+v", acc)
		}
		return fc, c, clk, setPassword, &asked
	}
	held := func(t *testing.T, what string, err error, until time.Time) {
		t.Helper()
		var he *cloudclient.CredentialsHeldError
		if !errors.As(err, &he) || !he.Until.Equal(until) {
			t.Fatalf("%s: err = %v, want *CredentialsHeldError until %v", what, err, until)
		}
		var ae *cloudclient.APIError
		if !errors.As(err, &ae) || ae.Status != 401 {
			t.Fatalf("%s: the held error does not carry the verdict: %v", what, err)
		}
		if cloudclient.ClassifyLogin(err) != cloudapi.LoginRejected || !cloudclient.IsCredentialVerdict(err) {
			t.Fatalf("%s: %v classified %q", what, err, cloudclient.ClassifyLogin(err))
		}
	}

	t.Run("nothing is sent while held", func(t *testing.T) {
		fc, c, clk, _, _ := setup(t)
		fc.handleJSON("GET /v1/user", 200, `{"id":7}`)
		ctx := ctxT(t)
		until := gateT0.Add(time.Hour)
		held(t, "FreshLogin", c.FreshLogin(ctx, clk.Now()), until)
		held(t, "EnsureAuth", c.EnsureAuth(ctx), until)
		_, err := c.Login(ctx)
		held(t, "Login", err, until)
		_, err = c.HandshakeToken(ctx)
		held(t, "HandshakeToken", err, until)
		_, err = c.User(ctx)
		held(t, "User", err, until)
		clk.Advance(time.Hour - time.Nanosecond)
		held(t, "EnsureAuth just before the hold ends", c.EnsureAuth(ctx), until)
		if fc.loginCount() != 1 || len(fc.seenFor("GET /v1/user")) != 0 {
			t.Fatalf("%d logins, %d user requests while held", fc.loginCount(), len(fc.seenFor("GET /v1/user")))
		}
	})

	t.Run("a changed password is sent at once", func(t *testing.T) {
		fc, c, clk, setPassword, _ := setup(t)
		ctx := ctxT(t)
		clk.Advance(time.Minute)
		held(t, "EnsureAuth", c.EnsureAuth(ctx), gateT0.Add(time.Hour))
		setPassword(testPassword)
		if err := c.FreshLogin(ctx, clk.Now()); err != nil || fc.loginCount() != 2 {
			t.Fatalf("FreshLogin with the new password: err %v, logins %d, want one login", err, fc.loginCount())
		}
		if acc := c.Account(); !acc.CredentialsHeldUntil.IsZero() || !acc.HasToken || acc.LastLogin.Outcome != cloudapi.LoginOK {
			t.Fatalf("after the new password: %+v", acc)
		}
		if err := c.EnsureAuth(ctx); err != nil || fc.loginCount() != 2 {
			t.Fatalf("EnsureAuth with the token: %v, logins %d", err, fc.loginCount())
		}
	})

	t.Run("another wrong password is sent once and held in turn", func(t *testing.T) {
		fc, c, clk, setPassword, _ := setup(t)
		ctx := ctxT(t)
		clk.Advance(time.Minute)
		setPassword("also wrong")
		err := c.EnsureAuth(ctx)
		var he *cloudclient.CredentialsHeldError
		if errors.As(err, &he) || cloudclient.ClassifyLogin(err) != cloudapi.LoginRejected || fc.loginCount() != 2 {
			t.Fatalf("the changed password: err %v, logins %d, want a sent and rejected login", err, fc.loginCount())
		}
		held(t, "EnsureAuth", c.EnsureAuth(ctx), clk.Now().Add(time.Hour))
		if fc.loginCount() != 2 {
			t.Fatalf("%d logins", fc.loginCount())
		}
	})

	t.Run("the same password is sent again after RejectedRetry", func(t *testing.T) {
		fc, c, clk, _, _ := setup(t)
		ctx := ctxT(t)
		clk.Advance(time.Hour)
		err := c.EnsureAuth(ctx)
		var he *cloudclient.CredentialsHeldError
		if errors.As(err, &he) || cloudclient.ClassifyLogin(err) != cloudapi.LoginRejected || fc.loginCount() != 2 {
			t.Fatalf("after the hold: err %v, logins %d, want one sent and rejected login", err, fc.loginCount())
		}
		held(t, "EnsureAuth", c.EnsureAuth(ctx), clk.Now().Add(time.Hour))
		if fc.loginCount() != 2 {
			t.Fatalf("%d logins", fc.loginCount())
		}
	})
}

// TestSupersededTokenIsRevoked: a token a newer login replaced is revoked
// once nothing uses it, the current one never.
func TestSupersededTokenIsRevoked(t *testing.T) {
	// settle gives a wrongly started revoke the time to be seen.
	settle := func() { time.Sleep(100 * time.Millisecond) }

	t.Run("after a newer login", func(t *testing.T) {
		fc := newFakeCloud(t)
		revokeEndsToken(fc)
		fc.handleJSON("GET /v1/user", 200, `{"id":7}`)
		c, _ := newClient(t, fc)
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		if acc := c.Account(); acc.TokensHeld != 1 || acc.SupersededRevoked != 0 {
			t.Fatalf("after one login: %+v", acc)
		}
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the revoke of tok-1", func() bool { return c.Account().SupersededRevoked == 1 })
		settle()
		if got := revokedTokens(fc); len(got) != 1 || got[0] != "tok-1" {
			t.Fatalf("revokes %q, want exactly one of tok-1", got)
		}
		if acc := c.Account(); acc.TokensHeld != 1 || acc.SupersededRevoked != 1 || acc.RevokeDisabled {
			t.Fatalf("after the revoke: %+v", acc)
		}
		// The current token still serves (the revoke ended only tok-1), and
		// its answer keeps revoking on.
		if _, err := c.User(ctx); err != nil || fc.loginCount() != 2 {
			t.Fatalf("User: %v, logins %d", err, fc.loginCount())
		}
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the revoke of tok-2", func() bool { return c.Account().SupersededRevoked == 2 })
		settle()
		if got := revokedTokens(fc); len(got) != 2 || got[1] != "tok-2" {
			t.Fatalf("revokes %q", got)
		}
	})

	t.Run("not while a session holds it", func(t *testing.T) {
		fc := newFakeCloud(t)
		revokeEndsToken(fc)
		c, _ := newClient(t, fc)
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		sctx, st := cloudclient.WithSessionToken(ctx)
		tok, err := c.HandshakeToken(sctx)
		if err != nil || tok != "tok-1" || fc.loginCount() != 1 {
			t.Fatalf("HandshakeToken = %q, %v (logins %d)", tok, err, fc.loginCount())
		}
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		settle()
		if got := revokedTokens(fc); len(got) != 0 {
			t.Fatalf("revokes %q while the session holds tok-1", got)
		}
		if acc := c.Account(); acc.TokensHeld != 2 || acc.SupersededRevoked != 0 {
			t.Fatalf("while held: %+v", acc)
		}
		st.Release()
		waitFor(t, "the revoke of tok-1", func() bool { return c.Account().SupersededRevoked == 1 })
		st.Release() // a second release is harmless
		settle()
		if got := revokedTokens(fc); len(got) != 1 || got[0] != "tok-1" {
			t.Fatalf("revokes %q, want exactly one of tok-1", got)
		}
		if acc := c.Account(); acc.TokensHeld != 1 {
			t.Fatalf("after the release: %+v", acc)
		}
		var nilST *cloudclient.SessionToken
		nilST.Release()
	})

	t.Run("a session's next handshake releases the token it held", func(t *testing.T) {
		fc := newFakeCloud(t)
		revokeEndsToken(fc)
		c, _ := newClient(t, fc)
		ctx := ctxT(t)
		sctx, st := cloudclient.WithSessionToken(ctx)
		if tok, err := c.HandshakeToken(sctx); err != nil || tok != "tok-1" {
			t.Fatalf("HandshakeToken = %q, %v", tok, err)
		}
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		settle()
		if got := revokedTokens(fc); len(got) != 0 {
			t.Fatalf("revokes %q while held", got)
		}
		if tok, err := c.HandshakeToken(sctx); err != nil || tok != "tok-2" {
			t.Fatalf("second HandshakeToken = %q, %v", tok, err)
		}
		waitFor(t, "the revoke of tok-1", func() bool { return c.Account().SupersededRevoked == 1 })
		// tok-2 is held by the session now: its supersession waits too.
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		settle()
		if got := revokedTokens(fc); len(got) != 1 || got[0] != "tok-1" {
			t.Fatalf("revokes %q, want only tok-1", got)
		}
		st.Release()
		waitFor(t, "the revoke of tok-2", func() bool { return c.Account().SupersededRevoked == 2 })
	})

	t.Run("not while a request uses it", func(t *testing.T) {
		fc := newFakeCloud(t)
		revokeEndsToken(fc)
		entered := make(chan struct{})
		gate := make(chan struct{})
		var gateOnce sync.Once
		openGate := func() { gateOnce.Do(func() { close(gate) }) }
		t.Cleanup(openGate) // before the server closes: a failed test does not hang on the held request
		var first atomic.Bool
		fc.handle("GET /v1/user", func(w http.ResponseWriter, r *http.Request) {
			if first.CompareAndSwap(false, true) {
				close(entered)
				<-gate
			}
			writeAnswer(w, 200, "application/json", `{"id":7}`, nil)
		})
		c, _ := newClient(t, fc)
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := c.User(ctx); done <- err }()
		<-entered // the request with tok-1 is at the cloud
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		settle()
		if got := revokedTokens(fc); len(got) != 0 {
			t.Fatalf("revokes %q while a request uses tok-1", got)
		}
		openGate()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the revoke of tok-1", func() bool { return c.Account().SupersededRevoked == 1 })
		if got := revokedTokens(fc); len(got) != 1 || got[0] != "tok-1" {
			t.Fatalf("revokes %q", got)
		}
	})

	t.Run("a refused token is no sign of a revoke ending every session unless one came just before", func(t *testing.T) {
		fc := newFakeCloud(t)
		revokeEndsToken(fc)
		fc.handleJSON("GET /v1/user", 200, `{"id":7}`)
		c, _ := newClient(t, fc)
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		fc.revokeAll() // the cloud ends the session on its own
		if _, err := c.User(ctx); err != nil || fc.loginCount() != 2 {
			t.Fatalf("User: %v, logins %d", err, fc.loginCount())
		}
		waitFor(t, "the revoke of tok-1", func() bool { return c.Account().SupersededRevoked == 1 })
		if c.Account().RevokeDisabled {
			t.Fatal("revokes disabled by a refusal no revoke preceded")
		}
		// The revoke's probe is the next answer only: a 200 clears it, a
		// later refusal is no sign either.
		if _, err := c.User(ctx); err != nil {
			t.Fatal(err)
		}
		fc.revokeAll()
		if _, err := c.User(ctx); err != nil || fc.loginCount() != 3 {
			t.Fatalf("User: %v, logins %d", err, fc.loginCount())
		}
		waitFor(t, "the revoke of tok-2", func() bool { return c.Account().SupersededRevoked == 2 })
		if c.Account().RevokeDisabled {
			t.Fatal("revokes disabled by a refusal after the probe's answer")
		}
		if got := revokedTokens(fc); strings.Join(got, ",") != "tok-1,tok-2" {
			t.Fatalf("revokes %q", got)
		}
	})

	t.Run("KeepSupersededTokens", func(t *testing.T) {
		fc := newFakeCloud(t)
		revokeEndsToken(fc)
		c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.KeepSupersededTokens = true })
		ctx := ctxT(t)
		for range 2 {
			if _, err := c.Login(ctx); err != nil {
				t.Fatal(err)
			}
		}
		settle()
		if got := revokedTokens(fc); len(got) != 0 {
			t.Fatalf("revokes %q", got)
		}
		if acc := c.Account(); acc.TokensHeld != 2 {
			t.Fatalf("%+v", acc)
		}
	})
}

// TestRevokeEndingEverySessionStopsRevokes: on a cloud whose revoke ends
// every session of the user, the refusal of the current token right after
// a revoke turns the revokes of superseded tokens off, with one warning.
func TestRevokeEndingEverySessionStopsRevokes(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handle("POST /v1/auth/revoke", func(w http.ResponseWriter, r *http.Request) {
		fc.revokeAll()
		w.WriteHeader(204)
	})
	fc.handleJSON("GET /v1/user", 200, `{"id":7}`)
	logs := &logBuffer{}
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Logger = logs.logger() })
	ctx := ctxT(t)
	const warning = "this cloud's revoke seems to end every session of the user"

	if _, err := c.Login(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Login(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revoke of tok-1", func() bool { return c.Account().SupersededRevoked == 1 })
	if c.Account().RevokeDisabled {
		t.Fatal("revokes disabled before any answer")
	}
	// tok-2 died with tok-1: the request re-logs in and succeeds.
	if _, err := c.User(ctx); err != nil {
		t.Fatalf("User: %v", err)
	}
	auths := []string{}
	for _, s := range fc.seenFor("GET /v1/user") {
		auths = append(auths, bearer(s))
	}
	if strings.Join(auths, ",") != "tok-2,tok-3" || fc.loginCount() != 3 {
		t.Fatalf("user requests with %v, logins %d: want tok-2 refused, then tok-3", auths, fc.loginCount())
	}
	if !c.Account().RevokeDisabled {
		t.Fatal("RevokeDisabled is false after the current token was refused right after a revoke")
	}
	// The re-login superseded tok-2, a further login tok-3: no revoke.
	if _, err := c.Login(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.User(ctx); err != nil {
		t.Fatalf("User with tok-4: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if got := revokedTokens(fc); len(got) != 1 {
		t.Fatalf("revokes %q, want only the first", got)
	}
	if n := strings.Count(logs.String(), warning); n != 1 {
		t.Fatalf("warning logged %d times, want once; logs:\n%s", n, logs.String())
	}
	if acc := c.Account(); acc.TokensHeld != 3 || acc.SupersededRevoked != 1 {
		t.Fatalf("%+v: want tok-2, tok-3 and tok-4 held", acc)
	}
	// The exit still revokes every token held.
	c.LogoutOnExit()
	got := map[string]int{}
	for _, tok := range revokedTokens(fc) {
		got[tok]++
	}
	if got["tok-1"] != 1 || got["tok-2"] != 1 || got["tok-3"] != 1 || got["tok-4"] != 1 || len(got) != 4 {
		t.Fatalf("revokes %v, want each token once", got)
	}
}

// TestLogoutOnExitRevokesEveryTokenHeld: a superseded token whose revoke
// failed is revoked at exit beside the current one.
func TestLogoutOnExitRevokesEveryTokenHeld(t *testing.T) {
	fc := newFakeCloud(t)
	var revokes atomic.Int32
	fc.handle("POST /v1/auth/revoke", func(w http.ResponseWriter, r *http.Request) {
		if revokes.Add(1) == 1 {
			writeAnswer(w, 500, "application/json", `{"message":"boom"}`, nil)
			return
		}
		fc.invalidate(bearer(seen{Header: r.Header}))
		w.WriteHeader(204)
	})
	c, _ := newClient(t, fc)
	ctx := ctxT(t)
	for range 2 {
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the failed revoke of tok-1", func() bool { return len(fc.seenFor("POST /v1/auth/revoke")) == 1 })
	time.Sleep(50 * time.Millisecond) // the failure is noted
	if acc := c.Account(); acc.TokensHeld != 2 || acc.SupersededRevoked != 0 {
		t.Fatalf("after the failed revoke: %+v", acc)
	}
	c.LogoutOnExit()
	got := revokedTokens(fc)
	count := map[string]int{}
	for _, tok := range got {
		count[tok]++
	}
	if count["tok-1"] != 2 || count["tok-2"] != 1 || len(got) != 3 {
		t.Fatalf("revokes %q, want tok-1 (failed), then tok-1 and tok-2 at exit", got)
	}
	if _, err := c.AccessToken(); !errors.Is(err, cloudclient.ErrNotAuthenticated) {
		t.Fatalf("token survived: %v", err)
	}
	if acc := c.Account(); acc.TokensHeld != 0 || acc.HasToken {
		t.Fatalf("after the exit: %+v", acc)
	}
}

// throttleCloud is a fake cloud whose GET /v1/modules answers what status
// and header say, and whose GET /v1/user, system version and asset answer
// 200 (recording when the user request arrived).
type throttleCloud struct {
	*fakeCloud
	mu       sync.Mutex
	status   int
	header   map[string]string
	userSeen []time.Time
}

func newThrottleCloud(t *testing.T) *throttleCloud {
	tc := &throttleCloud{fakeCloud: newFakeCloud(t), status: 200}
	tc.handle("GET /v1/modules", func(w http.ResponseWriter, r *http.Request) {
		tc.mu.Lock()
		status, header := tc.status, tc.header
		tc.mu.Unlock()
		if status != 200 {
			writeAnswer(w, status, "application/json", `{"message":"slow down"}`, header)
			return
		}
		writeAnswer(w, 200, "application/json", `{"data":[]}`, nil)
	})
	tc.handle("GET /v1/user", func(w http.ResponseWriter, r *http.Request) {
		tc.mu.Lock()
		tc.userSeen = append(tc.userSeen, time.Now())
		tc.mu.Unlock()
		writeAnswer(w, 200, "application/json", `{"id":7}`, nil)
	})
	tc.handleJSON("GET /v1/system/version", 200, `{"version":"1.2.3"}`)
	tc.handle("GET /one/assets/app.js", func(w http.ResponseWriter, r *http.Request) {
		writeAnswer(w, 200, "application/javascript", "console.log(1)", nil)
	})
	return tc
}

func (tc *throttleCloud) answer(status int, header map[string]string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.status, tc.header = status, header
}

// clockedThrottleClient is a client of a throttling fake cloud on a fake
// clock at gateT0, without jitter, logged in; tune adjusts its config.
func clockedThrottleClient(t *testing.T, tune func(*cloudclient.Config)) (*throttleCloud, *fakeClock, *cloudclient.Client, context.Context) {
	t.Helper()
	fc := newThrottleCloud(t)
	clk := newFakeClock(gateT0)
	c, _ := newClient(t, fc.fakeCloud, func(cfg *cloudclient.Config) {
		cfg.Now = clk.Now
		if tune != nil {
			tune(cfg)
		}
	})
	c.SetJitter(func(int64) int64 { return 0 })
	ctx := ctxT(t)
	if _, err := c.Login(ctx); err != nil {
		t.Fatal(err)
	}
	return fc, clk, c, ctx
}

// TestThrottlePauseHoldsEveryRequest: a throttling answer of any endpoint
// pauses every request of the account to the API host.
func TestThrottlePauseHoldsEveryRequest(t *testing.T) {
	throttled := func(t *testing.T, what string, err error, endpoint string, until time.Time, now time.Time) {
		t.Helper()
		var te *cloudclient.ThrottledError
		if !errors.As(err, &te) || te.Endpoint != endpoint || !te.Until.Equal(until) {
			t.Fatalf("%s: err = %v, want *ThrottledError of %s until %v", what, err, endpoint, until)
		}
		if u, ok := cloudclient.RateLimited(err, now); !ok || !u.Equal(until) {
			t.Fatalf("%s: RateLimited = %v, %v", what, u, ok)
		}
		if cloudclient.IsCredentialVerdict(err) {
			t.Fatalf("%s: a throttled request is a credential verdict", what)
		}
	}

	t.Run("not held: every request fails at once, unsent", func(t *testing.T) {
		fc, clk, c, ctx := clockedThrottleClient(t, func(cfg *cloudclient.Config) {
			cfg.LoginRetryBase = 100 * time.Millisecond
		})
		clk.Advance(time.Minute) // the token is older than a login asked for now
		fc.answer(429, map[string]string{"Retry-After": "1"})
		_, err := c.Modules(ctx, 1)
		var ae *cloudclient.APIError
		if !errors.As(err, &ae) || ae.Status != 429 {
			t.Fatalf("Modules err = %v, want the 429", err)
		}
		until := clk.Now().Add(time.Second)
		if u, ok := cloudclient.RateLimited(err, clk.Now()); !ok || !u.Equal(until) {
			t.Fatalf("RateLimited(429) = %v, %v, want %v", u, ok, until)
		}
		if !c.PausedUntil().Equal(until) || !c.Paused(clk.Now()) || c.Paused(until) {
			t.Fatalf("PausedUntil %v, Paused %v / %v", c.PausedUntil(), c.Paused(clk.Now()), c.Paused(until))
		}
		if acc := c.Account(); !acc.PausedUntil.Equal(until) || acc.Pauses != 1 {
			t.Fatalf("Account %+v", acc)
		}
		fc.answer(200, nil)
		sent := fc.total()
		_, err = c.User(ctx)
		throttled(t, "User", err, cloudapi.EndpointUser, until, clk.Now())
		_, err = c.Modules(ctx, 1)
		throttled(t, "Modules", err, cloudapi.EndpointModules, until, clk.Now())
		_, err = c.SystemVersion(ctx)
		throttled(t, "SystemVersion", err, cloudapi.EndpointSystemVersion, until, clk.Now())
		_, err = c.HandshakeToken(ctx)
		throttled(t, "HandshakeToken", err, cloudapi.Handshake, until, clk.Now())
		if n := fc.total(); n != sent {
			t.Fatalf("%d requests sent during the pause", n-sent)
		}

		// The login is held too, and the backoff it arms lasts the pause.
		_, err = c.Login(ctx)
		throttled(t, "Login", err, cloudapi.EndpointLogin, until, clk.Now())
		if got := cloudclient.ClassifyLogin(err); got != cloudapi.LoginRateLimited {
			t.Fatalf("ClassifyLogin of a throttled login = %q", got)
		}
		if acc := c.Account(); acc.LastLogin.Outcome != cloudapi.LoginRateLimited || !acc.LoginRetryAt.Equal(until) {
			t.Fatalf("after the throttled login: %+v", acc)
		}
		if n := fc.total(); n != sent || fc.loginCount() != 1 {
			t.Fatalf("%d requests, %d logins during the pause", n-sent, fc.loginCount())
		}

		// The asset host is not paused.
		if body, err := c.Asset(ctx, "/assets/app.js"); err != nil || string(body) != "console.log(1)" {
			t.Fatalf("Asset during the pause: %q, %v", body, err)
		}
		if n := fc.total(); n != sent+1 {
			t.Fatalf("%d requests sent, want only the asset", n-sent)
		}

		// At the pause's end requests and logins go again.
		clk.Advance(time.Second)
		if _, err := c.User(ctx); err != nil {
			t.Fatalf("User after the pause: %v", err)
		}
		if _, err := c.Login(ctx); err != nil || fc.loginCount() != 2 {
			t.Fatalf("Login after the pause: %v (logins %d)", err, fc.loginCount())
		}
	})

	t.Run("held: a request waits for the pause's end", func(t *testing.T) {
		fc := newThrottleCloud(t)
		c, _ := newClient(t, fc.fakeCloud, func(cfg *cloudclient.Config) { cfg.HoldWhileThrottled = true })
		c.SetJitter(func(int64) int64 { return 0 })
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		fc.answer(429, map[string]string{"Retry-After": "1"})
		start := time.Now()
		if _, err := c.Modules(ctx, 1); err == nil {
			t.Fatal("Modules succeeded")
		}
		fc.answer(200, nil)
		until := c.PausedUntil()
		if d := until.Sub(start); d < time.Second || d > 3*time.Second {
			t.Fatalf("pause until %v after the request began, want about 1 s", d)
		}
		// A waiting request honours its context and is not sent.
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := c.User(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || len(fc.seenFor("GET /v1/user")) != 0 {
			t.Fatalf("User with a short context: %v, %d sent", err, len(fc.seenFor("GET /v1/user")))
		}
		if _, err := c.User(ctx); err != nil {
			t.Fatalf("User after waiting: %v", err)
		}
		fc.mu.Lock()
		seen := append([]time.Time(nil), fc.userSeen...)
		fc.mu.Unlock()
		if len(seen) != 1 || seen[0].Before(until) {
			t.Fatalf("user request received at %v, pause until %v: sent during the pause", seen, until)
		}
		if seen[0].Sub(start) < time.Second {
			t.Fatalf("user request received %v after the throttling request began, want ≥ 1 s", seen[0].Sub(start))
		}
	})

	t.Run("held: a login abandoned while waiting is not counted", func(t *testing.T) {
		fc := newThrottleCloud(t)
		var mu sync.Mutex
		var obs []cloudapi.LoginOutcome
		c, _ := newClient(t, fc.fakeCloud, func(cfg *cloudclient.Config) {
			cfg.HoldWhileThrottled = true
			cfg.ThrottleBase = time.Minute
			cfg.LoginObserver = func(o cloudapi.LoginOutcome) { mu.Lock(); obs = append(obs, o); mu.Unlock() }
		})
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		fc.answer(429, nil) // a pause of a minute
		_, _ = c.Modules(ctx, 1)
		lctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel) // the program stops
		err := c.ForceRelogin(lctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("ForceRelogin = %v, want the caller's context.Canceled", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(obs) != 1 || fc.loginCount() != 1 {
			t.Fatalf("LoginObserver %v, logins %d: an abandoned login was counted or sent", obs, fc.loginCount())
		}
		if acc := c.Account(); !acc.LoginRetryAt.IsZero() || acc.LastLogin.Outcome != cloudapi.LoginOK {
			t.Fatalf("an abandoned login armed the backoff: %+v", acc)
		}
	})

	t.Run("HTTP-date Retry-After", func(t *testing.T) {
		fc, clk, c, ctx := clockedThrottleClient(t, nil)
		until := gateT0.Add(30 * time.Second)
		fc.answer(429, map[string]string{"Retry-After": until.Format(http.TimeFormat)})
		_, _ = c.Modules(ctx, 1)
		fc.answer(200, nil)
		if !c.PausedUntil().Equal(until) {
			t.Fatalf("PausedUntil %v, want %v", c.PausedUntil(), until)
		}
		clk.Advance(29 * time.Second)
		_, err := c.User(ctx)
		throttled(t, "User", err, cloudapi.EndpointUser, until, clk.Now())
		clk.Advance(time.Second)
		if _, err := c.User(ctx); err != nil {
			t.Fatalf("User at the pause's end: %v", err)
		}
	})

	t.Run("503 pauses with Retry-After only", func(t *testing.T) {
		fc, clk, c, ctx := clockedThrottleClient(t, nil)
		for _, tc := range []struct {
			status int
			header map[string]string
		}{{503, nil}, {503, map[string]string{"Retry-After": "soon"}}, {500, map[string]string{"Retry-After": "20"}}, {502, nil}} {
			fc.answer(tc.status, tc.header)
			_, err := c.Modules(ctx, 1)
			if _, ok := cloudclient.RateLimited(err, clk.Now()); ok {
				t.Fatalf("%d %v: RateLimited", tc.status, tc.header)
			}
			fc.answer(200, nil)
			if c.Paused(clk.Now()) {
				t.Fatalf("%d %v paused the account", tc.status, tc.header)
			}
			if _, err := c.User(ctx); err != nil {
				t.Fatalf("User after %d %v: %v", tc.status, tc.header, err)
			}
		}
		if acc := c.Account(); acc.Pauses != 0 {
			t.Fatalf("Pauses %d", acc.Pauses)
		}
		fc.answer(503, map[string]string{"Retry-After": "20"})
		_, err := c.Modules(ctx, 1)
		until := gateT0.Add(20 * time.Second)
		if u, ok := cloudclient.RateLimited(err, clk.Now()); !ok || !u.Equal(until) {
			t.Fatalf("RateLimited(503 with Retry-After) = %v, %v", u, ok)
		}
		fc.answer(200, nil)
		_, err = c.User(ctx)
		throttled(t, "User", err, cloudapi.EndpointUser, until, clk.Now())
		if acc := c.Account(); acc.Pauses != 1 || !acc.PausedUntil.Equal(until) {
			t.Fatalf("%+v", acc)
		}
	})

	t.Run("429 without Retry-After doubles until an answer that is no throttling", func(t *testing.T) {
		fc, clk, c, ctx := clockedThrottleClient(t, func(cfg *cloudclient.Config) {
			cfg.ThrottleBase = 10 * time.Second
			cfg.ThrottleCap = time.Minute
		})
		fc.answer(429, nil)
		for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute} {
			now := clk.Now()
			_, err := c.Modules(ctx, 1)
			if u, ok := cloudclient.RateLimited(err, now); !ok || !u.IsZero() {
				t.Fatalf("429 %d: RateLimited = %v, %v, want ok without a time", i+1, u, ok)
			}
			if got := c.PausedUntil().Sub(now); got != want {
				t.Fatalf("429 %d in a row: pause %v, want %v", i+1, got, want)
			}
			clk.Advance(want)
		}
		fc.answer(200, nil)
		if _, err := c.Modules(ctx, 1); err != nil {
			t.Fatal(err)
		}
		fc.answer(429, nil)
		now := clk.Now()
		_, _ = c.Modules(ctx, 1)
		if got := c.PausedUntil().Sub(now); got != 10*time.Second {
			t.Fatalf("429 after a 200: pause %v, want the base again", got)
		}
		if acc := c.Account(); acc.Pauses != 6 {
			t.Fatalf("Pauses %d, want 6", acc.Pauses)
		}
	})

	t.Run("the pause is jittered within a tenth", func(t *testing.T) {
		fc := newThrottleCloud(t)
		clk := newFakeClock(gateT0)
		c, _ := newClient(t, fc.fakeCloud, func(cfg *cloudclient.Config) { cfg.Now = clk.Now })
		var asked atomic.Int64
		c.SetJitter(func(max int64) int64 { asked.Store(max); return max })
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		fc.answer(429, map[string]string{"Retry-After": "20"})
		_, _ = c.Modules(ctx, 1)
		if got := c.PausedUntil().Sub(gateT0); got != 22*time.Second || time.Duration(asked.Load()) != 2*time.Second {
			t.Fatalf("pause %v (jitter range %v), want 20 s + 2 s", got, time.Duration(asked.Load()))
		}
	})

	t.Run("the asset host neither pauses nor is paused", func(t *testing.T) {
		fc := newThrottleCloud(t)
		fc.handle("GET /one/assets/slow.js", func(w http.ResponseWriter, r *http.Request) {
			writeAnswer(w, 429, "text/plain", "slow down", map[string]string{"Retry-After": "600"})
		})
		clk := newFakeClock(gateT0)
		c, sl := newClient(t, fc.fakeCloud, func(cfg *cloudclient.Config) { cfg.Now = clk.Now })
		ctx := ctxT(t)
		_, err := c.Asset(ctx, "/assets/slow.js")
		var ae *cloudclient.APIError
		if !errors.As(err, &ae) || ae.Status != 429 || len(fc.seenFor("GET /one/assets/slow.js")) != 3 || len(sl.got()) != 2 {
			t.Fatalf("asset 429: %v, %d attempts, sleeps %v", err, len(fc.seenFor("GET /one/assets/slow.js")), sl.got())
		}
		if c.Paused(clk.Now()) || c.Account().Pauses != 0 {
			t.Fatalf("an asset's 429 paused the account until %v", c.PausedUntil())
		}
		if _, err := c.User(ctx); err != nil {
			t.Fatalf("User after an asset's 429: %v", err)
		}
	})
}

// TestPausedDuring: the overlap of a window with the account's pauses, a
// pause extended while it runs counted once.
func TestPausedDuring(t *testing.T) {
	fc := newFakeCloud(t)
	release := map[string]chan struct{}{"1": make(chan struct{}), "2": make(chan struct{}), "3": make(chan struct{})}
	var releaseOnce [3]sync.Once
	free := func(id int) { releaseOnce[id-1].Do(func() { close(release[itoa(id)]) }) }
	t.Cleanup(func() { free(1); free(2); free(3) }) // a failed test does not hang on a held request
	fc.handle("GET /v1/modules", func(w http.ResponseWriter, r *http.Request) {
		<-release[r.URL.Query().Get("group_id")]
		writeAnswer(w, 429, "application/json", `{"message":"slow down"}`, map[string]string{"Retry-After": "30"})
	})
	clk := newFakeClock(gateT0)
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Now = clk.Now })
	c.SetJitter(func(int64) int64 { return 0 })
	ctx := ctxT(t)
	if _, err := c.Login(ctx); err != nil {
		t.Fatal(err)
	}
	if d := c.PausedDuring(gateT0.Add(-time.Hour), gateT0.Add(time.Hour)); d != 0 {
		t.Fatalf("PausedDuring before any pause = %v", d)
	}

	// Two requests in flight both answer 429 with Retry-After: 30, the
	// second 10 s after the first: one pause [t0, t0+40 s).
	done := map[string]chan struct{}{"1": make(chan struct{}), "2": make(chan struct{})}
	for _, id := range []int{1, 2} {
		go func() {
			_, _ = c.Modules(ctx, id)
			close(done[itoa(id)])
		}()
	}
	waitFor(t, "both requests at the cloud", func() bool { return len(fc.seenFor("GET /v1/modules")) == 2 })
	free(1)
	<-done["1"]
	clk.Advance(10 * time.Second)
	free(2)
	<-done["2"]
	if want := gateT0.Add(40 * time.Second); !c.PausedUntil().Equal(want) {
		t.Fatalf("PausedUntil %v, want %v", c.PausedUntil(), want)
	}
	if acc := c.Account(); acc.Pauses != 2 {
		t.Fatalf("Pauses %d", acc.Pauses)
	}
	for _, tc := range []struct {
		name     string
		from, to time.Duration // from gateT0
		want     time.Duration
	}{
		{"covering", -time.Hour, time.Hour, 40 * time.Second},
		{"exactly", 0, 40 * time.Second, 40 * time.Second},
		{"the start", -10 * time.Second, 10 * time.Second, 10 * time.Second},
		{"the end", 30 * time.Second, time.Minute, 10 * time.Second},
		{"inside", 5 * time.Second, 15 * time.Second, 10 * time.Second},
		{"before", -time.Minute, -time.Second, 0},
		{"after", 40 * time.Second, time.Minute, 0},
		{"empty window", 20 * time.Second, 20 * time.Second, 0},
		{"reversed window", 30 * time.Second, 10 * time.Second, 0},
	} {
		if got := c.PausedDuring(gateT0.Add(tc.from), gateT0.Add(tc.to)); got != tc.want {
			t.Errorf("%s: PausedDuring = %v, want %v", tc.name, got, tc.want)
		}
	}

	// A later pause is a span of its own.
	clk.Advance(time.Minute) // t0+70 s
	free(3)
	_, _ = c.Modules(ctx, 3)
	if got := c.PausedDuring(gateT0, gateT0.Add(time.Hour)); got != 70*time.Second {
		t.Fatalf("PausedDuring over two pauses = %v, want 70 s", got)
	}
	if got := c.PausedDuring(gateT0.Add(35*time.Second), gateT0.Add(75*time.Second)); got != 10*time.Second {
		t.Fatalf("PausedDuring across the gap = %v, want 5 s + 5 s", got)
	}
}

// A login whose caller gives up (its own deadline) is no failure of the
// cloud: a caller that waited for it with time to spare logs in itself,
// and no backoff is armed.
func TestAbandonedLoginIsNotShared(t *testing.T) {
	fc := newFakeCloud(t)
	release := make(chan struct{})
	fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n == 1 {
			<-release // the first login hangs until its caller gave up
		}
		return false
	}
	defer close(release)
	var observed []string
	var mu sync.Mutex
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
		cfg.LoginObserver = func(o cloudapi.LoginOutcome) { mu.Lock(); observed = append(observed, string(o)); mu.Unlock() }
	})
	short, cancel := context.WithTimeout(ctxT(t), 100*time.Millisecond)
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- c.EnsureAuth(short) }()
	waitFor(t, "the first login in flight", func() bool { return fc.loginCount() == 1 })
	if err := c.EnsureAuth(ctxT(t)); err != nil {
		t.Fatalf("the waiter with time to spare: %v", err)
	}
	if err := <-first; err == nil {
		t.Fatal("the abandoned login succeeded")
	}
	if got := fc.loginCount(); got != 2 {
		t.Errorf("%d logins, want 2 (the abandoned one, the waiter's own)", got)
	}
	if acct := c.Account(); !acct.LoginRetryAt.IsZero() || acct.LastLogin.Outcome != cloudapi.LoginOK {
		t.Errorf("account after an abandoned login: retry at %v, last %q; want no backoff and ok", acct.LoginRetryAt, acct.LastLogin.Outcome)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(observed) != 1 || observed[0] != "ok" {
		t.Errorf("logins observed %v, want only the waiter's ok", observed)
	}
}
