package libglue

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zishang520/socket.io/v3/pkg/queue"
	"github.com/zishang520/socket.io/v3/pkg/utils"
)

type inner struct {
	hidden int
	timer  atomic.Pointer[utils.Timer]
	//lint:ignore U1000 the tests reach it by reflection only
	tasks *queue.Queue
}

type outer struct {
	embedded any // an interface holding *inner, as the library embeds them
}

func TestFieldAtFollowsPointersAndInterfaces(t *testing.T) {
	in := &inner{hidden: 7}
	v := &outer{embedded: in}
	if f := FieldAt[int](v, "embedded", "hidden"); f == nil || *f != 7 {
		t.Fatalf("FieldAt(embedded.hidden) = %v", f)
	}
	*FieldAt[int](v, "embedded", "hidden") = 8
	if in.hidden != 8 {
		t.Fatal("FieldAt returned a copy, not the field")
	}
	for name, f := range map[string]*int{
		"wrong type":    FieldAt[int](v, "embedded", "tasks"),
		"missing field": FieldAt[int](v, "embedded", "nothing"),
		"empty path":    FieldAt[int](v),
		"nil interface": FieldAt[int](&outer{}, "embedded", "hidden"),
		"not a struct":  FieldAt[int](in, "hidden", "deeper"),
	} {
		if f != nil {
			t.Errorf("%s: FieldAt = %v, want nil", name, f)
		}
	}
}

func TestTimerAtAndQueueAt(t *testing.T) {
	tm := utils.SetTimeout(func() {}, time.Hour)
	defer utils.ClearTimeout(tm)
	in := &inner{}
	in.timer.Store(tm)
	if got := TimerAt(in, "timer"); got != tm {
		t.Fatalf("TimerAt = %p, want %p", got, tm)
	}
	if TimerAt(in, "hidden") != nil || QueueAt(in, "tasks") != nil || DropQueueFinalizer(in, "tasks") {
		t.Fatal("a field of another type or a nil queue was taken for one")
	}
	if ReleaseTimer(nil) {
		t.Fatal("ReleaseTimer(nil) claimed the pinned shape")
	}
}

// A released timer's goroutine ends, and its callback runs at most once
// (never twice): cleared timers are released after their owner closed.
func TestReleaseTimerEndsItsGoroutine(t *testing.T) {
	base := runtime.NumGoroutine()
	var fired atomic.Int32
	const n = 50
	for range n {
		tm := utils.SetTimeout(func() { fired.Add(1) }, time.Hour)
		utils.ClearTimeout(tm)
		if !ReleaseTimer(tm) {
			t.Fatal("the library's timer no longer holds its time.Timer and stop channel where v3.0.0 did")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after releasing %d timers (base %d)", runtime.NumGoroutine(), n, base)
		}
		time.Sleep(time.Millisecond)
	}
	if f := fired.Load(); f > n {
		t.Fatalf("callbacks ran %d times for %d timers", f, n)
	}
}
