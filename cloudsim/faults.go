package cloudsim

import (
	"fmt"
	"maps"
	"strings"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// FaultKind names one failure the cloud can be told to produce.
type FaultKind string

// Fault kinds. REST kinds act on requests matching Fault.Path; realtime kinds
// act on the Socket.IO side.
const (
	// FaultHTTPStatus answers Status (default 503): 5xx with an HTML page,
	// 4xx with {"message":Body or the status text} (a 429 is then
	// {"message":"Too Many Requests"}, as an API gateway throttles). HTML
	// makes a 4xx an HTML page too (a 403 gets a firewall's "Access denied"
	// page), and Body, when given, is then the page verbatim; EmptyBody
	// answers no body at all. RetryAfterS adds a Retry-After header: that
	// many seconds, or with RetryAfterDate the HTTP date that many seconds
	// after the cloud's clock. Throttling is this kind with Status 429 (or
	// 503) and RetryAfterS.
	FaultHTTPStatus FaultKind = "http_status"
	// FaultResetConnection answers nothing: the request's TCP connection is
	// reset (SO_LINGER 0), a transport-level refusal of one path, e.g. a
	// login outage at a load balancer.
	FaultResetConnection FaultKind = "reset_connection"
	// FaultRevokeAllSessions makes POST /v1/auth/revoke end every token of
	// the user, not only the one it is called with, as some clouds do
	// (Options.RevokeAllSessions makes that the cloud's default). Count
	// counts revokes.
	FaultRevokeAllSessions FaultKind = "revoke_all_sessions"
	// FaultLatency delays the answer by DelayMS.
	FaultLatency FaultKind = "latency"
	// FaultDispatchTimeout answers 408 {"status":"E_DISPATCH_EVENT_TIMEOUT",...}.
	FaultDispatchTimeout FaultKind = "dispatch_timeout"
	// FaultLoginDupEntry answers login with 500 {"message":"ER_DUP_ENTRY: ..."}.
	FaultLoginDupEntry FaultKind = "login_dup_entry"
	// FaultDegradedRow makes the module row of Devid (all rows when empty)
	// degraded: gateway, connectedAt, moduleAddress/Interface/Version and
	// isConnectedAt null.
	FaultDegradedRow FaultKind = "degraded_row"
	// FaultMissingRow leaves the row of Devid (the listing's first module
	// when empty) out of GET /v1/modules while its siblings stay.
	FaultMissingRow FaultKind = "missing_row"
	// FaultListing makes GET /v1/modules answer 200 with Body verbatim.
	FaultListing FaultKind = "listing"
	// FaultConnectNotBound makes modules/connect answer 201
	// {"message":"accepted-not-bound"} and bind nothing.
	FaultConnectNotBound FaultKind = "connect_not_bound"
	// FaultMutePushes stops every server push (of Devid only, or of
	// ObjectID's modules, when set) while the transport and its pings carry
	// on: a zombie session.
	FaultMutePushes FaultKind = "mute_pushes"
	// FaultCloseTransport closes the Engine.IO transport of every connected
	// session cleanly, once (with no session, the next one to bind).
	FaultCloseTransport FaultKind = "close_transport"
	// FaultAbortTransport drops the TCP connection of every connected
	// session without a close frame, once (with no session, the next one
	// to bind).
	FaultAbortTransport FaultKind = "abort_transport"
	// FaultConnectError sends every connected session (bound to Devid when
	// set; with no session, the next one to bind) a Socket.IO CONNECT_ERROR
	// for /ws after its join, once, carrying {"message": Body, default
	// "Unauthorized"}: a connect_error while connected
	// (docs/spec.md W-7.20).
	FaultConnectError FaultKind = "connect_error"
	// FaultStallTransport black-holes the connection of every connected
	// session (bound to Devid when set; with no session, the next one to
	// bind), once: nothing more the cloud writes on it reaches the client
	// (Engine.IO pings included), nothing more the client sends is read,
	// and the cloud's close of it stalls (no close frame, no FIN). The
	// client is left believing it is connected until its own heartbeat
	// runs out. The connections are dropped when the fault is cleared.
	FaultStallTransport FaultKind = "stall_transport"
	// FaultStallHandshake holds /socket.io/ requests unanswered until the
	// fault is cleared or the client gives up.
	FaultStallHandshake FaultKind = "stall_handshake"
	// FaultNoNamespaceAck lets Engine.IO open but never acknowledges the
	// /ws namespace CONNECT.
	FaultNoNamespaceAck FaultKind = "no_namespace_ack"
	// FaultHandshake503 answers /socket.io/ requests 503 with an HTML body.
	FaultHandshake503 FaultKind = "handshake_503"
)

// FaultKinds lists every kind, for validation and documentation.
var FaultKinds = []FaultKind{
	FaultHTTPStatus, FaultResetConnection, FaultRevokeAllSessions, FaultLatency, FaultDispatchTimeout, FaultLoginDupEntry, FaultDegradedRow,
	FaultAssetBroken, FaultAssetsUnreachable,
	FaultMissingRow, FaultListing, FaultConnectNotBound, FaultMutePushes, FaultCloseTransport,
	FaultAbortTransport, FaultStallTransport, FaultConnectError, FaultStallHandshake, FaultNoNamespaceAck,
	FaultHandshake503,
}

// sessionFaults act on the sessions connected when they are injected (or on
// the next one to bind).
var sessionFaults = []FaultKind{FaultCloseTransport, FaultAbortTransport, FaultStallTransport, FaultConnectError}

// Fault is one switched-on failure.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Path selects REST requests: "POST /v1/modules/parameters" (method and
	// template) or "/v1/modules" (template, any method); "" = every /v1 path
	// (login only, for login_dup_entry; the revoke, and only it, for
	// revoke_all_sessions).
	Path    string `json:"path,omitempty"`
	Status  int    `json:"status,omitempty"`
	DelayMS int    `json:"delay_ms,omitempty"`
	// Count is how many requests (handshakes, pushes, sessions) the fault
	// affects before it clears itself; 0 = until cleared.
	Count int    `json:"count,omitempty"`
	Devid string `json:"devid,omitempty"`
	// ObjectID narrows mute_pushes to the pushes of that object's modules,
	// and close_transport, abort_transport, stall_transport and
	// connect_error to the sessions bound to that object's modules: one
	// object's session muted or dropped while the others carry on. Not
	// together with Devid.
	ObjectID int    `json:"object_id,omitempty"`
	Body     string `json:"body,omitempty"`
	// RetryAfterS (http_status) sends Retry-After with that many seconds;
	// 0 = no Retry-After. RetryAfterDate sends it as an HTTP date
	// (http.TimeFormat) that many seconds after the cloud's clock
	// (Options.Now), as a server whose clock the client does not share.
	RetryAfterS    int  `json:"retry_after_s,omitempty"`
	RetryAfterDate bool `json:"retry_after_date,omitempty"`
	// HTML (http_status) answers a 4xx with an HTML page rather than JSON:
	// what a firewall or CDN in front of the cloud answers, not the API.
	HTML bool `json:"html,omitempty"`
	// EmptyBody (http_status) answers the status with no body.
	EmptyBody bool `json:"empty_body,omitempty"`
}

