package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	server "github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// goServer is the zishang520 Go Socket.IO server on loopback, with hooks the
// tests use to misbehave: a namespace middleware that can hold the join, and
// a listener that tracks raw TCP connections so they can be dropped without
// a close frame.
type goServer struct {
	t     *testing.T
	srv   *server.Server
	http  *httptest.Server
	ln    *trackingListener
	URL   string
	token string

	mu       sync.Mutex
	sockets  []*server.Socket
	headers  []http.Header
	received []string     // "event json-args" the server got from clients
	others   atomic.Int64 // requests outside /socket.io/ (link probes)
	holdJoin bool         // namespace middleware never calls next
	reject   string       // namespace middleware rejects with this message (no data)
	held     chan struct{}
}

type goServerOptions struct {
	pingInterval, pingTimeout time.Duration
}

func newGoServer(t *testing.T, o goServerOptions) *goServer {
	t.Helper()
	g := &goServer{t: t, token: "good-token", held: make(chan struct{}, 16)}
	opts := server.DefaultServerOptions()
	if o.pingInterval > 0 {
		opts.SetPingInterval(o.pingInterval)
	}
	if o.pingTimeout > 0 {
		opts.SetPingTimeout(o.pingTimeout)
	}
	g.srv = server.NewServer(nil, opts)
	ns := g.srv.Of("/ws", nil)
	ns.Use(func(s *server.Socket, next func(*server.ExtendedError)) {
		g.mu.Lock()
		hold, reject := g.holdJoin, g.reject
		g.headers = append(g.headers, s.Handshake().Headers.Header())
		g.mu.Unlock()
		switch {
		case hold:
			g.held <- struct{}{}
		case reject != "":
			next(server.NewExtendedError(reject, nil))
		case s.Handshake().Headers.Header().Get("Authorization") != "Bearer "+g.token:
			next(server.NewExtendedError("not authorized", nil))
		default:
			next(nil)
		}
	})
	_ = ns.On("connection", func(a ...any) {
		s := a[0].(*server.Socket)
		g.mu.Lock()
		g.sockets = append(g.sockets, s)
		g.mu.Unlock()
		s.OnAny(func(args ...any) {
			name, _ := args[0].(string)
			b, _ := json.Marshal(args[1:])
			g.mu.Lock()
			g.received = append(g.received, name+" "+string(b))
			g.mu.Unlock()
		})
	})
	mux := http.NewServeMux()
	mux.Handle("/socket.io/", g.srv.ServeHandler(nil))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		g.others.Add(1) // the link probes (HEAD /)
		w.WriteHeader(http.StatusNotFound)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.ln = &trackingListener{Listener: ln}
	// Registered after the Socket.IO layer's own listener, so it runs once
	// that layer listens for data.
	_ = g.srv.Engine().On("connection", func(a ...any) {
		if ra, ok := a[0].(interface{ RemoteAddress() string }); ok {
			g.ln.announced(ra.RemoteAddress())
		}
	})
	g.http = httptest.NewUnstartedServer(mux)
	g.http.Listener = g.ln
	g.http.Start()
	g.URL = g.http.URL
	t.Cleanup(g.close)
	return g
}

func (g *goServer) close() {
	g.srv.Close(nil)
	g.ln.dropAll()
	g.http.Close()
}

// engineClients is the number of Engine.IO connections the server holds.
func (g *goServer) engineClients() uint64 { return g.srv.Engine().ClientsCount() }

func (g *goServer) setHold(v bool) { g.mu.Lock(); g.holdJoin = v; g.mu.Unlock() }

func (g *goServer) setReject(msg string) { g.mu.Lock(); g.reject = msg; g.mu.Unlock() }

// socket waits for the n-th (1-based) connected server socket.
func (g *goServer) socket(n int) *server.Socket {
	g.t.Helper()
	var s *server.Socket
	waitFor(g.t, "server socket", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.sockets) >= n {
			s = g.sockets[n-1]
			return true
		}
		return false
	})
	return s
}

func (g *goServer) lastHeader() http.Header {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.headers) == 0 {
		return nil
	}
	return g.headers[len(g.headers)-1]
}

func (g *goServer) receivedList() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.received...)
}

// emitRaw writes an already encoded Socket.IO packet, e.g. one with the
// numeric event name 22 the server API cannot produce.
func emitRaw(s *server.Socket, encoded string) {
	s.Client().WriteToEngine([]types.BufferInterface{types.NewStringBufferString(encoded)}, &server.WriteOptions{})
}

