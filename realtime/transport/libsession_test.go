package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	server "github.com/zishang520/socket.io/servers/socket/v3"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/outage"
)

func TestConnectHeadersSIDsAndEvents(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	c := newTestClient(t, g.URL, g.token, nil)
	s := connect(t, c)

	h := g.lastHeader()
	if got := h.Get("Authorization"); got != "Bearer good-token" {
		t.Errorf("server saw Authorization %q", got)
	}
	if got := h.Get("Origin"); got != "https://one.example.test" {
		t.Errorf("server saw Origin %q", got)
	}
	if got := h.Get("Referer"); got != "https://one.example.test/" {
		t.Errorf("server saw Referer %q", got)
	}
	if got := h.Get("X-Appversion"); got != AppVersion {
		t.Errorf("server saw x-appversion %q", got)
	}
	if got := h.Get("Accept-Language"); got != AcceptLanguage {
		t.Errorf("server saw Accept-Language %q", got)
	}

	srvSock := g.socket(1)
	if s.NamespaceSID() == "" || s.NamespaceSID() != string(srvSock.Id()) {
		t.Errorf("namespace SID %q, server socket id %q", s.NamespaceSID(), srvSock.Id())
	}
	if s.EngineSID() == "" || s.EngineSID() != srvSock.Conn().Id() {
		t.Errorf("engine SID %q, server engine id %q", s.EngineSID(), srvSock.Conn().Id())
	}
	if s.EngineSID() == s.NamespaceSID() {
		t.Errorf("engine and namespace SIDs are equal: %q", s.EngineSID())
	}
	if !s.Connected() {
		t.Error("Connected() = false on a fresh session")
	}

	if ev := nextEvent(t, s); ev.Kind != cloudapi.EventConnect {
		t.Fatalf("first event %v, want connect", ev.Kind)
	}

	_ = srvSock.Emit("app:modules:parameters:change", map[string]any{"M1": map[string]any{"P4": map[string]any{"v1": map[string]any{"value": 21.5}}}})
	emitRaw(srvSock, `2/ws,[22,{"devid":"M1"}]`)
	_ = srvSock.Emit("app:module:connection:status:changed", map[string]any{"M1": map[string]any{"connectedAt": 1700000100}})
	emitRaw(srvSock, `2/ws,[61,{"task":1}]`)
	_ = srvSock.Emit("app:modules:alarms:quantity:change", map[string]any{"alarmsQuantity": map[string]any{"M1": 2}})
	_ = srvSock.Emit("snapshot", map[string]any{"M1": map[string]any{}})
	_ = srvSock.Emit("something:else", "x", 2)

	want := []struct {
		kind    cloudapi.EventKind
		name    string
		wire    string
		payload string
		nargs   int
	}{
		{cloudapi.EventParamsChange, "app:modules:parameters:change", "app:modules:parameters:change", `{"M1":{"P4":{"v1":{"value":21.5}}}}`, 1},
		{cloudapi.EventMemoryUpdated, "22", "22", `{"devid":"M1"}`, 1},
		{cloudapi.EventConnectionStatus, cloudapi.WireConnectionStatus, cloudapi.WireConnectionStatus, `{"M1":{"connectedAt":1700000100}}`, 1},
		{cloudapi.EventOther, cloudapi.WireTaskCreated, "61", `{"task":1}`, 1},
		{cloudapi.EventAlarmsQuantity, cloudapi.WireAlarmsQuantity, cloudapi.WireAlarmsQuantity, `{"alarmsQuantity":{"M1":2}}`, 1},
		{cloudapi.EventSnapshot, "snapshot", "snapshot", `{"M1":{}}`, 1},
		{cloudapi.EventOther, "something:else", "something:else", `"x"`, 2},
	}
	for i, w := range want {
		ev := nextEvent(t, s)
		if ev.Kind != w.kind || ev.Name != w.name || ev.WireName != w.wire || string(ev.Payload) != w.payload || len(ev.Args) != w.nargs {
			t.Errorf("event %d = {%v %q %q %s %d args}, want {%v %q %q %s %d}", i, ev.Kind, ev.Name, ev.WireName, ev.Payload, len(ev.Args), w.kind, w.name, w.wire, w.payload, w.nargs)
		}
		if ev.Received.IsZero() {
			t.Errorf("event %d has no Received time", i)
		}
	}
	// Client → server.
	if err := s.Emit("app:modules:parameters:listen", map[string]any{"modules": []string{"M1"}, "group_id": 7}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "server to receive the listen emit", func() bool {
		for _, r := range g.receivedList() {
			if r == `app:modules:parameters:listen [{"group_id":7,"modules":["M1"]}]` {
				return true
			}
		}
		return false
	})

	if err := s.Disconnect(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := drainToEnd(t, s)
	_ = ev
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Disconnect")
	}
	if err := s.Emit("x"); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("Emit after Disconnect = %v, want ErrSessionEnded", err)
	}
	if s.Connected() {
		t.Error("Connected() after Disconnect")
	}
}