// FaultError reports a fault that cannot be injected.
type FaultError struct {
	Fault  Fault
	Reason string
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("cloudsim: fault %q: %s", e.Fault.Kind, e.Reason)
}

// Validate checks a fault before it is injected.
func (f Fault) Validate() error {
	known := false
	for _, k := range FaultKinds {
		if f.Kind == k {
			known = true
		}
	}
	assetErr := validateAssetFault(f)
	switch {
	case !known:
		names := make([]string, len(FaultKinds))
		for i, k := range FaultKinds {
			names[i] = string(k)
		}
		return &FaultError{f, "unknown kind (known: " + strings.Join(names, ", ") + ")"}
	case f.Count < 0:
		return &FaultError{f, "count must not be negative"}
	case f.DelayMS < 0:
		return &FaultError{f, "delay_ms must not be negative"}
	case assetErr != nil:
		return assetErr
	case f.Kind == FaultHTTPStatus && f.Status != 0 && (f.Status < 400 || f.Status > 599):
		return &FaultError{f, "status must be 4xx or 5xx"}
	case f.Kind != FaultHTTPStatus && (f.RetryAfterS != 0 || f.RetryAfterDate || f.HTML || f.EmptyBody):
		return &FaultError{f, "retry_after_s, retry_after_date, html and empty_body shape http_status answers only"}
	case f.RetryAfterS < 0:
		return &FaultError{f, "retry_after_s must not be negative"}
	case f.RetryAfterDate && f.RetryAfterS == 0:
		return &FaultError{f, "retry_after_date needs retry_after_s (the date is that many seconds ahead)"}
	case f.HTML && f.EmptyBody:
		return &FaultError{f, "give html or empty_body, not both"}
	case f.EmptyBody && f.Body != "":
		return &FaultError{f, "empty_body and body contradict each other"}
	case f.Kind == FaultRevokeAllSessions && f.Path != "" && f.Path != defaultPath(f.Kind):
		return &FaultError{f, "revoke_all_sessions acts on " + defaultPath(f.Kind) + " only"}
	case f.Kind == FaultLatency && f.DelayMS == 0:
		return &FaultError{f, "latency needs delay_ms"}
	case f.ObjectID != 0 && f.Kind != FaultMutePushes && !kindIn(f.Kind, sessionFaults):
		return &FaultError{f, "object_id narrows mute_pushes and the session faults only"}
	case f.ObjectID != 0 && f.Devid != "":
		return &FaultError{f, "give devid or object_id, not both"}
	case f.ObjectID < 0:
		return &FaultError{f, "object_id must not be negative"}
	case f.Path != "" && !strings.Contains(f.Path, "/"):
		return &FaultError{f, "path must look like \"/v1/modules\" or \"GET /v1/modules\""}
	}
	return nil
}

