package cloudsim

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Counters are what the cloud has counted since it started or since the
// last ResetCounters: what a client cost it. They appear flat in
// /control/state. Tokens are counted, never listed: the state must not hold
// a credential.
type Counters struct {
	// Since is when counting began (the cloud's clock): New, or the last
	// ResetCounters.
	Since time.Time `json:"counters_since"`
	// LoginAttempts counts every POST /v1/auth/user; each ends as one of
	// Logins (tokens issued), LoginsRejected (bad credentials or body:
	// 400/401 from the login itself) or LoginsFaulted (a fault answered or
	// dropped it), unless the client gave up first (during a latency).
	LoginAttempts  int `json:"login_attempts"`
	Logins         int `json:"logins"`
	LoginsRejected int `json:"logins_rejected"`
	LoginsFaulted  int `json:"logins_faulted"`
	// TokensIssued counts the access tokens logins issued.
	TokensIssued int `json:"tokens_issued"`
	// TokensValid is no count but the present: the issued tokens neither
	// revoked nor expired now. ResetCounters leaves it be.
	TokensValid int `json:"tokens_valid"`
	// Revokes counts the POST /v1/auth/revoke calls that ended a token
	// (answered 204; one with a dead token is answered 401 and counts only
	// under Requests), TokensRevoked the tokens they ended (more than
	// Revokes when a revoke ends every session of the user).
	// /control/revoke-tokens counts under neither.
	Revokes       int `json:"revokes"`
	TokensRevoked int `json:"tokens_revoked"`
	// Requests counts the requests by endpoint template
	// ("GET /v1/objects/{id}", the templates of package cloudapi); the
	// realtime requests count under "GET /socket.io/" (and POST), the web
	// app's under its own templates.
	Requests map[string]int `json:"requests"`
	// RequestsByObject counts the /v1 requests by object, then template.
	// The object is the one the request names: the {id} of the path, the
	// group_id of the query or body, or the object of the module the path
	// ({code}) or body (devid, or the first known of modules) names; its id
	// in decimal, or "" when the request names no known object (login,
	// the account's lists).
	RequestsByObject map[string]map[string]int `json:"requests_by_object"`
	// Handshakes counts the Engine.IO sessions opened (the OPEN packet
	// sent), Joins the /ws namespace CONNECTs acknowledged and
	// JoinsRefused those refused for their token. A join a
	// no_namespace_ack fault leaves unanswered counts under neither.
	Handshakes   int `json:"handshakes"`
	Joins        int `json:"joins"`
	JoinsRefused int `json:"joins_refused"`
	// HandshakesByObject and JoinsByObject count them by object (keyed as
	// in RequestsByObject) once modules/connect binds the session to the
	// modules of an object: a session never bound is counted only in the
	// totals.
	HandshakesByObject map[string]int `json:"handshakes_by_object"`
	JoinsByObject      map[string]int `json:"joins_by_object"`
}

func newCounters(since time.Time) Counters {
	return Counters{
		Since: since, Requests: map[string]int{}, RequestsByObject: map[string]map[string]int{},
		HandshakesByObject: map[string]int{}, JoinsByObject: map[string]int{},
	}
}

// clone copies the maps, so a copy handed out does not change under the
// caller.
func (k Counters) clone() Counters {
	k.Requests = maps.Clone(k.Requests)
	byObject := make(map[string]map[string]int, len(k.RequestsByObject))
	for o, m := range k.RequestsByObject {
		byObject[o] = maps.Clone(m)
	}
	k.RequestsByObject = byObject
	k.HandshakesByObject = maps.Clone(k.HandshakesByObject)
	k.JoinsByObject = maps.Clone(k.JoinsByObject)
	return k
}

// Counters returns the counts since the cloud started or since the last
// ResetCounters.
func (c *Cloud) Counters() Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.count.clone()
	k.TokensValid = c.validTokensLocked()
	return k
}

// ResetCounters starts counting afresh, e.g. once the client under
// measurement is up, so a cost measurement leaves out its start. Also
// POST /control/reset-counters.
func (c *Cloud) ResetCounters() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count = newCounters(c.now())
}

// validTokensLocked counts the tokens neither revoked nor expired.
func (c *Cloud) validTokensLocked() int {
	now, n := c.now(), 0
	for _, t := range c.tokens {
		if t.validAt(now) {
			n++
		}
	}
	return n
}

// objectKey is an object's key in the by-object counts; "" for none.
func objectKey(o *object) string {
	if o == nil {
		return ""
	}
	return strconv.Itoa(o.id)
}

// countRequestLocked counts one /v1 request under its object and template.
func (c *Cloud) countRequestLocked(o *object, template string) {
	key := objectKey(o)
	m := c.count.RequestsByObject[key]
	if m == nil {
		m = map[string]int{}
		c.count.RequestsByObject[key] = m
	}
	m[template]++
}

// requestObject finds the object a /v1 request names (nil when none). It
// reads the body to see and puts it back for the handler: bodies are small
// (the module calls' lists), and the cost is one copy.
func (c *Cloud) requestObject(r *http.Request) *object {
	var b struct {
		GroupID any      `json:"group_id"`
		Modules []string `json:"modules"`
		Devid   string   `json:"devid"`
	}
	if r.Body != nil && r.Body != http.NoBody && r.Method != http.MethodGet {
		data, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
		// The handler reads on from where this stopped, so it sees the
		// whole body, or its own read error.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(data), r.Body), r.Body}
		if err == nil && len(data) <= maxRequestBody {
			_ = json.Unmarshal(data, &b) // a body that is no object names none
		}
	}
	if v := r.URL.Query().Get("group_id"); v != "" && b.GroupID == nil {
		b.GroupID = v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if id := r.PathValue("id"); id != "" {
		n, _ := strconv.Atoi(id)
		return c.byObject[n]
	}
	if g, ok := parseGroupID(b.GroupID); ok {
		return c.byObject[g]
	}
	for _, d := range append([]string{r.PathValue("code"), b.Devid}, b.Modules...) {
		if m := c.byDevid[d]; m != nil {
			return m.obj
		}
	}
	return nil
}

// isAPI says whether a template is the REST API's (not the web app's).
func isAPI(template string) bool { return strings.Contains(template, " /v1/") }

// countBoundSessionLocked counts a session's join, and its Engine.IO
// handshake, under the object modules/connect has just bound it to (once
// per session: a session stays with its first object). A handshake that
// carries another session already bound is not counted again.
func (c *Cloud) countBoundSessionLocked(s *session) {
	key := strconv.Itoa(s.objectID)
	c.count.JoinsByObject[key]++
	for _, o := range c.sessions {
		if o != s && o.engineSID == s.engineSID && o.objectID != 0 {
			return
		}
	}
	c.count.HandshakesByObject[key]++
}
