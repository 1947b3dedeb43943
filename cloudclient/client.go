package cloudclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/redact"
	"github.com/bragerone/bragerone_exporter/traffic"
	"github.com/bragerone/bragerone_exporter/wire"
)

// Defaults of Config and of the interface.
const (
	DefaultTimeout       = 8 * time.Second
	DefaultMaxInFlight   = 4
	DefaultRefreshLeeway = 90 * time.Second
	DefaultWriteRate     = 1.0
	DefaultWriteBurst    = 3
	DefaultMaxBodyBytes  = 32 << 20
	DefaultContainer     = "BragerOne"
)

// DefaultPrimeBackoff is the pause before each prime retry.
var DefaultPrimeBackoff = []time.Duration{200 * time.Millisecond, 500 * time.Millisecond, 800 * time.Millisecond}

// Credentials are an account's login.
type Credentials struct{ Email, Password string }

// CredentialsProvider supplies credentials on demand; it returns
// ErrNoCredentials when it has none.
type CredentialsProvider func(ctx context.Context) (Credentials, error)

// StaticCredentials returns a provider that always gives c.
func StaticCredentials(c Credentials) CredentialsProvider {
	return func(context.Context) (Credentials, error) { return c, nil }
}

// Config configures a Client. Zero values take the defaults.
type Config struct {
	BaseURL, AssetsURL string // REST under BaseURL+"/v1"; AssetsURL also gives Origin/Referer
	Container          string // container for the system version endpoint; default "BragerOne"

	Credentials CredentialsProvider // optional
	HTTPClient  *http.Client        // optional

	Timeout       time.Duration   // per request; default 8s
	MaxInFlight   int             // requests in flight at once; default 4
	RefreshLeeway time.Duration   // log in again this long before expiry; default 90s
	PrimeBackoff  []time.Duration // pauses between prime attempts; default 200ms, 500ms, 800ms
	WriteRate     float64         // write commands per second; default 1; negative = unlimited
	WriteBurst    int             // default 3
	MaxBodyBytes  int64           // response size bound; default 32 MiB

	Logger *slog.Logger
	// Secrets remembers the password and every token this client learns,
	// and scrubs them from the cloud's answers before they become errors;
	// share it with the log handlers. Default: a set of the client's own.
	Secrets *redact.Set
	Now     func() time.Time
	Sleep   func(ctx context.Context, d time.Duration) error // backoff sleeps

	// Observer is called once per HTTP exchange with the endpoint template
	// (e.g. "POST /v1/modules/parameters"), the status (0 for a transport
	// error) and the duration.
	Observer func(endpoint string, code int, d time.Duration)
	// LoginObserver is called once per login attempt with its outcome,
	// unless the caller abandoned it (context canceled).
	LoginObserver func(cloudapi.LoginOutcome)

	// HoldWhileThrottled: while the cloud throttles the account (a 429, a
	// 503 with Retry-After), requests to the API host wait for the pause
	// to end (a long-running exporter); false: they fail at once with
	// *ThrottledError (the tools, which say so and stop).
	HoldWhileThrottled bool
	// ThrottleBase is the first pause of a 429 without Retry-After (it
	// doubles on repeats), ThrottleCap the longest pause; 0: defaults.
	ThrottleBase, ThrottleCap time.Duration
	// LoginRetryBase and LoginRetryMax bound the account-wide backoff
	// after failed logins; RejectedRetry is how long credentials the cloud
	// rejected are not sent again unless they change; 0: defaults.
	LoginRetryBase, LoginRetryMax, RejectedRetry time.Duration
	// RevokeTimeout bounds the revoke of a superseded token (0: default);
	// KeepSupersededTokens leaves them to expire instead.
	RevokeTimeout        time.Duration
	KeepSupersededTokens bool

	// Recorder, when set, is given a record of every HTTP exchange (API
	// and assets hosts) and of the login, token and throttle transitions,
	// redacted as it is made (package traffic); nil: nothing is recorded.
	Recorder func(traffic.Record)
}

