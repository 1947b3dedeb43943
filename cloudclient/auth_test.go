package cloudclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
)

func TestTokenExpired(t *testing.T) {
	exp := time.Date(2026, 9, 10, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		tok    cloudclient.Token
		now    time.Time
		leeway time.Duration
		want   bool
	}{
		{"no expiry never expires", cloudclient.Token{AccessToken: "t"}, exp.Add(100 * 365 * 24 * time.Hour), time.Hour, false},
		{"well before", cloudclient.Token{ExpiresAt: exp}, exp.Add(-2 * time.Minute), cloudclient.DefaultTokenLeeway, false},
		{"now+leeway exactly at expiry", cloudclient.Token{ExpiresAt: exp}, exp.Add(-60 * time.Second), cloudclient.DefaultTokenLeeway, true},
		{"one ns before the leeway boundary", cloudclient.Token{ExpiresAt: exp}, exp.Add(-60*time.Second - 1), cloudclient.DefaultTokenLeeway, false},
		{"past", cloudclient.Token{ExpiresAt: exp}, exp.Add(time.Second), 0, true},
		{"at expiry without leeway", cloudclient.Token{ExpiresAt: exp}, exp, 0, true},
		{"client refresh leeway 90s", cloudclient.Token{ExpiresAt: exp}, exp.Add(-80 * time.Second), cloudclient.DefaultRefreshLeeway, true},
	}
	for _, tc := range cases {
		if got := tc.tok.Expired(tc.now, tc.leeway); got != tc.want {
			t.Errorf("%s: Expired = %v, want %v", tc.name, got, tc.want)
		}
	}
	if cloudclient.DefaultTokenLeeway != 60*time.Second || cloudclient.DefaultRefreshLeeway != 90*time.Second {
		t.Fatalf("leeway defaults %v / %v", cloudclient.DefaultTokenLeeway, cloudclient.DefaultRefreshLeeway)
	}
}

func TestDecodeLogin(t *testing.T) {
	utc := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339Nano, s); return tm.UTC() }
	cases := []struct {
		name    string
		in      string
		wantErr error
		tok     cloudclient.Token
		userID  int
		objects int
	}{
		{"wire example", `{"accessToken":"T1","refreshToken":"R1","type":"bearer","expiresAt":"2026-09-10T12:00:00Z","user":{"id":5},"objects":[{"id":1,"name":"Home"}]}`,
			nil, cloudclient.Token{"T1", "R1", "bearer", utc("2026-09-10T12:00:00Z")}, 5, 1},
		{"token alias, type default, no expiry", `{"token":"T2"}`, nil, cloudclient.Token{AccessToken: "T2", Type: "bearer"}, 0, 0},
		{"accessToken wins over token", `{"accessToken":"A","token":"B"}`, nil, cloudclient.Token{AccessToken: "A", Type: "bearer"}, 0, 0},
		{"expiry without Z is UTC", `{"accessToken":"T","expiresAt":"2026-09-10T12:00:00"}`, nil, cloudclient.Token{AccessToken: "T", Type: "bearer", ExpiresAt: utc("2026-09-10T12:00:00Z")}, 0, 0},
		{"fractional seconds", `{"accessToken":"T","expiresAt":"2026-09-10T12:00:00.250Z"}`, nil, cloudclient.Token{AccessToken: "T", Type: "bearer", ExpiresAt: utc("2026-09-10T12:00:00.25Z")}, 0, 0},
		{"offset", `{"accessToken":"T","expiresAt":"2026-09-10T14:00:00+02:00"}`, nil, cloudclient.Token{AccessToken: "T", Type: "bearer", ExpiresAt: utc("2026-09-10T12:00:00Z")}, 0, 0},
		{"null expiry never expires", `{"accessToken":"T","expiresAt":null,"type":"Bearer"}`, nil, cloudclient.Token{AccessToken: "T", Type: "Bearer"}, 0, 0},
		{"objects not a list default empty", `{"accessToken":"T","objects":null}`, nil, cloudclient.Token{AccessToken: "T", Type: "bearer"}, 0, 0},
		{"empty token", `{"accessToken":""}`, cloudclient.ErrNoAccessToken, cloudclient.Token{}, 0, 0},
		{"missing token", `{"refreshToken":"R"}`, cloudclient.ErrNoAccessToken, cloudclient.Token{}, 0, 0},
		{"token not a string", `{"accessToken":12}`, cloudclient.ErrNoAccessToken, cloudclient.Token{}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cloudclient.DecodeLogin([]byte(tc.in))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.Token.ExpiresAt.Equal(tc.tok.ExpiresAt) {
				t.Fatalf("ExpiresAt %v, want %v", res.Token.ExpiresAt, tc.tok.ExpiresAt)
			}
			res.Token.ExpiresAt = tc.tok.ExpiresAt
			if res.Token != tc.tok || res.UserID != tc.userID || len(res.Objects) != tc.objects || res.Objects == nil {
				t.Fatalf("got %+v user %d objects %v", res.Token, res.UserID, res.Objects)
			}
		})
	}
	for _, bad := range []string{`<html>503</html>`, `{"accessToken":`, `[]`, `"T"`, `{"accessToken":"T","expiresAt":"tomorrow"}`} {
		var de *cloudclient.DecodeError
		if _, err := cloudclient.DecodeLogin([]byte(bad)); !errors.As(err, &de) {
			t.Errorf("DecodeLogin(%q) err = %v, want *DecodeError", bad, err)
		}
	}
}

