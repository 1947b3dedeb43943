package cloudsim

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// maxRequestBody bounds what the simulated cloud reads from a request body.
const maxRequestBody = 1 << 20

// token is one access token the cloud issued; the cloud has one user, so
// every token is that user's.
type token struct {
	expiresAt time.Time // zero = never
	revoked   bool
}

// validAt says whether the token is usable at now: not revoked, not expired.
func (t *token) validAt(now time.Time) bool {
	return !t.revoked && (t.expiresAt.IsZero() || now.Before(t.expiresAt))
}

// routes builds the whole URL space.
func (c *Cloud) routes() *http.ServeMux {
	mux := http.NewServeMux()
	public, authed := false, true
	c.handle(mux, cloudapi.EndpointLogin, public, c.login)
	c.handle(mux, cloudapi.EndpointRevoke, authed, c.revoke)
	c.handle(mux, cloudapi.EndpointUser, authed, c.getUser)
	c.handle(mux, cloudapi.EndpointUserPermissions, authed, c.getPermissions)
	c.handle(mux, cloudapi.EndpointObjects, authed, c.getObjects)
	c.handle(mux, cloudapi.EndpointObject, authed, c.getObject)
	c.handle(mux, cloudapi.EndpointObjectPermissions, authed, c.getObjectPermissions)
	c.handle(mux, cloudapi.EndpointModules, authed, c.getModules)
	c.handle(mux, cloudapi.EndpointModulesConnect, authed, c.modulesConnect)
	c.handle(mux, cloudapi.EndpointParameters, authed, c.modulesParameters)
	c.handle(mux, cloudapi.EndpointActivityQuantity, authed, c.quantity("activityQuantity", func(m *module) []map[string]any { return m.activity }))
	c.handle(mux, cloudapi.EndpointAlarmsQuantity, authed, c.quantity("alarmsQuantity", func(m *module) []map[string]any { return m.alarms }))
	c.handle(mux, cloudapi.EndpointActivity, authed, c.activity)
	c.handle(mux, cloudapi.EndpointAlarms, authed, c.alarmsActive)
	c.handle(mux, cloudapi.EndpointAlarmHistory, authed, c.alarmsHistory)
	c.handle(mux, cloudapi.EndpointModuleCard, authed, c.moduleCard)
	c.handle(mux, cloudapi.EndpointSystemVersion, public, c.systemVersion)
	c.handle(mux, cloudapi.EndpointCommand, authed, c.moduleCommand)
	c.handle(mux, cloudapi.EndpointCommandRaw, authed, c.moduleCommandRaw)
	c.handle(mux, "GET /{$}", public, c.assetPage)
	c.handle(mux, "GET /assets/{$}", public, c.assetPage)
	c.handle(mux, "GET /assets/{name}", public, c.asset)
	mux.Handle("/socket.io/", http.HandlerFunc(c.serveRealtime))
	c.controlRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not found"})
	})
	return mux
}

type restHandler func(w http.ResponseWriter, r *http.Request)

// handle wraps one endpoint: count it under its template (and the API's
// under its object too), add the configured latency, apply REST faults, then
// check the bearer token.
func (c *Cloud) handle(mux *http.ServeMux, template string, auth bool, h restHandler) {
	api := isAPI(template) // the static site is not the API
	mux.HandleFunc(template, func(w http.ResponseWriter, r *http.Request) {
		var obj *object
		if api {
			obj = c.requestObject(r)
		}
		if api && c.opts.Record != nil {
			start := c.now()
			request, _ := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
			r.Body = io.NopCloser(bytes.NewReader(request))
			rw := &recordingWriter{ResponseWriter: w}
			w = rw
			defer func() { c.recordREST(template, r, request, obj, start, rw) }()
		}
		c.mu.Lock()
		c.count.Requests[template]++
		if api {
			c.countRequestLocked(obj, template)
		}
		if template == cloudapi.EndpointLogin {
			c.count.LoginAttempts++
		}
		delays := c.takeAllFaultsLocked(template, FaultLatency)
		f, faulted := c.takeFaultLocked(template, FaultHTTPStatus, FaultDispatchTimeout, FaultLoginDupEntry, FaultResetConnection)
		c.mu.Unlock()

		var d time.Duration
		if api {
			d = c.opts.Latency
		}
		for _, lf := range delays {
			d += time.Duration(lf.DelayMS) * time.Millisecond
		}
		if !c.sleep(r.Context(), d) {
			return
		}
		if faulted {
			if template == cloudapi.EndpointLogin {
				c.mu.Lock()
				c.count.LoginsFaulted++
				c.mu.Unlock()
			}
			c.writeFault(w, f)
			return
		}
		if c.replay != nil && c.serveReplay(w, r, template, auth) {
			return
		}
		if auth && !c.authorized(r) {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Unauthorized"})
			return
		}
		h(w, r)
	})
}

