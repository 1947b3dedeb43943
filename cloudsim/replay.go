package cloudsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	sio "github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// ReplayOptions configure a Replay.
type ReplayOptions struct {
	// Speed compresses the recorded time: 10 plays ten recorded seconds
	// in one. 0 is 1 (the recorded pace).
	Speed float64
	// StartNow starts the replay clock when the cloud starts, not at the
	// first login.
	StartNow bool
}

// Replay is a recorded cloud (a capture's traffic.Records) played back by a
// Cloud (Options.Replay): the cloud answers from the recording instead of
// its simulated world.
//
// The replay clock reads recorded time: it starts at the first record's
// time when the first client logs in (or when the cloud starts, with
// StartNow) and runs Speed times faster than the cloud's clock
// (Options.Now). Then:
//
//   - the login accepts any credentials and answers the recorded login
//     (user, objects) with a token of the cloud's own, or the recorded
//     failure when the latest login recorded at or before the replay clock
//     failed;
//   - every other API request gets the latest answer recorded for the same
//     request (method, path with its query, and JSON body: the module list
//     of modules/parameters, the group_id of the module list) at or before
//     the replay clock (for a request about one object, on that object's
//     schedule), or the earliest one when the clock has not reached it
//     yet; but the first answer recorded after the object's last event
//     played, if it came before the object's next event or within two
//     seconds of the last, is served once before any later one (the
//     recorded answer to the request the event caused); never an answer
//     older than one it gave; a request answered with a failure, made
//     again, gets what the recorded client's retry got, when that came
//     soon after (each recorded failure recurs, and ends as it ended); its status, the headers recorded (a
//     Retry-After date moved by the time since it was recorded) and its
//     body. A recorded transport error (no status) resets the connection.
//     A request the recording never saw is answered 404;
//   - modules/connect binds the session to the object of its group_id (or
//     of its modules, as the recorded module lists place them), unless the
//     answer recorded for it is a failure, which is answered;
//   - the realtime events recorded for an object are sent, on their
//     recorded schedule, to the sessions bound to that object: the
//     schedule of each object runs from the moment its first session is
//     bound, as the recorded one runs from its recorded session_up (or
//     modules/connect), so a client slower or quicker to start than the
//     recorded one gets its events in the same place among its own
//     requests; an event that falls due while no session of its object
//     is bound waits for one (every recorded event was received by a
//     bound session);
//   - a recorded session_down transition of an object closes its sessions
//     at its time, unless the recorded client ended the session itself
//     (a detail "abort", or the reason "stop": its recovery ladder or its
//     shutdown, which the replayed client does on its own);
//   - revoke, the token checks and the control endpoint are the cloud's
//     own; the web app's assets and the system version come from the
//     recording when it holds them, else from the simulated web app.
//
// A Replay serves one Cloud.
type Replay struct {
	speed     float64
	startNow  bool
	origin    time.Time                   // recorded time at replay clock 0: the first record's
	last      time.Time                   // the last record's time
	answers   map[string][]traffic.Record // REST answers by request key, oldest first
	templates map[string]int              // REST records by endpoint template
	lines     map[int]*objectLine         // the schedule of each object (0: the account's)
	served    map[string]int              // run state: the index of the answer last served, by request key
	devObject map[string]int              // devid → object, from the recorded lists and requests
	records   int
	scheduled int

	// Run state, under the Cloud's mu.
	started   time.Time // the cloud's time at replay clock 0; zero until started
	delivered int
	closed    int
	kick      chan struct{}
	pumpMu    sync.Mutex // one pump at a time, writes included, so events keep their order
}