// drainToEnd reads until the channel closes and returns the Disconnect event
// if one was delivered.
func drainToEnd(t *testing.T, s Session) *Event {
	t.Helper()
	_, last := drainKinds(t, s)
	return last
}

// drainKinds reads until the channel closes and returns the kinds read and
// the Disconnect event if one was delivered.
func drainKinds(t *testing.T, s Session) ([]cloudapi.EventKind, *Event) {
	t.Helper()
	var kinds []cloudapi.EventKind
	var last *Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return kinds, last
			}
			if last != nil {
				t.Fatalf("event %v after the Disconnect event", ev.Kind)
			}
			kinds = append(kinds, ev.Kind)
			if ev.Kind == cloudapi.EventDisconnect {
				e := ev
				last = &e
			}
		case <-timeout:
			t.Fatal("events channel not closed within 10s")
		}
	}
}

// serverDisconnectCases end a session from the server in the ways the cloud
// can; each must end the session exactly once with the classified reason.
func TestServerSideDisconnectReasons(t *testing.T) {
	cases := []struct {
		name       string
		act        func(g *goServer, srvSock serverSocket)
		wantReason []string // any of
		wantDetail []string // any of (prefix)
		wantFirst  cloudapi.EventKind
	}{
		{
			name:       "namespace disconnect",
			act:        func(_ *goServer, s serverSocket) { s.Disconnect(false) },
			wantReason: []string{outage.ReasonDisconnect},
			wantDetail: []string{"io server disconnect"},
		},
		{
			// The DISCONNECT packet and the transport close race inside the
			// library; both raw reasons classify to the same token.
			name:       "disconnect and close the connection",
			act:        func(_ *goServer, s serverSocket) { s.Disconnect(true) },
			wantReason: []string{outage.ReasonDisconnect},
			wantDetail: []string{"io server disconnect", "transport close"},
		},
		{
			name:       "TCP abort without a close frame",
			act:        func(g *goServer, _ serverSocket) { g.ln.dropAll() },
			wantReason: []string{outage.ReasonEIOClose},
			wantDetail: []string{"transport error"},
		},
		{
			name:       "connect_error after the join",
			act:        func(_ *goServer, s serverSocket) { emitRaw(s.(*serverSock).s, `4/ws,{"message":"HTTP 503 upstream"}`) },
			wantReason: []string{outage.ReasonHandshake503},
			wantDetail: []string{"connect_error: HTTP 503 upstream"},
			wantFirst:  cloudapi.EventConnectError,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGoServer(t, goServerOptions{})
			c := newTestClient(t, g.URL, g.token, nil)
			s := connect(t, c)
			eventOf(t, s, cloudapi.EventConnect)
			tc.act(g, &serverSock{g.socket(1)})
			kinds, ev := drainKinds(t, s)
			if ev == nil {
				t.Fatal("no Disconnect event before the channel closed")
			}
			var want []cloudapi.EventKind
			if tc.wantFirst != cloudapi.EventOther {
				want = append(want, tc.wantFirst)
			}
			if want = append(want, cloudapi.EventDisconnect); !slices.Equal(kinds, want) {
				t.Errorf("events after the act %v, want %v", kinds, want)
			}
			if !oneOf(ev.Reason, tc.wantReason, false) || !oneOf(ev.Detail, tc.wantDetail, true) {
				t.Errorf("Disconnect reason %q detail %q, want reason in %v, detail starting with one of %v", ev.Reason, ev.Detail, tc.wantReason, tc.wantDetail)
			}
			if tok, detail := s.Reason(); tok != ev.Reason || detail != ev.Detail {
				t.Errorf("Reason() = %q, %q; event said %q, %q", tok, detail, ev.Reason, ev.Detail)
			}
			select {
			case <-s.Done():
			default:
				t.Error("Done not closed after the Disconnect event")
			}
			if s.Connected() {
				t.Error("Connected() after the session ended")
			}
			if err := s.Emit("late", 1); !errors.Is(err, ErrSessionEnded) {
				t.Errorf("Emit after end = %v", err)
			}
			// Disconnect after the end is harmless and changes nothing.
			if err := s.Disconnect(context.Background()); err != nil {
				t.Errorf("Disconnect after end: %v", err)
			}
			if tok, _ := s.Reason(); tok != ev.Reason {
				t.Errorf("reason changed to %q by a later Disconnect", tok)
			}
			waitFor(t, "abandoned count back to 0", func() bool { return c.Abandoned() == 0 })
		})
	}
}

