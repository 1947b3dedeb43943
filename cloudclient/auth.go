package cloudclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/wire"
)

// DefaultTokenLeeway is the token model's expiry leeway.
const DefaultTokenLeeway = 60 * time.Second

// Login retry on a duplicate-token race at the server: pauses before the
// 2nd, 3rd and 4th attempt, each plus a jitter of up to loginJitter.
var loginBackoff = []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

const loginJitter = 150 * time.Millisecond

// Token is a bearer token. There is no refresh endpoint: RefreshToken is kept
// but never used.
type Token struct {
	AccessToken, RefreshToken, Type string
	ExpiresAt                       time.Time // zero = never expires
}

// Expired reports whether now+leeway is at or past ExpiresAt. A token without
// an expiry never expires.
func (t Token) Expired(now time.Time, leeway time.Duration) bool {
	if t.ExpiresAt.IsZero() {
		return false
	}
	return !now.Add(leeway).Before(t.ExpiresAt)
}

// LoginResult is the answer of POST /v1/auth/user.
type LoginResult struct {
	Token   Token
	UserID  int // 0 when the answer carried no user
	Objects []Object
}

var loginCall = call{method: "POST", path: "/auth/user", tmpl: cloudapi.EndpointLogin}

// ClassifyLogin returns the outcome of a login attempt that returned err (nil
// is cloudapi.LoginOK). Only an answer of the login endpoint itself counts as a
// verdict on the credentials: a 401 of another request wrapped in err does
// not make the login rejected.
func ClassifyLogin(err error) cloudapi.LoginOutcome {
	if err == nil {
		return cloudapi.LoginOK
	}
	if ae := loginAPIError(err); ae != nil {
		switch ae.Status {
		case 400, 401, 403, 422:
			return cloudapi.LoginRejected
		}
	}
	return cloudapi.LoginUnreachable
}

// loginAPIError finds the login endpoint's APIError in err's tree (wrapped
// and joined errors), or nil.
func loginAPIError(err error) *APIError {
	if ae, ok := err.(*APIError); ok && ae.Endpoint == loginCall.tmpl {
		return ae
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return loginAPIError(inner)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if ae := loginAPIError(inner); ae != nil {
				return ae
			}
		}
	}
	return nil
}

// Login logs in with the configured credentials and replaces the token.
func (c *Client) Login(ctx context.Context) (*LoginResult, error) {
	if err := c.lockLogin(ctx); err != nil {
		return nil, err
	}
	defer c.unlockLogin()
	return c.loginLocked(ctx, false)
}

// EnsureAuth logs in when there is no usable token or it expires within the
// refresh leeway.
func (c *Client) EnsureAuth(ctx context.Context) error {
	_, _, err := c.validToken(ctx)
	return err
}

// EnsureToken is EnsureAuth returning the token: for the realtime handshake,
// which must carry a current token and wait for a login in progress.
func (c *Client) EnsureToken(ctx context.Context) (string, error) {
	tok, _, err := c.validToken(ctx)
	return tok, err
}

// ForceRelogin drops the cached token and logs in again. Without credentials
// (no provider, or ErrNoCredentials) the current token is kept and
// ErrNoCredentials returned. If the fresh login fails for an upstream or
// transport reason, a previous token that has not expired is put back so the
// client is never left unauthenticated by an auth backend outage.
func (c *Client) ForceRelogin(ctx context.Context) error {
	c.mu.Lock()
	gen := c.loginGen
	c.mu.Unlock()
	if err := c.lockLogin(ctx); err != nil {
		return err
	}
	defer c.unlockLogin()
	c.mu.Lock()
	if c.loginGen != gen && c.loginErr == nil && c.hasTok {
		// A login completed while we waited: it is as fresh as ours would be.
		c.mu.Unlock()
		return nil
	}
	prev, hadPrev := c.tok, c.hasTok
	c.mu.Unlock()
	_, err := c.loginLocked(ctx, true)
	if err != nil && errors.Is(err, ErrNoCredentials) {
		c.log.Warn("forced re-login without credentials: keeping the current token")
		return err
	}
	var ae *APIError
	if err != nil && hadPrev && prev.AccessToken != "" && !prev.Expired(c.cfg.Now(), DefaultTokenLeeway) &&
		!(errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403)) {
		c.mu.Lock()
		if !c.hasTok {
			c.tok, c.hasTok = prev, true
		}
		c.mu.Unlock()
	}
	return err
}

// AccessToken returns the current access token, or ErrNotAuthenticated.
func (c *Client) AccessToken() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.hasTok || c.tok.AccessToken == "" {
		return "", ErrNotAuthenticated
	}
	return c.tok.AccessToken, nil
}

// Token returns the current token and whether there is one.
func (c *Client) Token() (Token, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tok, c.hasTok
}

// SetToken installs a token obtained elsewhere (e.g. persisted). An empty
// access token clears the token instead.
func (c *Client) SetToken(t Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.AccessToken == "" {
		c.tok, c.hasTok = Token{}, false
		return
	}
	c.cfg.Secrets.Add(t.AccessToken, t.RefreshToken)
	c.tok, c.hasTok = t, true
}

