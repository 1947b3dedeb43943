package cloudsim

// The Socket.IO server library keeps the queues and timers a session needs
// released in unexported fields; package libglue reaches them. The server
// sets three timers per session that are routinely cleared moments after
// they are set, and so can leave their goroutines waiting forever (see
// libglue.ReleaseTimer):
//
//   - the Socket.IO client's connect timer, set when the Engine.IO session
//     opens and cleared when the namespace CONNECT arrives (or the session
//     closes first);
//   - the Engine.IO socket's ping-interval timer, set when the session opens
//     and cleared when it closes (a session closed right after it opened);
//   - the Engine.IO socket's ping-timeout timer, set when a ping is sent and
//     cleared when the session closes.
//
// Each of their callbacks does nothing on a closed session (the
// ping-interval one besides setting a ping-timeout timer that fires and
// ends), so they are released once the session has closed.

import (
	"slices"
	"sync"
	"time"

	enginepacket "github.com/zishang520/socket.io/parsers/engine/v3/packet"
	engine "github.com/zishang520/socket.io/servers/engine/v3"
	"github.com/zishang520/socket.io/v3/pkg/utils"

	"github.com/bragerone/bragerone_exporter/internal/libglue"
)

// Where v3.0.0 keeps those timers.
const (
	clientConnectTimer = "connectTimeout"    // *sio.Client
	enginePingInterval = "pingIntervalTimer" // the Engine.IO server socket
	enginePingTimeout  = "pingTimeoutTimer"  // the Engine.IO server socket
)

// pingGuard works around a race in the library's Engine.IO server (v3.0.0)
// that closes a healthy session with "ping timeout".
//
// The ping-interval timer's goroutine sends each ping and then arms the
// ping-timeout timer, and the send is handed to the transport's write queue,
// another goroutine. When the first goroutine is descheduled between the
// two steps (a busy machine), the client's pong can arrive and be handled
// first: the library clears the timeout timer it holds (the previous
// ping's) and restarts the interval. The timer armed afterwards is never
// cleared: the next ping comes a ping interval after the pong, later than
// the timeout (20 s against 25 s, as the cloud sends), so it fires and ends
// the session. The Node.js server takes the same two steps on one thread,
// where no pong can come between them; a real cloud never does this.
//
// The guard notes which timeout timer was held when each ping was created.
// A pong handled while that timer is still the one held (its ping's timer
// not armed yet) starts a watcher that clears the timer armed next, unless
// a newer ping was created meanwhile, whose timer is the one that counts.
type pingGuard struct {
	conn  engine.Socket
	bound time.Duration // how long a watcher waits for the late timer

	mu      sync.Mutex
	pings   uint64       // pings created so far
	before  *utils.Timer // the timeout timer held when the last ping was created
	cleared []*utils.Timer
}

// pingGuardPoll is how often a watcher looks for the late timer: well
// inside any ping timeout the simulator is given.
const pingGuardPoll = time.Millisecond

// guardPings attaches a pingGuard to an Engine.IO session. bound is the
// longest a pong's watcher waits for the late timer (the ping interval and
// timeout: by then the next ping has replaced it).
func guardPings(conn engine.Socket, bound time.Duration) *pingGuard {
	g := &pingGuard{conn: conn, bound: bound}
	_ = conn.On("packetCreate", func(args ...any) {
		if isEnginePacket(args, enginepacket.PING) {
			g.mu.Lock()
			g.pings++
			g.before = libglue.TimerAt(conn, enginePingTimeout)
			g.mu.Unlock()
		}
	})
	// "packet" is emitted before the library handles the pong.
	_ = conn.On("packet", func(args ...any) {
		if !isEnginePacket(args, enginepacket.PONG) {
			return
		}
		g.mu.Lock()
		pings, before := g.pings, g.before
		g.mu.Unlock()
		if pings > 0 && libglue.TimerAt(conn, enginePingTimeout) == before {
			go g.clearLateTimer(pings, before)
		}
	})
	return g
}

// clearLateTimer waits until the timeout timer of ping number ping is armed
// and clears it, unless a newer ping was created first (its own timer is
// then the one held, and the library clears the late one itself).
func (g *pingGuard) clearLateTimer(ping uint64, before *utils.Timer) {
	deadline := time.Now().Add(g.bound)
	for {
		if t := libglue.TimerAt(g.conn, enginePingTimeout); t != before {
			// Loaded before the count is read: a newer ping's timer is
			// armed only after that ping was counted.
			g.mu.Lock()
			if g.pings == ping {
				utils.ClearTimeout(t)
				g.cleared = append(g.cleared, t)
			}
			g.mu.Unlock()
			return
		}
		if g.conn.ReadyState() == "closed" || time.Now().After(deadline) {
			return
		}
		time.Sleep(pingGuardPoll)
	}
}

// clearedTimers returns the timers the guard cleared, to be released with
// the session's others once it has closed (a timer cleared before its
// goroutine first waited leaves that goroutine waiting; libglue.ReleaseTimer).
func (g *pingGuard) clearedTimers() []*utils.Timer {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.cleared)
}

// isEnginePacket reports whether an event's first argument is an Engine.IO
// packet of type typ.
func isEnginePacket(args []any, typ enginepacket.Type) bool {
	if len(args) == 0 {
		return false
	}
	p, ok := args[0].(*enginepacket.Packet)
	return ok && p != nil && p.Type == typ
}