type serverSocket interface{ Disconnect(bool) }

type serverSock struct{ s *server.Socket }

func (s *serverSock) Disconnect(close bool) { s.s.Disconnect(close) }

func oneOf(got string, want []string, prefix bool) bool {
	for _, w := range want {
		if got == w || (prefix && strings.HasPrefix(got, w)) {
			return true
		}
	}
	return false
}

// The library can report a lost session several times ("close" and
// "disconnect", or "disconnect" twice, or a connect_error on top): the
// session ends once, with the first reason.
func TestDuplicateDisconnectsCollapse(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	c := newTestClient(t, g.URL, g.token, nil)
	s := connect(t, c)
	eventOf(t, s, cloudapi.EventConnect)
	impl := s.(*session)

	// What the library does on a transport error, then once more.
	impl.onLost("transport error", errors.New("websocket error: unexpected EOF"))
	impl.onLost("transport close", nil)
	impl.onConnectError(errors.New("connection error"))
	impl.end(outage.ReasonHardReset, "again")

	ev := drainToEnd(t, s)
	if ev == nil || ev.Reason != outage.ReasonEIOClose || !strings.HasPrefix(ev.Detail, "transport error") {
		t.Fatalf("Disconnect event = %+v, want one eio_close from the first report", ev)
	}
	n := 0
	for range s.Events() {
		n++
	}
	if n != 0 {
		t.Errorf("%d events after the channel closed", n)
	}
}

// A session whose transport goes silent (no pings, no close) ends by the
// library's ping timeout, classified server_stop.
func TestPingTimeoutEndsSession(t *testing.T) {
	g := newGoServer(t, goServerOptions{pingInterval: 150 * time.Millisecond, pingTimeout: 150 * time.Millisecond})
	c := newTestClient(t, g.URL, g.token, nil)
	s := connect(t, c)
	eventOf(t, s, cloudapi.EventConnect)
	g.ln.muteAll()
	ev := drainToEnd(t, s)
	if ev == nil || ev.Reason != outage.ReasonServerStop || ev.Detail != "ping timeout" {
		t.Fatalf("Disconnect event = %+v, want server_stop / ping timeout", ev)
	}
}

// A server that accepts TCP and never answers the WebSocket upgrade: the
// library's dial has no timeout of its own. Connect gives up at the timeout
// and closes the attempt's connection, which ends the dial: nothing stays
// stuck in the library, without the peer ever giving up.
func TestWatchdogStalledHandshake(t *testing.T) {
	st := newStallListener(t)
	c := newTestClient(t, st.URL, "tok", func(c *Config) { c.ConnectTimeout = 300 * time.Millisecond })
	_, err := c.Connect(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Phase != PhaseDial || !errors.Is(err, ErrTimeout) || ce.Reason != outage.ReasonConnectError {
		t.Fatalf("Connect = %v, want a dial-phase timeout ConnectError", err)
	}
	if ce.ConnectErrorEvent {
		t.Error("a dial that timed out is marked as a connect_error event")
	}
	if st.accepted() != 1 {
		t.Errorf("stall listener accepted %d connections, want 1", st.accepted())
	}
	waitFor(t, "the abandoned dial to return", func() bool { return c.Abandoned() == 0 })
	waitFor(t, "the abandoned dial's connection closed", func() bool { return st.peerClosed.Load() == 1 })
}

// Should the library's dialer not be reachable (another library layout),
// a stuck dial stays stuck until the peer gives up: it is counted as
// abandoned meanwhile, and released when the dial finally returns.
func TestWatchdogStalledHandshakeUninterruptible(t *testing.T) {
	st := newStallListener(t)
	c := newTestClient(t, st.URL, "tok", func(c *Config) { c.ConnectTimeout = 300 * time.Millisecond })
	c.hookDial = false
	if _, err := c.Connect(context.Background()); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Connect = %v, want a timeout", err)
	}
	if got := c.Abandoned(); got != 1 {
		t.Fatalf("Abandoned() = %d, want 1 while the dial is stuck", got)
	}
	st.release() // the peer gives up: the stuck dial returns
	waitFor(t, "abandoned dial to be released", func() bool { return c.Abandoned() == 0 })
}

