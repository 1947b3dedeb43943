package cloudsim

import (
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sio "github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
	"github.com/zishang520/socket.io/v3/pkg/utils"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/internal/libglue"
)

const (
	namespace         = "/ws" // the Socket.IO namespace the cloud serves
	maxClosedSessions = 64    // ended sessions kept for Sessions
)

// session is one /ws namespace connection.
type session struct {
	sid, engineSID string
	remote         string
	connected      bool
	reason         string // disconnect reason once gone
	bound          map[string]bool
	objectID       int            // the object of the bound modules; 0 = none bound
	listens        map[string]int // client emits seen, by event name
	listenGroups   []int          // group_ids of the listen emits, distinct, in order seen
	emits          []Emit         // every client emit, in order (bounded by maxEmits)
	// sock is the library's socket while the session is connected; nil
	// once it has ended, so a closed session's record does not hold its
	// connection's buffers and queues.
	sock *sio.Socket
}

// Session describes one realtime session, for tests and /control/state.
type Session struct {
	SID        string   `json:"sid"` // namespace SID (the one modules/connect binds)
	EngineSID  string   `json:"engine_sid"`
	RemoteAddr string   `json:"remote_addr"`
	Connected  bool     `json:"connected"`
	Reason     string   `json:"reason,omitempty"` // why it ended
	Bound      []string `json:"bound"`            // devids whose pushes it gets
	// ObjectID is the object whose modules it is bound to (modules/connect
	// binds one object's modules to a session); 0 while none is bound.
	ObjectID int            `json:"object_id,omitempty"`
	Listens  map[string]int `json:"listens,omitempty"`
	// ListenGroups are the group_id values its listen emits
	// (app:modules:*:listen) carried, each once, in the order first seen:
	// the reference client sends its object's id (docs/spec.md W-3.2).
	ListenGroups []int `json:"listen_groups,omitempty"`
	// Emits are the session's client emits in order, with their first
	// argument as decoded from JSON (numbers are float64); the first
	// maxEmits only.
	Emits []Emit `json:"emits,omitempty"`
}

// Emit is one client emit: its event name and its first argument.
type Emit struct {
	Event string `json:"event"`
	Arg   any    `json:"arg,omitempty"`
}

// maxEmits bounds the emits a session keeps: a client that emits in a loop
// must not grow the simulator without bound.
const maxEmits = 256

func (c *Cloud) setupRealtime() {
	opts := sio.DefaultServerOptions()
	opts.SetPath("/socket.io")
	opts.SetServeClient(false)
	if c.opts.PingInterval > 0 {
		opts.SetPingInterval(c.opts.PingInterval)
	}
	if c.opts.PingTimeout > 0 {
		opts.SetPingTimeout(c.opts.PingTimeout)
	}
	if c.opts.ConnectTimeout > 0 {
		opts.SetConnectTimeout(c.opts.ConnectTimeout)
	}
	c.io = sio.NewServer(nil, opts)
	c.ioH = c.io.ServeHandler(opts)
	c.releaseSessions()
	c.nsp = c.io.Of(namespace, nil)
	c.nsp.Use(c.admit)
	// Sockets of the main namespace (no client of the cloud's uses it)
	// need their queue released too.
	c.io.Use(func(s *sio.Socket, next func(*sio.ExtendedError)) {
		libglue.DropQueueFinalizer(s, "taskQueue")
		next(nil)
	})
	_ = c.nsp.On("connection", func(args ...any) {
		s, ok := args[0].(*sio.Socket)
		if ok {
			c.onSession(s)
		}
	})
}

