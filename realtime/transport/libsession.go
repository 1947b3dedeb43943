package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ws "github.com/gorilla/websocket"
	sio "github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/internal/libglue"
	"github.com/bragerone/bragerone_exporter/outage"
)

// Engine.IO / Socket.IO reason strings the library reports.
const (
	libForcedClose      = "forced close"         // the library closing its own manager; the real reason follows
	libClientDisconnect = "io client disconnect" // our own Disconnect
)

// Phases in order; a phase only ever advances.
var phaseOrder = map[string]int{PhaseDial: 0, PhaseHandshake: 1, PhaseNamespace: 2}

// session is one connect attempt and, once joined, the Session it became.
//
// Containment rules for the library:
//   - every call we make into the manager or socket holds libMu, so no two
//     of our goroutines are ever inside the client at once (the library has
//     internal data races on concurrent Connect/Disconnect);
//   - library callbacks never call back into the library and never block:
//     they update state under mu and queue events;
//   - teardown always runs on a goroutine of our own, bounded in time.
type session struct {
	c   *Client
	id  uint64
	log *slog.Logger

	libMu  sync.Mutex
	mgr    *sio.Manager
	sock   *sio.Socket
	queues libQueues // the library's task queues of this attempt (see libQueues)

	mu         sync.Mutex
	phase      string
	inDial     bool // run is inside the blocking dial
	abandoned  bool // Connect gave up on this attempt
	counted    bool // the stuck dial is counted in c.stuck
	decided    bool // result was sent
	joined     bool
	closing    bool // Disconnect was called
	ended      bool
	dialErr    error // the WebSocket dial error, caught on the transport
	rawConnErr any   // data of a CONNECT_ERROR packet, which the library may lose
	nsSID      string
	engSID     string
	reason     string
	detail     string

	engineWatched bool // the engine's queue is adopted and its close watched

	// The attempt's own connections (see dialNet): closed when the attempt
	// is abandoned, which ends a dial stuck inside the library.
	born     time.Time
	heard    atomic.Int64 // time since born of the last byte read from the cloud
	dialCtx  context.Context
	dialStop context.CancelFunc
	conns    []net.Conn // guarded by mu

	result   chan error
	q        *eventQueue
	events   chan Event
	done     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	tearOnce sync.Once
	gate     chan struct{} // closed once the manager listens to the engine
	gateOnce sync.Once
}

func newSession(c *Client, id uint64) *session {
	s := &session{
		c:      c,
		id:     id,
		log:    c.log.With("attempt", id),
		phase:  PhaseDial,
		result: make(chan error, 1),
		q:      newEventQueue(c.cfg.EventBuffer, c.cfg.Now),
		events: make(chan Event),
		done:   make(chan struct{}),
		stop:   make(chan struct{}),
		gate:   make(chan struct{}),
		born:   time.Now(),
	}
	s.dialCtx, s.dialStop = context.WithCancel(context.Background())
	return s
}