func TestLoginSuccess(t *testing.T) {
	fc := newFakeCloud(t)
	var obs []cloudapi.LoginOutcome
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
		cfg.LoginObserver = func(o cloudapi.LoginOutcome) { obs = append(obs, o) }
	})
	res, err := c.Login(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Token.AccessToken != "tok-1" || res.UserID != 7 || len(res.Objects) != 1 || res.Objects[0].Name != "Home" {
		t.Fatalf("login result %+v", res)
	}
	req := fc.seenFor("POST /v1/auth/user")[0]
	if h := req.Header.Get("Authorization"); h != "" {
		t.Fatalf("login sent Authorization %q", h)
	}
	body := req.json(t)
	if body["email"] != testEmail || body["password"] != testPassword || len(body) != 2 {
		t.Fatalf("login body %v", body)
	}
	if tok, err := c.AccessToken(); err != nil || tok != "tok-1" {
		t.Fatalf("AccessToken = %q, %v", tok, err)
	}
	if len(obs) != 1 || obs[0] != cloudapi.LoginOK {
		t.Fatalf("LoginObserver calls %v", obs)
	}
}

func TestLoginFailures(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		ctype   string
		body    string
		outcome cloudapi.LoginOutcome
		check   func(t *testing.T, err error)
	}{
		{"wrong credentials 401", 401, "application/json", `{"message":"Invalid credentials"}`, cloudapi.LoginRejected, func(t *testing.T, err error) {
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 401 || ae.Message() != "Invalid credentials" {
				t.Fatalf("err = %#v", err)
			}
			if !strings.Contains(err.Error(), "POST /v1/auth/user: HTTP 401: Invalid credentials") {
				t.Fatalf("message %q", err.Error())
			}
		}},
		{"account locked 403", 403, "application/json", `{"message":"Forbidden"}`, cloudapi.LoginRejected, func(t *testing.T, err error) {
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 403 {
				t.Fatalf("err = %#v", err)
			}
		}},
		{"credential body refused 400", 400, "application/json", `{"message":"email must be an email"}`, cloudapi.LoginRejected, func(t *testing.T, err error) {
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 400 {
				t.Fatalf("err = %#v", err)
			}
		}},
		{"credential body refused 422", 422, "application/json", `{"message":"Unprocessable"}`, cloudapi.LoginRejected, func(t *testing.T, err error) {
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 422 {
				t.Fatalf("err = %#v", err)
			}
		}},
		{"rate limited 429", 429, "application/json", `{"message":"Too many requests"}`, cloudapi.LoginRateLimited, func(t *testing.T, err error) {
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 429 {
				t.Fatalf("err = %#v", err)
			}
		}},
		{"HTML 503", 503, "text/html", "<html><body>Service Unavailable</body></html>", cloudapi.LoginUnreachable, func(t *testing.T, err error) {
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 503 || !cloudclient.IsExpectedUpstream(err) {
				t.Fatalf("err = %#v", err)
			}
			if strings.Contains(err.Error(), "<html") || ae.Data != "<html><body>Service Unavailable</body></html>" {
				t.Fatalf("Error %q / Data %#v", err.Error(), ae.Data)
			}
		}},
		{"malformed JSON 200", 200, "application/json", `{"accessToken":"T"`, cloudapi.LoginUnreachable, func(t *testing.T, err error) {
			var de *cloudclient.DecodeError
			if !errors.As(err, &de) || de.Status != 200 || de.Endpoint != "POST /v1/auth/user" {
				t.Fatalf("err = %#v", err)
			}
		}},
		{"HTML 200", 200, "text/html", `<html>maintenance</html>`, cloudapi.LoginUnreachable, func(t *testing.T, err error) {
			var de *cloudclient.DecodeError
			if !errors.As(err, &de) || strings.Contains(err.Error(), "maintenance") {
				t.Fatalf("err = %v", err)
			}
		}},
		{"201 is not success", 201, "application/json", `{"accessToken":"T"}`, cloudapi.LoginUnreachable, func(t *testing.T, err error) {
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 201 {
				t.Fatalf("err = %#v", err)
			}
		}},
		{"empty token", 200, "application/json", `{"accessToken":""}`, cloudapi.LoginUnreachable, func(t *testing.T, err error) {
			if !errors.Is(err, cloudclient.ErrNoAccessToken) {
				t.Fatalf("err = %v", err)
			}
		}},
		{"non-duplicate 500 is not retried", 500, "application/json", `{"message":"boom"}`, cloudapi.LoginUnreachable, func(t *testing.T, err error) {
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != 500 {
				t.Fatalf("err = %#v", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
				return true
			}
			var obs []cloudapi.LoginOutcome
			c, sl := newClient(t, fc, func(cfg *cloudclient.Config) {
				cfg.LoginObserver = func(o cloudapi.LoginOutcome) { obs = append(obs, o) }
			})
			_, err := c.Login(ctxT(t))
			tc.check(t, err)
			if got := cloudclient.ClassifyLogin(err); got != tc.outcome {
				t.Errorf("ClassifyLogin = %q, want %q", got, tc.outcome)
			}
			if _, terr := c.AccessToken(); !errors.Is(terr, cloudclient.ErrNotAuthenticated) {
				t.Fatalf("failed login left a token: %v", terr)
			}
			if fc.loginCount() != 1 || len(sl.got()) != 0 {
				t.Fatalf("logins %d sleeps %v", fc.loginCount(), sl.got())
			}
			if len(obs) != 1 || obs[0] != tc.outcome {
				t.Fatalf("LoginObserver %v, want [%s]", obs, tc.outcome)
			}
		})
	}
}