// admit is the /ws middleware: the handshake must carry a valid bearer
// token in its HTTP Authorization header (the cloud takes the token from
// nowhere else); a no_namespace_ack fault leaves the CONNECT unanswered.
func (c *Cloud) admit(s *sio.Socket, next func(*sio.ExtendedError)) {
	libglue.DropQueueFinalizer(s, "taskQueue")
	tok := bearer(s.Handshake().Headers.Header().Get("Authorization"))
	if !c.validToken(tok) {
		c.mu.Lock()
		c.count.JoinsRefused++
		c.mu.Unlock()
		next(sio.NewExtendedError("Unauthorized", map[string]any{"message": "Unauthorized"}))
		return
	}
	c.mu.Lock()
	_, mute := c.realtimeFaultLocked(FaultNoNamespaceAck, "", true)
	if !mute {
		c.count.Joins++
	}
	c.mu.Unlock()
	if mute {
		// next is not called while the session lives: the Engine.IO session
		// stays open and the client waits for a 40/ws ack that never comes,
		// until the server's connect timeout closes the transport. Once it
		// is closed, next lets the library drop the socket it built for the
		// CONNECT (and stop that socket's task queue, which would otherwise
		// wait forever).
		conn := s.Conn()
		var once sync.Once
		drop := func(...any) { once.Do(func() { next(nil) }) }
		_ = conn.Once("close", drop)
		if conn.ReadyState() == "closed" {
			drop()
		}
		c.log.Info("cloudsim: namespace CONNECT left unanswered", "engine_sid", conn.Id())
		return
	}
	if !fileUnderNamespace(s) {
		c.log.Warn("cloudsim: the socket library changed shape; a client packet right behind the join may close its connection")
	}
	next(nil)
}

// fileUnderNamespace puts an admitted socket in its client's namespace map
// before the join is acknowledged. The library sends the CONNECT
// acknowledgement and only then files the socket there, and a packet for the
// namespace that arrives in between makes it close the whole connection
// ("invalid state"): a client that emits as soon as it is acknowledged (the
// exporter's listen emits) loses its session now and then. Filed early, the
// packet waits in the socket's task queue behind the join instead. The
// reference server does both in one step, so there no packet can arrive in
// between.
func fileUnderNamespace(s *sio.Socket) bool {
	nsps := libglue.FieldAt[*types.Map[string, *sio.Socket]](s.Client(), "nsps")
	if nsps == nil || *nsps == nil {
		return false
	}
	(*nsps).Store(s.Nsp().Name(), s)
	return true
}