// Client talks to the cloud. It is safe for concurrent use.
type Client struct {
	cfg       Config
	apiBase   string // BaseURL + "/v1"
	assetBase string
	hc        *http.Client
	log       *slog.Logger
	inFlight  chan struct{}
	writes    *rate.Limiter
	jitter    func(max time.Duration) time.Duration

	// loginSlot serialises logins (a channel so waiting honours ctx).
	loginSlot chan struct{}

	mu        sync.Mutex // guards the fields below
	tok       Token
	hasTok    bool
	tokIssued time.Time // when the login that gave tok answered
	userID    int
	loginErr  error // outcome of the last completed login
	lastLogin LoginState

	// The login in progress, the account-wide backoff after failed logins
	// and the hold on credentials the cloud rejected (see obtain).
	flight       *loginFlight
	loginFails   int
	loginRetryAt time.Time
	heldKey      string // digest of the rejected credentials; "" = none held
	heldUntil    time.Time
	heldErr      error

	// Tokens obtained and not yet revoked, with their users (tokens.go).
	tokens            map[string]*tokenUse
	revokedSuperseded uint64
	probeTok          string        // the token current when a superseded one was revoked: its answers are watched
	probeSettled      bool          // that revoke has finished
	probeAfter        uint64        // the sends number when it finished
	sends             atomic.Uint64 // numbers the authenticated requests as they are sent
	revokeOff         bool          // the cloud's revoke ends every session: stop revoking

	// The throttle pause (throttle.go).
	pausedUntil time.Time
	pauseStreak int // throttling answers in a row
	pauseCount  uint64
	pauses      []pauseSpan

	shapeMu sync.Mutex
	shape   *bindShape // body shape that last bound modules/connect

	assetMu sync.Mutex
	assets  map[string]*assetEntry

	// droppedRows is how many rows the last module list dropped.
	droppedRows atomic.Int64
}