// writeFault writes the answer of a REST response fault.
func (c *Cloud) writeFault(w http.ResponseWriter, f Fault) {
	switch f.Kind {
	case FaultResetConnection:
		c.resetConnection(w)
	case FaultDispatchTimeout:
		writeJSON(w, http.StatusRequestTimeout, map[string]any{"status": "E_DISPATCH_EVENT_TIMEOUT", "message": "upstream timeout"})
	case FaultLoginDupEntry:
		writeJSON(w, http.StatusInternalServerError, map[string]any{"message": "ER_DUP_ENTRY: Duplicate entry"})
	default:
		status := f.Status
		if status == 0 {
			status = http.StatusServiceUnavailable
		}
		if f.RetryAfterS > 0 {
			ra := strconv.Itoa(f.RetryAfterS)
			if f.RetryAfterDate {
				ra = c.now().Add(time.Duration(f.RetryAfterS) * time.Second).UTC().Format(http.TimeFormat)
			}
			w.Header().Set("Retry-After", ra)
		}
		switch {
		case f.EmptyBody:
			w.WriteHeader(status)
			return
		case f.Body != "" && (f.HTML || status >= 500):
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, f.Body)
			return
		case status == http.StatusForbidden && f.HTML:
			writeFirewallPage(w)
			return
		case f.HTML || status >= 500:
			writeHTMLStatus(w, status)
			return
		}
		msg := f.Body
		if msg == "" {
			msg = http.StatusText(status)
		}
		writeJSON(w, status, map[string]any{"message": msg})
	}
}

// writeHTMLStatus writes a proxy-style HTML error page, as the cloud's
// front end does for 502/503/504.
func writeHTMLStatus(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<html><body><h1>%d %s</h1></body></html>", status, http.StatusText(status))
}

// firewallPage is what a CDN's firewall in front of an API answers a client
// it blocks (Cloudflare's "Access denied", error 1020): an HTML 403 from
// something that never saw the credentials, so no verdict on them.
const firewallPage = `<!DOCTYPE html>
<html lang="en-US">
<head><title>Access denied | io.brager.pl used Cloudflare to restrict access</title>
<meta charset="UTF-8" /></head>
<body>
<div id="cf-wrapper"><div id="cf-error-details">
<h1>Access denied</h1>
<p>Error code 1020</p>
<p>You do not have access to io.brager.pl.</p>
<p>The site owner may have set restrictions that prevent you from accessing the site.</p>
<p>Cloudflare Ray ID: 8e2f1c0a9b7d4e21</p>
</div></div>
</body>
</html>
`

func writeFirewallPage(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	w.Header().Set("Server", "cloudflare")
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, firewallPage)
}

// resetConnection drops the request's TCP connection with a reset and no
// answer, reached by hijacking (served by Start, the hijacked connection is
// the tracker's wrapper around it).
func (c *Cloud) resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		c.log.Warn("cloudsim: reset_connection cannot reach the connection (HTTP/2?); answering 503")
		writeHTMLStatus(w, http.StatusServiceUnavailable)
		return
	}
	nc, _, err := hj.Hijack()
	if err != nil {
		c.log.Warn("cloudsim: reset_connection could not hijack", "err", err)
		return
	}
	if tc, ok := nc.(*trackedConn); ok {
		abortConn(tc.Conn)
		_ = tc.Close() // and the tracker forgets it
		return
	}
	abortConn(nc)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// decodeBody reads a JSON object body into v; an empty body leaves v as is.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		return fmt.Errorf("reading body: %w", err)
	}
	if len(data) > maxRequestBody {
		return errors.New("body too large")
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("body is not the expected JSON object: %w", err)
	}
	return nil
}