// releaseSessions releases what the library keeps of every Engine.IO
// session once the session has closed: its WebSocket transport and the
// goroutines of its cleared timers.
//
// The library closes a transport (its connection and its write queue) only
// when the server ends the session; when the client ends it (a close frame,
// a dropped or reset connection) the transport marks itself closed and is
// never told to close, so its connection stays open (CLOSE_WAIT) and its
// write-queue goroutine waits forever: one descriptor and one goroutine per
// reconnect. Closing it again after the library did is harmless (the queue
// stops once; a second close of the connection only returns an error).
//
// The session's connect, ping-interval and ping-timeout timers can each
// leave a goroutine waiting forever (see libglue.ReleaseTimer); they are released
// when the session closes. The connect timer belongs to the session's
// Socket.IO client, which the library builds in its own "connection"
// listener and keeps nowhere the cloud can reach, and forgets the timer the
// moment it clears it. The cloud therefore builds the client itself, with
// the library's public constructor, in place of that listener (which does
// nothing else for an Engine.IO v4 session), and keeps the timer. Should
// the engine not have exactly that one listener, the library's is left in
// place and only the engine's timers are released.
func (c *Cloud) releaseSessions() {
	eng := c.io.Engine()
	lib := eng.Listeners("connection")
	buildClients := len(lib) == 1
	if buildClients {
		eng.RemoveAllListeners("connection")
	}
	_ = eng.On("connection", func(args ...any) {
		if len(args) == 0 {
			return
		}
		c.mu.Lock()
		c.count.Handshakes++ // the engine emits "connection" once per OPEN
		c.mu.Unlock()
		conn, ok := elemOf(eng.Clients(), args[0])
		if !ok || conn.Protocol() != 4 {
			// Not a session this code knows how to set up: the
			// library's own listener does it.
			if buildClients {
				lib[0](args...)
			}
			return
		}
		var timers []*utils.Timer
		if buildClients {
			client := sio.NewClient(c.io, conn)
			timers = append(timers, libglue.TimerAt(client, clientConnectTimer))
		}
		libglue.DropQueueFinalizer(conn.Transport(), "writeQueue")
		guard := guardPings(conn, c.pingBound())
		_ = conn.On("upgrading", func(args ...any) {
			if len(args) > 0 {
				libglue.DropQueueFinalizer(args[0], "writeQueue")
			}
		})
		var once sync.Once
		release := func(...any) {
			once.Do(func() {
				if tr := conn.Transport(); tr != nil && tr.Name() == "websocket" {
					// Not on this goroutine: the session's close usually
					// runs inside the connection's own close listener,
					// which closing the connection calls again (and waits
					// for itself).
					go tr.DoClose(nil)
				}
				// Loaded now: the ping timers are replaced as the session
				// runs, and the latest ones are the ones just cleared.
				timers = append(timers, libglue.TimerAt(conn, enginePingInterval), libglue.TimerAt(conn, enginePingTimeout))
				timers = append(timers, guard.clearedTimers()...)
				if hold := c.holdTimers.Load(); hold != nil {
					(*hold)(timers)
					return
				}
				for _, t := range timers {
					libglue.ReleaseTimer(t)
				}
			})
		}
		// The client's own close listener (added by NewClient) runs first
		// and clears the connect timer.
		_ = conn.Once("close", release)
		if conn.ReadyState() == "closed" {
			release()
		}
	})
}

// elemOf asserts v to the element type of m: the Engine.IO server passes its
// sessions untyped to "connection" listeners, and its session map names the
// type.
func elemOf[K comparable, V any](_ *types.Map[K, V], v any) (V, bool) {
	e, ok := v.(V)
	return e, ok
}

// pingBound is the Engine.IO server's ping interval and ping timeout
// together: the longest a session waits for a pong.
func (c *Cloud) pingBound() time.Duration {
	o := c.io.Engine().Opts()
	return o.PingInterval() + o.PingTimeout()
}

// addSessionLocked records a namespace socket as a session.
func (c *Cloud) addSessionLocked(s *sio.Socket) *session {
	sess := &session{
		sid: string(s.Id()), engineSID: s.Conn().Id(), remote: s.Conn().RemoteAddress(),
		connected: true, bound: map[string]bool{}, listens: map[string]int{}, sock: s,
	}
	c.sessions[sess.sid] = sess
	c.order = append(c.order, sess.sid)
	c.pruneSessionsLocked()
	return sess
}

// syncSessionsLocked records namespace sockets whose connection event has
// not run yet. The library sends the CONNECT acknowledgement before it emits
// "connection", so a client can post its SID to modules/connect (or a test
// inject a fault) before onSession; the namespace's socket map already holds
// the socket by then.
func (c *Cloud) syncSessionsLocked() {
	c.nsp.Sockets().Range(func(id sio.SocketId, s *sio.Socket) bool {
		if c.sessions[string(id)] == nil {
			c.addSessionLocked(s)
		}
		return true
	})
}

// live says whether a session can receive pushes. The transport state is
// checked too: when a transport dies while the library is still joining the
// socket to the namespace, the socket is never told and stays "connected".
func (s *session) live() bool {
	return s.connected && s.sock != nil && s.sock.Connected() && s.sock.Conn().ReadyState() == "open"
}

// endLocked marks a session ended and lets go of its socket.
func (s *session) endLocked(reason string) {
	s.connected = false
	s.sock = nil
	if reason != "" {
		s.reason = reason
	}
}

