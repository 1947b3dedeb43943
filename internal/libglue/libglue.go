// Package libglue reaches what the pinned Socket.IO library (zishang520
// v3.0.0, client and server) keeps in unexported fields: the task queues
// whose finalizers keep them in the heap forever, and the timers whose
// goroutines can outlive them. The simulated cloud (server side) and the
// realtime transport (client side) both release these through this package.
//
// Every access is by reflection against the pinned shape, and is left alone
// when the shape differs: a leak then, never a failure. Callers report the
// miss so a library upgrade that moves a field is noticed.
package libglue

import (
	"reflect"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/zishang520/socket.io/v3/pkg/queue"
	"github.com/zishang520/socket.io/v3/pkg/utils"
)

// FieldAt follows path (field names, through pointers and interfaces) from
// v and returns the field at its end if it has type T and is addressable,
// or nil.
func FieldAt[T any](v any, path ...string) *T {
	if len(path) == 0 {
		return nil
	}
	rv := reflect.ValueOf(v)
	for _, name := range path {
		for rv.IsValid() && (rv.Kind() == reflect.Interface || rv.Kind() == reflect.Pointer) {
			if rv.IsNil() {
				return nil
			}
			rv = rv.Elem()
		}
		if !rv.IsValid() || rv.Kind() != reflect.Struct {
			return nil
		}
		rv = rv.FieldByName(name)
	}
	if !rv.IsValid() || rv.Type() != reflect.TypeFor[T]() || !rv.CanAddr() {
		return nil
	}
	return (*T)(unsafe.Pointer(rv.UnsafeAddr()))
}

// The library gives every namespace socket a task queue and every transport
// a write queue (the client's manager and engine socket one each as well),
// each with a finalizer meant to stop the queue once it is unreachable. A
// queue points at itself (its condition variable holds its own mutex), and
// an object with a finalizer that reaches itself is never collected: every
// queue ever built would stay in the heap (about 9 KiB each), and the
// finalizer never runs. Without the finalizer a stopped queue is collected
// with its session.

// QueueAt returns the *queue.Queue at path in v, or nil.
func QueueAt(v any, path ...string) *queue.Queue {
	if f := FieldAt[*queue.Queue](v, path...); f != nil {
		return *f
	}
	return nil
}

// DropQueueFinalizer lets the queue at path in v be collected once stopped;
// it reports whether it found one.
func DropQueueFinalizer(v any, path ...string) bool {
	q := QueueAt(v, path...)
	if q == nil {
		return false
	}
	runtime.SetFinalizer(q, nil)
	return true
}

// atomicTimer is how the library holds a timer it replaces as it runs.
type atomicTimer = atomic.Pointer[utils.Timer]

// TimerAt returns the timer currently held in the atomic timer field at
// path in v, or nil.
func TimerAt(v any, path ...string) *utils.Timer {
	if f := FieldAt[atomicTimer](v, path...); f != nil {
		return f.Load()
	}
	return nil
}

// ReleaseTimer ends the goroutine of a library timer whose owner has
// closed, whether that goroutine already waits or has not started yet.
//
// The library's timer (utils.SetTimeout) runs one goroutine that waits for
// its time.Timer or a stop signal; clearing it stops the time.Timer and
// sends the stop signal without blocking, so a timer cleared before its
// goroutine first waited leaves that goroutine waiting forever on a stopped
// timer, holding the callback and whatever it reaches. ReleaseTimer sends
// the stop signal to a waiting goroutine (which returns without running the
// callback) and fires the timer for one that has not waited yet (which then
// runs the callback), so it is called only once the callback has nothing
// left to do. On a timer whose goroutine has gone, neither reaches anybody.
// It reports whether the timer had the pinned shape.
func ReleaseTimer(t *utils.Timer) bool {
	if t == nil {
		return false
	}
	tm, stop := FieldAt[*time.Timer](t, "timer"), FieldAt[chan struct{}](t, "stopCh")
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