func badRequest(w http.ResponseWriter, err error) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"message": err.Error()})
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(h string) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// authorized checks the request's bearer token: known, not revoked, not expired.
func (c *Cloud) authorized(r *http.Request) bool {
	return c.validToken(bearer(r.Header.Get("Authorization")))
}

func (c *Cloud) validToken(tok string) bool {
	if tok == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tokens[tok]
	return t != nil && t.validAt(c.now())
}

// RevokeTokens makes every issued token invalid (401 from then on).
func (c *Cloud) RevokeTokens() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tokens {
		t.revoked = true
	}
}

func randomToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (c *Cloud) login(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decodeBody(r, &body); err != nil {
		c.countLoginRejected()
		badRequest(w, err)
		return
	}
	if body.Email != c.opts.Email || body.Password != c.opts.Password {
		c.countLoginRejected()
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Invalid email or password"})
		return
	}
	now := c.now()
	access, refresh := randomToken(), randomToken()
	c.mu.Lock()
	for k, t := range c.tokens { // forget long-dead tokens so a long run stays small
		if t.revoked || (!t.expiresAt.IsZero() && now.Sub(t.expiresAt) > time.Hour) {
			delete(c.tokens, k)
		}
	}
	t := &token{}
	if c.opts.TokenTTL > 0 {
		t.expiresAt = now.Add(c.opts.TokenTTL)
	}
	c.tokens[access] = t
	c.count.Logins++
	c.count.TokensIssued++
	resp := map[string]any{
		"accessToken": access, "refreshToken": refresh, "type": "bearer",
		"user": c.user, "objects": c.visibleObjectsLocked(),
	}
	if !t.expiresAt.IsZero() {
		resp["expiresAt"] = t.expiresAt.UTC().Format(time.RFC3339)
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, resp)
}

func (c *Cloud) countLoginRejected() {
	c.mu.Lock()
	c.count.LoginsRejected++
	c.mu.Unlock()
}

// revoke ends the token it is called with (the wrapper has checked it is
// valid), or every token of the user when the cloud revokes all sessions
// (Options.RevokeAllSessions, or a revoke_all_sessions fault).
func (c *Cloud) revoke(w http.ResponseWriter, r *http.Request) {
	tok := bearer(r.Header.Get("Authorization"))
	c.mu.Lock()
	_, all := c.takeFaultLocked(cloudapi.EndpointRevoke, FaultRevokeAllSessions)
	all = all || c.opts.RevokeAllSessions
	now, ended := c.now(), 0
	for k, t := range c.tokens {
		if (all || k == tok) && t.validAt(now) {
			t.revoked = true
			ended++
		}
	}
	// A token that expired between the check and here ends nothing and
	// is no revoke.
	if ended > 0 {
		c.count.Revokes++
		c.count.TokensRevoked += ended
	}
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (c *Cloud) getUser(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	u := c.user
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"user": u})
}

func (c *Cloud) getPermissions(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"permissions": userPermissions})
}

// The objects the account sees are its visible ones: an unknown object and
// a hidden one (access revoked) get the same answer, 404 {"message":"Object
// not found"}, on every path that names an object. Not 403: to the cloud's
// clients a 403 is a token problem that a new login cures
// (docs/spec.md, error handling), and no login gives an object back. A
// module of a hidden object is answered 404 {"message":"Module not found"}.
func writeObjectNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Object not found"})
}

func writeModuleNotFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Module not found"})
}

func (c *Cloud) getObjects(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	objs := c.visibleObjectRecordsLocked(r)
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"objects": objs})
}

// objectFromPath resolves {id} to an object the account sees; it writes the
// error answer when it fails.
func (c *Cloud) objectFromPath(w http.ResponseWriter, r *http.Request) (*object, bool) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		badRequest(w, fmt.Errorf("object id %q is not an integer", r.PathValue("id")))
		return nil, false
	}
	c.mu.Lock()
	o := c.visibleObjectLocked(id)
	c.mu.Unlock()
	if o == nil {
		writeObjectNotFound(w)
		return nil, false
	}
	return o, true
}

func (c *Cloud) getObject(w http.ResponseWriter, r *http.Request) {
	o, ok := c.objectFromPath(w, r)
	if !ok {
		return
	}
	c.mu.Lock()
	obj := o.record()
	status := "OFFLINE"
	for _, m := range o.modules {
		if m.connectedAt != 0 {
			status = "SUCCESS"
		}
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"object": obj, "status": status})
}