// trackingListener remembers accepted connections so a test can drop them
// at the TCP level: no WebSocket close frame, no Engine.IO close packet.
//
// It also works around a race in the Go server: its engine sends the
// Engine.IO OPEN packet and reads from the WebSocket before the Socket.IO
// layer listens for data ("connection" is emitted after OPEN went out), so
// a fast client's namespace CONNECT can be lost and the join never
// acknowledged. Server-side reads after the 101 response therefore wait
// until the engine has announced the connection (or a safety deadline).
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
	byRA  map[string]*gatedConn
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	gc := &gatedConn{Conn: c, gate: make(chan struct{})}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	if l.byRA == nil {
		l.byRA = map[string]*gatedConn{}
	}
	l.byRA[c.RemoteAddr().String()] = gc
	l.mu.Unlock()
	return gc, nil
}

// announced releases reads of the connection from remoteAddr.
func (l *trackingListener) announced(remoteAddr string) {
	l.mu.Lock()
	gc := l.byRA[remoteAddr]
	l.mu.Unlock()
	if gc != nil {
		gc.release()
	}
}

type gatedConn struct {
	net.Conn
	muted    atomic.Bool
	upgraded atomic.Bool
	gate     chan struct{}
	once     sync.Once
}

func (c *gatedConn) release() { c.once.Do(func() { close(c.gate) }) }

func (c *gatedConn) Write(p []byte) (int, error) {
	if c.muted.Load() {
		return len(p), nil
	}
	if bytes.HasPrefix(p, []byte("HTTP/1.1 101")) {
		c.upgraded.Store(true)
	}
	return c.Conn.Write(p)
}

func (c *gatedConn) Close() error {
	if c.muted.Load() {
		return nil // dropAll closes the raw connection at cleanup
	}
	return c.Conn.Close()
}

func (c *gatedConn) Read(p []byte) (int, error) {
	if c.upgraded.Load() {
		select {
		case <-c.gate:
		case <-time.After(5 * time.Second):
			c.release()
		}
	}
	return c.Conn.Read(p)
}

// muteAll makes every connection silent without closing it: writes are
// discarded and closes deferred, like a peer that vanished from the network.
func (l *trackingListener) muteAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, gc := range l.byRA {
		gc.muted.Store(true)
	}
}

func (l *trackingListener) dropAll() int {
	l.mu.Lock()
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, no FIN handshake
		}
		_ = c.Close()
	}
	return len(conns)
}

// stallListener accepts TCP connections and never answers.
type stallListener struct {
	ln         net.Listener
	mu         sync.Mutex
	conns      []net.Conn
	URL        string
	peerClosed atomic.Int64 // connections the client closed
}

func newStallListener(t *testing.T) *stallListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stallListener{ln: ln, URL: "http://" + ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() {
				if _, err := io.Copy(io.Discard, c); err == nil {
					s.peerClosed.Add(1) // EOF: the client closed it
				}
			}()
		}
	}()
	t.Cleanup(s.release)
	return s
}

func (s *stallListener) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// release closes the listener and every stalled connection, which finally
// lets a stuck dial return.
func (s *stallListener) release() {
	_ = s.ln.Close()
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nextEvent reads one event or fails the test.
func nextEvent(t *testing.T, s Session) Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatal("events channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return Event{}
}

// eventOf reads events until one of kind k arrives; it fails on a
// Disconnect when k is not Disconnect.
func eventOf(t *testing.T, s Session, k cloudapi.EventKind) Event {
	t.Helper()
	for {
		ev := nextEvent(t, s)
		if ev.Kind == k {
			return ev
		}
		if ev.Kind == cloudapi.EventDisconnect {
			t.Fatalf("session ended (%s: %s) while waiting for %s", ev.Reason, ev.Detail, k)
		}
	}
}

// testLogger logs into the test; lines written after the test ended (by
// library goroutines winding down) are discarded.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func newTestClient(t *testing.T, base, token string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		BaseURL: base,
		Header: func(context.Context) (http.Header, error) {
			return HandshakeHeader(token, "https://one.example.test"), nil
		},
		ConnectTimeout:  3 * time.Second,
		TeardownTimeout: 2 * time.Second,
		Logger:          testLogger(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func connect(t *testing.T, c *Client) Session {
	t.Helper()
	s, err := c.Connect(context.Background())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return s
}
