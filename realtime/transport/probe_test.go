package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestAttemptStale(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pending := func(sent int) probeRecord { return probeRecord{sent: at(sent), pending: true} }
	answered := func(sent, got int) probeRecord { return probeRecord{sent: at(sent), answered: at(got)} }
	gaveUp := func(sent, cancelled int) probeRecord { return probeRecord{sent: at(sent), gaveUp: at(cancelled)} }
	failed := func(sent int) probeRecord { return probeRecord{sent: at(sent)} } // refused or reset
	const margin = 500 * time.Millisecond
	for _, tc := range []struct {
		name   string
		silent int // the attempt heard nothing since
		probes []probeRecord
		now    int
		want   bool
	}{
		{"no probes", 0, nil, 10000, false},
		{"link dead: nothing answered", 0, []probeRecord{pending(500), pending(1000)}, 5000, false},
		{"link back: a later probe overtook an earlier one", 0, []probeRecord{pending(500), answered(3000, 3002)}, 3002, true},
		// The earlier probe's retransmission got through just before the
		// fresh probe's answer: it still waited far longer.
		{"link back: the lost probe delivered by its retransmission", 0, []probeRecord{answered(500, 3500), answered(3500, 3502)}, 3502, true},
		{"link back: the lost probe given up", 0, []probeRecord{pending(500), gaveUp(1000, 3000), answered(3000, 3002)}, 3002, true},
		// 3 round trips of 2 ms plus the margin after the lost probe was sent.
		{"lost probe not yet old enough", 0, []probeRecord{pending(2800), answered(3000, 3002)}, 3002, false},
		{"lost probe just old enough", 0, []probeRecord{pending(2800), answered(3000, 3002)}, 3306, true},
		{"slow cloud: every probe answered at once", 0, []probeRecord{answered(500, 501), answered(1000, 1001), answered(1500, 1501)}, 9000, false},
		{"slow link: every probe answered late", 0, []probeRecord{answered(500, 4500), answered(1000, 5000), pending(1500)}, 5200, false},
		{"jitter: waited less than three later round trips", 0, []probeRecord{answered(500, 6400), answered(1000, 3000)}, 6400, false},
		{"jitter: still waiting after three later round trips", 0, []probeRecord{pending(500), answered(1000, 3000)}, 7000, true},
		{"the later probe was sent before the silence", 2000, []probeRecord{pending(2500), answered(1000, 1001)}, 9000, false},
		{"the waiting probe was sent before the silence", 2000, []probeRecord{pending(1500), answered(2500, 2501)}, 9000, false},
		{"a failed probe is not evidence", 0, []probeRecord{failed(500), answered(1000, 1001)}, 9000, false},
		{"an answered probe older than the waiting one proves nothing", 0, []probeRecord{answered(500, 501), pending(1000)}, 9000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := attemptStale(at(tc.silent), tc.probes, margin, at(tc.now)); got != tc.want {
				t.Errorf("attemptStale = %v, want %v", got, tc.want)
			}
		})
	}
}

// partitionFront stands between the client and a server like a home link:
// while it is down, the connections it accepts are held (their bytes go
// nowhere and nothing is closed, as in a partition); once it is up again,
// new connections reach the server, and the held ones stay silent.
type partitionFront struct {
	ln       net.Listener
	upstream string
	URL      string
	down     atomic.Bool
	mu       sync.Mutex
	held     []net.Conn
	wg       sync.WaitGroup
}

func newPartitionFront(t *testing.T, upstreamURL string) *partitionFront {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &partitionFront{ln: ln, upstream: upstreamURL[len("http://"):], URL: "http://" + ln.Addr().String()}
	f.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if f.down.Load() {
				f.mu.Lock()
				f.held = append(f.held, c)
				f.mu.Unlock()
				f.wg.Go(func() { _, _ = io.Copy(io.Discard, c) })
				continue
			}
			f.wg.Go(func() { f.forward(c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		f.mu.Lock()
		for _, c := range f.held {
			_ = c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *partitionFront) forward(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", f.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (f *partitionFront) heldCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.held)
}

// A connect attempt sent into a dead link is still waiting when the link
// comes back: the probes find the link alive again and the attempt is
// replaced by a fresh one, long before the connect timeout.
func TestDialInADeadLinkIsReplacedWhenTheLinkReturns(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	front := newPartitionFront(t, g.URL)
	front.down.Store(true)
	c := newTestClient(t, front.URL, g.token, func(c *Config) {
		c.ConnectTimeout = 20 * time.Second
		c.ProbeInterval = 50 * time.Millisecond
	})
	type result struct {
		s   Session
		err error
	}
	done := make(chan result, 1)
	go func() { s, err := c.Connect(context.Background()); done <- result{s, err} }()
	// The dial and a few probes go into the dead link.
	waitFor(t, "the dial and two probes held in the dead link", func() bool { return front.heldCount() >= 3 })
	front.down.Store(false)
	back := time.Now()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Connect = %v, want a session once the link is back", r.err)
		}
		defer r.s.Disconnect(context.Background())
		if took := time.Since(back); took > 5*time.Second {
			t.Errorf("joined %v after the link came back, want about two probe intervals", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Connect still waiting 10 s after the link came back (the dial sent into the dead link was never replaced)")
	}
	waitFor(t, "the replaced attempt's goroutines released", func() bool { return c.Abandoned() == 0 })
}

// A cloud that never acknowledges the namespace join while it answers
// everything else at once (the probes among it): the attempt waits on the
// cloud, not on a dead link, and is not replaced: one attempt, timed out in
// the namespace phase.
func TestSlowCloudIsNotMistakenForADeadLink(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	g.setHold(true)
	c := newTestClient(t, g.URL, g.token, func(c *Config) {
		c.ConnectTimeout = 2 * time.Second
		c.ProbeInterval = 100 * time.Millisecond
	})
	_, err := c.Connect(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Phase != PhaseNamespace || !errors.Is(err, ErrTimeout) {
		t.Fatalf("Connect = %v, want a namespace-phase timeout", err)
	}
	if n := g.others.Load(); n < 5 {
		t.Fatalf("%d probes reached the cloud, want several (the test proves nothing without them)", n)
	}
	if n := len(g.held); n != 1 {
		t.Errorf("%d namespace joins reached the cloud, want 1 (an attempt waiting on the cloud was replaced)", n)
	}
}