// The caller's ctx ends the wait as well as the timeout does.
func TestConnectHonoursContext(t *testing.T) {
	st := newStallListener(t)
	c := newTestClient(t, st.URL, "tok", func(c *Config) { c.ConnectTimeout = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		waitFor(t, "the dial to reach the listener", func() bool { return st.accepted() == 1 })
		cancel()
	}()
	_, err := c.Connect(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect = %v, want context.Canceled", err)
	}
	st.release()
	waitFor(t, "abandoned dial to be released", func() bool { return c.Abandoned() == 0 })
}

// Abandoned attempts are bounded: at the bound Connect fails fast without
// dialling. (Dials stay stuck here as they would if the library's dialer
// could not be reached.)
func TestAbandonedAttemptBound(t *testing.T) {
	st := newStallListener(t)
	c := newTestClient(t, st.URL, "tok", func(c *Config) {
		c.ConnectTimeout = 200 * time.Millisecond
		c.MaxAbandoned = 2
	})
	c.hookDial = false
	for i := 0; i < 2; i++ {
		if _, err := c.Connect(context.Background()); !errors.Is(err, ErrTimeout) {
			t.Fatalf("attempt %d: %v, want timeout", i, err)
		}
	}
	if c.Abandoned() != 2 {
		t.Fatalf("Abandoned() = %d, want 2", c.Abandoned())
	}
	_, err := c.Connect(context.Background())
	var ce *ConnectError
	if !errors.Is(err, ErrTooManyAbandoned) || !errors.As(err, &ce) || ce.Phase != PhaseLimit {
		t.Fatalf("third Connect = %v, want ErrTooManyAbandoned", err)
	}
	if st.accepted() != 2 {
		t.Errorf("listener accepted %d connections, want 2 (no dial at the bound)", st.accepted())
	}
	st.release()
	waitFor(t, "abandoned dials to be released", func() bool { return c.Abandoned() == 0 })
	// Below the bound again: Connect dials (and now finds the port closed).
	_, err = c.Connect(context.Background())
	if errors.Is(err, ErrTooManyAbandoned) || !errors.As(err, &ce) || ce.Phase != PhaseDial {
		t.Fatalf("Connect after release = %v, want a dial error", err)
	}
}

// A namespace join the server never acknowledges: the attempt is abandoned
// at the timeout and its connection closed (nothing stays counted).
func TestWatchdogNamespaceNeverAcknowledged(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	g.setHold(true)
	c := newTestClient(t, g.URL, g.token, func(c *Config) { c.ConnectTimeout = 500 * time.Millisecond })
	_, err := c.Connect(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Phase != PhaseNamespace || !errors.Is(err, ErrTimeout) {
		t.Fatalf("Connect = %v, want a namespace-phase timeout", err)
	}
	if ce.ConnectErrorEvent {
		t.Error("a join that timed out is marked as a connect_error event")
	}
	if !strings.Contains(err.Error(), "namespace /ws join not acknowledged") {
		t.Errorf("error text %q does not say what hung", err)
	}
	waitFor(t, "the held engine connection to be closed", func() bool { return g.engineClients() == 0 })
	if c.Abandoned() != 0 {
		t.Errorf("Abandoned() = %d, want 0 (a post-dial attempt is fully torn down)", c.Abandoned())
	}
	// The next attempt is clean.
	g.setHold(false)
	s := connect(t, c)
	eventOf(t, s, cloudapi.EventConnect)
}

// A refused port fails at once with the real dial error, not with a timeout
// much later.
func TestRefusedPortFailsWithDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c := newTestClient(t, "http://"+addr, "tok", func(c *Config) { c.ConnectTimeout = 30 * time.Second })
	_, err = c.Connect(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Phase != PhaseDial || errors.Is(err, ErrTimeout) {
		t.Fatalf("Connect = %v, want an immediate dial error", err)
	}
	if !strings.Contains(err.Error(), "connection refused") || ce.Reason != outage.ReasonConnectError {
		t.Errorf("error %q (reason %q) does not carry the refused dial", err, ce.Reason)
	}
}

// A WebSocket upgrade answered with 503 is classified handshake_503.
func TestHandshake503(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("<html><body>503 Service Temporarily Unavailable</body></html>"))
	}))
	defer hs.Close()
	c := newTestClient(t, hs.URL, "tok", func(c *Config) { c.ConnectTimeout = 30 * time.Second })
	_, err := c.Connect(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Phase != PhaseDial || ce.Reason != outage.ReasonHandshake503 {
		t.Fatalf("Connect = %v, want a handshake_503 dial error", err)
	}
	if strings.Contains(err.Error(), "<html") {
		t.Errorf("error carries the HTML body: %q", err)
	}
}