func (c *Cloud) onSession(s *sio.Socket) {
	c.mu.Lock()
	sess := c.sessions[string(s.Id())]
	if sess == nil {
		sess = c.addSessionLocked(s)
	}
	c.mu.Unlock()
	if s.Conn().ReadyState() != "open" {
		// The transport closed while the library was joining the socket
		// to the namespace, before the connection tracked the socket: the
		// socket is never told, stays in the namespace and keeps its task
		// queue. Disconnecting it lets both go.
		c.mu.Lock()
		sess.endLocked("transport close")
		c.mu.Unlock()
		s.Disconnect(false)
		c.log.Info("cloudsim: realtime session gone before it was set up", "sid", sess.sid)
		return
	}
	c.log.Info("cloudsim: realtime session connected", "sid", sess.sid, "engine_sid", sess.engineSID)

	s.OnAny(func(args ...any) {
		if len(args) == 0 {
			return
		}
		name, _ := args[0].(string)
		c.mu.Lock()
		sess.listens[name]++
		if len(args) > 1 && strings.HasSuffix(name, ":listen") {
			sess.noteListenGroupLocked(args[1])
		}
		if len(sess.emits) < maxEmits {
			e := Emit{Event: name}
			if len(args) > 1 {
				e.Arg = args[1]
			}
			sess.emits = append(sess.emits, e)
		}
		c.mu.Unlock()
	})
	_ = s.On("disconnect", func(args ...any) {
		reason := ""
		if len(args) > 0 {
			reason, _ = args[0].(string)
		}
		c.mu.Lock()
		sess.endLocked(reason)
		c.mu.Unlock()
		c.log.Info("cloudsim: realtime session disconnected", "sid", sess.sid, "reason", reason)
	})
	c.mu.Lock()
	if !sess.live() { // gone before its handlers were attached
		sess.endLocked("")
	}
	c.mu.Unlock()
}

// maxListenGroups bounds the distinct group_ids a session keeps.
const maxListenGroups = 16

// noteListenGroupLocked records the group_id of a listen emit's argument.
func (s *session) noteListenGroupLocked(arg any) {
	body, _ := arg.(map[string]any)
	g, ok := parseGroupID(body["group_id"])
	if !ok || slices.Contains(s.listenGroups, g) || len(s.listenGroups) >= maxListenGroups {
		return
	}
	s.listenGroups = append(s.listenGroups, g)
}

// pruneSessionsLocked keeps every live session and the latest closed ones.
func (c *Cloud) pruneSessionsLocked() {
	closed := 0
	for i := len(c.order) - 1; i >= 0; i-- {
		if s := c.sessions[c.order[i]]; s != nil && !s.connected {
			closed++
			if closed > maxClosedSessions {
				delete(c.sessions, c.order[i])
			}
		}
	}
	kept := c.order[:0]
	for _, sid := range c.order {
		if c.sessions[sid] != nil {
			kept = append(kept, sid)
		}
	}
	c.order = kept
}

// Sessions lists the realtime sessions in connect order (live ones and the
// most recent closed ones).
func (c *Cloud) Sessions() []Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncSessionsLocked()
	out := make([]Session, 0, len(c.order))
	for _, sid := range c.order {
		s := c.sessions[sid]
		if s == nil {
			continue
		}
		ls := make(map[string]int, len(s.listens))
		for k, v := range s.listens {
			ls[k] = v
		}
		out = append(out, Session{
			SID: s.sid, EngineSID: s.engineSID, RemoteAddr: s.remote, Connected: s.live(),
			Reason: s.reason, Bound: slices.Sorted(maps.Keys(s.bound)), ObjectID: s.objectID, Listens: ls,
			ListenGroups: slices.Clone(s.listenGroups), Emits: slices.Clone(s.emits),
		})
	}
	return out
}