// objectLine is one object's schedule: its events and session_down
// transitions, played from the moment its first session is bound.
type objectLine struct {
	recs []traffic.Record // oldest first
	// asks[i] counts the requests about the object the recorded client
	// made from its bind until recs[i]: recs[i] waits for the replayed
	// client to have made as many (at most askHold past its time), so a
	// push follows the answers that came before it in the recording
	// however slow the replayed client is.
	asks []int
	// bindAt is when the recorded client's first session of the object
	// began (its session_up, or its first modules/connect); zero: not
	// recorded, the schedule runs on the replay clock as it is.
	bindAt time.Time
	// Run state: bound once a replayed session of the object is; shift
	// is the replay clock at that bind less bindAt (recorded time); next
	// is the first record not played.
	bound bool
	shift time.Duration
	next  int
	asked int // answers written to requests about the object since bound
}

// askHold is how long (recorded time) past its time a record waits for the
// replayed client's requests that preceded it in the recording: a client
// that makes fewer (it skips a read the recorded one made) delays the
// schedule by no more.
const askHold = 2 * time.Second

// due says whether the line's next record is due at clock: its time has
// come, and the replayed client has made the requests the recorded one had
// made before it, or has kept it waiting askHold.
func (l *objectLine) due(clock time.Time) bool {
	at := l.dueAt(l.recs[l.next])
	if at.After(clock) {
		return false
	}
	return l.next >= len(l.asks) || l.asked >= l.asks[l.next] || !at.Add(askHold).After(clock)
}

// dueAt is the replay clock at which rec of the line falls due.
func (l *objectLine) dueAt(rec traffic.Record) time.Time { return rec.At.Add(l.shift) }

func (rp *Replay) line(obj int) *objectLine {
	l := rp.lines[obj]
	if l == nil {
		l = &objectLine{}
		rp.lines[obj] = l
	}
	return l
}

// NewReplay indexes recs (in any order; they are sorted by time) for
// playback.
func NewReplay(recs []traffic.Record, opts ReplayOptions) (*Replay, error) {
	speed := opts.Speed
	if speed == 0 {
		speed = 1
	}
	if speed < 0 || math.IsNaN(speed) || math.IsInf(speed, 0) {
		return nil, fmt.Errorf("replay speed %v: want a positive number", opts.Speed)
	}
	if len(recs) == 0 {
		return nil, errors.New("the recording holds no records")
	}
	recs = slices.Clone(recs)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].At.Before(recs[j].At) })
	rp := &Replay{
		speed: speed, startNow: opts.StartNow, origin: recs[0].At, last: recs[len(recs)-1].At,
		answers: map[string][]traffic.Record{}, templates: map[string]int{}, devObject: map[string]int{},
		lines: map[int]*objectLine{}, served: map[string]int{}, kick: make(chan struct{}, 1), records: len(recs),
	}
	for i, rec := range recs {
		switch rec.Kind {
		case traffic.KindREST:
			if rec.Endpoint == "" {
				return nil, fmt.Errorf("record %d (seq %d): a REST record without its endpoint template", i+1, rec.Seq)
			}
			rp.templates[rec.Endpoint]++
			key := requestKey(rec.Method, rec.Path, rec.Request, rec.Endpoint)
			rp.answers[key] = append(rp.answers[key], rec)
			rp.learnObjects(rec)
		case traffic.KindEvent:
			if !lifecycleEvent[rec.Event] {
				l := rp.line(rec.Object)
				l.recs = append(l.recs, rec)
				rp.scheduled++
			}
		case traffic.KindTransition:
			if rec.What == "session_up" && rec.Object != 0 && rp.line(rec.Object).bindAt.IsZero() {
				rp.line(rec.Object).bindAt = rec.At
			}
			if playedDown(rec) {
				l := rp.line(rec.Object)
				l.recs = append(l.recs, rec)
				rp.scheduled++
			}
		}
	}
	// A recording without session_up transitions (the simulator's own)
	// starts an object's schedule at its first modules/connect.
	for _, rec := range recs {
		if rec.Kind != traffic.KindREST || rec.Endpoint != cloudapi.EndpointModulesConnect || rec.Status/100 != 2 {
			continue
		}
		if obj := rp.requestObject(rec.Path, rec.Request); obj != 0 && rp.line(obj).bindAt.IsZero() {
			rp.line(obj).bindAt = rec.At
		}
	}
	// The requests each scheduled record waits for.
	var rest []traffic.Record
	for _, rec := range recs {
		if rec.Kind == traffic.KindREST {
			rest = append(rest, rec)
		}
	}
	for obj, l := range rp.lines {
		if obj == 0 || l.bindAt.IsZero() {
			continue
		}
		l.asks = make([]int, len(l.recs))
		n, j := 0, 0
		for i, rec := range l.recs {
			for ; j < len(rest) && rest[j].At.Before(rec.At); j++ {
				if !rest[j].At.Before(l.bindAt) && rp.requestObject(rest[j].Path, rest[j].Request) == obj {
					n++
				}
			}
			l.asks[i] = n
		}
	}
	return rp, nil
}