func (c *Cloud) getObjectPermissions(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.objectFromPath(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"permissions": userPermissions})
}

// moduleRow is one GET /v1/modules row, in the field order of the cloud.
type moduleRow struct {
	Devid                 string   `json:"devid"`
	Name                  string   `json:"name"`
	Gateway               any      `json:"gateway"`
	DeviceMenu            int      `json:"deviceMenu"`
	DeviceLanguageVariant int      `json:"deviceLanguageVariant"`
	Devices               []any    `json:"devices"`
	Services              []any    `json:"services"`
	Permissions           []string `json:"permissions"`
	AcceptedAt            int64    `json:"acceptedAt"`
	ConnectedAt           any      `json:"connectedAt"`
	ModuleAlarms          int      `json:"moduleAlarms"`
	ParameterSchemas      []any    `json:"parameterSchemas"`
	ID                    int      `json:"id"`
	ModuleAddress         any      `json:"moduleAddress"`
	ModuleInterface       any      `json:"moduleInterface"`
	ModuleVersion         any      `json:"moduleVersion"`
	ModuleServices        []any    `json:"moduleServices"`
	ModuleTitle           string   `json:"moduleTitle"`
	IsAcceptedAt          string   `json:"isAcceptedAt"`
	IsConnectedAt         any      `json:"isConnectedAt"`
}

func (m *module) row() moduleRow {
	gw := m.gw
	row := moduleRow{
		Devid: m.devid, Name: m.name, Gateway: gw, Devices: []any{}, Services: []any{},
		DeviceMenu: m.profile.DeviceMenu, Permissions: append([]string{}, m.profile.Permissions...),
		AcceptedAt: m.acceptedAt, ConnectedAt: m.connectedAt,
		ModuleAlarms: len(m.alarms), ParameterSchemas: []any{}, ID: m.id,
		ModuleAddress: m.address, ModuleInterface: nil, ModuleVersion: m.version,
		ModuleServices: []any{}, ModuleTitle: m.title,
		IsAcceptedAt: time.Unix(m.acceptedAt, 0).UTC().Format(time.RFC3339),
	}
	if m.connectedAt != 0 {
		row.IsConnectedAt = time.Unix(m.connectedAt, 0).UTC().Format(time.RFC3339)
	}
	return row
}

// degrade nulls what the cloud nulled in the field ("HA freeze 2026-08-17").
func (r *moduleRow) degrade() {
	r.Gateway, r.ConnectedAt, r.IsConnectedAt = nil, nil, nil
	r.ModuleAddress, r.ModuleInterface, r.ModuleVersion = nil, nil, nil
}

func (c *Cloud) getModules(w http.ResponseWriter, r *http.Request) {
	const template = cloudapi.EndpointModules
	q := r.URL.Query()
	page, limit := 1, 999
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			badRequest(w, fmt.Errorf("page %q must be a positive integer", v))
			return
		}
		page = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			badRequest(w, fmt.Errorf("limit %q must be a positive integer", v))
			return
		}
		limit = n
	}
	group := 0
	if v := q.Get("group_id"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			badRequest(w, fmt.Errorf("group_id %q must be an integer", v))
			return
		}
		group = n
	}
	c.mu.Lock()
	// Without group_id the listing is the account's: every module of every
	// object it sees.
	var listed []*module
	if group != 0 {
		o := c.visibleObjectLocked(group)
		if o == nil {
			c.mu.Unlock()
			writeObjectNotFound(w)
			return
		}
		listed = o.modules
	} else {
		for _, m := range c.modules {
			if !m.obj.hidden {
				listed = append(listed, m)
			}
		}
	}
	if f, ok := c.takeFaultLocked(template, FaultListing); ok {
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, f.Body)
		return
	}
	rows := []moduleRow{}
	degraded := c.takeAllFaultsLocked(template, FaultDegradedRow)
	missing := c.takeAllFaultsLocked(template, FaultMissingRow)
	for i, m := range listed {
		if rowSelected(missing, m.devid, i == 0) {
			continue
		}
		row := m.row()
		if rowSelected(degraded, m.devid, true) {
			row.degrade()
		}
		rows = append(rows, row)
	}
	c.mu.Unlock()
	start := (page - 1) * limit
	if start > len(rows) {
		start = len(rows)
	}
	end := min(start+limit, len(rows))
	writeJSON(w, http.StatusOK, map[string]any{"data": rows[start:end]})
}