// serveRealtime fronts the Socket.IO server with the handshake faults.
func (c *Cloud) serveRealtime(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.count.Requests[r.Method+" /socket.io/"]++
	if _, ok := c.realtimeFaultLocked(FaultHandshake503, "", true); ok {
		c.mu.Unlock()
		writeHTMLStatus(w, http.StatusServiceUnavailable)
		return
	}
	if _, ok := c.realtimeFaultLocked(FaultStallHandshake, "", true); ok {
		// Hold the request unanswered while any stall fault is on; the
		// client sees an accepted TCP connection and no HTTP answer.
		for ok {
			wake := c.released
			c.mu.Unlock()
			select {
			case <-wake:
			case <-r.Context().Done():
				return
			case <-c.closing:
				return
			}
			c.mu.Lock()
			_, ok = c.realtimeFaultLocked(FaultStallHandshake, "", false)
		}
	}
	c.mu.Unlock()
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// The Go server sends the Engine.IO OPEN packet before its
		// Socket.IO layer listens to the new connection, so a client that
		// answers at once loses its namespace CONNECT (about one connect in
		// ten on loopback). Holding the connection's writes after the 101
		// response until the handshake handler has returned (and with it the
		// Socket.IO setup) closes that window; the real cloud has no such gap.
		if release := c.conns.holdWrites(r.RemoteAddr); release != nil {
			defer release()
		}
	}
	c.ioH.ServeHTTP(w, r)
}

// eventFrame is the Socket.IO EVENT packet text for namespace /ws. It is
// encoded here rather than through Socket.Emit for two reasons: Emit only
// takes string event names, and the cloud's module-memory event has the
// number 22 as its name (`42/ws,[22,{...}]` on the wire); and one encoding
// is shared by every receiving session, which keeps pushes cheap.
func eventFrame(name any, payload any) (types.BufferInterface, error) {
	data, err := json.Marshal([]any{name, payload})
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(data)+5)
	b = append(b, '2') // Socket.IO EVENT; Engine.IO adds the MESSAGE type '4'
	b = append(b, namespace...)
	b = append(b, ',')
	b = append(b, data...)
	return types.NewStringBuffer(b), nil
}

// emit sends one event to every connected session bound to devid, unless a
// mute_pushes fault swallows it.
func (c *Cloud) emit(devid string, name any, payload any) int {
	c.mu.Lock()
	if _, muted := c.realtimeFaultLocked(FaultMutePushes, devid, true); muted {
		c.mu.Unlock()
		return 0
	}
	var targets []*sio.Socket
	var objects []int
	var sids []string
	for _, sid := range c.order {
		if s := c.sessions[sid]; s != nil && s.live() && s.bound[devid] {
			targets = append(targets, s.sock)
			objects, sids = append(objects, s.objectID), append(sids, s.sid)
		}
	}
	c.mu.Unlock()
	if len(targets) == 0 {
		return 0
	}
	if c.opts.Record != nil {
		c.recordEvent(name, payload, objects, sids)
	}
	frame, err := eventFrame(name, payload)
	if err != nil {
		c.log.Error("cloudsim: encoding event", "event", name, "err", err)
		return 0
	}
	for _, s := range targets {
		if !s.Connected() {
			continue
		}
		s.Client().WriteToEngine([]types.BufferInterface{frame}, &sio.WriteOptions{})
	}
	return len(targets)
}

// pushParams sends a delta (docs/spec.md W-2.1a) as
// app:modules:parameters:change (docs/spec.md W-3.3a).
func (c *Cloud) pushParams(devid string, delta map[string]any) {
	c.emit(devid, cloudapi.WireParamsChange, delta)
}

// SetModuleOnline sets connectedAt (now, or 0) and sends
// app:module:connection:status:changed to the sessions bound to the module.
func (c *Cloud) SetModuleOnline(devid string, online bool) {
	c.changeConnection(devid, "SetModuleOnline", func(m *module) {
		switch {
		case !online:
			m.connectedAt = 0
		case m.connectedAt == 0:
			m.connectedAt = c.now().Unix()
		}
	})
}