// lifecycleEvent are the names a client's socket library reports about the
// connection itself (a capture may record them as events); the cloud never
// sends them as events.
var lifecycleEvent = map[string]bool{
	"connect": true, "disconnect": true, "connect_error": true, "disconnecting": true, "error": true,
	"reconnect": true, "reconnect_attempt": true, "reconnect_error": true, "reconnect_failed": true,
	"ping": true, "pong": true,
}

// requestObject is the object a request is about: its group_id (query or
// body), its /v1/objects/{id}, or the object of its first known module.
func (rp *Replay) requestObject(path string, body []byte) int {
	var b struct {
		GroupID any      `json:"group_id"`
		Modules []string `json:"modules"`
		Devid   string   `json:"devid"`
	}
	_ = json.Unmarshal(body, &b)
	if u, err := url.Parse(path); err == nil {
		if g := u.Query().Get("group_id"); g != "" && b.GroupID == nil {
			b.GroupID = g
		}
		if rest, ok := strings.CutPrefix(u.Path, "/v1/objects/"); ok {
			id, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(rest, "/permissions"), "/"))
			if id != 0 {
				return id
			}
		}
		if rest, ok := strings.CutPrefix(u.Path, "/v1/modules/"); ok && strings.HasSuffix(rest, "/card") {
			b.Devid = strings.TrimSuffix(rest, "/card")
		}
	}
	if g, ok := parseGroupID(b.GroupID); ok && g != 0 {
		return g
	}
	for _, d := range append([]string{b.Devid}, b.Modules...) {
		if obj := rp.devObject[d]; obj != 0 {
			return obj
		}
	}
	return 0
}

// playedDown says whether a transition is a session the cloud (or the
// way to it) ended: a session_down that is not the client's own doing. The
// exporter records its own teardowns (the recovery ladder's, the
// shutdown's) with an "abort" detail; those the replayed client does
// itself, when it comes to it.
func playedDown(rec traffic.Record) bool {
	if rec.What != "session_down" {
		return false
	}
	_, own := rec.Detail["abort"]
	return !own && rec.Detail["reason"] != "stop"
}

// learnObjects notes which object each devid belongs to: the rows of a
// module list by its group_id, the modules of a request made for an object.
func (rp *Replay) learnObjects(rec traffic.Record) {
	if rec.Endpoint == cloudapi.EndpointModules && rec.Status == http.StatusOK {
		group := 0
		if u, err := url.Parse(rec.Path); err == nil {
			group, _ = strconv.Atoi(u.Query().Get("group_id"))
		}
		if group == 0 {
			group = rec.Object
		}
		var body struct {
			Data []struct {
				Devid string `json:"devid"`
			} `json:"data"`
		}
		if group != 0 && json.Unmarshal(rec.Body, &body) == nil {
			for _, row := range body.Data {
				if row.Devid != "" {
					rp.devObject[row.Devid] = group
				}
			}
		}
	}
	if rec.Object != 0 && len(rec.Request) > 0 {
		var req struct {
			Modules []string `json:"modules"`
		}
		if json.Unmarshal(rec.Request, &req) == nil {
			for _, d := range req.Modules {
				if _, ok := rp.devObject[d]; !ok {
					rp.devObject[d] = rec.Object
				}
			}
		}
	}
}

