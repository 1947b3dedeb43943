package cloudclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/redact"
)

// echoPassword is a password with characters a JSON or HTML echo escapes.
const echoPassword = `Pa55 "w0rd" <&> 7731`

// echoCloud is a fake cloud whose errors repeat the request in a short JSON
// message, well under the length APIError quotes: the login's password, the
// bearer token of an authenticated request, and the token of the session
// before (as a cloud complaining about a replaced session would).
type echoCloud struct {
	*fakeCloud
	tokens []string // access tokens issued, oldest first
}

func newEchoCloud(t *testing.T) *echoCloud {
	ec := &echoCloud{fakeCloud: newFakeCloud(t)}
	ec.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		var creds map[string]string
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &creds)
		w.Header().Set("Content-Type", "application/json")
		if n == 1 || creds["password"] != echoPassword {
			// The first login is answered as a backend fault quoting it.
			w.WriteHeader(500)
			_ = json.NewEncoder(w).Encode(map[string]any{"message": "rejected " + creds["password"]})
			return true
		}
		tok := fmt.Sprintf("%032x", 0xa11ce0000+n)
		ec.mu.Lock()
		ec.valid[tok] = true
		ec.tokens = append(ec.tokens, tok)
		ec.mu.Unlock()
		fmt.Fprintf(w, `{"accessToken":%q,"refreshToken":"refresh-%s","user":{"id":7}}`, tok, tok)
		return true
	}
	return ec
}

func (ec *echoCloud) issued() []string {
	ec.mu.Lock()
	defer ec.mu.Unlock()
	return append([]string(nil), ec.tokens...)
}

// echo answers route with status and a message quoting the request's
// Authorization header, plus the first token ever issued once it is no
// longer the current one.
func (ec *echoCloud) echo(route string, status int) {
	ec.handle(route, func(w http.ResponseWriter, r *http.Request) {
		msg := "rejected " + r.Header.Get("Authorization")
		if toks := ec.issued(); len(toks) > 1 {
			msg += "; replaced " + toks[0]
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": msg, "authorization": r.Header.Get("Authorization")})
	})
}

// The cloud's short echoes of the password (login) and of the current and
// previous bearer tokens (authenticated requests) reach neither the error,
// its message and data, nor the client's own log lines, at any level.
func TestShortEchoesOfSecretsAreScrubbed(t *testing.T) {
	ec := newEchoCloud(t)
	logs := &logBuffer{}
	c, _ := newClient(t, ec.fakeCloud, func(cfg *cloudclient.Config) {
		cfg.Credentials = cloudclient.StaticCredentials(cloudclient.Credentials{Email: testEmail, Password: echoPassword})
		cfg.Logger = logs.logger()           // no redaction of its own: what it shows is what the client wrote
		cfg.LoginRetryBase = time.Nanosecond // the next login follows the failed one at once
	})
	ctx := ctxT(t)

	var errs []error
	_, err := c.Login(ctx) // 500 quoting the password
	if err == nil {
		t.Fatal("the first login succeeded; the echo was not served")
	}
	errs = append(errs, err)

	// A 401 quoting the bearer token forces a fresh login; the retry is
	// answered 500 quoting the new token and the replaced one.
	first := true
	ec.handle("GET /v1/user", func(w http.ResponseWriter, r *http.Request) {
		if first {
			first = false
			ec.echo("GET /v1/user", 500)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_ = json.NewEncoder(w).Encode(map[string]any{"message": "rejected " + r.Header.Get("Authorization")})
			return
		}
	})
	_, err = c.User(ctx)
	if err == nil {
		t.Fatal("GET /v1/user succeeded; the echo was not served")
	}
	errs = append(errs, err)
	ec.echo("GET /v1/objects", 422)
	_, err = c.Objects(ctx)
	errs = append(errs, err)

	toks := ec.issued()
	if len(toks) != 2 {
		t.Fatalf("the cloud issued %d tokens, want 2 (login, then the re-login after the 401)", len(toks))
	}
	secrets := []string{echoPassword, "w0rd", toks[0], toks[1], toks[0][:12], toks[1][:12]}
	for i, err := range errs {
		if err == nil {
			t.Fatalf("request %d: no error", i)
		}
		text := err.Error()
		var ae *cloudclient.APIError
		if errors.As(err, &ae) {
			data, _ := json.Marshal(ae.Data)
			headers, _ := json.Marshal(ae.Headers)
			text += "\n" + ae.Message() + "\n" + string(data) + "\n" + string(headers)
		}
		if !strings.Contains(text, "rejected "+redact.Mask) && !strings.Contains(text, "rejected Bearer "+redact.Mask) {
			t.Errorf("request %d: the echoed message is not quoted with the secret masked: %s", i, text)
		}
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("request %d: secret %q in the error:\n%s", i, s, text)
			}
		}
	}
	if !strings.Contains(errs[1].Error(), "replaced "+redact.Mask) {
		t.Errorf("the previous token's echo is not shown masked: %v", errs[1])
	}
	out := logs.String()
	if !strings.Contains(out, "level=DEBUG") {
		t.Fatalf("no debug line logged; the check would see nothing:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("secret %q in the client's log:\n%s", s, out)
		}
	}
	if c.Secrets().Len() < 5 {
		t.Errorf("the client remembers %d secrets, want the password and two access and two refresh tokens", c.Secrets().Len())
	}
}