// UserID returns the user id of the last login answer (0 if none).
func (c *Client) UserID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.userID
}

// Logout revokes the token at the server and always clears it locally.
// 401, 403 and 404 answers are not errors.
func (c *Client) Logout(ctx context.Context) error {
	if err := c.lockLogin(ctx); err != nil {
		return err
	}
	defer c.unlockLogin()
	c.mu.Lock()
	tok, has := c.tok, c.hasTok
	c.tok, c.hasTok = Token{}, false
	c.loginGen++
	c.loginErr = ErrNotAuthenticated
	c.mu.Unlock()
	if !has || tok.AccessToken == "" {
		return nil
	}
	cl := &call{method: "POST", path: "/auth/revoke", tmpl: cloudapi.EndpointRevoke, auth: true}
	r, err := c.send(ctx, cl, nil, tok.AccessToken)
	_, err = c.check(cl, r, err)
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403 || ae.Status == 404) {
		return nil
	}
	return err
}

// ExitLogoutTimeout bounds the logout a program sends as it stops.
const ExitLogoutTimeout = 3 * time.Second

// LogoutOnExit revokes the token as a program stops, so it leaves no
// session behind: on a context of its own (the program's is cancelled by
// then), bounded by ExitLogoutTimeout. A failure is logged at debug level
// only: the token expires on its own.
func (c *Client) LogoutOnExit() {
	ctx, cancel := context.WithTimeout(context.Background(), ExitLogoutTimeout)
	defer cancel()
	if err := c.Logout(ctx); err != nil {
		c.log.Debug("logout", "err", err)
	}
}