// requestKey identifies a request for lookup: the method, the path with
// its query (parameters sorted) and the JSON body, canonical (keys sorted,
// module lists sorted, the session's own sid and wsid left out). The login
// is one key whatever its body (the credentials select nothing).
func requestKey(method, path string, body []byte, endpoint string) string {
	tmplMethod, tmplPath, _ := strings.Cut(endpoint, " ")
	if method == "" {
		method = tmplMethod
	}
	if endpoint == cloudapi.EndpointLogin {
		return method + " " + tmplPath
	}
	if path == "" && !strings.Contains(tmplPath, "{") {
		path = tmplPath
	}
	p, query := path, ""
	if u, err := url.Parse(path); err == nil {
		p, query = u.Path, u.Query().Encode()
	}
	return method + " " + p + "?" + query + " " + canonicalBody(body)
}

func canonicalBody(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(body)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "wsid")
		delete(m, "sid")
		if list, ok := m["modules"].([]any); ok {
			sort.SliceStable(list, func(i, j int) bool { return fmt.Sprint(list[i]) < fmt.Sprint(list[j]) })
		}
	}
	out, err := json.Marshal(v) // map keys sorted
	if err != nil {
		return string(body)
	}
	return string(out)
}

// lookupLocked returns the answer for key, a request about obj (0: the
// account), at the replay clock: the latest recorded at or before the
// object's own clock (the replay clock less its shift, and never past its
// next event not played yet), the earliest when
// none is that old; but the first answer recorded after the object's last
// event played, when it came soon after (before the object's next event,
// or within reactionWindow), is served once before any later one: it was
// the recorded client's answer to the event (the alarm list after an alarm
// quantity, the prime after event 22), however much sooner or later the
// replayed client asks. It never goes back to an answer older than one it
// served, and a failure it served, asked again, gives way to the next
// answer when that came soon after (the recorded client's retry got it).
func (rp *Replay) lookupLocked(key string, obj int, clock time.Time) (traffic.Record, bool) {
	list := rp.answers[key]
	if len(list) == 0 {
		return traffic.Record{}, false
	}
	t := clock
	l := rp.lines[obj]
	if l != nil && l.bound {
		t = clock.Add(-l.shift)
		if l.next < len(l.recs) && !t.Before(l.recs[l.next].At) {
			// The object's next event has not played (it waits for the
			// client's requests, see objectLine.due): what was answered
			// after it in the recording is not due yet either.
			t = l.recs[l.next].At.Add(-time.Nanosecond)
		}
	}
	i := max(sort.Search(len(list), func(i int) bool { return list[i].At.After(t) })-1, 0)
	last, served := rp.served[key]
	if l != nil && l.bound && l.next > 0 {
		// The first answer recorded after the last event played is the
		// recorded client's answer to it: served once, before any later.
		e := l.recs[l.next-1].At
		r := sort.Search(len(list), func(i int) bool { return !list[i].At.Before(e) })
		if r < len(list) && (!served || last < r) && rp.soonAfter(l, e, list[r].At) {
			i = r
		}
	}
	if served && i <= last {
		// Never back to an older answer than one served; a failure served,
		// asked again, gives way to what the recorded client's retry got
		// when that came soon after.
		i = last
		if failed(list[i]) && i+1 < len(list) && rp.soonAfter(l, list[i].At, list[i+1].At) {
			i++
		}
	}
	rp.served[key] = i
	return list[i], true
}

// soonAfter says whether an answer recorded at next follows what was
// recorded at then (an event, a failure) as the recorded client's answer
// to it: within reactionWindow, or before the object's next event.
func (rp *Replay) soonAfter(l *objectLine, then, next time.Time) bool {
	if next.Sub(then) <= reactionWindow {
		return true
	}
	return l != nil && l.bound && l.next < len(l.recs) && next.Before(l.recs[l.next].At)
}

// failed says whether a recorded answer is one a client retries: no
// answer, a 5xx, a 408 or a 429.
func failed(rec traffic.Record) bool {
	return rec.Status == 0 || rec.Status >= 500 || rec.Status == http.StatusRequestTimeout || rec.Status == http.StatusTooManyRequests
}