// SetGatewayVersion changes the version of a module's gateway, in its
// module-list row and in the app:module:connection:status:changed it sends
// to the sessions bound to the module.
func (c *Cloud) SetGatewayVersion(devid, version string) {
	c.changeConnection(devid, "SetGatewayVersion", func(m *module) { m.gw.Version = version })
}

// changeConnection applies change to a module's connection state under the
// lock, then sends the module's connection status (connectedAt and gateway)
// to the sessions bound to it. An unknown module is logged and ignored.
func (c *Cloud) changeConnection(devid, caller string, change func(m *module)) {
	c.mu.Lock()
	m := c.byDevid[devid]
	if m == nil {
		c.mu.Unlock()
		c.log.Warn("cloudsim: "+caller+" for an unknown module ignored", "devid", devid)
		return
	}
	change(m)
	payload := map[string]any{devid: map[string]any{"connectedAt": m.connectedAt, "gateway": m.gw}}
	c.mu.Unlock()
	c.emit(devid, cloudapi.WireConnectionStatus, payload)
}

// ModuleOnline reports whether a module is online (connectedAt != 0).
func (c *Cloud) ModuleOnline(devid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byDevid[devid]
	return m != nil && m.connectedAt != 0
}

// EmitMemoryUpdated sends the numeric event 22 {"devid":...} to the sessions
// bound to the module.
func (c *Cloud) EmitMemoryUpdated(devid string) {
	c.emit(devid, cloudapi.WireMemoryUpdated, map[string]any{"devid": devid})
}

// EmitAlarmsQuantity pushes {"alarmsQuantity":{devid:n}} to the sessions
// bound to the module. It changes no alarm row: a later REST answer reports
// the module's rows as they are.
func (c *Cloud) EmitAlarmsQuantity(devid string, n int) {
	c.emit(devid, cloudapi.WireAlarmsQuantity, map[string]any{"alarmsQuantity": map[string]any{devid: n}})
}

// fireTransportFaults applies the one-shot close_transport, abort_transport,
// stall_transport and connect_error faults to the connected sessions (bound
// to Devid when set). A fault that finds no session stays armed and hits the next session
// that binds: by then the client holds its namespace SID, so the close
// cannot overtake the CONNECT acknowledgement still queued for it. A
// stall_transport fault that fired stays listed, holding its connections,
// until it is cleared.
func (c *Cloud) fireTransportFaults() {
	type hit struct {
		kind              FaultKind
		sid, remote, body string
		sock              *sio.Socket
		object            int
	}
	var hits []hit
	c.mu.Lock()
	c.syncSessionsLocked()
	for _, af := range append([]*activeFault(nil), c.faults...) {
		switch {
		case af.f.Kind == FaultStallTransport && af.stalls == nil:
		case af.f.Kind == FaultCloseTransport, af.f.Kind == FaultAbortTransport, af.f.Kind == FaultConnectError:
		default:
			continue
		}
		n := 0
		for _, sid := range c.order {
			s := c.sessions[sid]
			if s == nil || !s.live() || (af.f.Devid != "" && !s.bound[af.f.Devid]) ||
				(af.f.ObjectID != 0 && s.objectID != af.f.ObjectID) {
				continue
			}
			hits = append(hits, hit{af.f.Kind, s.sid, s.remote, af.f.Body, s.sock, s.objectID})
			n++
		}
		switch {
		case n == 0:
		case af.f.Kind == FaultStallTransport:
			af.stalls = []*connStall{}
			for _, h := range hits[len(hits)-n:] {
				if st := c.conns.stall(h.remote); st != nil {
					af.stalls = append(af.stalls, st)
					c.log.Info("cloudsim: transport stalled", "sid", h.sid)
				} else {
					c.log.Warn("cloudsim: stall_transport found no raw connection", "sid", h.sid)
				}
			}
		default:
			c.removeFaultLocked(af.id)
		}
	}
	c.mu.Unlock()
	for _, h := range hits {
		if h.kind != FaultStallTransport {
			c.recordSessionDown(h.object, h.sid, string(h.kind))
		}
		switch h.kind {
		case FaultCloseTransport:
			c.closeTransport(h.sid, h.sock)
		case FaultAbortTransport:
			c.abortTransport(h.sid, h.remote, h.sock)
		case FaultConnectError:
			c.sendConnectError(h.sid, h.sock, h.body)
		}
	}
}