func (c *Client) lockLogin(ctx context.Context) error {
	select {
	case c.loginSlot <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) unlockLogin() { <-c.loginSlot }

// validToken returns a usable token, logging in (or waiting for a login in
// progress) when there is none or it expires within the refresh leeway. gen
// identifies the login that produced the token.
func (c *Client) validToken(ctx context.Context) (string, uint64, error) {
	c.mu.Lock()
	t, has, gen := c.tok, c.hasTok, c.loginGen
	if has && t.AccessToken == "" {
		c.tok, c.hasTok, has = Token{}, false, false
	}
	c.mu.Unlock()
	if has && !t.Expired(c.cfg.Now(), c.cfg.RefreshLeeway) {
		return t.AccessToken, gen, nil
	}
	return c.loginShared(ctx, gen, "")
}

// reloginAfterReject is called after the server rejected token (issued by
// login gen). Unless another caller already replaced it, the token is dropped
// and a fresh login made.
func (c *Client) reloginAfterReject(ctx context.Context, gen uint64, token string) (string, error) {
	tok, _, err := c.loginShared(ctx, gen, token)
	return tok, err
}

// loginShared logs in once for all concurrent callers: whoever waited for a
// login that completed meanwhile reuses its outcome.
func (c *Client) loginShared(ctx context.Context, seenGen uint64, rejected string) (string, uint64, error) {
	if err := c.lockLogin(ctx); err != nil {
		return "", 0, err
	}
	defer c.unlockLogin()
	c.mu.Lock()
	if c.loginGen != seenGen {
		t, has, gen, lerr := c.tok, c.hasTok, c.loginGen, c.loginErr
		c.mu.Unlock()
		if lerr != nil && !errors.Is(lerr, ErrNotAuthenticated) {
			return "", gen, lerr
		}
		if has && t.AccessToken != "" && t.AccessToken != rejected {
			return t.AccessToken, gen, nil
		}
	} else {
		c.mu.Unlock()
	}
	if _, err := c.loginLocked(ctx, rejected != ""); err != nil {
		return "", 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tok.AccessToken, c.loginGen, nil
}

// loginLocked runs a login; the caller holds the login slot. Credentials are
// resolved first so that, without them, the current token is kept.
func (c *Client) loginLocked(ctx context.Context, drop bool) (*LoginResult, error) {
	if c.cfg.Credentials == nil {
		return nil, ErrNoCredentials
	}
	creds, err := c.cfg.Credentials(ctx)
	if err != nil {
		if errors.Is(err, ErrNoCredentials) {
			return nil, err
		}
		return nil, fmt.Errorf("cloudclient: resolving credentials: %w", err)
	}
	// Remembered before it is sent: a login answer may echo it.
	c.cfg.Secrets.Add(creds.Password)
	if drop {
		c.mu.Lock()
		c.tok, c.hasTok = Token{}, false
		c.mu.Unlock()
	}
	res, err := c.postLogin(ctx, creds)
	c.mu.Lock()
	c.loginGen++
	c.loginErr = err
	if err == nil {
		c.cfg.Secrets.Add(res.Token.AccessToken, res.Token.RefreshToken)
		c.tok, c.hasTok = res.Token, true
		c.userID = res.UserID
	}
	c.mu.Unlock()
	if err == nil {
		// Scrubbed once the tokens it carries are remembered.
		for i := range res.Objects {
			c.scrubObject(&res.Objects[i])
		}
	}
	// A login the caller abandoned (shutdown) says nothing about the cloud.
	if c.cfg.LoginObserver != nil && !errors.Is(err, context.Canceled) {
		c.cfg.LoginObserver(ClassifyLogin(err))
	}
	return res, err
}

// postLogin posts the credentials, retrying the server's duplicate-token race.
func (c *Client) postLogin(ctx context.Context, creds Credentials) (*LoginResult, error) {
	payload, err := json.Marshal(map[string]string{"email": creds.Email, "password": creds.Password})
	if err != nil {
		return nil, err
	}
	cl := loginCall
	for attempt := 0; ; attempt++ {
		r, err := c.send(ctx, &cl, payload, "")
		if err != nil {
			c.logFailure(cl.tmpl, err)
			return nil, err
		}
		if r.status != 200 {
			ae := c.apiError(&cl, r)
			if r.status == 500 && isDuplicateEntry(ae) && attempt < len(loginBackoff) {
				d := loginBackoff[attempt] + c.jitter(loginJitter)
				c.log.Debug("login hit a duplicate-token race; retrying", "attempt", attempt+1, "pause", d)
				if err := c.cfg.Sleep(ctx, d); err != nil {
					return nil, err
				}
				continue
			}
			c.logFailure(cl.tmpl, ae)
			return nil, ae
		}
		res, err := decodeLogin(r.body)
		if err != nil {
			var de *DecodeError
			if errors.As(err, &de) {
				de.Endpoint, de.Status, de.ContentType = cl.tmpl, r.status, r.header.Get("Content-Type")
				if de.Err != nil {
					// It may quote the answer (an unparseable expiresAt).
					de.Err = errors.New(c.cfg.Secrets.Scrub(de.Err.Error()))
				}
			}
			c.logFailure(cl.tmpl, err)
			return nil, err
		}
		return res, nil
	}
}

func isDuplicateEntry(e *APIError) bool {
	m := strings.ToLower(e.Message())
	if s, ok := e.Data.(string); ok && m == "" {
		m = strings.ToLower(s)
	}
	return strings.Contains(m, "duplicate entry") || strings.Contains(m, "er_dup_entry")
}

// decodeLogin decodes a login answer. The body must be a JSON object with a
// non-empty access token.
func decodeLogin(data []byte) (*LoginResult, error) {
	if wire.FirstByte(data) != '{' {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return nil, &DecodeError{Endpoint: loginCall.tmpl, Reason: "malformed JSON"}
		}
		return nil, &DecodeError{Endpoint: loginCall.tmpl, Reason: "expected a JSON object"}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, &DecodeError{Endpoint: loginCall.tmpl, Reason: "malformed JSON"}
	}
	res := &LoginResult{Objects: []Object{}}
	tok := &res.Token
	tok.AccessToken = wire.String(m["accessToken"])
	if tok.AccessToken == "" {
		tok.AccessToken = wire.String(m["token"])
	}
	if tok.AccessToken == "" {
		return nil, ErrNoAccessToken
	}
	tok.RefreshToken = wire.String(m["refreshToken"])
	tok.Type = wire.String(m["type"])
	if tok.Type == "" {
		tok.Type = "bearer"
	}
	if raw, ok := m["expiresAt"]; ok && !wire.IsNull(raw) {
		t, err := parseTimestamp(raw)
		if err != nil {
			return nil, &DecodeError{Endpoint: loginCall.tmpl, Reason: "expiresAt", Err: err}
		}
		tok.ExpiresAt = t
	}
	if raw, ok := m["user"]; ok && wire.FirstByte(raw) == '{' {
		var u struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(raw, &u) == nil {
			if id, ok := wire.Int(u.ID); ok {
				res.UserID = int(id)
			}
		}
	}
	if raw, ok := m["objects"]; ok && wire.FirstByte(raw) == '[' {
		res.Objects = decodeObjectList(raw)
	}
	return res, nil
}

// timestampLayouts are the ISO 8601 forms accepted for the cloud's times
// (expiresAt, the lists' created_at and finished_at); a time without an
// offset is UTC.
var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
}

func parseTimestamp(raw json.RawMessage) (time.Time, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] != '"' {
		// Epoch seconds (or milliseconds) are tolerated.
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f < 0 || f > 1e16 {
			return time.Time{}, fmt.Errorf("not a timestamp")
		}
		if f > 1e12 {
			return time.UnixMilli(int64(f)).UTC(), nil
		}
		return time.Unix(int64(f), 0).UTC(), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, fmt.Errorf("not a string")
	}
	s = strings.TrimSpace(s)
	for _, l := range timestampLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	if len(s) > 40 {
		s = s[:40]
	}
	return time.Time{}, fmt.Errorf("unparseable timestamp %q", s)
}
