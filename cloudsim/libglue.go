package cloudsim

import (
	"reflect"
	"runtime"
	"unsafe"

	"github.com/zishang520/socket.io/v3/pkg/queue"
)

// The Socket.IO server library gives every namespace socket a task queue and
// every transport a write queue, each with a finalizer meant to stop the
// queue once it is unreachable. A queue points at itself (its condition
// variable holds its own mutex), and an object with a finalizer that
// reaches itself is never collected: every queue the library ever built
// stays in the heap (about 9 KiB each, two per realtime session). Without
// the finalizer a stopped queue is collected with the session; the
// finalizer would never have run anyway. The queues sit in unexported
// fields; they are reached by reflection against the pinned library
// version (v3.0.0), and left alone if the shape differs.

// queueField returns the *queue.Queue held in the named field of the struct
// v points to, or nil.
func queueField(v any, field string) *queue.Queue {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return nil
	}
	f := rv.Elem().FieldByName(field)
	if !f.IsValid() || f.Type() != reflect.TypeFor[*queue.Queue]() || !f.CanAddr() {
		return nil
	}
	return *(**queue.Queue)(unsafe.Pointer(f.UnsafeAddr()))
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