func TestLoginDuplicateEntryRetry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dups     int
		message  string
		wantOK   bool
		attempts int
	}{
		{"ER_DUP_ENTRY then success", 3, "ER_DUP_ENTRY", true, 4},
		{"duplicate entry once", 1, "Duplicate entry 'x' for key 'token'", true, 2},
		{"gives up after 4 attempts", 10, "ER_DUP_ENTRY", false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
				if n > tc.dups {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(500)
				io.WriteString(w, `{"message":"`+tc.message+`"}`)
				return true
			}
			c, sl := newClient(t, fc)
			c.SetJitter(func(max int64) int64 { return max }) // the top of the jitter range
			_, err := c.Login(ctxT(t))
			if (err == nil) != tc.wantOK {
				t.Fatalf("err = %v", err)
			}
			if fc.loginCount() != tc.attempts {
				t.Fatalf("attempts %d, want %d", fc.loginCount(), tc.attempts)
			}
			want := []time.Duration{350 * time.Millisecond, 550 * time.Millisecond, 950 * time.Millisecond}[:tc.attempts-1]
			got := sl.got()
			if len(got) != len(want) {
				t.Fatalf("sleeps %v, want %v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("sleeps %v, want %v", got, want)
				}
			}
		})
	}
}

func TestLoginJitterWithinRange(t *testing.T) {
	fc := newFakeCloud(t)
	fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		io.WriteString(w, `{"message":"ER_DUP_ENTRY"}`)
		return true
	}
	c, sl := newClient(t, fc)
	_, _ = c.Login(ctxT(t))
	base := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	got := sl.got()
	if len(got) != 3 {
		t.Fatalf("sleeps %v", got)
	}
	for i, d := range got {
		if d < base[i] || d > base[i]+150*time.Millisecond {
			t.Fatalf("sleep %d = %v outside [%v, %v]", i, d, base[i], base[i]+150*time.Millisecond)
		}
	}
}

