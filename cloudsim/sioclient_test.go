package cloudsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	sioc "github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/types"
)

// recvEvent is one event the test client received.
type recvEvent struct {
	name    string // string names as is; numeric names as their number
	numeric bool
	payload map[string]any
}

// testClient is a Socket.IO client on namespace /ws, driven the way the
// library's known defects require: websocket only, no reconnection, and
// every connect under a watchdog (the dial has no handshake timeout).
type testClient struct {
	t       *testing.T
	mgr     *sioc.Manager
	sock    *sioc.Socket
	events  chan recvEvent
	connect chan string // namespace SID
	errs    chan string
	discs   chan string

	mu  sync.Mutex
	sid string
}

func clientOptions(tok string) *sioc.Options {
	opts := sioc.DefaultOptions()
	opts.SetPath("/socket.io")
	opts.SetTransports(types.NewSet(sioc.WebSocket))
	h := http.Header{"Origin": {"https://one.brager.pl"}, "Referer": {"https://one.brager.pl/"}}
	if tok != "" {
		h.Set("Authorization", "Bearer "+tok)
	}
	opts.SetExtraHeaders(h)
	opts.SetReconnection(false)
	opts.SetAutoConnect(false)
	opts.SetTimeout(2 * time.Second)
	return opts
}

// dial starts a connect in its own goroutine and returns at once; the
// caller waits for connect, connect_error or nothing (stall faults).
func dial(t *testing.T, c *Cloud, tok string) *testClient {
	t.Helper()
	tc := &testClient{
		t: t, events: make(chan recvEvent, 256), connect: make(chan string, 4),
		errs: make(chan string, 4), discs: make(chan string, 4),
	}
	ready := make(chan struct{})
	go func() {
		opts := clientOptions(tok)
		mgr := sioc.NewManager(c.URL(), opts)
		s := mgr.Socket("/ws", opts)
		s.On("connect", func(...any) {
			tc.mu.Lock()
			tc.sid = s.Id()
			tc.mu.Unlock()
			tc.connect <- s.Id()
		})
		s.On("connect_error", func(a ...any) { tc.errs <- fmt.Sprint(a...) })
		s.On("disconnect", func(a ...any) {
			if len(a) > 0 {
				tc.discs <- fmt.Sprint(a[0])
			}
		})
		s.OnAny(func(a ...any) {
			if len(a) == 0 {
				return
			}
			ev := recvEvent{}
			switch n := a[0].(type) {
			case string:
				ev.name = n
			case float64:
				ev.name, ev.numeric = fmt.Sprint(n), true
			default:
				ev.name = fmt.Sprintf("%T:%v", n, n)
			}
			if len(a) > 1 {
				ev.payload, _ = a[1].(map[string]any)
			}
			tc.events <- ev
		})
		tc.mu.Lock()
		tc.mgr, tc.sock = mgr, s
		tc.mu.Unlock()
		close(ready)
		// The socket joins only once the manager is open. Socket.Connect
		// on a closed manager dials and then sends the namespace CONNECT
		// both from the manager's "open" event and on seeing the manager
		// open, whichever comes first, and often both: the server answers
		// the second CONNECT by closing the session ("forced close").
		mgr.Open(func(err error) {
			if err != nil {
				tc.errs <- fmt.Sprint(err)
				return
			}
			s.Connect()
		})
	}()
	t.Cleanup(func() {
		select {
		case <-ready:
			tc.mu.Lock()
			s := tc.sock
			tc.mu.Unlock()
			go s.Disconnect() // may block on a half-dead transport; never hold the test on it
		default:
		}
	})
	return tc
}

// connectAttempts bounds retries of a connect lost to the client library:
// its Manager registers its "open" listener only after the synchronous dial,
// so on loopback a few connects in a hundred never send the namespace
// CONNECT and end in connect_error "timeout" (the server saw no packet).
const connectAttempts = 4

// connected dials and waits for the namespace join, retrying connects the
// client library lost.
func connected(t *testing.T, c *Cloud, tok string) *testClient {
	t.Helper()
	for i := 0; ; i++ {
		tc := dial(t, c, tok)
		sid, err := tc.outcome()
		if sid != "" {
			return tc
		}
		if err != "timeout" || i == connectAttempts-1 {
			t.Fatalf("connect failed: %q", err)
		}
	}
}

// outcome waits for the namespace join (sid) or a connect_error (err).
func (tc *testClient) outcome() (sid, err string) {
	tc.t.Helper()
	select {
	case sid := <-tc.connect:
		return sid, ""
	case e := <-tc.errs:
		return "", e
	case <-time.After(15 * time.Second):
		tc.t.Fatal("neither connect nor connect_error within 15s")
	}
	return "", ""
}

// refused dials until the handshake gets an answer other than the client
// library's lost-connect timeout, and returns the connect_error.
func refused(t *testing.T, c *Cloud, tok string) string {
	t.Helper()
	for i := 0; i < connectAttempts; i++ {
		sid, err := dial(t, c, tok).outcome()
		if sid != "" {
			t.Fatalf("joined /ws as %s", sid)
		}
		if err != "timeout" {
			return err
		}
	}
	t.Fatal("every attempt timed out")
	return ""
}

func (tc *testClient) SID() string {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.sid
}

// next waits for the next event named name (other events are skipped).
func (tc *testClient) next(name string) recvEvent {
	tc.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-tc.events:
			if ev.name == name {
				return ev
			}
		case <-deadline:
			tc.t.Fatalf("no %q event within 10s", name)
		}
	}
}

// nextAny waits for the next event, whatever its name.
func (tc *testClient) nextAny() recvEvent {
	tc.t.Helper()
	select {
	case ev := <-tc.events:
		return ev
	case <-time.After(10 * time.Second):
		tc.t.Fatal("no event within 10s")
	}
	return recvEvent{}
}

// drainNames returns the names of the events received and not yet read.
func (tc *testClient) drainNames() []string {
	var names []string
	for {
		select {
		case ev := <-tc.events:
			names = append(names, ev.name)
		default:
			return names
		}
	}
}

// bind posts modules/connect for sid and checks the 200 {} answer.
func bind(t *testing.T, c *Cloud, tok, key, sid string, modules []string) {
	t.Helper()
	r := call(t, c, "POST", "/v1/modules/connect", tok, map[string]any{key: sid, "modules": modules})
	if r.status != 200 || string(r.body) != "{}" {
		t.Fatalf("modules/connect = %d %s", r.status, r.body)
	}
}

func sessionBySID(c *Cloud, sid string) (Session, bool) {
	for _, s := range c.Sessions() {
		if s.SID == sid {
			return s, true
		}
	}
	return Session{}, false
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