// reactionWindow is how long (recorded time) after an event an answer is
// still taken for the recorded client's answer to it, though the next
// event came first: a client busy with one event is slower to fetch what
// another asks for.
const reactionWindow = 2 * time.Second

// latestOf returns the latest answer of an endpoint template with status
// 200 at or before t (any request), or the earliest after t when none is
// that old: for a login the recording lacks.
func (rp *Replay) latestOf(endpoint string, t time.Time) (traffic.Record, bool) {
	var before, after traffic.Record
	var hasBefore, hasAfter bool
	for _, list := range rp.answers {
		for _, rec := range list {
			switch {
			case rec.Endpoint != endpoint || rec.Status != http.StatusOK:
			case !rec.At.After(t):
				if !hasBefore || rec.At.After(before.At) {
					before, hasBefore = rec, true
				}
			case !hasAfter || rec.At.Before(after.At):
				after, hasAfter = rec, true
			}
		}
	}
	if hasBefore {
		return before, true
	}
	return after, hasAfter
}

// startLocked starts the replay clock at now, once.
func (rp *Replay) startLocked(now time.Time) {
	if rp.started.IsZero() {
		rp.started = now
		select {
		case rp.kick <- struct{}{}:
		default:
		}
	}
}

// clockLocked is the recorded time the replay has reached at now.
func (rp *Replay) clockLocked(now time.Time) time.Time {
	if rp.started.IsZero() {
		return rp.origin
	}
	elapsed := time.Duration(float64(now.Sub(rp.started)) * rp.speed)
	return rp.origin.Add(max(elapsed, 0))
}

func (rp *Replay) wake() {
	select {
	case rp.kick <- struct{}{}:
	default:
	}
}

// ReplayState is the replay's account of itself, in GET /control/state.
type ReplayState struct {
	Speed   float64 `json:"speed"`
	Started bool    `json:"started"`
	// Clock is the recorded time reached, and ClockSeconds the same as
	// seconds since the first record.
	Clock        time.Time `json:"clock"`
	ClockSeconds float64   `json:"clock_seconds"`
	// SpanSeconds is the recording's length: first record to last.
	SpanSeconds float64 `json:"span_seconds"`
	Records     int     `json:"records"`
	// Scheduled counts the events and session_down transitions; Due those
	// played; Delivered the events sent to a session; Pending those the
	// clock has passed that wait for a session of their object;
	// SessionsClosed the session_down transitions played.
	Scheduled      int `json:"scheduled"`
	Due            int `json:"due"`
	Delivered      int `json:"delivered"`
	Pending        int `json:"pending"`
	SessionsClosed int `json:"sessions_closed"`
	// Finished: every scheduled record is played.
	Finished bool `json:"finished"`
	// Objects are the schedules of the objects with events.
	Objects []ReplayObject `json:"objects,omitempty"`
}

// ReplayObject is one object's schedule in ReplayState.
type ReplayObject struct {
	ObjectID int  `json:"object_id"`
	Bound    bool `json:"bound"` // a replayed session of it has been bound: its schedule runs
	// ShiftSeconds is how much later on the replay clock than recorded the
	// object's schedule runs (its first bind's lag).
	ShiftSeconds float64 `json:"shift_seconds"`
	Scheduled    int     `json:"scheduled"`
	Played       int     `json:"played"`
}