// rowSelected says whether one of the row faults names devid; a fault
// without a devid selects the row when whenUnnamed is true.
func rowSelected(faults []Fault, devid string, whenUnnamed bool) bool {
	for _, f := range faults {
		if f.Devid == devid || (f.Devid == "" && whenUnnamed) {
			return true
		}
	}
	return false
}

// modulesBody is the {"modules":[...]} body of the module calls.
type modulesBody struct {
	Modules []string `json:"modules"`
	Page    int      `json:"page"`
	Limit   int      `json:"limit"`
}

func readModules(w http.ResponseWriter, r *http.Request) (modulesBody, bool) {
	var b modulesBody
	if err := decodeBody(r, &b); err != nil {
		badRequest(w, err)
		return b, false
	}
	if b.Page <= 0 {
		b.Page = 1
	}
	if b.Limit <= 0 {
		b.Limit = 20
	}
	return b, true
}

// modulesConnect binds a realtime session to modules of one object
// (docs/spec.md I-4e). The object is the group_id when the body gives one
// (as a string, or a number), else the one object the modules belong to.
// The cloud is strict where the reference client never strays: every module
// must belong to that object (400 otherwise: a devid of another object, an
// unknown devid next to a group_id, modules of several objects), an unknown
// or hidden group_id and a module of a hidden object answer 404, and a
// session bound to one object cannot be bound to another (409): one
// session serves one object, and receives only its modules' events. Without
// group_id, an unknown devid is ignored, as it always was.
func (c *Cloud) modulesConnect(w http.ResponseWriter, r *http.Request) {
	var b struct {
		WSID    string   `json:"wsid"`
		SID     string   `json:"sid"`
		Modules []string `json:"modules"`
		GroupID any      `json:"group_id"`
	}
	if err := decodeBody(r, &b); err != nil {
		badRequest(w, err)
		return
	}
	sid := b.WSID
	if sid == "" {
		sid = b.SID
	}
	if sid == "" {
		badRequest(w, errors.New("wsid or sid is required"))
		return
	}
	group := 0
	if b.GroupID != nil {
		n, ok := parseGroupID(b.GroupID)
		if !ok {
			badRequest(w, fmt.Errorf("group_id %v must be an integer", b.GroupID))
			return
		}
		group = n
	}
	c.mu.Lock()
	target, status, refusal := c.connectTargetLocked(group, b.Modules)
	if status != 0 {
		c.mu.Unlock()
		writeJSON(w, status, map[string]any{"message": refusal})
		return
	}
	if _, ok := c.takeFaultLocked(cloudapi.EndpointModulesConnect, FaultConnectNotBound); ok {
		c.mu.Unlock()
		writeJSON(w, http.StatusCreated, map[string]any{"message": "accepted-not-bound"})
		return
	}
	// The real cloud answers 200 for any SID, but only a currently connected
	// namespace SID gets bound: a stale or an Engine.IO SID binds nothing.
	bound := false
	c.syncSessionsLocked()
	if s := c.sessions[sid]; s != nil && s.live() && target != nil {
		if s.objectID != 0 && s.objectID != target.id {
			other := s.objectID
			c.mu.Unlock()
			writeJSON(w, http.StatusConflict, map[string]any{"message": fmt.Sprintf("session %s is bound to object %d, not %d", sid, other, target.id)})
			return
		}
		first := s.objectID == 0
		for _, d := range b.Modules {
			if m := c.byDevid[d]; m != nil {
				s.bound[d] = true
				s.objectID = target.id
				bound = true
			}
		}
		if first && bound {
			c.countBoundSessionLocked(s)
		}
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{})
	if bound {
		c.fireTransportFaults()
	}
}