// A token installed from elsewhere (SetToken) is a secret too, and a plain
// text error body is scrubbed before it is cut to the kept length.
func TestSetTokenIsRememberedAndTextBodiesScrubbed(t *testing.T) {
	fc := newFakeCloud(t)
	tok := strings.Repeat("c0ffee", 6)
	fc.handle("GET /v1/user", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(500)
		// The token straddles the 2048-byte cut: 8 of its bytes are before it.
		io.WriteString(w, strings.Repeat(".", 2033)+r.Header.Get("Authorization"))
	})
	fc.mu.Lock()
	fc.valid[tok] = true
	fc.mu.Unlock()
	c, _ := newClient(t, fc)
	c.SetToken(cloudclient.Token{AccessToken: tok})
	_, err := c.User(ctxT(t))
	var ae *cloudclient.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want an APIError", err)
	}
	if s, _ := ae.Data.(string); strings.Contains(s, tok[:8]) || !strings.HasSuffix(s, "Bearer "+redact.Mask) {
		t.Errorf("text body kept %q", s[max(0, len(s)-30):])
	}
}

// A write's answer is shown to the user (set prints it): an answer quoting
// the bearer token, as JSON or as text, is scrubbed too.
func TestCommandAnswerEchoIsScrubbed(t *testing.T) {
	ec := newEchoCloud(t)
	c, _ := newClient(t, ec.fakeCloud, func(cfg *cloudclient.Config) {
		cfg.Credentials = cloudclient.StaticCredentials(cloudclient.Credentials{Email: testEmail, Password: echoPassword})
		cfg.LoginRetryBase = time.Nanosecond // the next login follows the failed one at once
	})
	ctx := ctxT(t)
	_, _ = c.Login(ctx) // the echo cloud's first login fails
	for _, ctype := range []string{"application/json", "text/plain"} {
		ec.handle("POST /v1/module/command", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			if ctype == "text/plain" {
				io.WriteString(w, "ok for "+r.Header.Get("Authorization"))
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"status": true, "by": r.Header.Get("Authorization")})
		})
		res, err := c.Command(ctx, cloudclient.Command{Devid: "DEV1", Pool: "P4", Parameter: "v8", Value: 1})
		if err != nil {
			t.Fatal(err)
		}
		answer, _ := json.Marshal(res.Data)
		toks := ec.issued()
		if len(toks) == 0 || strings.Contains(string(answer), toks[len(toks)-1][:12]) || !strings.Contains(string(answer), redact.Mask) {
			t.Errorf("%s answer kept as %s (tokens %v)", ctype, answer, toks)
		}
	}
}