func TestAccessTokenBeforeAuthentication(t *testing.T) {
	fc := newFakeCloud(t)
	c, _ := newClient(t, fc)
	if _, err := c.AccessToken(); !errors.Is(err, cloudclient.ErrNotAuthenticated) {
		t.Fatalf("err = %v", err)
	}
	if _, ok := c.Token(); ok {
		t.Fatal("Token() reports a token before login")
	}
}

func TestEnsureAuth(t *testing.T) {
	fc := newFakeCloud(t)
	now := time.Date(2026, 9, 10, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) } })
	ctx := ctxT(t)

	c.SetToken(cloudclient.Token{AccessToken: "", Type: "bearer"})
	if _, ok := c.Token(); ok {
		t.Fatal("an empty token was installed")
	}
	if err := c.EnsureAuth(ctx); err != nil || fc.loginCount() != 1 {
		t.Fatalf("EnsureAuth without token: %v, logins %d", err, fc.loginCount())
	}
	if err := c.EnsureAuth(ctx); err != nil || fc.loginCount() != 1 {
		t.Fatalf("EnsureAuth with a token without expiry logged in again: %v, logins %d", err, fc.loginCount())
	}

	// A token expiring in 100 s is kept; at 89 s left (inside the 90 s
	// refresh leeway) a fresh login is made.
	c.SetToken(cloudclient.Token{AccessToken: "tok-1", Type: "bearer", ExpiresAt: now.Add(100 * time.Second)})
	if err := c.EnsureAuth(ctx); err != nil || fc.loginCount() != 1 {
		t.Fatalf("EnsureAuth 100 s before expiry: %v, logins %d", err, fc.loginCount())
	}
	clock.Store(now.Add(11 * time.Second).UnixNano())
	if err := c.EnsureAuth(ctx); err != nil || fc.loginCount() != 2 {
		t.Fatalf("EnsureAuth inside the refresh leeway: %v, logins %d", err, fc.loginCount())
	}
	if tok, _ := c.AccessToken(); tok != "tok-2" {
		t.Fatalf("token %q after refresh", tok)
	}
	if tok, err := c.EnsureToken(ctx); tok != "tok-2" || err != nil || fc.loginCount() != 2 {
		t.Fatalf("EnsureToken = %q, %v (logins %d)", tok, err, fc.loginCount())
	}
}