// New validates cfg, fills in defaults and returns a Client.
func New(cfg Config) (*Client, error) {
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	base = strings.TrimSuffix(base, "/v1")
	if base == "" {
		return nil, errors.New("cloudclient: BaseURL is required")
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("cloudclient: BaseURL %q: need an http or https URL", cfg.BaseURL)
	}
	cfg.BaseURL = base
	cfg.AssetsURL = strings.TrimRight(strings.TrimSpace(cfg.AssetsURL), "/")
	if cfg.AssetsURL == "" {
		cfg.AssetsURL = base
	}
	if cfg.Container == "" {
		cfg.Container = DefaultContainer
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.RefreshLeeway <= 0 {
		cfg.RefreshLeeway = DefaultRefreshLeeway
	}
	if cfg.PrimeBackoff == nil {
		cfg.PrimeBackoff = DefaultPrimeBackoff
	}
	if cfg.WriteRate == 0 {
		cfg.WriteRate = DefaultWriteRate
	}
	if cfg.WriteBurst <= 0 {
		cfg.WriteBurst = DefaultWriteBurst
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	for d, def := range map[*time.Duration]time.Duration{
		&cfg.ThrottleBase: DefaultThrottleBase, &cfg.ThrottleCap: DefaultThrottleCap,
		&cfg.LoginRetryBase: DefaultLoginRetryBase, &cfg.LoginRetryMax: DefaultLoginRetryMax,
		&cfg.RejectedRetry: DefaultRejectedRetry, &cfg.RevokeTimeout: DefaultRevokeTimeout,
	} {
		if *d <= 0 {
			*d = def
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	if cfg.Secrets == nil {
		cfg.Secrets = redact.NewSet()
	}
	c := &Client{
		cfg:       cfg,
		apiBase:   base + "/v1",
		assetBase: cfg.AssetsURL,
		hc:        cfg.HTTPClient,
		log:       cfg.Logger,
		inFlight:  make(chan struct{}, cfg.MaxInFlight),
		loginSlot: make(chan struct{}, 1),
		tokens:    map[string]*tokenUse{},
		assets:    map[string]*assetEntry{},
		jitter: func(max time.Duration) time.Duration {
			return time.Duration(rand.Int64N(int64(max) + 1))
		},
	}
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	lim := rate.Limit(cfg.WriteRate)
	if cfg.WriteRate < 0 {
		lim = rate.Inf
	}
	c.writes = rate.NewLimiter(lim, cfg.WriteBurst)
	return c, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// call describes one request.
type call struct {
	method string
	path   string // under the API base, e.g. "/modules"; ignored when url is set
	url    string // absolute URL (assets)
	query  string // encoded, order preserved
	tmpl   string // endpoint template for errors, logs and the Observer
	body   any    // JSON-encoded when non-nil
	auth   bool
	// browser marks modules/connect, which wants the browser's XHR headers.
	browser bool
	header  map[string]string
}

// reply is a complete, bounded response.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r *reply) isJSON() bool {
	ct := r.header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.Contains(strings.ToLower(ct), "json")
	}
	return strings.Contains(mt, "json")
}

func (c *Client) acquire(ctx context.Context) error {
	select {
	case c.inFlight <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) release() { <-c.inFlight }

func (c *Client) observe(tmpl string, code int, d time.Duration) {
	if c.cfg.Observer != nil {
		c.cfg.Observer(tmpl, code, d)
	}
}

// send performs one HTTP exchange under the in-flight bound and the request
// timeout. It returns transport errors; statuses are the caller's business.
func (c *Client) send(ctx context.Context, cl *call, payload []byte, token string) (*reply, error) {
	u := cl.url
	if u == "" {
		u = c.apiBase + cl.path
	}
	if cl.query != "" {
		u += "?" + cl.query
	}
	api := cl.url == "" // the API host; the assets host keeps its own retry rule
	for {
		if api {
			if err := c.waitThrottle(ctx, cl.tmpl); err != nil {
				return nil, err
			}
		}
		if err := c.acquire(ctx); err != nil {
			return nil, fmt.Errorf("cloudclient: %s: %w", cl.tmpl, err)
		}
		// A pause armed while this request waited for a slot holds it too.
		if !api || !c.Paused(c.cfg.Now()) {
			break
		}
		c.release()
	}
	defer c.release()
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(rctx, cl.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("cloudclient: %s: %w", cl.tmpl, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", c.assetBase)
	req.Header.Set("Referer", c.assetBase+"/")
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.browser {
		req.Header.Set("Content-Type", "application/json;charset=UTF-8")
		req.Header.Set("X-Requested-With", "XMLHttpRequest")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range cl.header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		c.observe(cl.tmpl, 0, time.Since(start))
		err = fmt.Errorf("cloudclient: %s: %w", cl.tmpl, err)
		c.recordExchange(cl, req, payload, 0, time.Since(start), nil, nil, err)
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBodyBytes+1))
	resp.Body.Close()
	if err != nil {
		c.observe(cl.tmpl, 0, time.Since(start))
		err = fmt.Errorf("cloudclient: %s: reading body: %w", cl.tmpl, err)
		c.recordExchange(cl, req, payload, resp.StatusCode, time.Since(start), resp.Header, nil, err)
		return nil, err
	}
	c.observe(cl.tmpl, resp.StatusCode, time.Since(start))
	c.recordExchange(cl, req, payload, resp.StatusCode, time.Since(start), resp.Header, data, nil)
	if api {
		c.noteThrottle(cl.tmpl, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if int64(len(data)) > c.cfg.MaxBodyBytes {
		return nil, fmt.Errorf("cloudclient: %s: HTTP %d: more than %d bytes: %w", cl.tmpl, resp.StatusCode, c.cfg.MaxBodyBytes, ErrBodyTooLarge)
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// do runs a call: authentication, one forced re-login and retry on 401/403,
// and an APIError for any non-2xx answer.
func (c *Client) do(ctx context.Context, cl *call) (*reply, error) {
	var payload []byte
	if cl.body != nil {
		var err error
		if payload, err = json.Marshal(cl.body); err != nil {
			return nil, fmt.Errorf("cloudclient: %s: encoding request: %w", cl.tmpl, err)
		}
	}
	if !cl.auth {
		r, err := c.send(ctx, cl, payload, "")
		return c.check(cl, r, err)
	}
	tok, err := c.obtainToken(ctx, loginNeed{lease: true})
	if err != nil {
		return nil, err
	}
	seq := c.sends.Add(1)
	r, err := c.send(ctx, cl, payload, tok)
	if err == nil {
		c.noteTokenAnswer(tok, r.status, seq)
	}
	c.releaseToken(tok)
	if err == nil && (r.status == http.StatusUnauthorized || r.status == http.StatusForbidden) {
		rejected := c.apiError(cl, r)
		tok2, lerr := c.obtainToken(ctx, loginNeed{rejected: tok, forced: true, lease: true})
		if lerr != nil {
			if errors.Is(lerr, ErrNoCredentials) {
				return c.check(cl, r, nil)
			}
			return nil, fmt.Errorf("%w (re-login failed: %w)", rejected, lerr)
		}
		r, err = c.send(ctx, cl, payload, tok2)
		c.releaseToken(tok2)
	}
	return c.check(cl, r, err)
}

// check turns a non-2xx answer into an APIError and logs failures compactly.
func (c *Client) check(cl *call, r *reply, err error) (*reply, error) {
	if err == nil && (r.status < 200 || r.status > 299) {
		err = c.apiError(cl, r)
	}
	if err != nil {
		c.logFailure(cl.tmpl, err)
		return nil, err
	}
	return r, nil
}

// logFailure logs expected upstream failures at WARN, others at DEBUG,
// since the caller decides what they mean. The errors are compact (endpoint,
// status and at most a short message of the cloud's, never a page of HTML).
func (c *Client) logFailure(tmpl string, err error) {
	if IsExpectedUpstream(err) {
		if status := statusOf(err); status != 0 {
			c.log.Warn("cloud request failed", "endpoint", tmpl, "status", status, "err", err)
		} else {
			c.log.Warn("cloud request failed", "endpoint", tmpl, "err", err)
		}
		return
	}
	c.log.Debug("cloud request failed", "endpoint", tmpl, "err", err)
}

// apiError builds the APIError of a non-2xx answer. The cloud's text is
// scrubbed of every known secret here, where it enters the program: a cloud
// that echoes the request (the bearer token, the login password) cannot put
// a secret into the error, nor into whatever logs or shows it.
func (c *Client) apiError(cl *call, r *reply) *APIError {
	secrets := c.cfg.Secrets
	e := &APIError{Endpoint: cl.tmpl, Status: r.status, Headers: map[string]string{}}
	for k, v := range r.header {
		if len(v) > 0 {
			if redact.SecretKey(k) {
				e.Headers[k] = redact.Mask
				continue
			}
			e.Headers[k] = secrets.Scrub(v[0])
		}
	}
	if r.isJSON() {
		var v any
		if json.Unmarshal(r.body, &v) == nil {
			e.Data, e.JSONBody = secrets.ScrubJSON(v), true
			return e
		}
	}
	// Scrubbed before it is cut, so no secret is cut in two.
	text := secrets.Scrub(string(r.body))
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	e.Data = text
	return e
}

// decodeError builds a DecodeError for r.
func decodeError(cl *call, r *reply, reason string, err error) *DecodeError {
	return &DecodeError{Endpoint: cl.tmpl, Status: r.status, ContentType: r.header.Get("Content-Type"), Reason: reason, Err: err}
}

// decodeJSON decodes r's body into v, reporting a DecodeError on failure.
func (c *Client) decodeJSON(cl *call, r *reply, v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("malformed JSON at offset %d", se.Offset)
		}
		de := decodeError(cl, r, "", err)
		c.logFailure(cl.tmpl, de)
		return de
	}
	return nil
}

// decodeObject decodes r's body as a JSON object.
func (c *Client) decodeObject(cl *call, r *reply) (map[string]json.RawMessage, error) {
	var raw json.RawMessage
	if err := c.decodeJSON(cl, r, &raw); err != nil {
		return nil, err
	}
	if wire.FirstByte(raw) != '{' {
		de := decodeError(cl, r, "expected a JSON object", nil)
		c.logFailure(cl.tmpl, de)
		return nil, de
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, decodeError(cl, r, "", err)
	}
	return m, nil
}

// Secrets returns the set of secrets the client remembers and scrubs from
// the cloud's text (Config.Secrets).
func (c *Client) Secrets() *redact.Set { return c.cfg.Secrets }

// Config returns the effective configuration, defaults filled in.
func (c *Client) Config() Config {
	cfg := c.cfg
	cfg.PrimeBackoff = append([]time.Duration(nil), c.cfg.PrimeBackoff...)
	return cfg
}