// connectTargetLocked finds the object a modules/connect binds (nil when
// no module of the request is known), or the refusal's status and message.
func (c *Cloud) connectTargetLocked(group int, devids []string) (target *object, status int, message string) {
	if group != 0 {
		if target = c.visibleObjectLocked(group); target == nil {
			return nil, http.StatusNotFound, "Object not found"
		}
	}
	for _, d := range devids {
		m := c.byDevid[d]
		switch {
		case m == nil && group != 0:
			return nil, http.StatusBadRequest, fmt.Sprintf("module %s is not a module of object %d", d, group)
		case m == nil:
		case m.obj.hidden:
			return nil, http.StatusNotFound, "Module not found"
		case target == nil:
			target = m.obj
		case m.obj != target && group != 0:
			return nil, http.StatusBadRequest, fmt.Sprintf("module %s is not a module of object %d", d, group)
		case m.obj != target:
			return nil, http.StatusBadRequest, fmt.Sprintf("modules of several objects (%d and %d): bind the modules of one object", target.id, m.obj.id)
		}
	}
	return target, 0, ""
}

func (c *Cloud) modulesParameters(w http.ResponseWriter, r *http.Request) {
	b, ok := readModules(w, r)
	if !ok {
		return
	}
	out := map[string]any{}
	c.mu.Lock()
	if c.hiddenModuleLocked(b.Modules) != "" {
		c.mu.Unlock()
		writeModuleNotFound(w)
		return
	}
	for _, d := range b.Modules {
		m := c.byDevid[d]
		if m == nil {
			continue
		}
		pools := map[string]any{}
		for _, p := range m.params {
			pm, _ := pools[p.pool].(map[string]any)
			if pm == nil {
				pm = map[string]any{}
				pools[p.pool] = pm
			}
			pm[p.key] = p.primeBody()
		}
		out[d] = pools
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// quantity answers {"<key>":{devid:n}} with n = len(rows(module)) for the
// requested modules (activity and alarm counts).
func (c *Cloud) quantity(key string, rows func(*module) []map[string]any) restHandler {
	return func(w http.ResponseWriter, r *http.Request) {
		b, ok := readModules(w, r)
		if !ok {
			return
		}
		q := map[string]int{}
		c.mu.Lock()
		if c.hiddenModuleLocked(b.Modules) != "" {
			c.mu.Unlock()
			writeModuleNotFound(w)
			return
		}
		for _, d := range b.Modules {
			if m := c.byDevid[d]; m != nil {
				q[d] = len(rows(m))
			}
		}
		c.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{key: q})
	}
}

// pageRows collects the rows of the requested modules, newest first, one
// page; ok is false (and the 404 written) when one of them belongs to a
// hidden object.
func (c *Cloud) pageRows(w http.ResponseWriter, b modulesBody, pick func(*module) []map[string]any) (page []map[string]any, ok bool) {
	var rows []map[string]any
	c.mu.Lock()
	if c.hiddenModuleLocked(b.Modules) != "" {
		c.mu.Unlock()
		writeModuleNotFound(w)
		return nil, false
	}
	for _, d := range b.Modules {
		if m := c.byDevid[d]; m != nil {
			for _, row := range pick(m) {
				cp := make(map[string]any, len(row))
				for k, v := range row {
					cp[k] = v
				}
				rows = append(rows, cp)
			}
		}
	}
	c.mu.Unlock()
	sort.SliceStable(rows, func(i, j int) bool {
		a, _ := rows[i]["created_at"].(string)
		b, _ := rows[j]["created_at"].(string)
		return a > b
	})
	start := min((b.Page-1)*b.Limit, len(rows))
	end := min(start+b.Limit, len(rows))
	return append([]map[string]any{}, rows[start:end]...), true
}

func (c *Cloud) activity(w http.ResponseWriter, r *http.Request) {
	b, ok := readModules(w, r)
	if !ok {
		return
	}
	rows, ok := c.pageRows(w, b, func(m *module) []map[string]any { return m.activity })
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "activities": map[string]any{"data": rows}})
}

func (c *Cloud) alarmsActive(w http.ResponseWriter, r *http.Request) {
	b, ok := readModules(w, r)
	if !ok {
		return
	}
	rows, ok := c.pageRows(w, b, func(m *module) []map[string]any { return m.alarms })
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "alarms": rows})
}

func (c *Cloud) alarmsHistory(w http.ResponseWriter, r *http.Request) {
	b, ok := readModules(w, r)
	if !ok {
		return
	}
	rows, ok := c.pageRows(w, b, func(m *module) []map[string]any { return m.history })
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "alarms": map[string]any{"data": rows}})
}

