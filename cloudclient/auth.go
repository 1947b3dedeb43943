package cloudclient

import (
	"bytes"
	"context"
	"crypto/sha256"
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
// not make the login rejected, and neither does a page that something in
// front of the cloud answered (an HTML or empty 403).
func ClassifyLogin(err error) cloudapi.LoginOutcome {
	if err == nil {
		return cloudapi.LoginOK
	}
	var te *ThrottledError
	if errors.As(err, &te) && te.Endpoint == loginCall.tmpl {
		return cloudapi.LoginRateLimited
	}
	ae := loginAPIError(err)
	if ae == nil {
		return cloudapi.LoginUnreachable
	}
	switch {
	case ae.Status == 401:
		return cloudapi.LoginRejected
	case ae.Status == 400 || ae.Status == 403 || ae.Status == 422:
		if ae.JSONBody {
			return cloudapi.LoginRejected
		}
		return cloudapi.LoginBlocked
	case ae.Status == 429:
		return cloudapi.LoginRateLimited
	case ae.Status == 503 && ae.header("Retry-After") != "":
		return cloudapi.LoginRateLimited
	case ae.Status == 408 || ae.Status >= 500:
		return cloudapi.LoginUnreachable
	case ae.Status >= 400:
		return cloudapi.LoginBlocked
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

// loginFlight is the login in progress: every caller that needs a token
// while it runs waits for it and shares its outcome, success or failure.
type loginFlight struct {
	done   chan struct{}
	forced bool // the current token is being replaced: requests wait for the new one
	err    error
	// abandoned: the caller that ran it gave up (its context ended), so
	// its failure says nothing about the cloud; a waiter logs in itself.
	abandoned bool
}

// Login logs in with the configured credentials and replaces the token. It
// shares a login in progress and honours the account's login backoff like
// every other path.
func (c *Client) Login(ctx context.Context) (*LoginResult, error) {
	res, _, err := c.obtain(ctx, loginNeed{fresh: true, since: c.cfg.Now()})
	if err != nil {
		return nil, err
	}
	if res == nil {
		// A login that finished while we waited: answer with its token.
		c.mu.Lock()
		res = &LoginResult{Token: c.tok, UserID: c.userID, Objects: []Object{}}
		c.mu.Unlock()
	}
	return res, nil
}

// EnsureAuth logs in when there is no usable token or it expires within the
// refresh leeway.
func (c *Client) EnsureAuth(ctx context.Context) error {
	_, err := c.obtainToken(ctx, loginNeed{})
	return err
}

// EnsureToken is EnsureAuth returning the token.
func (c *Client) EnsureToken(ctx context.Context) (string, error) {
	return c.obtainToken(ctx, loginNeed{})
}

// ForceRelogin drops the cached token and logs in again, unless a login
// finished while the caller waited: that token is as fresh as its own
// would be. It is FreshLogin from now.
func (c *Client) ForceRelogin(ctx context.Context) error {
	return c.FreshLogin(ctx, c.cfg.Now())
}

// FreshLogin makes sure the account holds a token issued at or after since,
// logging in when it does not, whoever asked for the token that satisfies
// it: a recovery step passes the time of its object's previous step (or
// when its trouble began), so the steps of several objects taken close
// together share one login while one object's successive steps each log in.
// A login in progress is waited for and its failure shared; during the
// account's login backoff the last failure is returned at once
// (*LoginBackoffError). Without credentials (no provider, or
// ErrNoCredentials) the current token is kept and ErrNoCredentials
// returned. A failure that is no verdict on the credentials keeps the
// current token, so an auth backend outage never leaves the client
// unauthenticated.
func (c *Client) FreshLogin(ctx context.Context, since time.Time) error {
	_, err := c.FreshToken(ctx, since)
	return err
}

// FreshToken is FreshLogin returning when the token it settled for was
// issued: a caller whose next step must log in again passes a time after
// it as that step's since.
func (c *Client) FreshToken(ctx context.Context, since time.Time) (issued time.Time, err error) {
	_, tok, err := c.obtain(ctx, loginNeed{fresh: true, since: since, forced: true})
	if err != nil {
		return time.Time{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hasTok && c.tok.AccessToken == tok {
		return c.tokIssued, nil
	}
	return c.cfg.Now(), nil // replaced meanwhile: newer than the one we had
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
	c.replaceTokenLocked(t, c.cfg.Now())
}

// UserID returns the user id of the last login answer (0 if none).
func (c *Client) UserID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.userID
}

// Logout revokes the current token at the server and always clears it
// locally. 401, 403 and 404 answers are not errors.
func (c *Client) Logout(ctx context.Context) error {
	if err := c.lockLogin(ctx); err != nil {
		return err
	}
	defer c.unlockLogin()
	c.mu.Lock()
	tok, has := c.tok, c.hasTok
	c.tok, c.hasTok = Token{}, false
	c.loginErr = ErrNotAuthenticated
	if has {
		delete(c.tokens, tok.AccessToken)
	}
	c.mu.Unlock()
	if !has || tok.AccessToken == "" {
		return nil
	}
	return c.revoke(ctx, tok.AccessToken)
}

// revoke ends token at the server. 401, 403 and 404 answers are not errors:
// the token is not valid any more either way.
func (c *Client) revoke(ctx context.Context, token string) error {
	cl := &call{method: "POST", path: "/auth/revoke", tmpl: cloudapi.EndpointRevoke, auth: true}
	r, err := c.send(ctx, cl, nil, token)
	_, err = c.check(cl, r, err)
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403 || ae.Status == 404) {
		return nil
	}
	return err
}

// ExitLogoutTimeout bounds the logout a program sends as it stops.
const ExitLogoutTimeout = 3 * time.Second

// LogoutOnExit revokes every token the client still holds as a program
// stops (the current one, and any superseded one not revoked yet), so it
// leaves no session behind: on a context of its own (the program's is
// cancelled by then), bounded by ExitLogoutTimeout, the revokes in
// parallel. A failure is logged at debug level only: the token expires on
// its own.
func (c *Client) LogoutOnExit() {
	ctx, cancel := context.WithTimeout(context.Background(), ExitLogoutTimeout)
	defer cancel()
	c.mu.Lock()
	var others []string
	for tok := range c.tokens {
		if !c.hasTok || tok != c.tok.AccessToken {
			others = append(others, tok)
		}
	}
	clear(c.tokens)
	c.mu.Unlock()
	done := make(chan struct{}, len(others))
	for _, tok := range others {
		go func() {
			if err := c.revoke(ctx, tok); err != nil {
				c.log.Debug("revoking a superseded token", "err", err)
			}
			done <- struct{}{}
		}()
	}
	if err := c.Logout(ctx); err != nil {
		c.log.Debug("logout", "err", err)
	}
	for range others {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
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

// loginNeed says which token a caller can use.
type loginNeed struct {
	// fresh: only a token issued at or after since will do.
	fresh bool
	since time.Time
	// rejected is a token the cloud refused: any other will do.
	rejected string
	// forced: the caller replaces the current token (ForceRelogin, a
	// recovery step, a token the cloud refused): requests wait for the
	// new one rather than use it.
	forced bool
	// lease: the caller uses the token until it releases it
	// (releaseToken), so it is not revoked meanwhile.
	lease bool
}

// takeLocked returns the current token for n, counting the caller as its
// user when n asks for a lease.
func (c *Client) takeLocked(n loginNeed) string {
	tok := c.tok.AccessToken
	if n.lease {
		c.useTokenLocked(tok)
	}
	return tok
}

// accepts reports whether the current token meets the need. The caller
// holds c.mu.
func (c *Client) acceptsLocked(n loginNeed, now time.Time) bool {
	if !c.hasTok || c.tok.AccessToken == "" {
		return false
	}
	switch {
	case n.fresh:
		return !c.tokIssued.Before(n.since)
	case n.rejected != "":
		return c.tok.AccessToken != n.rejected
	}
	return !c.tok.Expired(now, c.cfg.RefreshLeeway)
}

// obtainToken returns a token that meets n; with n.lease the caller is
// counted as its user until it calls releaseToken.
func (c *Client) obtainToken(ctx context.Context, n loginNeed) (string, error) {
	_, tok, err := c.obtain(ctx, n)
	return tok, err
}

// obtain returns a token that meets n, logging in once for every concurrent
// caller: whoever finds a login in progress waits for it and shares its
// outcome; a failed login arms the account-wide login backoff, during which
// its failure is every caller's answer. res is the login answer when this
// caller's own login produced the token.
func (c *Client) obtain(ctx context.Context, n loginNeed) (res *LoginResult, tok string, err error) {
	for {
		now := c.cfg.Now()
		c.mu.Lock()
		f := c.flight
		if (f == nil || !f.forced) && c.acceptsLocked(n, now) {
			tok = c.takeLocked(n)
			c.mu.Unlock()
			return nil, tok, nil
		}
		if f != nil {
			c.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, "", ctx.Err()
			}
			if f.err != nil && !f.abandoned {
				// A failure is shared, unless the current token still
				// serves this caller (a forced login failed upstream and
				// kept it).
				c.mu.Lock()
				ok := !n.fresh && !n.forced && c.acceptsLocked(n, c.cfg.Now())
				if ok {
					tok = c.takeLocked(n)
				}
				c.mu.Unlock()
				if ok {
					return nil, tok, nil
				}
				return nil, "", f.err
			}
			continue
		}
		if !c.loginRetryAt.IsZero() && now.Before(c.loginRetryAt) {
			err := &LoginBackoffError{Until: c.loginRetryAt, Err: c.loginErr}
			c.mu.Unlock()
			return nil, "", err
		}
		f = &loginFlight{done: make(chan struct{}), forced: n.forced}
		c.flight = f
		c.mu.Unlock()

		res, err = c.runLogin(ctx, n.forced)

		c.mu.Lock()
		c.flight = nil
		f.err, f.abandoned = err, err != nil && ctx.Err() != nil
		if err == nil {
			tok = c.takeLocked(n)
		}
		c.mu.Unlock()
		close(f.done)
		if err != nil {
			return nil, "", err
		}
		return res, tok, nil
	}
}

// runLogin runs one login attempt for obtain, which made it the flight.
// Credentials are resolved first so that, without them, the current token
// is kept; credentials the cloud rejected before are not sent again until
// they change or the rejection's hold ends.
func (c *Client) runLogin(ctx context.Context, forced bool) (*LoginResult, error) {
	if err := c.lockLogin(ctx); err != nil {
		return nil, err
	}
	defer c.unlockLogin()
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
	c.cfg.Secrets.AddPersonal(creds.Email)
	key := credentialsKey(creds)
	now := c.cfg.Now()
	c.mu.Lock()
	if c.heldKey != "" {
		if c.heldKey == key && now.Before(c.heldUntil) {
			err := &CredentialsHeldError{Until: c.heldUntil, Err: c.heldErr}
			c.mu.Unlock()
			return nil, err
		}
		if c.heldKey != key {
			c.log.Info("credentials changed since the cloud rejected them; logging in again")
		}
		c.heldKey, c.heldErr = "", nil
	}
	c.mu.Unlock()

	res, err := c.postLogin(ctx, creds)
	outcome := ClassifyLogin(err)
	// A login its caller abandoned (a shutdown, the caller's own deadline)
	// says nothing about the cloud: no backoff, not counted.
	abandoned := err != nil && ctx.Err() != nil
	now = c.cfg.Now()
	c.mu.Lock()
	c.loginErr = err
	switch {
	case err == nil:
		c.cfg.Secrets.Add(res.Token.AccessToken, res.Token.RefreshToken)
		c.replaceTokenLocked(res.Token, now)
		c.userID = res.UserID
		c.loginFails, c.loginRetryAt = 0, time.Time{}
		c.lastLogin = LoginState{Outcome: cloudapi.LoginOK, At: now}
	case abandoned || isCanceled(err):
	case outcome == cloudapi.LoginRejected:
		c.heldKey, c.heldUntil, c.heldErr = key, now.Add(c.cfg.RejectedRetry), err
		if forced && c.hasTok {
			// The credentials are refused: the token they replaced is no
			// longer ours to rely on.
			c.dropTokenLocked()
		}
		c.lastLogin = LoginState{Outcome: outcome, At: now, Err: compactLoginErr(err)}
		// Debug only: the caller says it once, in its own words (a tool
		// exits with it; the exporter's login observer logs a warning).
		c.log.Debug("the cloud rejected the credentials; not sending them again until they change",
			"until", c.heldUntil.UTC().Format(time.RFC3339), "err", err)
	default:
		c.loginFails++
		pause := LoginRetryAfter(c.loginFails, c.cfg.LoginRetryBase, c.cfg.LoginRetryMax)
		if until, ok := RateLimited(err, now); ok && until.After(now.Add(pause)) {
			pause = until.Sub(now)
		}
		c.loginRetryAt = now.Add(pause)
		c.lastLogin = LoginState{Outcome: outcome, At: now, Err: compactLoginErr(err)}
	}
	c.mu.Unlock()
	if err == nil {
		// Scrubbed once the tokens it carries are remembered.
		for i := range res.Objects {
			c.scrubObject(&res.Objects[i])
		}
	}
	if !abandoned && !isCanceled(err) {
		if c.cfg.LoginObserver != nil {
			c.cfg.LoginObserver(outcome)
		}
		c.recordTransition("login", map[string]string{"outcome": string(outcome), "forced": strconv.FormatBool(forced)})
	}
	return res, err
}

// compactLoginErr is the text of a failed login for pages and metrics-side
// state: the endpoint and status, never a page of HTML.
func compactLoginErr(err error) string {
	var ae *APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("%s: HTTP %d", ae.Endpoint, ae.Status)
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// credentialsKey identifies credentials without keeping them: a digest, so
// the held verdict can tell changed credentials from the same ones.
func credentialsKey(c Credentials) string {
	sum := sha256.Sum256([]byte(c.Email + "\x00" + c.Password))
	return string(sum[:])
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