// ReplayState reports the replay; ok is false when the cloud replays none.
func (c *Cloud) ReplayState() (ReplayState, bool) {
	rp := c.replay
	if rp == nil {
		return ReplayState{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	clock := rp.clockLocked(c.now())
	st := ReplayState{
		Speed: rp.speed, Started: !rp.started.IsZero(), Clock: clock.UTC(), ClockSeconds: clock.Sub(rp.origin).Seconds(),
		SpanSeconds: rp.last.Sub(rp.origin).Seconds(), Records: rp.records, Scheduled: rp.scheduled,
		Delivered: rp.delivered, SessionsClosed: rp.closed,
	}
	for obj, l := range rp.lines {
		st.Due += l.next
		for _, rec := range l.recs[l.next:] {
			if l.bound && !l.dueAt(rec).After(clock) || !l.bound && !rec.At.After(clock) {
				st.Pending++
			}
		}
		if len(l.recs) > 0 {
			st.Objects = append(st.Objects, ReplayObject{ObjectID: obj, Bound: l.bound, ShiftSeconds: l.shift.Seconds(), Scheduled: len(l.recs), Played: l.next})
		}
	}
	slices.SortFunc(st.Objects, func(a, b ReplayObject) int { return a.ObjectID - b.ObjectID })
	st.Finished = st.Due == st.Scheduled
	return st, true
}

// serveReplay answers a request from the recording; false leaves it to
// the simulated cloud's handler.
func (c *Cloud) serveReplay(w http.ResponseWriter, r *http.Request, template string, auth bool) bool {
	endpoint := template
	switch template {
	case cloudapi.EndpointLogin:
		c.replayLogin(w)
		return true
	case cloudapi.EndpointRevoke:
		return false
	case "GET /{$}", "GET /assets/{$}", "GET /assets/{name}":
		endpoint = cloudapi.EndpointAsset
	}
	if !isAPI(template) || template == cloudapi.EndpointSystemVersion {
		if c.replay.templates[endpoint] == 0 {
			return false
		}
	}
	if auth && !c.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Unauthorized"})
		return true
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		badRequest(w, err)
		return true
	}
	key := requestKey(r.Method, r.URL.RequestURI(), body, endpoint)
	obj := c.replay.requestObject(r.URL.RequestURI(), body)
	c.mu.Lock()
	now := c.now()
	clock := c.replay.clockLocked(now)
	rec, found := c.replay.lookupLocked(key, obj, clock)
	c.mu.Unlock()
	if template == cloudapi.EndpointModulesConnect {
		if !found || (rec.Status >= 200 && rec.Status < 300) {
			c.replayBind(body)
			c.replay.wake()
		}
		if !found {
			writeJSON(w, http.StatusOK, map[string]any{}) // not recorded, so not one the schedule waits for
			return true
		}
	}
	if !found {
		if !isAPI(template) {
			return false
		}
		c.log.Info("cloudsim: replay: a request the recording never saw", "request", key)
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not found (not in the recording)"})
		return true
	}
	c.writeRecorded(w, rec, now)
	c.replayAnswered(w, obj, rec.Status != 0) // no answer: the connection is gone
	return true
}

// replayAnswered counts an answer to a request about obj, sent on its way
// first, and wakes the schedule: a record waiting for the client's
// requests (see objectLine.due) goes after the answers before it.
func (c *Cloud) replayAnswered(w http.ResponseWriter, obj int, flush bool) {
	if obj == 0 {
		return
	}
	if f, ok := w.(http.Flusher); ok && flush {
		f.Flush()
	}
	// Counted under the lock the schedule is read under.
	c.mu.Lock()
	if l := c.replay.lines[obj]; l != nil && l.bound {
		l.asked++
	}
	c.mu.Unlock()
	c.replay.wake()
}

// replayBind binds a modules/connect's session to its object.
func (c *Cloud) replayBind(body []byte) {
	var b struct {
		WSID    string   `json:"wsid"`
		SID     string   `json:"sid"`
		Modules []string `json:"modules"`
		GroupID any      `json:"group_id"`
	}
	_ = json.Unmarshal(body, &b)
	sid := b.WSID
	if sid == "" {
		sid = b.SID
	}
	obj := c.replay.requestObject("", body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncSessionsLocked()
	s := c.sessions[sid]
	if s == nil || !s.live() || obj == 0 || (s.objectID != 0 && s.objectID != obj) {
		return
	}
	if l := c.replay.line(obj); !l.bound {
		l.bound = true
		if !l.bindAt.IsZero() {
			l.shift = c.replay.clockLocked(c.now()).Sub(l.bindAt)
		}
	}
	first := s.objectID == 0
	s.objectID = obj
	for _, d := range b.Modules {
		s.bound[d] = true
	}
	if first {
		c.countBoundSessionLocked(s)
	}
}

// writeRecorded writes a recorded answer.
func (c *Cloud) writeRecorded(w http.ResponseWriter, rec traffic.Record, now time.Time) {
	if rec.Status == 0 {
		c.resetConnection(w) // the recorded exchange got no answer
		return
	}
	for k, v := range rec.Headers {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Transfer-Encoding", "Connection", "Authorization", "Set-Cookie", "Date":
			continue
		case "Retry-After":
			if at, err := http.ParseTime(v); err == nil {
				v = now.Add(at.Sub(rec.At)).UTC().Format(http.TimeFormat)
			}
		}
		w.Header().Set(k, v)
	}
	switch {
	case len(rec.Body) > 0:
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
		w.WriteHeader(rec.Status)
		_, _ = w.Write(rec.Body)
	case rec.BodyText != "":
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "text/html")
		}
		w.WriteHeader(rec.Status)
		_, _ = io.WriteString(w, rec.BodyText)
	default:
		w.WriteHeader(rec.Status)
	}
}