// dialNet is the WebSocket dialer's network dial (see onTransportCreated):
// the library's dial has no timeout and no context of ours, but its
// connection is ours, so an abandoned attempt closes it and the dial
// returns. It also notes each read, so Connect knows when the attempt last
// heard from the cloud.
func (s *session) dialNet(ctx context.Context, network, addr string) (net.Conn, error) {
	dctx, cancel := context.WithCancel(s.dialCtx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	conn, err := (&net.Dialer{}).DialContext(dctx, network, addr)
	if err != nil {
		return nil, err
	}
	lc := &listenedConn{Conn: conn, s: s}
	s.mu.Lock()
	abandoned := s.abandoned
	if !abandoned {
		s.conns = append(s.conns, lc)
	}
	s.mu.Unlock()
	if abandoned {
		_ = conn.Close()
		return nil, errors.New("connect attempt abandoned")
	}
	return lc, nil
}

// heardAt returns when the attempt last read a byte from the cloud (its
// start when it has read none).
func (s *session) heardAt() time.Time { return s.born.Add(time.Duration(s.heard.Load())) }

// closeConns stops any dial of the attempt and closes its connections.
func (s *session) closeConns() {
	s.dialStop()
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// listenedConn notes when its session last read from the cloud.
type listenedConn struct {
	net.Conn
	s *session
}

func (c *listenedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.s.heard.Store(int64(time.Since(c.s.born)))
	}
	return n, err
}

// run builds the library client and dials. It is the only goroutine that
// dials; the dial may block forever (the library sets no handshake timeout),
// in which case Connect abandons this attempt and run cleans up whenever the
// dial finally returns.
func (s *session) run(ctx context.Context, header http.Header) {
	opts := sio.DefaultOptions()
	opts.SetPath(s.c.path)
	opts.SetAutoConnect(false) // register every listener before any I/O
	opts.SetReconnection(false)
	// The manager's own open timer is removed below (disableOpenTimer); should
	// that fail, it must at least never beat our watchdog.
	opts.SetTimeout(2*s.c.cfg.ConnectTimeout + time.Second)
	opts.SetTryAllTransports(false)
	opts.SetRememberUpgrade(false)
	opts.SetUpgrade(false)
	transports := types.NewSet(sio.WebSocket)
	transports.Clear()
	transports.Add(newHookedCtor(sio.WebSocket.Name(), sio.WebSocket.New, s.onTransportCreated, s.onTransportError, s.waitSubscribed))
	opts.SetTransports(transports) // WebSocket only: with two, the first tried is random
	opts.SetParser(rawParser{})    // event arguments stay raw JSON (see rawParser)
	if header != nil {
		opts.SetExtraHeaders(header)
	}

	s.libMu.Lock()
	mgr := sio.NewManager(s.c.origin, opts)
	if !s.queues.adopt(mgr, managerQueuePath...) {
		s.log.Debug("Socket.IO manager's task queue not found (library layout differs): it is neither stopped nor collected")
	}
	if !disableOpenTimer(mgr) {
		s.log.Debug("Socket.IO manager's connect timer left in place (library layout differs)")
	}
	_ = mgr.On("open", func(...any) { s.advance(PhaseNamespace) })
	_ = mgr.On("packet", s.onRawPacket) // before the socket's own listener
	_ = mgr.On("close", func(a ...any) {
		reason, err := argString(a, 0), argError(a, 1)
		if reason == libForcedClose {
			return // the socket reports the real cause itself
		}
		s.onLost(reason, err)
	})
	sock := mgr.Socket(s.c.cfg.Namespace, opts)
	_ = sock.On("connect", func(...any) { s.ensureJoined() })
	_ = sock.On("connect_error", func(a ...any) { s.onConnectError(argError(a, 0)) })
	_ = sock.On("disconnect", func(a ...any) { s.onLost(argString(a, 0), argError(a, 1)) })
	sock.OnAny(s.onAny)

	s.mu.Lock()
	if s.abandoned {
		s.mu.Unlock()
		// The teardown may have run before the manager existed.
		s.queues.stop()
		s.libMu.Unlock()
		return
	}
	s.mgr, s.sock = mgr, sock
	s.inDial = true
	s.mu.Unlock()

	sock.Connect() // dials synchronously
	// Whether the dial itself closed the engine is read before the gate
	// opens: after it, the server's first packets (a refused join among
	// them) may close the engine, and that is the join's failure, which
	// onConnectError reports, not the dial's.
	engineClosed := false
	if eng := mgr.Engine(); eng == nil || eng.ReadyState() == "closed" {
		engineClosed = true
	}
	s.openGate() // the manager listens now: let the reader deliver packets
	s.libMu.Unlock()

	s.mu.Lock()
	s.inDial = false
	abandoned, counted, dialErr := s.abandoned, s.counted, s.dialErr
	s.mu.Unlock()
	if abandoned {
		// Connect has long returned; release what the late dial produced.
		s.teardownLib()
		if counted {
			s.c.stuck.Add(-1)
		}
		s.log.Debug("abandoned realtime dial returned and was released", "err", dialErr)
		return
	}

	if dialErr == nil && !engineClosed {
		s.advance(PhaseHandshake)
		return
	}
	if dialErr == nil {
		dialErr = errors.New("engine closed during the WebSocket dial")
	}
	dialErr = s.diagnose(ctx, header, dialErr)
	s.fail(&ConnectError{Phase: PhaseDial, Reason: Classify(dialErr, outage.ReasonConnectError), Err: dialErr})
	go s.teardownBounded()
}

// diagnose recovers what the library discards: on a rejected WebSocket
// upgrade ("bad handshake") only the fact survives, not the HTTP status. One
// plain GET of the same URL with the same headers tells the status (a 503
// storm shows as 503, an auth failure as 401).
func (s *session) diagnose(ctx context.Context, header http.Header, dialErr error) error {
	if !strings.Contains(dialErr.Error(), "bad handshake") {
		return dialErr
	}
	u := s.c.origin + s.c.path + "/?EIO=4&transport=websocket"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return dialErr
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	hc := &http.Client{Timeout: s.c.cfg.TeardownTimeout}
	resp, err := hc.Do(req)
	if err != nil {
		return dialErr
	}
	_ = resp.Body.Close()
	return fmt.Errorf("WebSocket upgrade rejected: HTTP %s (%w)", s.c.cfg.Redact(resp.Status), dialErr)
}

// onTransportCreated adopts the queues of the Engine.IO socket and of a new
// transport, and releases the engine's ping-timeout timer when the engine
// closes (see libglue.ReleaseTimer); it runs on the dialling goroutine, inside the
// library, before the engine's handshake.
func (s *session) onTransportCreated(engine, transport any) {
	s.mu.Lock()
	watched := s.engineWatched
	s.engineWatched = true
	s.mu.Unlock()
	if !watched {
		if !s.queues.adopt(engine, engineQueuePath...) {
			s.log.Debug("Engine.IO socket's task queue not found (library layout differs): it is neither stopped nor collected")
		}
		if src, ok := engine.(eventSource); ok {
			// The engine clears its timer and marks itself closed before it
			// emits "close"; the timer's callback then does nothing.
			_ = src.On("close", func(...any) {
				if t := pingTimerAt(engine); t != nil {
					libglue.ReleaseTimer(t)
				}
			})
		}
	}
	if !s.queues.adopt(transport, transportQueuePath...) {
		s.log.Debug("WebSocket transport's write queue not found (library layout differs): it is neither stopped nor collected")
	}
	if s.c.hookDial {
		if d := libglue.FieldAt[*ws.Dialer](transport, transportDialerPath...); d != nil && *d != nil {
			(*d).NetDialContext = s.dialNet
		} else {
			s.log.Debug("WebSocket transport's dialer not found (library layout differs): a stuck dial is not interrupted")
		}
	}
}

// onTransportError sees the transport's errors before the engine does; the
// engine drops the dial error (it fires before the manager listens).
func (s *session) onTransportError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inDial && s.dialErr == nil && err != nil {
		s.dialErr = err
	}
}

