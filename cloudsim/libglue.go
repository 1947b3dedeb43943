package cloudsim

import (
	"reflect"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/zishang520/socket.io/v3/pkg/queue"
	"github.com/zishang520/socket.io/v3/pkg/utils"
)

// The Socket.IO server library keeps the queues and timers a session needs
// released in unexported fields. They are reached by reflection against the
// pinned library version (v3.0.0), and left alone if the shape differs (a
// leak then, never a failure).

// fieldAt returns the field named field of the struct v points to (through
// interfaces and pointers) if it has type T, or nil.
func fieldAt[T any](v any, field string) *T {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && (rv.Kind() == reflect.Interface || rv.Kind() == reflect.Pointer) {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.Kind() != reflect.Struct {
		return nil
	}
	f := rv.FieldByName(field)
	if !f.IsValid() || f.Type() != reflect.TypeFor[T]() || !f.CanAddr() {
		return nil
	}
	return (*T)(unsafe.Pointer(f.UnsafeAddr()))
}

// The library gives every namespace socket a task queue and every
// transport a write queue, each with a finalizer meant to stop the queue
// once it is unreachable. A queue points at itself (its condition variable
// holds its own mutex), and an object with a finalizer that reaches itself
// is never collected: every queue the library ever built stays in the heap
// (about 9 KiB each, two per realtime session). Without the finalizer a
// stopped queue is collected with the session; the finalizer would never
// have run anyway.

// queueField returns the *queue.Queue held in the named field of the struct
// v points to, or nil.
func queueField(v any, field string) *queue.Queue {
	if f := fieldAt[*queue.Queue](v, field); f != nil {
		return *f
	}
	return nil
}

// dropQueueFinalizer lets the queue in the named field of v be collected;
// it reports whether it found one.
func dropQueueFinalizer(v any, field string) bool {
	q := queueField(v, field)
	if q == nil {
		return false
	}
	runtime.SetFinalizer(q, nil)
	return true
}

// The library's timer (utils.SetTimeout) runs one goroutine that waits for
// its time.Timer or a stop signal. Clearing it stops the time.Timer and
// sends the stop signal without blocking, so a timer cleared before its
// goroutine first waited leaves that goroutine waiting forever on a stopped
// timer, holding the timer's callback and whatever that reaches (for the
// connect timer, the whole Socket.IO client of the session). The server
// sets three timers per session that are routinely cleared moments after
// they are set:
//
//   - the Socket.IO client's connect timer, set when the Engine.IO session
//     opens and cleared when the namespace CONNECT arrives (or the session
//     closes first);
//   - the Engine.IO socket's ping-interval timer, set when the session opens
//     and cleared when it closes (a session closed right after it opened);
//   - the Engine.IO socket's ping-timeout timer, set when a ping is sent and
//     cleared when the session closes.

// Where v3.0.0 keeps those timers.
const (
	clientConnectTimer = "connectTimeout"    // *sio.Client
	enginePingInterval = "pingIntervalTimer" // the Engine.IO server socket
	enginePingTimeout  = "pingTimeoutTimer"  // the Engine.IO server socket
)

// timerField returns the timer currently held in the named
// atomic.Pointer[utils.Timer] field of v, or nil.
func timerField(v any, field string) *utils.Timer {
	if f := fieldAt[atomic.Pointer[utils.Timer]](v, field); f != nil {
		return f.Load()
	}
	return nil
}

// releaseTimer ends the goroutine of a library timer whose session has
// closed, whether that goroutine already waits or has not yet started. A
// waiting goroutine takes the stop signal and returns without running the
// callback; one not yet waiting finds the timer fired and runs the callback,
// so releaseTimer is called only once the callback has nothing left to do
// (each of the three above does nothing on a closed session, the
// ping-interval one besides setting a ping-timeout timer that fires and
// ends). On a timer whose goroutine has already gone, neither reaches
// anybody. It reports whether the timer had the v3.0.0 shape.
func releaseTimer(t *utils.Timer) bool {
	if t == nil {
		return false
	}
	tm, stop := fieldAt[*time.Timer](t, "timer"), fieldAt[chan struct{}](t, "stopCh")
	if tm == nil || *tm == nil || stop == nil {
		return false
	}
	select {
	case *stop <- struct{}{}:
	default:
	}
	(*tm).Reset(0)
	return true
}
