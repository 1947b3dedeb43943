package cloudsim

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/zishang520/socket.io/v3/pkg/queue"

	"github.com/bragerone/bragerone_exporter/internal/libglue"
)

// releaseSessions is how many sessions each way of ending one is repeated:
// enough that a leak of one goroutine or descriptor per session stands far
// above the slack.
const releaseSessions = 25

// Slack of the resource check: goroutines and descriptors that may come and
// go on their own (timers of the library's ping loop, the test's HTTP
// client).
const (
	releaseGoroutineSlack = 8
	releaseFDSlack        = 4
)

type resources struct{ goroutines, fds int }

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting open descriptors needs /proc: %v", err)
	}
	return len(entries)
}

func measure(t *testing.T) resources {
	t.Helper()
	return resources{runtime.NumGoroutine(), openFDs(t)}
}

// waitReleased waits until goroutines and open descriptors are back within
// the slack of base, and fails with what it saw (and the goroutines still
// running) when they are not within the deadline.
func waitReleased(t *testing.T, what string, base resources) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := measure(t)
		if now.goroutines <= base.goroutines+releaseGoroutineSlack && now.fds <= base.fds+releaseFDSlack {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: after %d sessions, %d goroutines and %d open descriptors; before them %d and %d (slack %d and %d)\n%s",
				what, releaseSessions, now.goroutines, now.fds, base.goroutines, base.fds,
				releaseGoroutineSlack, releaseFDSlack, goroutinesByStack())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goroutinesByStack counts the live goroutines by their innermost frames.
func goroutinesByStack() string {
	var buf strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	counts := map[string]int{}
	for _, g := range strings.Split(buf.String(), "\n\n") {
		lines := strings.Split(strings.TrimSpace(g), "\n")
		var frames []string
		for i := 1; i < len(lines) && len(frames) < 6; i += 2 {
			f := lines[i]
			if j := strings.LastIndex(f, "("); j > 0 {
				f = f[:j]
			}
			frames = append(frames, f)
		}
		counts[strings.Join(frames, " < ")]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%5d %s", n, k))
	}
	slices.Sort(out)
	slices.Reverse(out)
	return strings.Join(out, "\n")
}

// endsBy reads frames until the server ends the connection (an error) or
// sends a WebSocket close frame, then closes the client's end.
func (w *rawWS) endsBy() {
	w.t.Helper()
	_ = w.nc.SetDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := w.read()
		if err != nil || f.opcode == 8 {
			break
		}
	}
	_ = w.nc.Close()
}

// leave ends a session from the client side: a Socket.IO DISCONNECT and a
// WebSocket close frame (code 1000), as a client library does, then the
// TCP connection closes.
func (w *rawWS) leave() {
	w.t.Helper()
	w.send("41/ws,")
	// Masked close frame, zero mask key, payload 1000 (normal closure).
	if _, err := w.nc.Write([]byte{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xE8}); err != nil {
		w.t.Fatal(err)
	}
	w.endsBy()
}