// onRawPacket keeps the data of a namespace CONNECT_ERROR packet: the
// library turns one without a "data" member into a useless "missing 'data'
// field" error, and it closes the manager before it reports the error.
func (s *session) onRawPacket(a ...any) {
	typ, nsp, data, ok := packetFields(argAt(a, 0))
	if !ok || typ != packetConnectError || nsp != s.c.cfg.Namespace {
		return
	}
	s.mu.Lock()
	s.rawConnErr = data
	s.mu.Unlock()
}

// waitSubscribed runs on the library's reader goroutine for every packet;
// it blocks only until the dialling call has returned (see hookedCtor).
func (s *session) waitSubscribed() { <-s.gate }

func (s *session) openGate() { s.gateOnce.Do(func() { close(s.gate) }) }

func (s *session) advance(phase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if phaseOrder[phase] > phaseOrder[s.phase] {
		s.phase = phase
	}
}

// ensureJoined records the namespace join. The library delivers events that
// arrived before the join ack ahead of its "connect" callback, so the first
// event callback also counts as the join; cloudapi.EventConnect always comes first.
func (s *session) ensureJoined() {
	s.mu.Lock()
	if s.joined || s.decided || s.abandoned || s.ended {
		s.mu.Unlock()
		return
	}
	s.joined, s.decided = true, true
	s.nsSID = s.sock.Id()
	if eng := s.mgr.Engine(); eng != nil {
		s.engSID = eng.Id()
	}
	s.q.push(Event{Kind: cloudapi.EventConnect, Received: s.c.cfg.Now()})
	s.mu.Unlock()
	go s.q.pump(s.events, s.stop)
	s.result <- nil
}

func (s *session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decided || s.abandoned {
		return
	}
	s.decided = true
	s.result <- err
}