// ActiveFault is an injected fault with its id and remaining count.
type ActiveFault struct {
	ID int `json:"id"`
	Fault
	Remaining int `json:"remaining,omitempty"` // requests left; 0 = until cleared
}

type activeFault struct {
	id        int
	f         Fault
	remaining int // 0 = unlimited
	// stalls are the connections a stall_transport fault black-holed; they
	// are dropped when the fault goes.
	stalls []*connStall
}

// Inject switches a fault on and returns its id (ids start at 1). An invalid
// fault is logged and not injected; Inject then returns 0. Use InjectFault
// for the error.
func (c *Cloud) Inject(f Fault) int {
	id, err := c.InjectFault(f)
	if err != nil {
		c.log.Warn("cloudsim: fault not injected", "err", err)
		return 0
	}
	return id
}

// InjectFault is Inject with a typed error (*FaultError) for a bad fault.
func (c *Cloud) InjectFault(f Fault) (int, error) {
	if err := f.Validate(); err != nil {
		return 0, err
	}
	if f.Path != "" {
		f.Path = strings.TrimSpace(f.Path)
	}
	c.mu.Lock()
	if f.ObjectID != 0 && c.byObject[f.ObjectID] == nil {
		c.mu.Unlock()
		return 0, &FaultError{f, fmt.Sprintf("no object %d", f.ObjectID)}
	}
	c.nextFault++
	af := &activeFault{id: c.nextFault, f: f, remaining: f.Count}
	c.faults = append(c.faults, af)
	c.faultsChangedLocked()
	c.mu.Unlock()
	c.log.Info("cloudsim: fault injected", "id", af.id, "kind", f.Kind, "path", f.Path, "count", f.Count, "devid", f.Devid, "object_id", f.ObjectID)
	if kindIn(f.Kind, sessionFaults) {
		c.fireTransportFaults()
	}
	return af.id, nil
}

// Clear switches one fault off; unknown ids are ignored.
func (c *Cloud) Clear(id int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeFaultLocked(id)
}

// ClearAll switches every fault off.
func (c *Cloud) ClearAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, af := range c.faults {
		releaseStalls(af)
	}
	c.faults = nil
	c.faultsChangedLocked()
}

// Faults lists the active faults in injection order.
func (c *Cloud) Faults() []ActiveFault {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ActiveFault, 0, len(c.faults))
	for _, af := range c.faults {
		out = append(out, ActiveFault{ID: af.id, Fault: af.f, Remaining: af.remaining})
	}
	return out
}