// A namespace CONNECT_ERROR without data keeps its message.
func TestConnectErrorWithoutDataKeepsMessage(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	c := newTestClient(t, g.URL, "wrong-token", func(c *Config) { c.ConnectTimeout = 30 * time.Second })
	_, err := c.Connect(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Phase != PhaseNamespace || ce.Reason != outage.ReasonConnectError || errors.Is(err, ErrTimeout) {
		t.Fatalf("Connect = %v, want a namespace connect_error", err)
	}
	if !strings.Contains(err.Error(), "not authorized") {
		t.Errorf("error %q lost the server's message", err)
	}
	if !ce.ConnectErrorEvent {
		t.Error("a refused join is not marked as the library's connect_error event")
	}
	g.setReject("upstream said 503")
	_, err = c.Connect(context.Background())
	if !errors.As(err, &ce) || ce.Reason != outage.ReasonHandshake503 {
		t.Errorf("Connect = %v, want the rejection classified handshake_503", err)
	}
}

func TestHeaderErrorFailsConnect(t *testing.T) {
	boom := errors.New("no token")
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", Header: func(context.Context) (http.Header, error) { return nil, boom }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Connect(context.Background())
	var ce *ConnectError
	if !errors.Is(err, boom) || !errors.As(err, &ce) || ce.Phase != PhaseHeaders {
		t.Fatalf("Connect = %v, want the header error", err)
	}
}

// Connect calls are serialised: a second caller waits for the first and
// never starts its own attempt meanwhile.
func TestConnectIsSerialised(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	var calls atomic.Int32
	release := make(chan struct{})
	c := newTestClient(t, g.URL, g.token, func(c *Config) {
		c.Header = func(context.Context) (http.Header, error) {
			if calls.Add(1) == 1 {
				<-release
			}
			return HandshakeHeader(g.token, "https://one.example.test"), nil
		}
	})
	first := make(chan error, 1)
	go func() {
		s, err := c.Connect(context.Background())
		if err == nil {
			_ = s.Disconnect(context.Background())
		}
		first <- err
	}()
	waitFor(t, "the first Connect to be inside", func() bool { return calls.Load() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Connect(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("second Connect = %v, want context.Canceled while the first runs", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("second Connect started an attempt while the first was running")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("first Connect: %v", err)
	}
	s := connect(t, c)
	eventOf(t, s, cloudapi.EventConnect)
}

// The event buffer is bounded: a consumer that does not read loses events,
// and a cloudapi.EventOverflow with the count takes their place, in order.
func TestEventOverflowIsSignalled(t *testing.T) {
	const total, buffer = 40, 5
	g := newGoServer(t, goServerOptions{})
	c := newTestClient(t, g.URL, g.token, func(c *Config) { c.EventBuffer = buffer })
	s := connect(t, c)
	srvSock := g.socket(1)
	for i := 1; i <= total; i++ {
		_ = srvSock.Emit("app:modules:parameters:change", map[string]any{"seq": i})
	}
	// Nobody reads: all but the buffered events (and the one the pump holds)
	// must be dropped.
	waitFor(t, "events to be dropped", func() bool { return c.Dropped() >= total-buffer-1 })

	if ev := nextEvent(t, s); ev.Kind != cloudapi.EventConnect {
		t.Fatalf("first event %v", ev.Kind)
	}
	// Every event is delivered or counted by a marker placed where it was
	// lost: each delivered seq is the last one plus the drops reported
	// since, plus one. (An event still in flight when reading starts comes
	// after the marker, rightly: it arrived after the loss.)
	delivered, dropped, last, gap := 0, 0, 0, 0
	for delivered+dropped < total {
		ev := nextEvent(t, s)
		switch ev.Kind {
		case cloudapi.EventOverflow:
			dropped += ev.Dropped
			gap += ev.Dropped
		case cloudapi.EventParamsChange:
			var p struct{ Seq int }
			_ = json.Unmarshal(ev.Payload, &p)
			if p.Seq != last+gap+1 {
				t.Fatalf("seq %d after seq %d and %d dropped: out of order, or a loss reported in the wrong place", p.Seq, last, gap)
			}
			last, gap = p.Seq, 0
			delivered++
		default:
			t.Fatalf("unexpected %v", ev.Kind)
		}
	}
	// The buffer holds the connect event too, and the pump may hold either a
	// parameter event or the connect event: buffer-1 to buffer+1 get through.
	if delivered > buffer+1 || delivered < buffer-1 || int64(dropped) != c.Dropped() {
		t.Errorf("delivered %d, overflow reported %d, client counted %d", delivered, dropped, c.Dropped())
	}
	// After the consumer caught up, events flow again, after the marker.
	_ = srvSock.Emit("app:modules:parameters:change", map[string]any{"seq": total + 1})
	ev := eventOf(t, s, cloudapi.EventParamsChange)
	if !strings.Contains(string(ev.Payload), fmt.Sprint(total+1)) {
		t.Errorf("event after overflow = %s", ev.Payload)
	}
}

// Close ends open sessions and refuses new connects.
func TestCloseEndsSessions(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	c := newTestClient(t, g.URL, g.token, nil)
	s := connect(t, c)
	eventOf(t, s, cloudapi.EventConnect)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("session not ended by Close")
	}
	drainToEnd(t, s)
	if _, err := c.Connect(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Connect after Close = %v", err)
	}
	waitFor(t, "server to see the connection closed", func() bool { return g.engineClients() == 0 })
}

// An event the server wants acknowledged carries the library's ack callback
// as a last argument; it is not part of the payload.
func TestEventWithAckRequestKeepsOnlyData(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	c := newTestClient(t, g.URL, g.token, nil)
	s := connect(t, c)
	eventOf(t, s, cloudapi.EventConnect)
	_ = g.socket(1).Emit("app:modules:parameters:change", map[string]any{"M1": map[string]any{}}, server.Ack(func([]any, error) {}))
	ev := eventOf(t, s, cloudapi.EventParamsChange)
	if len(ev.Args) != 1 || string(ev.Payload) != `{"M1":{}}` {
		t.Fatalf("args = %s", ev.Args)
	}
}

// A session that joined as its connect timed out is ended by whichever of
// the two comes first: the library reporting the loss (end) or the
// watchdog giving the attempt up (abandon). The other finds it ended; the
// session's done channel is closed once, in either order.
func TestAbandonAndEndOfAJoinedSessionCloseOnce(t *testing.T) {
	for _, endFirst := range []bool{true, false} {
		c, err := New(Config{BaseURL: "http://127.0.0.1:9"})
		if err != nil {
			t.Fatal(err)
		}
		s := newSession(c, 1)
		s.joined, s.decided = true, true
		if endFirst {
			s.end(outage.ReasonDisconnect, "transport close")
			s.abandon()
		} else {
			s.abandon()
			s.end(outage.ReasonDisconnect, "transport close")
		}
		select {
		case <-s.done:
		default:
			t.Fatalf("end first %v: the session's done is still open", endFirst)
		}
		s.mu.Lock()
		reason, ended := s.reason, s.ended
		s.mu.Unlock()
		if !ended || reason != outage.ReasonDisconnect {
			t.Errorf("end first %v: ended %v reason %q", endFirst, ended, reason)
		}
	}
}
