package transport

import (
	"context"
	"errors"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"
	"weak"

	server "github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/queue"
	"github.com/zishang520/socket.io/v3/pkg/utils"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/internal/libglue"
)

// sessionsPerEnding is how many sessions each way of ending one is
// repeated.
const sessionsPerEnding = 5

// clientLabel marks every goroutine the client starts, directly or through
// the library: labels are inherited by the goroutines a goroutine starts,
// and the in-process server's goroutines start from its own listener,
// outside the label. The server's own leftovers (the library's server
// keeps a client-ended transport's queue) are not the client's to count.
var clientLabel = pprof.Labels("side", "realtime-client")

// labelledGoroutines counts the live goroutines carrying the label
// side=value and returns their stacks.
func labelledGoroutines(value string) (int, string) {
	var buf strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	n := 0
	var stacks []string
	for _, b := range strings.Split(buf.String(), "\n\n") {
		var head string
		labelled := false
		for _, line := range strings.Split(b, "\n") {
			if head == "" && strings.Contains(line, " @ ") {
				head = line
			}
			if strings.HasPrefix(line, "# labels:") && strings.Contains(line, `"side":"`+value+`"`) {
				labelled = true
			}
		}
		if !labelled || head == "" {
			continue
		}
		count, err := strconv.Atoi(strings.Fields(head)[0])
		if err != nil {
			continue
		}
		n += count
		stacks = append(stacks, b)
	}
	return n, strings.Join(stacks, "\n\n")
}