// sendConnectError sends a joined session a Socket.IO CONNECT_ERROR for the
// namespace (`44/ws,{"message":…}` on the wire); the client ends the session.
func (c *Cloud) sendConnectError(sid string, sock *sio.Socket, message string) {
	if message == "" {
		message = "Unauthorized"
	}
	data, err := json.Marshal(map[string]any{"message": message})
	if err != nil {
		c.log.Error("cloudsim: encoding a CONNECT_ERROR", "err", err)
		return
	}
	b := append([]byte("4"+namespace+","), data...) // Socket.IO CONNECT_ERROR; Engine.IO adds the MESSAGE type '4'
	sock.Client().WriteToEngine([]types.BufferInterface{types.NewStringBuffer(b)}, &sio.WriteOptions{})
	c.log.Info("cloudsim: CONNECT_ERROR sent to a joined session", "sid", sid, "message", message)
}

// closeTransport ends a session cleanly at the Engine.IO layer: a WebSocket
// close frame (1000, normal closure), then the transport closes. The
// library's own close only shuts the TCP connection, which is not clean.
func (c *Cloud) closeTransport(sid string, sock *sio.Socket) {
	conn := sock.Conn()
	if req := conn.Request(); req != nil && req.Websocket != nil && req.Websocket.Conn != nil {
		const closeMessage = 8 // RFC 6455 opcode 0x8
		_ = req.Websocket.WriteControl(closeMessage, []byte{0x03, 0xE8}, time.Now().Add(time.Second))
	}
	conn.Close(false)
	c.log.Info("cloudsim: transport closed", "sid", sid)
}

// abortTransport drops a session's TCP connection with no close frame and
// no FIN handshake (SO_LINGER 0 sends a reset), like a dying proxy.
func (c *Cloud) abortTransport(sid, remote string, sock *sio.Socket) {
	if c.conns.abort(remote) {
		c.log.Info("cloudsim: transport aborted", "sid", sid)
		return
	}
	// Served through Handler on a listener of the caller's: reach the raw
	// connection through the websocket instead.
	if req := sock.Conn().Request(); req != nil && req.Websocket != nil && req.Websocket.Conn != nil {
		abortConn(req.Websocket.UnderlyingConn())
		c.log.Info("cloudsim: transport aborted", "sid", sid)
		return
	}
	c.log.Warn("cloudsim: abort_transport found no raw connection; closing instead", "sid", sid)
	sock.Conn().Close(true)
}

func abortConn(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = nc.Close()
}

// connTracker remembers the raw connections accepted by the cloud's
// listener, by remote address, so a fault can drop one at the TCP level.
type connTracker struct {
	mu    sync.Mutex
	conns map[string]net.Conn
}

func newConnTracker() *connTracker { return &connTracker{conns: map[string]net.Conn{}} }

type trackedListener struct {
	net.Listener
	t *connTracker
}

type trackedConn struct {
	net.Conn
	t     *connTracker
	once  sync.Once
	gate  atomic.Pointer[writeGate]
	stall atomic.Pointer[connStall]
}

// connStall black-holes one connection (see FaultStallTransport) until it
// is released; then the connection is dropped.
type connStall struct {
	tc       *trackedConn
	released chan struct{}
	once     sync.Once
}

func (st *connStall) holding() bool {
	select {
	case <-st.released:
		return false
	default:
		return true
	}
}

