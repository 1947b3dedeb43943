package cloudsim

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zishang520/socket.io/v3/pkg/utils"

	"github.com/bragerone/bragerone_exporter/internal/libglue"
)

// libTimerFrame is the function a goroutine of the library's timer runs.
const libTimerFrame = "zishang520/socket.io/v3/pkg/utils.SetTimeout.func1("

// timerGoroutines counts the goroutines of library timers: those waiting
// (parked in their select) and the others (not yet started or running).
func timerGoroutines() (waiting, other int) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, libTimerFrame) {
			continue
		}
		if header, _, _ := strings.Cut(g, "\n"); strings.Contains(header, "[select") {
			waiting++
		} else {
			other++
		}
	}
	return waiting, other
}

// closeAtOpen makes every Engine.IO session of c close the moment it has
// opened: its transport reports the connection gone, as a WebSocket
// transport does when its read fails, from inside the engine's
// "connection" event. The library has then just set the session's connect
// and ping-interval timers on the same goroutine, which did not stop in
// between; with one processor, neither timer's goroutine has started when
// the close clears them. That is the leak under load, made certain.
func closeAtOpen(c *Cloud) {
	eng := c.io.Engine()
	_ = eng.On("connection", func(args ...any) {
		if conn, ok := elemOf(eng.Clients(), args[0]); ok {
			conn.Transport().OnClose()
		}
	})
}

// dialClosedAtOpen opens n realtime sessions that the cloud closes at once
// (see closeAtOpen), with one processor, and waits for each to end.
func dialClosedAtOpen(t *testing.T, c *Cloud, tok string, n int) {
	t.Helper()
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for range n {
		rawDial(t, c, tok).endsBy()
	}
}

// waitTimersBack waits until the library's timer goroutines are back to
// base, and fails with what it saw when they are not within the deadline.
func waitTimersBack(t *testing.T, what string, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		waiting, other := timerGoroutines()
		if waiting+other <= base {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d library timer goroutines waiting and %d others, %d before\n%s",
				what, waiting, other, base, goroutinesByStack())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestClearedServerTimersAreReleased checks that the goroutines of the
// library timers a session clears as it closes end with the session. The
// sessions close the moment they open (closeAtOpen), with one processor, so
// the library leaves the goroutines of the session's connect and
// ping-interval timers waiting on stopped timers: first shown with the
// release held back, then the same sessions with it.
func TestClearedServerTimersAreReleased(t *testing.T) {
	const sessions = 20
	// The released ping-interval timer of a closed session sets one last
	// ping-timeout timer, which fires after PingTimeout and ends.
	c := startCloud(t, Options{PingTimeout: 100 * time.Millisecond})
	tok := login(t, c)
	closeAtOpen(c)
	allClosed := func() bool { return c.io.Engine().ClientsCount() == 0 }
	waiting, other := timerGoroutines()
	base := waiting + other

	var (
		mu   sync.Mutex
		held []*utils.Timer
	)
	hold := func(ts []*utils.Timer) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, ts...)
	}
	c.holdTimers.Store(&hold)
	dialClosedAtOpen(t, c, tok, sessions)
	eventually(t, "the sessions to close", allClosed)
	eventually(t, "every timer goroutine to wait or end", func() bool { _, other := timerGoroutines(); return other == 0 })
	if waiting, _ := timerGoroutines(); waiting-base < sessions {
		t.Fatalf("%d sessions closed at open left %d timer goroutines waiting: the library no longer leaves them as v3.0.0 does", sessions, waiting-base)
	}
	found := 0
	mu.Lock()
	closed := held
	mu.Unlock()
	for _, tm := range closed {
		if tm == nil {
			continue // no ping sent, no ping-timeout timer
		}
		if !libglue.ReleaseTimer(tm) {
			t.Fatal("the library's timer no longer holds its time.Timer and stop channel where v3.0.0 did")
		}
		found++
	}
	if found != 2*sessions {
		t.Fatalf("found %d connect and ping-interval timers for %d sessions; the library keeps them elsewhere than v3.0.0", found, sessions)
	}
	waitTimersBack(t, "timers released after the sessions closed", base)

	c.holdTimers.Store(nil)
	dialClosedAtOpen(t, c, tok, sessions)
	eventually(t, "the sessions to close", allClosed)
	waitTimersBack(t, "timers of sessions closed at open", base)
}