func (c *Cloud) moduleCard(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	c.mu.Lock()
	m := c.visibleModuleLocked(code)
	var card map[string]any
	if m != nil {
		created := time.Unix(m.acceptedAt, 0).UTC()
		card = map[string]any{
			"id": 100 + m.id, "moduleId": m.id, "clientFullName": "Jan Kowalski",
			"clientPhoneNumber": "+48123456789", "clientAddressStreetAndNumber": "Kwiatowa 15",
			"clientAddressPostalCode": "00-123", "clientAddressCity": "Warszawa",
			"createdAt": created.Format("2006-01-02T15:04:05.000-07:00"),
			"updatedAt": created.Add(75 * time.Minute).Format("2006-01-02T15:04:05.000-07:00"),
		}
		c.plantCardLocked(card)
	}
	c.mu.Unlock()
	if m == nil {
		writeModuleNotFound(w)
		return
	}
	writeJSON(w, http.StatusOK, card)
}

func (c *Cloud) systemVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": map[string]any{"version": c.assetVersion(), "devMode": false}})
}

func (c *Cloud) moduleCommand(w http.ResponseWriter, r *http.Request) {
	var b map[string]any
	if err := decodeBody(r, &b); err != nil {
		badRequest(w, err)
		return
	}
	devid, _ := b["devid"].(string)
	pool, _ := b["pool"].(string)
	parameter, _ := b["parameter"].(string)
	value, hasValue := b["value"]
	if devid == "" || pool == "" || parameter == "" || !hasValue {
		badRequest(w, errors.New("devid, pool, parameter and value are required"))
		return
	}
	if _, _, err := splitKey(pool + "." + parameter); err != nil {
		badRequest(w, err)
		return
	}
	c.mu.Lock()
	m := c.visibleModuleLocked(devid)
	if m == nil {
		c.mu.Unlock()
		writeModuleNotFound(w)
		return
	}
	if m.connectedAt == 0 {
		c.mu.Unlock()
		writeJSON(w, http.StatusConflict, map[string]any{"message": "Module is offline"})
		return
	}
	var prev any
	if p := m.params[pool+"."+parameter]; p != nil {
		prev = p.value
	}
	delta := c.setParamLocked(m, pool, parameter, value)
	name, _ := b["parameterName"].(string)
	m.nextAct++
	row := map[string]any{
		"id": m.nextAct, "devid": devid, "module_id": m.id, "unit": b["unit"],
		"value": value, "prevValue": prev, "state": "success",
		"created_at": c.now().UTC().Format(time.RFC3339), "user": map[string]any{"name": c.user.Name, "id": c.user.ID},
		"user_id": c.user.ID,
	}
	// The row names the parameter the write was made through, when the
	// write named one, and the register it changed in its prev_value
	// snapshot (docs/spec.md W-2.7c): a raw write has the register only.
	if name != "" {
		row["name"] = "parameters." + name
	}
	if len(parameter) > 1 {
		row["prev_value"] = map[string]any{pool: map[string]any{parameter[1:]: map[string]any{parameter[:1]: prev, "u": b["unit"]}}}
	}
	m.activity = append(m.activity, row)
	if len(m.activity) > 200 {
		m.activity = m.activity[len(m.activity)-200:]
	}
	c.mu.Unlock()
	c.pushParams(devid, delta)
	writeJSON(w, http.StatusOK, map[string]any{"status": true, "data": map[string]any{"devid": devid, "pool": pool, "parameter": parameter, "value": value}})
}

func (c *Cloud) moduleCommandRaw(w http.ResponseWriter, r *http.Request) {
	var b map[string]any
	if err := decodeBody(r, &b); err != nil {
		badRequest(w, err)
		return
	}
	devid, _ := b["devid"].(string)
	command, _ := b["command"].(string)
	if devid == "" || command == "" {
		badRequest(w, errors.New("devid and command are required"))
		return
	}
	c.mu.Lock()
	m := c.visibleModuleLocked(devid)
	online := m != nil && m.connectedAt != 0
	c.mu.Unlock()
	switch {
	case m == nil:
		writeModuleNotFound(w)
	case !online:
		writeJSON(w, http.StatusConflict, map[string]any{"message": "Module is offline"})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": true, "data": map[string]any{"devid": devid, "command": command, "value": b["value"]}})
	}
}