// replayLogin accepts any credentials: the recorded login answer with a
// token of the cloud's own, or the recorded failure.
func (c *Cloud) replayLogin(w http.ResponseWriter) {
	rp := c.replay
	c.mu.Lock()
	now := c.now()
	rp.startLocked(now)
	clock := rp.clockLocked(now)
	rec, found := rp.lookupLocked(requestKey("", "", nil, cloudapi.EndpointLogin), 0, clock)
	c.mu.Unlock()
	if found && rec.Status != http.StatusOK {
		c.mu.Lock()
		c.count.LoginsFaulted++
		c.mu.Unlock()
		c.writeRecorded(w, rec, now)
		return
	}
	resp := map[string]any{}
	if found {
		_ = json.Unmarshal(rec.Body, &resp)
	} else {
		// No login in the recording (a bundle's ring lost it): the user
		// and objects from the latest listings.
		resp["user"], resp["objects"] = map[string]any{}, []any{}
		if u, ok := rp.latestOf(cloudapi.EndpointUser, clock); ok {
			var b map[string]any
			if json.Unmarshal(u.Body, &b) == nil && b["user"] != nil {
				resp["user"] = b["user"]
			}
		}
		if o, ok := rp.latestOf(cloudapi.EndpointObjects, clock); ok {
			var b map[string]any
			if json.Unmarshal(o.Body, &b) == nil && b["objects"] != nil {
				resp["objects"] = b["objects"]
			}
		}
	}
	access, refresh := randomToken(), randomToken()
	t := &token{}
	if c.opts.TokenTTL > 0 {
		t.expiresAt = now.Add(c.opts.TokenTTL)
	}
	c.mu.Lock()
	c.tokens[access] = t
	c.count.Logins++
	c.count.TokensIssued++
	c.mu.Unlock()
	delete(resp, "token")
	resp["accessToken"], resp["refreshToken"] = access, refresh
	if resp["type"] == nil {
		resp["type"] = "bearer"
	}
	delete(resp, "expiresAt")
	if !t.expiresAt.IsZero() {
		resp["expiresAt"] = t.expiresAt.UTC().Format(time.RFC3339)
	}
	writeJSON(w, http.StatusOK, resp)
}

// replayLoop plays the recorded events and transitions on their schedule.
func (c *Cloud) replayLoop() {
	defer c.wg.Done()
	for {
		wait := c.pumpReplay()
		var tick <-chan time.Time
		var timer *time.Timer
		if wait >= 0 {
			timer = time.NewTimer(min(max(wait, time.Millisecond), time.Second))
			tick = timer.C
		}
		select {
		case <-c.closing:
		case <-c.replay.kick:
		case <-tick:
		}
		if timer != nil {
			timer.Stop()
		}
		select {
		case <-c.closing:
			return
		default:
		}
	}
}