// A cloud that echoes the password and the bearer token into the text of
// its records (a module named after the token it was sent, an object whose
// street is the password) has them masked in every record the client
// returns, in the fields and in Raw; the identities the exporter keys on
// (devid, ids) come back as sent.
func TestRecordsEchoingSecretsAreScrubbed(t *testing.T) {
	fc := newFakeCloud(t)
	echo := func(r *http.Request) string {
		return "x " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + " " + testPassword + " y"
	}
	answer := func(route, format string, n int) {
		fc.handle(route, func(w http.ResponseWriter, r *http.Request) {
			args := make([]any, n)
			for i := range args {
				args[i] = echo(r)
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, format, args...)
		})
	}
	answer("GET /v1/modules", `{"data":[{"devid":"D1","id":11,"connectedAt":1700000000,"name":%q,"moduleTitle":%q,"moduleVersion":%q,`+
		`"moduleAddress":%q,"moduleInterface":%q,"isAcceptedAt":%q,"gateway":{"address":%q,"interface":%q,"version":%q},`+
		`"permissions":[%q],"parameterSchemas":[{"id":1,"name":%q,"value":%q}]}]}`, 12)
	answer("GET /v1/user", `{"user":{"id":7,"name":%q,"email":%q,"language":%q,"note":%q}}`, 4)
	answer("GET /v1/user/permissions", `{"permissions":[%q]}`, 1)
	answer("GET /v1/objects", `{"data":[{"id":1,"name":%q,"addressCity":%q,"addressStreet":%q,"addressPostCode":%q,"addressCountry":%q,"addressHouseNumber":%q}]}`, 6)
	answer("GET /v1/objects/1", `{"status":%q,"object":{"id":1,"name":%q}}`, 2)
	answer("GET /v1/modules/D1/card", `{"id":3,"moduleId":11,"clientFullName":%q,"phone":%q}`, 2)
	answer("POST /v1/modules/alarms", `{"alarms":[{"id":5,"devid":"D1","created_at":"2026-01-01","text":%q}]}`, 1)
	answer("POST /v1/modules/activity", `{"activities":[{"id":6,"devid":"D1","name":%q,"value":{"value":%q},"prevValue":%q,"state":%q,"user":%q}]}`, 5)
	answer("GET /v1/system/version", `{"version":%q,"devMode":false}`, 1)
	answer("POST /v1/modules/parameters", `{"D1":{"P4":{"v1":{"value":%q},"v2":{"value":5,"note":%q}}}}`, 2)
	// The login's own objects quote the password and the token it issues.
	fc.loginHook = func(w http.ResponseWriter, r *http.Request, n int) bool {
		tok := fmt.Sprintf("login-token-%08d", n)
		fc.mu.Lock()
		fc.valid[tok] = true
		fc.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"accessToken":%q,"refreshToken":"r","user":{"id":7},"objects":[{"id":1,"name":%q}]}`,
			tok, "x "+tok+" "+testPassword+" y")
		return true
	}
	c, _ := newClient(t, fc)
	ctx := ctxT(t)

	var got []any
	add := func(v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	res, err := c.Login(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add(res.Objects, nil) // the result itself carries the token, as it must
	l, err := c.Modules(ctx, 1)
	add(l, err)
	add(c.User(ctx))
	add(c.Permissions(ctx))
	add(c.Objects(ctx))
	add(c.Object(ctx, 1))
	add(c.ModuleCard(ctx, "D1"))
	add(c.Alarms(ctx, cloudclient.ListRequest{Modules: []string{"D1"}}))
	add(c.Activity(ctx, cloudclient.ListRequest{Modules: []string{"D1"}}))
	add(c.SystemVersion(ctx))
	ups, err := c.Prime(ctx, []string{"D1"})
	add(ups, err)

	tok, err := c.AccessToken()
	if err != nil || tok == "" {
		t.Fatalf("no token: %v", err)
	}
	for i, v := range got {
		text := fmt.Sprintf("%+v", v)
		b, _ := json.Marshal(v)
		text += string(b)
		for _, secret := range []string{tok, testPassword} {
			if strings.Contains(text, secret) {
				t.Errorf("record %d carries %q: %s", i, secret, text)
			}
		}
		if !strings.Contains(text, redact.Mask+" y") { // the password, before the text that follows it
			t.Errorf("record %d lost the echoing text instead of masking it: %s", i, text)
		}
	}
	if len(ups) != 2 || ups[1].Value != 5.0 || ups[0].Devid != "D1" {
		t.Errorf("prime numbers or identities changed: %+v", ups)
	}
	m := l.Modules[0]
	if m.Devid != "D1" || m.ID != 11 || m.ConnectedAt != 1700000000 || !m.Online() {
		t.Errorf("module identity changed: %+v", m)
	}
	for _, f := range []string{m.Name, m.Title, m.Version, m.Address, m.Interface, m.IsAcceptedAt,
		m.Gateway.Address, m.Gateway.Interface, m.Gateway.Version, m.Permissions[0], m.ParameterSchemas[0].Name} {
		if want := "x " + redact.Mask + " " + redact.Mask + " y"; f != want {
			t.Errorf("module field %q, want %q", f, want)
		}
	}
}
