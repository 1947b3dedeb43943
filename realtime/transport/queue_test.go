package transport

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

func TestEventQueueBoundAndMarkers(t *testing.T) {
	now := time.Unix(100, 0)
	q := newEventQueue(2, func() time.Time { return now })
	push := func(name string) bool { ok, _ := q.push(Event{Name: name}); return ok }
	if !push("a") || !push("b") {
		t.Fatal("pushes within the bound refused")
	}
	if push("c") || push("d") {
		t.Fatal("push beyond the bound accepted")
	}
	names := func() []string {
		var got []string
		for {
			ev, last, ok, _ := q.pop()
			if !ok {
				return got
			}
			switch ev.Kind {
			case cloudapi.EventOverflow:
				got = append(got, "overflow:"+fmt.Sprint(ev.Dropped))
				if !ev.Received.Equal(now) {
					t.Errorf("overflow stamped %v", ev.Received)
				}
			case cloudapi.EventDisconnect:
				got = append(got, "final:"+ev.Reason)
				if !last {
					t.Error("final event not reported as last")
				}
			default:
				got = append(got, ev.Name)
			}
		}
	}
	// Drops at the tail are reported once the queue runs dry.
	expect(t, names(), "a", "b", "overflow:2")
	// A drop followed by a later event: the marker comes first.
	push("e")
	push("f")
	push("g") // dropped
	for _, want := range []string{"e", "f"} {
		if ev, _, _, _ := q.pop(); ev.Name != want {
			t.Fatalf("popped %q, want %q", ev.Name, want)
		}
	}
	push("h")
	q.pushFinal(Event{Kind: cloudapi.EventDisconnect, Reason: "disconnect"})
	q.pushFinal(Event{Kind: cloudapi.EventDisconnect, Reason: "second"}) // ignored
	if push("i") {
		t.Fatal("push after the final event accepted")
	}
	expect(t, names(), "overflow:1", "h", "final:disconnect")
	// The final event is kept even when the buffer is full.
	q2 := newEventQueue(1, time.Now)
	q2.push(Event{Name: "x"})
	q2.push(Event{Name: "y"}) // dropped
	q2.pushFinal(Event{Kind: cloudapi.EventDisconnect, Reason: "r"})
	var kinds []cloudapi.EventKind
	for {
		ev, _, ok, finished := q2.pop()
		if !ok {
			if !finished {
				t.Error("queue not finished after the final event")
			}
			break
		}
		kinds = append(kinds, ev.Kind)
	}
	if len(kinds) != 3 || kinds[1] != cloudapi.EventOverflow || kinds[2] != cloudapi.EventDisconnect {
		t.Errorf("kinds = %v", kinds)
	}
}

func expect(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestEventQueuePumpDeliversInOrderAndCloses(t *testing.T) {
	q := newEventQueue(100, time.Now)
	out := make(chan Event)
	go q.pump(out, make(chan struct{}))
	go func() {
		for i := 0; i < 50; i++ {
			q.push(Event{Name: fmt.Sprint(i)})
		}
		q.pushFinal(Event{Kind: cloudapi.EventDisconnect})
	}()
	i := 0
	for ev := range out {
		if ev.Kind == cloudapi.EventDisconnect {
			if i != 50 {
				t.Fatalf("final after %d events", i)
			}
			i++
			continue
		}
		if ev.Name != fmt.Sprint(i) {
			t.Fatalf("event %q at position %d", ev.Name, i)
		}
		i++
	}
	if i != 51 {
		t.Fatalf("channel closed after %d events", i)
	}
}

// Once the consumer walks away (stop closed), the pump returns wherever it
// was waiting (on a send nobody receives, or for events that do not come),
// closes out and delivers nothing more: what is still queued is discarded.
func TestEventQueueStopDiscards(t *testing.T) {
	for name, tc := range map[string]struct{ queued, read int }{
		"blocked on a send nobody receives": {queued: 2},
		"after one of three was read":       {queued: 3, read: 1},
		"waiting on an empty queue":         {},
	} {
		t.Run(name, func(t *testing.T) {
			q := newEventQueue(10, time.Now)
			for i := range tc.queued {
				q.push(Event{Name: fmt.Sprint(i)})
			}
			out := make(chan Event)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { q.pump(out, stop); close(done) }()
			for i := range tc.read {
				select {
				case ev := <-out:
					if ev.Name != fmt.Sprint(i) {
						t.Fatalf("read %q, want %q", ev.Name, fmt.Sprint(i))
					}
				case <-time.After(5 * time.Second):
					t.Fatal("nothing delivered before the stop")
				}
			}
			close(stop) // the consumer walks away
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the pump did not return after the stop")
			}
			select {
			case ev, ok := <-out:
				if ok {
					t.Fatalf("event %+v delivered after the stop", ev)
				}
			default:
				t.Fatal("out not closed after the stop")
			}
			// A final event queued now is not delivered either.
			q.pushFinal(Event{Kind: cloudapi.EventDisconnect})
			if _, ok := <-out; ok {
				t.Fatal("an event came out after the pump returned")
			}
		})
	}
}