func TestRetryOnceAfterRejection(t *testing.T) {
	for _, status := range []int{401, 403} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			fc := newFakeCloud(t)
			var rejectOnce atomic.Bool
			fc.handle("GET /v1/user", func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") == "Bearer tok-1" && rejectOnce.Load() {
					w.WriteHeader(status)
					io.WriteString(w, `{"message":"revoked"}`)
					return
				}
				io.WriteString(w, `{"user":{"id":7,"name":"U"}}`)
			})
			c, _ := newClient(t, fc)
			ctx := ctxT(t)
			if _, err := c.User(ctx); err != nil {
				t.Fatal(err)
			}
			rejectOnce.Store(true) // the server revokes tok-1 (still valid in its table: only the handler rejects it)
			u, err := c.User(ctx)
			if err != nil {
				t.Fatalf("User after revocation: %v", err)
			}
			if u.ID != 7 || fc.loginCount() != 2 {
				t.Fatalf("user %+v logins %d, want a forced second login", u, fc.loginCount())
			}
			reqs := fc.seenFor("GET /v1/user")
			auths := []string{}
			for _, r := range reqs {
				auths = append(auths, r.Header.Get("Authorization"))
			}
			want := []string{"Bearer tok-1", "Bearer tok-1", "Bearer tok-2"}
			if strings.Join(auths, ",") != strings.Join(want, ",") {
				t.Fatalf("Authorization sequence %v, want %v", auths, want)
			}
		})
	}
}

func TestSecondRejectionIsReturned(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/user", 401, `{"message":"nope"}`)
	c, _ := newClient(t, fc)
	_, err := c.User(ctxT(t))
	var ae *cloudclient.APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Endpoint != "GET /v1/user" {
		t.Fatalf("err = %#v", err)
	}
	if n := len(fc.seenFor("GET /v1/user")); n != 2 || fc.loginCount() != 2 {
		t.Fatalf("requests %d logins %d: want exactly one retry after one re-login", n, fc.loginCount())
	}
}

func TestRevokedTokenWithoutCredentialsIsNotRetried(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/user", 200, `{"id":1}`)
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Credentials = nil })
	c.SetToken(cloudclient.Token{AccessToken: "stale"})
	_, err := c.User(ctxT(t))
	var ae *cloudclient.APIError
	if !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("err = %v", err)
	}
	if tok, _ := c.AccessToken(); tok != "stale" {
		t.Fatalf("token %q: without credentials the token must be kept", tok)
	}
}

func TestForceRelogin(t *testing.T) {
	t.Run("with credentials drops the token and logs in", func(t *testing.T) {
		fc := newFakeCloud(t)
		c, _ := newClient(t, fc)
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.ForceRelogin(ctx); err != nil {
			t.Fatal(err)
		}
		if tok, _ := c.AccessToken(); tok != "tok-2" || fc.loginCount() != 2 {
			t.Fatalf("token %q logins %d", tok, fc.loginCount())
		}
	})
	for name, provider := range map[string]cloudclient.CredentialsProvider{
		"no provider": nil,
		"provider has none": func(context.Context) (cloudclient.Credentials, error) {
			return cloudclient.Credentials{}, cloudclient.ErrNoCredentials
		},
		"provider wraps none": func(context.Context) (cloudclient.Credentials, error) {
			return cloudclient.Credentials{}, errors.Join(cloudclient.ErrNoCredentials)
		},
	} {
		t.Run(name+" keeps the token", func(t *testing.T) {
			fc := newFakeCloud(t)
			c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Credentials = provider })
			c.SetToken(cloudclient.Token{AccessToken: "kept"})
			err := c.ForceRelogin(ctxT(t))
			if !errors.Is(err, cloudclient.ErrNoCredentials) {
				t.Fatalf("err = %v", err)
			}
			if tok, err := c.AccessToken(); tok != "kept" || err != nil || fc.loginCount() != 0 {
				t.Fatalf("token %q %v logins %d", tok, err, fc.loginCount())
			}
		})
	}
	t.Run("auth backend down keeps a usable token", func(t *testing.T) {
		fc := newFakeCloud(t)
		c, _ := newClient(t, fc)
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
			w.WriteHeader(503)
			io.WriteString(w, "<html>down</html>")
			return true
		}
		if err := c.ForceRelogin(ctx); !cloudclient.IsExpectedUpstream(err) {
			t.Fatalf("err = %v", err)
		}
		if tok, err := c.AccessToken(); tok != "tok-1" || err != nil {
			t.Fatalf("token %q %v: a usable token must survive a failed forced login", tok, err)
		}
	})
	t.Run("rejected credentials leave no token", func(t *testing.T) {
		fc := newFakeCloud(t)
		c, _ := newClient(t, fc)
		ctx := ctxT(t)
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
			w.WriteHeader(401)
			return true
		}
		if err := c.ForceRelogin(ctx); err == nil {
			t.Fatal("no error")
		}
		if _, err := c.AccessToken(); !errors.Is(err, cloudclient.ErrNotAuthenticated) {
			t.Fatalf("AccessToken err = %v", err)
		}
	})
}