func (s *session) onConnectError(err error) {
	s.mu.Lock()
	raw := s.rawConnErr
	joined, phase := s.joined, s.phase
	s.mu.Unlock()
	var payload any = err
	if raw != nil {
		payload = raw
	}
	detail := classText(payload, 0)
	if detail == "" && err != nil {
		detail = err.Error()
	}
	detail = s.c.cfg.Redact(detail)
	token := Classify(payload, outage.ReasonConnectError)
	if !joined {
		s.fail(&ConnectError{Phase: phase, Reason: token, Err: errors.New(detail), ConnectErrorEvent: true})
		go s.teardownBounded()
		return
	}
	// A connect_error after the join ends the session like a disconnect,
	// announced by its own event.
	s.q.push(Event{Kind: cloudapi.EventConnectError, Reason: token, Detail: detail, Received: s.c.cfg.Now()})
	s.end(token, "connect_error: "+detail)
}

// onLost handles the library's "disconnect" and the manager's "close".
func (s *session) onLost(reason string, err error) {
	detail := reason
	if err != nil {
		detail += ": " + err.Error()
	}
	s.mu.Lock()
	joined, phase, raw := s.joined, s.phase, s.rawConnErr
	s.mu.Unlock()
	if !joined {
		var cause any = reason
		if raw != nil {
			cause = raw
			detail = classText(raw, 0)
		}
		s.fail(&ConnectError{Phase: phase, Reason: Classify(cause, outage.ReasonConnectError), Err: errors.New(s.c.cfg.Redact(detail))})
		go s.teardownBounded()
		return
	}
	s.end(Classify(reason, outage.ReasonDisconnect), s.c.cfg.Redact(detail))
}

// end finishes the session once; later calls (the library can report a
// disconnect twice, and "close" and "disconnect" both arrive) are no-ops.
func (s *session) end(token, detail string) {
	s.mu.Lock()
	if s.ended || !s.joined {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.reason, s.detail = token, detail
	// Logged before the event is released: after it, the consumer may be gone.
	s.log.Info("realtime session ended", "reason", token, "detail", detail, "namespace_sid", s.nsSID)
	close(s.done)
	s.q.pushFinal(Event{Kind: cloudapi.EventDisconnect, Reason: token, Detail: detail, Received: s.c.cfg.Now()})
	s.mu.Unlock()
	s.c.forget(s)
	go s.teardownBounded()
}

func (s *session) onAny(a ...any) {
	if len(a) == 0 {
		return
	}
	wire, ok := WireName(a[0])
	if !ok {
		s.log.Warn("realtime event with an unusable name dropped", "name_kind", jsonKind(a[0]))
		return
	}
	s.ensureJoined()
	s.mu.Lock()
	live := s.joined && !s.ended && !s.abandoned
	s.mu.Unlock()
	if !live {
		return
	}
	args := make([]json.RawMessage, 0, len(a)-1)
	for _, arg := range a[1:] {
		if raw, ok := arg.(json.RawMessage); ok {
			args = append(args, raw) // as it arrived (rawParser): the usual case
			continue
		}
		if arg != nil && reflect.TypeOf(arg).Kind() == reflect.Func {
			continue // the library's ack callback: the server asked for an ack; we never send one
		}
		// Decoded by the library (a binary event): encode it back.
		b, err := json.Marshal(arg)
		if err != nil {
			s.log.Warn("realtime event argument not representable as JSON", "event", wire, "err", err)
			b = []byte("null")
		}
		args = append(args, b)
	}
	var payload json.RawMessage
	if len(args) > 0 {
		payload = args[0]
	}
	kind, name := Normalize(wire, payload)
	ev := Event{Kind: kind, Name: name, WireName: wire, Payload: payload, Args: args, Received: s.c.cfg.Now()}
	if _, full := s.q.push(ev); full {
		if n := s.c.dropped.Add(1); n == 1 || n%1000 == 0 {
			s.log.Warn("realtime event buffer full: events dropped, consumer must re-prime", "dropped_total", s.c.dropped.Load())
		}
	}
}

// abandon gives up on an attempt that did not join in time and returns the
// phase it was stuck in.
func (s *session) abandon() string {
	s.mu.Lock()
	if s.abandoned {
		p := s.phase
		s.mu.Unlock()
		return p
	}
	s.abandoned = true
	phase, inDial, joined := s.phase, s.inDial, s.joined
	if inDial {
		s.counted = true
		s.c.stuck.Add(1)
	}
	s.mu.Unlock()
	s.closeConns() // a dial stuck in the library returns now
	s.stopPump()
	if joined {
		// Joined just as the watchdog fired: nobody will own this session.
		// Closing its connections above may have ended it already (the
		// library reports the loss, and end runs): it ends once.
		s.mu.Lock()
		if !s.ended {
			s.ended = true
			s.reason, s.detail = outage.ReasonDisconnect, "abandoned at connect timeout"
			close(s.done)
		}
		s.mu.Unlock()
	}
	if !inDial {
		go s.teardownBounded()
	}
	return phase
}

func (s *session) stopPump() { s.stopOnce.Do(func() { close(s.stop) }) }

func (s *session) teardownBounded() {
	s.c.bounded(context.Background(), s.c.cfg.TeardownTimeout, "teardown", s.teardownLib)
}

// teardownLib closes the socket, the manager and the transport underneath.
// The socket's Disconnect alone leaves the WebSocket open when the engine
// still has packets buffered (it waits for a drain that may never come), so
// the transport is closed directly as well. DoClose is idempotent in the
// library (closing a closed queue and socket again is harmless). Last, every
// library queue of the session is stopped: the manager's is never stopped
// by the library, and the engine's is not when its close waits for a drain.
func (s *session) teardownLib() {
	s.tearOnce.Do(func() {
		s.libMu.Lock()
		defer s.libMu.Unlock()
		s.mu.Lock()
		mgr, sock := s.mgr, s.sock
		s.mu.Unlock()
		if sock != nil {
			sock.Disconnect()
		}
		if mgr != nil {
			if eng := mgr.Engine(); eng != nil {
				eng.Close()
				if tr := eng.Transport(); tr != nil {
					tr.Close()
					// After a remote close the transport is already marked
					// closed, so Close skips DoClose and the transport's
					// write-queue goroutine (and possibly its socket) stay.
					tr.DoClose()
				}
			}
		}
		s.queues.stop()
		s.closeConns() // whatever the library left open
	})
}

// NamespaceSID implements Session.
func (s *session) NamespaceSID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nsSID
}