// replayAction is one thing a pump does, in order: events sent to
// sessions, or sessions closed.
type replayAction struct {
	events []traffic.Record
	socks  []*sio.Socket
	close  []closing
}

// closing is a session a replayed session_down closes.
type closing struct {
	sid  string
	sock *sio.Socket
}

// pumpReplay sends the events due by the replay clock (and those waiting
// for a session that now has one) and closes the sessions of the
// session_down transitions due; it returns how long (on the cloud's clock)
// until the next record falls due, or -1 when none will without a kick.
func (c *Cloud) pumpReplay() time.Duration {
	rp := c.replay
	rp.pumpMu.Lock()
	defer rp.pumpMu.Unlock()
	var actions []replayAction
	c.mu.Lock()
	if rp.started.IsZero() {
		c.mu.Unlock()
		return -1
	}
	c.syncSessionsLocked()
	clock := rp.clockLocked(c.now())
	wait := time.Duration(-1)
	for _, obj := range sortedKeys(rp.lines) {
		l := rp.lines[obj]
		if obj == 0 && !l.bound && len(c.objectSocketsLocked(0)) > 0 {
			l.bound = true // the account's events run on the replay clock
		}
		if !l.bound {
			continue
		}
		for ; l.next < len(l.recs) && l.due(clock); l.next++ {
			rec := l.recs[l.next]
			if rec.Kind == traffic.KindTransition {
				a := replayAction{}
				for _, sid := range c.order {
					if s := c.sessions[sid]; s != nil && s.live() && s.objectID != 0 && (obj == 0 || s.objectID == obj) {
						a.close = append(a.close, closing{sid, s.sock})
						// Ended now, so the events recorded after it wait
						// for the client's next session.
						s.endLocked("replayed session_down")
					}
				}
				actions = append(actions, a)
				rp.closed++
				continue
			}
			socks := c.objectSocketsLocked(obj)
			if len(socks) == 0 {
				break // it waits for a session of its object
			}
			actions = append(actions, replayAction{events: []traffic.Record{rec}, socks: socks})
			rp.delivered++
		}
		if l.next < len(l.recs) {
			at := l.dueAt(l.recs[l.next])
			if !at.After(clock) {
				at = at.Add(askHold) // waiting for requests; each one kicks
			}
			if d := time.Duration(float64(at.Sub(clock)) / rp.speed); d > 0 && (wait < 0 || d < wait) {
				wait = d
			}
		}
	}
	c.mu.Unlock()

	for _, a := range actions {
		for _, cl := range a.close {
			c.closeTransport(cl.sid, cl.sock)
		}
		for _, rec := range a.events {
			frame, err := eventFrame(eventName(rec.Event), replayPayload(rec.Payload))
			if err != nil {
				c.log.Error("cloudsim: replay: encoding a recorded event", "event", rec.Event, "err", err)
				continue
			}
			for _, s := range a.socks {
				if s.Connected() {
					s.Client().WriteToEngine([]types.BufferInterface{frame}, &sio.WriteOptions{})
				}
			}
		}
	}
	return wait
}

// objectSocketsLocked returns the live sessions bound to obj (to any
// object when obj is 0: an event recorded for the account).
func (c *Cloud) objectSocketsLocked(obj int) []*sio.Socket {
	var out []*sio.Socket
	for _, sid := range c.order {
		if s := c.sessions[sid]; s != nil && s.live() && s.objectID != 0 && (obj == 0 || s.objectID == obj) {
			out = append(out, s.sock)
		}
	}
	return out
}

// eventName is a recorded event name as the wire carries it: the numeric
// events (22) as numbers.
func eventName(name string) any {
	if n, err := strconv.Atoi(name); err == nil {
		return n
	}
	return name
}

func replayPayload(p json.RawMessage) any {
	if len(bytes.TrimSpace(p)) == 0 {
		return nil
	}
	return p
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