func TestConcurrentCallersLogInOnce(t *testing.T) {
	for _, revoked := range []bool{false, true} {
		name := "fresh client"
		if revoked {
			name = "revoked token"
		}
		t.Run(name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.handleJSON("GET /v1/user", 200, `{"user":{"id":7}}`)
			c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.MaxInFlight = 32 })
			ctx := ctxT(t)
			before := 0
			if revoked {
				if _, err := c.Login(ctx); err != nil {
					t.Fatal(err)
				}
				fc.revokeAll()
				before = 1
			}
			const callers = 20
			var launched sync.WaitGroup
			launched.Add(callers)
			allLaunched := make(chan struct{})
			go func() { launched.Wait(); close(allLaunched) }()
			fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
				<-allLaunched // hold the login until every caller is running
				return false
			}
			var wg sync.WaitGroup
			errs := make(chan error, callers)
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					launched.Done()
					_, err := c.User(ctx)
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := fc.loginCount() - before; got != 1 {
				t.Fatalf("%d logins for %d concurrent callers, want 1", got, callers)
			}
		})
	}
}

func TestRequestsWaitForReloginInProgress(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/user", 200, `{"user":{"id":7}}`)
	c, _ := newClient(t, fc)
	ctx := ctxT(t)
	if _, err := c.Login(ctx); err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	gate := make(chan struct{})
	fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		fc.revokeAll() // a fresh login invalidates older tokens
		close(entered)
		<-gate
		return false
	}
	reloginDone := make(chan error, 1)
	go func() { reloginDone <- c.ForceRelogin(ctx) }()
	<-entered // the re-login is in progress and the old token is dropped
	userDone := make(chan error, 1)
	go func() { _, err := c.User(ctx); userDone <- err }()
	close(gate)
	if err := <-reloginDone; err != nil {
		t.Fatal(err)
	}
	if err := <-userDone; err != nil {
		t.Fatalf("request during re-login failed: %v", err)
	}
	reqs := fc.seenFor("GET /v1/user")
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer tok-2" || fc.loginCount() != 2 {
		t.Fatalf("requests %d (first with %q), logins %d: the request must wait for the new token",
			len(reqs), reqs[0].Header.Get("Authorization"), fc.loginCount())
	}
}

func TestLogout(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		wantErr bool
	}{{"ok", 200, false}, {"401", 401, false}, {"403", 403, false}, {"404", 404, false}, {"500", 500, true}, {"transport", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.handle("POST /v1/auth/revoke", func(w http.ResponseWriter, r *http.Request) {
				if tc.status == 0 {
					panic(http.ErrAbortHandler)
				}
				w.WriteHeader(tc.status)
			})
			c, _ := newClient(t, fc)
			ctx := ctxT(t)
			if _, err := c.Login(ctx); err != nil {
				t.Fatal(err)
			}
			err := c.Logout(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if _, err := c.AccessToken(); !errors.Is(err, cloudclient.ErrNotAuthenticated) {
				t.Fatalf("token survived logout: %v", err)
			}
			reqs := fc.seenFor("POST /v1/auth/revoke")
			if len(reqs) != 1 || len(reqs[0].Body) != 0 || reqs[0].Header.Get("Authorization") != "Bearer tok-1" {
				t.Fatalf("revoke requests %+v", reqs)
			}
			if fc.loginCount() != 1 {
				t.Fatalf("logout logged in again")
			}
		})
	}
}