// TestEndedSessionsReleaseConnectionsAndGoroutines connects and ends many
// realtime sessions every way a session ends (the client leaves cleanly,
// the client drops its connection, close_transport, abort_transport,
// stall_transport once cleared, a namespace CONNECT left unanswered until
// the connect timeout) and checks that the cloud gives back every
// connection and goroutine it held for them: each reconnect of a
// long-running simulator must not cost a descriptor or a goroutine.
func TestEndedSessionsReleaseConnectionsAndGoroutines(t *testing.T) {
	// No keep-alive: the test's own HTTP connections are gone before the
	// baseline is taken.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var c *Cloud // the cloud of the current way to end, which the ends below use
	var tok string

	ends := []struct {
		name string
		// connectTimeout is the cloud's; a short one closes the sessions
		// whose CONNECT is left unanswered, and would close the others too
		// if the test were held up between the OPEN and its CONNECT.
		connectTimeout time.Duration
		end            func(w *rawWS)
	}{
		{"client leaves cleanly", 0, func(w *rawWS) { w.join(); w.leave() }},
		{"client drops the connection", 0, func(w *rawWS) {
			sid := w.join()
			_ = w.nc.Close()
			eventually(t, "the cloud to see "+sid+" gone", func() bool { s, _ := sessionBySID(c, sid); return !s.Connected })
		}},
		{"close_transport", 0, func(w *rawWS) {
			w.join()
			c.Inject(Fault{Kind: FaultCloseTransport})
			w.endsBy()
		}},
		{"abort_transport", 0, func(w *rawWS) {
			w.join()
			c.Inject(Fault{Kind: FaultAbortTransport})
			w.endsBy()
		}},
		{"stall_transport, then cleared", 0, func(w *rawWS) {
			w.join()
			id := c.Inject(Fault{Kind: FaultStallTransport})
			c.Clear(id)
			w.endsBy()
		}},
		{"no_namespace_ack", 200 * time.Millisecond, func(w *rawWS) {
			c.Inject(Fault{Kind: FaultNoNamespaceAck, Count: 1})
			if open := w.text(); !strings.HasPrefix(open, "0{") {
				t.Fatalf("OPEN = %q", open)
			}
			w.send("40/ws,")
			w.endsBy() // the connect timeout closes the Engine.IO session
		}},
	}
	for _, e := range ends {
		c = startCloud(t, Options{ConnectTimeout: e.connectTimeout})
		r := callWith(t, hc, c.URL(), "POST", "/v1/auth/user", "", map[string]string{"email": DefaultEmail, "password": DefaultPassword})
		tok, _ = r.json(t)["accessToken"].(string)
		if r.status != 200 || tok == "" {
			t.Fatalf("login = %d %s", r.status, r.body)
		}
		base := measure(t)
		for range releaseSessions {
			e.end(rawDial(t, c, tok))
		}
		if len(c.Faults()) != 0 {
			t.Fatalf("%s: faults left unspent: %v", e.name, c.Faults())
		}
		eventually(t, e.name+": every session to end", func() bool {
			for _, s := range c.Sessions() {
				if s.Connected {
					return false
				}
			}
			return true
		})
		waitReleased(t, e.name, base)
		c.Close()
	}
}

// TestEndedSessionsQueuesAreCollected checks that the task queue of each
// ended session's socket and the write queue of its transport are
// collected: the library's queues carry a finalizer that keeps them in the
// heap forever unless the cloud clears it.
func TestEndedSessionsQueuesAreCollected(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	var queues []weak.Pointer[queue.Queue]
	for i := range releaseSessions {
		w := rawDial(t, c, tok)
		sid := w.join()
		c.mu.Lock()
		c.syncSessionsLocked()
		sock := c.sessions[sid].sock
		c.mu.Unlock()
		tq, wq := libglue.QueueAt(sock, "taskQueue"), libglue.QueueAt(sock.Conn().Transport(), "writeQueue")
		if tq == nil || wq == nil {
			t.Fatalf("the Socket.IO server library no longer holds its queues where v3.0.0 did (task queue %p, write queue %p)", tq, wq)
		}
		queues = append(queues, weak.Make(tq), weak.Make(wq))
		if i%2 == 0 {
			w.leave()
		} else {
			_ = w.nc.Close()
		}
	}
	eventually(t, "every session to end", func() bool {
		for _, s := range c.Sessions() {
			if s.Connected {
				return false
			}
		}
		return true
	})
	// A collected queue's weak pointer reads nil; the queues go with their
	// session's last reference (the library lets go of an ended session at
	// its own pace, hence the wait; a leak keeps them forever, so a long
	// deadline costs a loaded machine nothing and a passing run no time).
	left := 0
	deadline := time.Now().Add(30 * time.Second)
	for {
		runtime.GC()
		left = 0
		for _, q := range queues {
			if q.Value() != nil {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d queues of %d ended sessions are still in the heap", left, len(queues), releaseSessions)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