// waitLabelledGone waits until no goroutine carries side=value.
func waitLabelledGone(t *testing.T, value, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, stacks := labelledGoroutines(value)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s still running:\n%s", n, what, stacks)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clientQueues returns the three library queues of a joined session, found
// where the pinned library version keeps them.
func clientQueues(t *testing.T, s Session) []*queue.Queue {
	t.Helper()
	impl := s.(*session)
	impl.libMu.Lock()
	defer impl.libMu.Unlock()
	eng := impl.mgr.Engine()
	var tr any
	if eng != nil {
		tr = eng.Transport()
	}
	qs := []*queue.Queue{
		libglue.QueueAt(impl.mgr, managerQueuePath...),
		libglue.QueueAt(eng, engineQueuePath...),
		libglue.QueueAt(tr, transportQueuePath...),
	}
	for i, q := range qs {
		if q == nil {
			t.Fatalf("the Socket.IO client library no longer holds its queues where v3.0.0 did (manager, engine, transport: %p %p %p)", qs[0], qs[1], qs[2])
		}
		if i > 0 && q == qs[i-1] {
			t.Fatalf("queue %d found twice", i)
		}
	}
	if n := impl.queues.count(); n != len(qs) {
		t.Errorf("session adopted %d library queues, want %d", n, len(qs))
	}
	if pingTimerAt(eng) == nil {
		t.Fatal("the Socket.IO client library no longer holds the engine's ping-timeout timer where v3.0.0 did")
	}
	return qs
}

// TestEndedSessionsQueuesAreCollected connects and ends many sessions
// every way one ends (the client disconnects; the server leaves the
// namespace, closes the connection, or the connection drops; the namespace
// is refused, never acknowledged, or the dial stalls) and checks that the
// client gives back all it held for them: the library's three queues of
// every joined session (the manager's, the Engine.IO socket's and the
// transport's write queue) are collected, and the goroutines the client
// started are gone (the library's timers included, see libglue.ReleaseTimer). The library's queues carry a finalizer that would keep
// each one in the heap forever, so a long-running exporter would grow by
// three queues per reconnect.
func TestEndedSessionsQueuesAreCollected(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	stall := newStallListener(t)
	var queues []weak.Pointer[queue.Queue]
	// Every client call runs under clientLabel, so every goroutine the
	// client and the library start for it carries the label.
	pprof.Do(context.Background(), clientLabel, func(context.Context) {
		queues = runEndings(t, g, stall)
	})
	if len(queues) != 4*sessionsPerEnding*3 {
		t.Fatalf("%d queues watched, want %d", len(queues), 4*sessionsPerEnding*3)
	}

	// A collected queue's weak pointer reads nil. A queue whose goroutine
	// still runs, or that still has its finalizer, stays.
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		left := 0
		for _, q := range queues {
			if q.Value() != nil {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			n, stacks := labelledGoroutines("realtime-client")
			t.Fatalf("%d of the %d library queues of %d ended sessions are still in the heap; %d client goroutines:\n%s",
				left, len(queues), len(queues)/3, n, stacks)
		}
		time.Sleep(10 * time.Millisecond)
	}

	waitLabelledGone(t, "realtime-client", "goroutines started by the client after every session ended")
}

// runEndings runs every ending sessionsPerEnding times and returns weak
// pointers to the library queues of each joined session.
func runEndings(t *testing.T, g *goServer, stall *stallListener) []weak.Pointer[queue.Queue] {
	t.Helper()
	var queues []weak.Pointer[queue.Queue]
	c := newTestClient(t, g.URL, g.token, nil)
	short := func(cfg *Config) {
		cfg.ConnectTimeout = 300 * time.Millisecond
		cfg.MaxAbandoned = sessionsPerEnding + 1
	}
	cHeld := newTestClient(t, g.URL, g.token, short)
	cStall := newTestClient(t, stall.URL, g.token, short)

	ends := []struct {
		name string
		end  func(s Session)
	}{
		{"client disconnects", func(s Session) {
			if err := s.Disconnect(context.Background()); err != nil {
				t.Errorf("disconnect: %v", err)
			}
		}},
		{"server leaves the namespace", func(s Session) { serverSocketOf(t, g, s).Disconnect(false) }},
		{"server closes the connection", func(s Session) { serverSocketOf(t, g, s).Disconnect(true) }},
		{"connection dropped", func(Session) { g.ln.dropAll() }},
	}
	for _, e := range ends {
		for range sessionsPerEnding {
			s := connect(t, c)
			eventOf(t, s, cloudapi.EventConnect)
			for _, q := range clientQueues(t, s) {
				queues = append(queues, weak.Make(q))
			}
			e.end(s)
			// After Disconnect, undelivered events are discarded.
			if ev := drainToEnd(t, s); ev == nil && e.name != "client disconnects" {
				t.Fatalf("%s: no Disconnect event", e.name)
			}
		}
	}

	g.setReject("not today")
	for range sessionsPerEnding {
		var ce *ConnectError
		if _, err := c.Connect(context.Background()); !errors.As(err, &ce) || !strings.Contains(err.Error(), "not today") {
			t.Fatalf("%s: Connect = %v", "refused namespace", err)
		}
	}
	g.setReject("")

	g.setHold(true)
	for range sessionsPerEnding {
		if _, err := cHeld.Connect(context.Background()); !errors.Is(err, ErrTimeout) {
			t.Fatalf("%s: Connect = %v", "namespace never acknowledged", err)
		}
	}
	g.setHold(false)

	for range sessionsPerEnding {
		if _, err := cStall.Connect(context.Background()); !errors.Is(err, ErrTimeout) {
			t.Fatalf("%s: Connect = %v", "stalled dial", err)
		}
	}
	stall.release() // the stuck dials return and are released
	waitFor(t, "every abandoned library call to return", func() bool {
		return c.Abandoned() == 0 && cHeld.Abandoned() == 0 && cStall.Abandoned() == 0
	})
	return queues
}

// serverSocketOf waits for the server's socket of session s. The server
// announces its sockets from one goroutine per connection, so the order of
// g.sockets is not the order of the sessions.
func serverSocketOf(t *testing.T, g *goServer, s Session) *server.Socket {
	t.Helper()
	var found *server.Socket
	waitFor(t, "the server's socket of "+s.NamespaceSID(), func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, ss := range g.sockets {
			if string(ss.Id()) == s.NamespaceSID() {
				found = ss
				return true
			}
		}
		return false
	})
	return found
}

// TestClearedLibraryTimersAreReleased checks that libglue.ReleaseTimer ends the
// goroutine of a library timer cleared before that goroutine first waited,
// the goroutine the library would otherwise leave waiting forever.
func TestClearedLibraryTimersAreReleased(t *testing.T) {
	const n = 20
	var timers []*utils.Timer
	pprof.Do(context.Background(), pprof.Labels("side", "library-timer"), func(context.Context) {
		// With one processor, no timer's goroutine runs before the clear
		// that follows it: each is left waiting, as happens under load.
		prev := runtime.GOMAXPROCS(1)
		defer runtime.GOMAXPROCS(prev)
		for range n {
			tm := utils.SetTimeout(func() {}, time.Hour)
			utils.ClearTimeout(tm)
			timers = append(timers, tm)
		}
	})
	if left, _ := labelledGoroutines("library-timer"); left == 0 {
		t.Fatal("no cleared timer left its goroutine waiting: the library's timer no longer has the defect libglue.ReleaseTimer contains")
	}
	for i, tm := range timers {
		if !libglue.ReleaseTimer(tm) {
			t.Fatalf("timer %d: the library's timer no longer holds its time.Timer where v3.0.0 did", i)
		}
	}
	waitLabelledGone(t, "library-timer", "goroutines of cleared library timers")
}