func (c *Cloud) removeFaultLocked(id int) bool {
	for i, af := range c.faults {
		if af.id == id {
			releaseStalls(af)
			c.faults = append(c.faults[:i], c.faults[i+1:]...)
			c.faultsChangedLocked()
			return true
		}
	}
	return false
}

// faultsChangedLocked wakes everything waiting on the fault set (stalled
// handshakes re-check whether their fault is still on).
func (c *Cloud) faultsChangedLocked() {
	close(c.released)
	c.released = make(chan struct{})
}

// defaultPath is where a fault acts when its Path is empty; "" = every /v1 path.
func defaultPath(k FaultKind) string {
	switch k {
	case FaultLoginDupEntry:
		return cloudapi.EndpointLogin
	case FaultRevokeAllSessions:
		return cloudapi.EndpointRevoke
	case FaultDegradedRow, FaultMissingRow, FaultListing:
		return "GET /v1/modules"
	case FaultConnectNotBound:
		return "POST /v1/modules/connect"
	}
	return ""
}

// matchPath says whether a fault path selects the request template
// ("GET /v1/objects/{id}").
func matchPath(faultPath, template string) bool {
	method, tpl, _ := strings.Cut(template, " ")
	if faultPath == "" {
		return strings.HasPrefix(tpl, "/v1/")
	}
	if strings.HasPrefix(faultPath, "/") {
		return faultPath == tpl
	}
	fm, fp, _ := strings.Cut(faultPath, " ")
	return strings.EqualFold(fm, method) && strings.TrimSpace(fp) == tpl
}

// takeFaultLocked finds the first active fault of one of the kinds that
// selects template (and devid, when the fault names one), consumes one use of
// it and returns a copy. ok is false when none applies.
func (c *Cloud) takeFaultLocked(template string, kinds ...FaultKind) (Fault, bool) {
	for _, af := range c.faults {
		if !kindIn(af.f.Kind, kinds) {
			continue
		}
		p := af.f.Path
		if p == "" {
			p = defaultPath(af.f.Kind)
		}
		if !matchPath(p, template) {
			continue
		}
		f := af.f
		c.consumeLocked(af)
		return f, true
	}
	return Fault{}, false
}

// takeAllFaultsLocked is takeFaultLocked for every matching fault of the kinds.
func (c *Cloud) takeAllFaultsLocked(template string, kinds ...FaultKind) []Fault {
	var out []Fault
	for _, af := range append([]*activeFault(nil), c.faults...) {
		if !kindIn(af.f.Kind, kinds) {
			continue
		}
		p := af.f.Path
		if p == "" {
			p = defaultPath(af.f.Kind)
		}
		if !matchPath(p, template) {
			continue
		}
		out = append(out, af.f)
		c.consumeLocked(af)
	}
	return out
}

// realtimeFaultLocked finds an active realtime fault of kind (for devid when
// given and the fault names one, or names an object); consume says whether
// this use counts.
func (c *Cloud) realtimeFaultLocked(kind FaultKind, devid string, consume bool) (Fault, bool) {
	for _, af := range c.faults {
		if af.f.Kind != kind {
			continue
		}
		if af.f.Devid != "" && devid != "" && af.f.Devid != devid {
			continue
		}
		if m := c.byDevid[devid]; af.f.ObjectID != 0 && m != nil && m.obj.id != af.f.ObjectID {
			continue
		}
		f := af.f
		if consume {
			c.consumeLocked(af)
		}
		return f, true
	}
	return Fault{}, false
}

func (c *Cloud) consumeLocked(af *activeFault) {
	if af.remaining == 0 {
		return
	}
	af.remaining--
	if af.remaining == 0 {
		c.removeFaultLocked(af.id)
	}
}

func kindIn(k FaultKind, kinds []FaultKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Requests counts the requests served for one endpoint template, e.g.
// Requests("POST /v1/auth/user") or Requests("GET /v1/objects/{id}").
// Socket.IO requests count under "GET /socket.io/". It counts since New or
// the last ResetCounters (Counters has the rest).
func (c *Cloud) Requests(endpoint string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count.Requests[endpoint]
}

// RequestCounts returns a copy of every per-template request count.
func (c *Cloud) RequestCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.count.Requests)
}