// EngineSID implements Session.
func (s *session) EngineSID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.engSID
}

// Connected implements Session. It reads only the library's atomic state.
func (s *session) Connected() bool {
	s.mu.Lock()
	ended, sock, mgr := s.ended, s.sock, s.mgr
	s.mu.Unlock()
	if ended || sock == nil || mgr == nil || !sock.Connected() {
		return false
	}
	eng := mgr.Engine()
	return eng != nil && eng.ReadyState() == "open"
}

// Emit implements Session.
func (s *session) Emit(event string, args ...any) error {
	s.mu.Lock()
	ended := s.ended || s.closing
	s.mu.Unlock()
	if ended {
		return ErrSessionEnded
	}
	s.libMu.Lock()
	defer s.libMu.Unlock()
	if err := s.sock.Emit(event, args...); err != nil {
		return fmt.Errorf("realtime emit %q: %w", event, err)
	}
	return nil
}

// Events implements Session.
func (s *session) Events() <-chan Event { return s.events }

// Done implements Session.
func (s *session) Done() <-chan struct{} { return s.done }

// Reason implements Session.
func (s *session) Reason() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason, s.detail
}

// Disconnect implements Session.
func (s *session) Disconnect(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	ok := s.c.bounded(ctx, s.c.cfg.TeardownTimeout, "disconnect", s.teardownLib)
	// The library reports "io client disconnect" only while it still thinks
	// it is connected; make sure the session ends either way.
	s.end(Classify(libClientDisconnect, outage.ReasonDisconnect), libClientDisconnect)
	s.stopPump()
	if !ok {
		return fmt.Errorf("realtime disconnect: teardown still running after %s; abandoned", s.c.cfg.TeardownTimeout)
	}
	return nil
}

func argAt(a []any, i int) any {
	if i < len(a) {
		return a[i]
	}
	return nil
}

func argString(a []any, i int) string {
	s, _ := argAt(a, i).(string)
	return s
}

func argError(a []any, i int) error {
	switch v := argAt(a, i).(type) {
	case error:
		return v
	case string:
		return errors.New(v)
	case nil:
		return nil
	default:
		return fmt.Errorf("%v", v)
	}
}

// jsonKind names the JSON kind of a decoded value (string, number, bool,
// null, array, object), for a log line about a value that has the wrong one.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "bool"
	case float64, float32, int, int64, int32, uint, uint64, uint32, json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "other"
}
