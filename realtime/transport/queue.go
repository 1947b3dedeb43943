package transport

import (
	"sync"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// eventQueue decouples the Socket.IO library's goroutines from the consumer.
// Producers (library callbacks) never block: beyond limit, events are
// dropped and counted, and a cloudapi.EventOverflow marker is placed where the loss
// happened. The final event (cloudapi.EventDisconnect) is always kept.
type eventQueue struct {
	mu      sync.Mutex
	buf     []queued
	limit   int
	queued  int  // counted entries in buf
	dropped int  // dropped since the last marker
	final   bool // the final event is queued; nothing is accepted after it
	wake    chan struct{}
	now     func() time.Time
}

func newEventQueue(limit int, now func() time.Time) *eventQueue {
	return &eventQueue{limit: limit, wake: make(chan struct{}, 1), now: now}
}

// queued is one entry; counted entries count against the limit (markers and
// the final event do not).
type queued struct {
	ev      Event
	counted bool
}

// push queues ev. It reports false when ev was not queued: dropped because
// the buffer is full (then full is true), or because the session is over.
func (q *eventQueue) push(ev Event) (ok, full bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.final {
		return false, false
	}
	if q.queued >= q.limit {
		q.dropped++
		return false, true
	}
	q.flushDropsLocked()
	q.buf = append(q.buf, queued{ev: ev, counted: true})
	q.queued++
	q.signal()
	return true, false
}

// pushFinal queues the last event of the session, regardless of the bound.
func (q *eventQueue) pushFinal(ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.final {
		return
	}
	q.flushDropsLocked()
	q.buf = append(q.buf, queued{ev: ev})
	q.final = true
	q.signal()
}

func (q *eventQueue) flushDropsLocked() {
	if q.dropped == 0 {
		return
	}
	q.buf = append(q.buf, queued{ev: Event{Kind: cloudapi.EventOverflow, Dropped: q.dropped, Received: q.now()}})
	q.dropped = 0
}

func (q *eventQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop returns the head event; last is true when it is the final event.
// ok is false when nothing is queued; then finished says whether the
// queue is complete (final event already handed out).
func (q *eventQueue) pop() (ev Event, last, ok, finished bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.buf) == 0 {
		if q.dropped > 0 && !q.final {
			// Drops with no event after them yet: report them now.
			q.flushDropsLocked()
		} else {
			return Event{}, false, false, q.final
		}
	}
	head := q.buf[0]
	q.buf[0] = queued{}
	q.buf = q.buf[1:]
	if head.counted {
		q.queued--
	}
	return head.ev, q.final && len(q.buf) == 0, true, false
}

// pump delivers queued events to out in order until the final event was
// delivered or stop is closed; then it closes out.
func (q *eventQueue) pump(out chan<- Event, stop <-chan struct{}) {
	defer close(out)
	for {
		ev, last, ok, finished := q.pop()
		if !ok {
			if finished {
				return
			}
			select {
			case <-q.wake:
				continue
			case <-stop:
				return
			}
		}
		select {
		case out <- ev:
		case <-stop:
			return
		}
		if last {
			return
		}
	}
}