// release drops the stalled connection.
func (st *connStall) release() {
	st.once.Do(func() {
		close(st.released)
		_ = st.tc.Close()
	})
}

// releaseStalls drops the connections a stall_transport fault holds.
func releaseStalls(af *activeFault) {
	for _, st := range af.stalls {
		st.release()
	}
}

func (tc *trackedConn) Read(p []byte) (int, error) {
	if st := tc.stall.Load(); st != nil {
		<-st.released // nothing more the client sends is read
		return 0, net.ErrClosed
	}
	return tc.Conn.Read(p)
}

// writeGate lets the first write through (the handshake answer) and holds
// the later ones until released.
type writeGate struct {
	first atomic.Bool
	open  chan struct{}
}

// maxWriteHold bounds a write hold, whatever happens to the handshake.
const maxWriteHold = 5 * time.Second

func (tc *trackedConn) Write(p []byte) (int, error) {
	if st := tc.stall.Load(); st != nil {
		if st.holding() {
			return len(p), nil // swallowed: nothing reaches the client
		}
		return 0, net.ErrClosed
	}
	if g := tc.gate.Load(); g != nil && !g.first.CompareAndSwap(false, true) {
		t := time.NewTimer(maxWriteHold)
		select {
		case <-g.open:
		case <-t.C:
		}
		t.Stop()
	}
	return tc.Conn.Write(p)
}

// holdWrites arms a write gate on the connection from remote; nil when the
// connection is not one of the listener's.
func (t *connTracker) holdWrites(remote string) (release func()) {
	t.mu.Lock()
	tc, ok := t.conns[remote].(*trackedConn)
	t.mu.Unlock()
	if !ok {
		return nil
	}
	g := &writeGate{open: make(chan struct{})}
	tc.gate.Store(g)
	return func() {
		tc.gate.CompareAndSwap(g, nil)
		close(g.open)
	}
}

// stall black-holes the connection from remote; nil when the connection is
// not one of the listener's.
func (t *connTracker) stall(remote string) *connStall {
	t.mu.Lock()
	tc, ok := t.conns[remote].(*trackedConn)
	t.mu.Unlock()
	if !ok {
		return nil
	}
	st := &connStall{tc: tc, released: make(chan struct{})}
	if !tc.stall.CompareAndSwap(nil, st) {
		return nil
	}
	return st
}

func (t *connTracker) wrap(ln net.Listener) net.Listener { return &trackedListener{ln, t} }

func (l *trackedListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: nc, t: l.t}
	l.t.mu.Lock()
	l.t.conns[nc.RemoteAddr().String()] = tc
	l.t.mu.Unlock()
	return tc, nil
}

func (tc *trackedConn) Close() error {
	if st := tc.stall.Load(); st != nil && st.holding() {
		return nil // the close stalls: the client sees nothing of it
	}
	tc.once.Do(func() {
		tc.t.mu.Lock()
		if tc.t.conns[tc.RemoteAddr().String()] == tc {
			delete(tc.t.conns, tc.RemoteAddr().String())
		}
		tc.t.mu.Unlock()
	})
	return tc.Conn.Close()
}

func (t *connTracker) abort(remote string) bool {
	t.mu.Lock()
	tc, ok := t.conns[remote].(*trackedConn)
	t.mu.Unlock()
	if !ok {
		return false
	}
	abortConn(tc.Conn)
	_ = tc.Close()
	return true
}

func (t *connTracker) closeAll() {
	t.mu.Lock()
	conns := make([]net.Conn, 0, len(t.conns))
	for _, k := range slices.Sorted(maps.Keys(t.conns)) {
		conns = append(conns, t.conns[k])
	}
	t.mu.Unlock()
	for _, nc := range conns {
		if tc, ok := nc.(*trackedConn); ok {
			if st := tc.stall.Load(); st != nil {
				st.release()
			}
		}
		_ = nc.Close()
	}
}
