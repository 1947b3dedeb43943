package transport

import (
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	sio "github.com/zishang520/socket.io/clients/socket/v3"
	"github.com/zishang520/socket.io/parsers/socket/v3/parser"
	"github.com/zishang520/socket.io/v3/pkg/queue"
	"github.com/zishang520/socket.io/v3/pkg/types"
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
// The type parameters are inferred from the library's constructor, so the
// engine package need not be imported.
type hookedCtor[S, O any, T eventSource] struct {
	name  string
	newFn func(S, O) T
	onErr func(error)
	gate  func()
}

func newHookedCtor[S, O any, T eventSource](name string, newFn func(S, O) T, onErr func(error), gate func()) *hookedCtor[S, O, T] {
	return &hookedCtor[S, O, T]{name: name, newFn: newFn, onErr: onErr, gate: gate}
}

// Name implements the library's TransportCtor.
func (h *hookedCtor[S, O, T]) Name() string { return h.name }

// New implements the library's TransportCtor.
func (h *hookedCtor[S, O, T]) New(socket S, opts O) T {
	t := h.newFn(socket, opts)
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
// it is cleared before its goroutine first ran (its Stop is a non-blocking
// send on an unbuffered channel, after which the goroutine waits forever on
// a stopped timer); the manager clears it the moment the engine opens. With
// the field nil, Open sets no timer. Reached by reflection against the
// pinned library version; left alone if its shape differs.
func disableOpenTimer(m *sio.Manager) bool {
	f := reflect.ValueOf(m).Elem().FieldByName("_timeout")
	if !f.IsValid() || f.Type() != reflect.TypeFor[atomic.Pointer[time.Duration]]() || !f.CanAddr() {
		return false
	}
	(*atomic.Pointer[time.Duration])(unsafe.Pointer(f.UnsafeAddr())).Store(nil)
	return true
}

// releaseManager stops the manager's task-queue goroutine. The library
// starts one per manager and never stops it (its finalizer cannot run while
// the goroutine itself references the queue), so every closed session would
// leak a goroutine. The field is unexported; it is reached by reflection
// against the pinned library version, and left alone if its shape differs.
func releaseManager(m *sio.Manager) {
	if m == nil {
		return
	}
	f := reflect.ValueOf(m).Elem().FieldByName("taskQueue")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*queue.Queue]() || !f.CanAddr() {
		return
	}
	q := *(**queue.Queue)(unsafe.Pointer(f.UnsafeAddr()))
	if q != nil {
		q.TryClose() // runs what is queued, then the goroutine exits
	}
}
