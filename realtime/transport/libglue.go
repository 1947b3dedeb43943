package transport

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	sio "github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
	"github.com/zishang520/socket.io/v3/pkg/queue"
	"github.com/zishang520/socket.io/v3/pkg/types"
	"github.com/zishang520/socket.io/v3/pkg/utils"

	"github.com/bragerone/bragerone_exporter/internal/libglue"
)

// packetConnectError is the Socket.IO CONNECT_ERROR packet type (4).
const packetConnectError = int64(parser.CONNECT_ERROR)

// packetFields reads type, namespace and data of a decoded Socket.IO packet
// as the manager's "packet" event passes it.
func packetFields(p any) (typ int64, nsp string, data any, ok bool) {
	pk, isPacket := p.(*parser.Packet)
	if !isPacket || pk == nil {
		return 0, "", nil, false
	}
	return int64(pk.Type), pk.Nsp, pk.Data, true
}

// eventSource is what the hook needs of a library transport.
type eventSource interface {
	On(types.EventName, ...types.EventListener) error
}

// hookedCtor wraps the library's WebSocket transport constructor so that
// our listeners run before the engine's. The manager creates the engine,
// which creates and opens the transport (dialling synchronously), and only
// then subscribes to the engine. Two things are lost in that window:
//
//   - a dial error: the engine reports it to nobody, and it surfaces only as
//     "timeout" much later; onErr catches it on the transport;
//   - the Engine.IO OPEN packet: the transport's reader goroutine can process
//     it before the manager listens for "open", and then the namespace
//     CONNECT is never sent. gate blocks the reader's first packet until the
//     manager is subscribed (it returns at once after that).
//
// created sees the Engine.IO socket and each transport as soon as the
// transport exists (before it dials), so their queues are adopted before
// anything can go wrong.
//
// The type parameters are inferred from the library's constructor, so the
// engine package need not be imported.
type hookedCtor[S, O any, T eventSource] struct {
	name    string
	newFn   func(S, O) T
	created func(engine, transport any)
	onErr   func(error)
	gate    func()
}

func newHookedCtor[S, O any, T eventSource](name string, newFn func(S, O) T, created func(engine, transport any), onErr func(error), gate func()) *hookedCtor[S, O, T] {
	return &hookedCtor[S, O, T]{name: name, newFn: newFn, created: created, onErr: onErr, gate: gate}
}

// Name implements the library's TransportCtor.
func (h *hookedCtor[S, O, T]) Name() string { return h.name }

// New implements the library's TransportCtor.
func (h *hookedCtor[S, O, T]) New(socket S, opts O) T {
	t := h.newFn(socket, opts)
	h.created(socket, t)
	_ = t.On("packet", func(...any) { h.gate() })
	_ = t.On("error", func(a ...any) {
		if err, ok := argAt(a, 0).(error); ok {
			h.onErr(err)
		}
	})
	return t
}

// disableOpenTimer removes the manager's own connect timer. Our watchdog
// bounds every connect, and the library's timer leaks a goroutine whenever
// it is cleared before its goroutine first ran (see libglue.ReleaseTimer); the
// manager clears it the moment the engine opens. With the field nil, Open
// sets no timer. Reached by reflection against the pinned library version;
// left alone if its shape differs.
func disableOpenTimer(m *sio.Manager) bool {
	f := libglue.FieldAt[atomic.Pointer[time.Duration]](m, "_timeout")
	if f == nil {
		return false
	}
	f.Store(nil)
	return true
}

// enginePingTimerPath is where v3.0.0 keeps the Engine.IO client socket's
// ping-timeout timer.
var enginePingTimerPath = []string{"SocketWithUpgrade", "SocketWithoutUpgrade", "_pingTimeoutTimer"}

// pingTimerAt returns the engine's current ping-timeout timer, or nil.
func pingTimerAt(engine any) *utils.Timer {
	return libglue.TimerAt(engine, enginePingTimerPath...)
}

// The library gives each client session three task queues (package
// v3/pkg/queue), each with a goroutine of its own: the manager's, the
// Engine.IO socket's and the WebSocket transport's write queue. It never
// stops the manager's, and stops the other two only on paths a session does
// not always take (the engine's when it sees its own close, the transport's
// when its close runs the full path). Each queue also carries a finalizer
// meant to stop it once unreachable, but a queue points at itself (its
// condition variable holds its own mutex), and an object with a finalizer
// that reaches itself is never collected: every queue ever built would stay
// in the heap (about 9 KiB each, three per reconnect), and the finalizer
// never runs. A session therefore clears each queue's finalizer as soon as
// the queue exists and stops every queue itself when it is torn down; a
// stopped queue is then collected with the session. Clearing the finalizer
// early is safe: while a queue's goroutine runs, that goroutine holds the
// queue, so the finalizer could not have run before the stop either.
//
// The queues sit in unexported fields; they are reached by reflection
// against the pinned library version (v3.0.0), and left alone if the shape
// differs (a leak then, never a failure).

// Where v3.0.0 keeps each queue: field names from the value the session
// holds, through the embedded interfaces, to the *queue.Queue field.
var (
	managerQueuePath   = []string{"taskQueue"}                                              // *sio.Manager
	engineQueuePath    = []string{"SocketWithUpgrade", "SocketWithoutUpgrade", "taskQueue"} // the Engine.IO client socket
	transportQueuePath = []string{"writeQueue"}                                             // the WebSocket transport
)

// transportDialerPath is where v3.0.0 keeps the WebSocket transport's
// *websocket.Dialer (gorilla), built fresh for each transport before it
// dials.
var transportDialerPath = []string{"dialer"}

// libQueues are the library queues of one session.
type libQueues struct {
	mu     sync.Mutex
	queues []*queue.Queue
}

// adopt clears the finalizer of the queue at path in v and keeps the queue
// to stop later; it reports whether it found one. A queue is adopted once.
func (l *libQueues) adopt(v any, path ...string) bool {
	q := libglue.QueueAt(v, path...)
	if q == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Contains(l.queues, q) {
		return true
	}
	runtime.SetFinalizer(q, nil)
	l.queues = append(l.queues, q)
	return true
}

// stop stops every adopted queue: each runs what is already queued, then
// its goroutine exits. Later calls are harmless.
func (l *libQueues) stop() {
	l.mu.Lock()
	qs := slices.Clone(l.queues)
	l.mu.Unlock()
	for _, q := range qs {
		q.TryClose()
	}
}

// count returns how many queues were adopted.
func (l *libQueues) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queues)
}