// TestLoginOutcomeUnreachable: a login that got no verdict on the credentials
// (the connection dropped, the request timed out, the duplicate-token race
// outlasted its retries) is counted unreachable, never rejected.
func TestLoginOutcomeUnreachable(t *testing.T) {
	for _, tc := range []struct {
		name string
		hook func(w http.ResponseWriter, r *http.Request, n int) bool
	}{
		{"connection dropped", func(w http.ResponseWriter, r *http.Request, n int) bool {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return true
		}},
		{"timeout", func(w http.ResponseWriter, r *http.Request, n int) bool {
			<-r.Context().Done() // the client's per-request timeout ends the exchange
			return true
		}},
		{"duplicate-token race outlasts the retries", func(w http.ResponseWriter, r *http.Request, n int) bool {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			io.WriteString(w, `{"message":"ER_DUP_ENTRY"}`)
			return true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.loginHook = tc.hook
			var obs []cloudapi.LoginOutcome
			c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
				cfg.Timeout = 100 * time.Millisecond
				cfg.LoginObserver = func(o cloudapi.LoginOutcome) { obs = append(obs, o) }
			})
			_, err := c.Login(ctxT(t))
			if err == nil {
				t.Fatal("login succeeded")
			}
			if got := cloudclient.ClassifyLogin(err); got != cloudapi.LoginUnreachable {
				t.Errorf("ClassifyLogin(%v) = %q, want unreachable", err, got)
			}
			if len(obs) != 1 || obs[0] != cloudapi.LoginUnreachable {
				t.Errorf("LoginObserver %v, want [unreachable]", obs)
			}
		})
	}
}

// TestLoginAbandonedIsNotCounted: a login whose caller gave up (shutdown) is
// neither rejected nor unreachable.
func TestLoginAbandonedIsNotCounted(t *testing.T) {
	fc := newFakeCloud(t)
	ctx, cancel := context.WithCancel(ctxT(t))
	fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		cancel()
		<-r.Context().Done()
		return true
	}
	var obs []cloudapi.LoginOutcome
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
		cfg.LoginObserver = func(o cloudapi.LoginOutcome) { obs = append(obs, o) }
	})
	if _, err := c.Login(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if len(obs) != 0 {
		t.Fatalf("an abandoned login was counted: %v", obs)
	}
}

// TestClassifyLoginLooksAtTheLoginAnswer: only the login endpoint's own
// answer is a verdict on the credentials, wherever it sits in the error.
func TestClassifyLoginLooksAtTheLoginAnswer(t *testing.T) {
	loginRefused := &cloudclient.APIError{Endpoint: "POST /v1/auth/user", Status: 401}
	loginDown := &cloudclient.APIError{Endpoint: "POST /v1/auth/user", Status: 503}
	modulesRefused := &cloudclient.APIError{Endpoint: "GET /v1/modules", Status: 401}
	for _, tc := range []struct {
		name string
		err  error
		want cloudapi.LoginOutcome
	}{
		{"nil", nil, cloudapi.LoginOK},
		{"login 401", loginRefused, cloudapi.LoginRejected},
		{"login 401 wrapped", fmt.Errorf("first login: %w", loginRefused), cloudapi.LoginRejected},
		{"another request's 401, re-login unreachable", fmt.Errorf("%w (re-login failed: %w)", modulesRefused, loginDown), cloudapi.LoginUnreachable},
		{"another request's 401, re-login refused", fmt.Errorf("%w (re-login failed: %w)", modulesRefused, loginRefused), cloudapi.LoginRejected},
		{"another request's 401 alone", modulesRefused, cloudapi.LoginUnreachable},
		{"joined", errors.Join(errors.New("x"), loginRefused), cloudapi.LoginRejected},
		{"deadline", context.DeadlineExceeded, cloudapi.LoginUnreachable},
	} {
		if got := cloudclient.ClassifyLogin(tc.err); got != tc.want {
			t.Errorf("%s: ClassifyLogin = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := cloudapi.LoginOutcomes(); !slices.Equal(got, []cloudapi.LoginOutcome{"ok", "rejected", "blocked", "rate_limited", "unreachable"}) {
		t.Errorf("LoginOutcomes = %q", got)
	}
}
