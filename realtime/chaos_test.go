package realtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"
)

// chaosProxy is an in-process Toxiproxy between the exporter and the
// simulated cloud: every byte of REST and Socket.IO (one origin) passes
// through it, and its toxics fail the TCP link the way a home internet link
// fails (latency with jitter, a trickle, resets, sliced segments, a link
// that goes silent without a FIN, a connection cut after N bytes, a
// refused port).
type chaosProxy struct {
	t     testing.TB
	proxy *toxiproxy.Proxy
	url   string // the base URL the exporter is given

	link *partitionSwitch

	mu   sync.Mutex
	seq  int
	down bool
}

func init() {
	// Toxiproxy logs through zerolog, some of it through zerolog's global
	// logger; the tests read what the exporter shows, not the proxy's log.
	zerolog.SetGlobalLevel(zerolog.Disabled)
}

// newChaosProxy starts a proxy on a loopback port in front of upstreamURL
// (http://host:port) and stops it when the test ends.
func newChaosProxy(t testing.TB, upstreamURL string) *chaosProxy {
	t.Helper()
	u, err := url.Parse(upstreamURL)
	if err != nil || u.Host == "" {
		t.Fatalf("chaos proxy upstream %q: %v", upstreamURL, err)
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "cloud", "127.0.0.1:0", u.Host)
	if err := p.Start(); err != nil {
		t.Fatalf("starting the chaos proxy: %v", err)
	}
	c := &chaosProxy{t: t, proxy: p, url: "http://" + p.Listen, link: newPartitionSwitch()}
	t.Cleanup(p.Stop)
	t.Cleanup(func() { partitionSwitches.Delete(c.link.name) })
	// The partition toxic is always there, first in each direction; it
	// passes everything through while the link is up.
	for _, dir := range []string{"upstream", "downstream"} {
		body, _ := json.Marshal(map[string]any{
			"name": "partition_" + dir, "type": "partition", "stream": dir, "toxicity": 1.0,
			"attributes": map[string]any{"link": c.link.name, "dir": dir},
		})
		if _, err := p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			t.Fatalf("adding the partition toxic: %v", err)
		}
	}
	return c
}

// toxic is one toxic as Toxiproxy's API takes it.
type toxic struct {
	Type       string         `json:"type"`
	Stream     string         `json:"stream"` // "upstream" (exporter to cloud) or "downstream"
	Attributes map[string]any `json:"attributes,omitempty"`
}

// add switches toxics on at once, each on the connections open now and on
// every new one, and returns what switches them off again (safe to call
// more than once).
func (c *chaosProxy) add(toxics ...toxic) (remove func()) {
	c.t.Helper()
	var names []string
	for _, tx := range toxics {
		c.mu.Lock()
		c.seq++
		name := tx.Type + "_" + tx.Stream + "_" + strconv.Itoa(c.seq)
		c.mu.Unlock()
		body, err := json.Marshal(map[string]any{
			"name": name, "type": tx.Type, "stream": tx.Stream, "toxicity": 1.0, "attributes": tx.Attributes,
		})
		if err != nil {
			c.t.Fatal(err)
		}
		if _, err := c.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			c.t.Fatalf("adding toxic %s: %v", body, err)
		}
		names = append(names, name)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, n := range names {
				if err := c.proxy.Toxics.RemoveToxic(context.Background(), n); err != nil {
					c.t.Errorf("removing toxic %s: %v", n, err)
				}
			}
		})
	}
}

// both is the same toxic in each direction.
func both(typ string, attrs map[string]any) []toxic {
	return []toxic{{Type: typ, Stream: "upstream", Attributes: attrs}, {Type: typ, Stream: "downstream", Attributes: attrs}}
}

// partition makes the link silent in both directions until the returned
// restore: nothing gets through and nothing is closed, on the connections
// open now and on new ones (see partitionToxic for what happens to the bytes
// sent meanwhile). Safe to call restore more than once.
func (c *chaosProxy) partition() (restore func()) {
	c.link.set(true)
	var once sync.Once
	return func() { once.Do(func() { c.link.set(false) }) }
}

// refuse stops the proxy: open connections are closed and new ones are
// refused until the returned restore listens again on the same port.
func (c *chaosProxy) refuse() (restore func()) {
	c.t.Helper()
	c.mu.Lock()
	c.down = true
	c.mu.Unlock()
	c.proxy.Stop()
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := c.proxy.Start(); err != nil {
				c.t.Fatalf("restarting the chaos proxy: %v", err)
			}
			c.mu.Lock()
			c.down = false
			c.mu.Unlock()
		})
	}
}

// A partition is what a home link's outage looks like from the exporter: a
// router rebooting, a DSL line resyncing. Packets are dropped, nothing is
// closed, and TCP keeps retransmitting what was sent into the dead link, at
// exponentially growing intervals. Toxiproxy's own "timeout" toxic is not
// that: it passes a FIN through (a server that gives up on the session is
// heard at once), and removing it closes every connection it held (a stuck
// dial fails at once when the link comes back and is redialled).
//
// partitionToxic holds every byte and every end of stream while its link is
// down, and delivers them, in order, at the next retransmission after the
// link is back: the first retransmission 1 s after the first byte was held
// (TCP's initial retransmission timeout, as for a SYN), each next one after
// twice the interval before (capped at two minutes). It is always in place
// and switched by its partitionSwitch. A switch may scale the 1 s with the
// other durations of a test (partitionSwitch.rto).
type partitionToxic struct {
	Link string `json:"link"`
	Dir  string `json:"dir"`
}

// partitionRTO is TCP's initial retransmission timeout: the first
// retransmission of held bytes (a switch may scale it, see
// partitionSwitch.rto).
const partitionRTO = time.Second

func init() { toxics.Register("partition", new(partitionToxic)) }

// partitionSwitches finds a proxy's switch by name from inside the toxic.
var partitionSwitches sync.Map // name -> *partitionSwitch

var partitionSeq atomic.Int64

type partitionSwitch struct {
	name string
	rto  time.Duration // the first retransmission timeout; partitionRTO unless scaled

	mu      sync.Mutex
	down    bool
	changed chan struct{} // closed and replaced whenever down changes
	held    map[*toxics.ToxicStub]*heldBytes
}

// heldBytes is what one direction of one connection holds.
type heldBytes struct {
	dir    string
	chunks []*stream.StreamChunk
	eof    bool      // the end of the stream came while held
	first  time.Time // when the first byte (or the end) was held
	head   []byte    // the first held bytes, for heldSince
}

func newPartitionSwitch() *partitionSwitch {
	sw := &partitionSwitch{
		name: "link" + strconv.FormatInt(partitionSeq.Add(1), 10), rto: partitionRTO, changed: make(chan struct{}),
		held: map[*toxics.ToxicStub]*heldBytes{},
	}
	partitionSwitches.Store(sw.name, sw)
	return sw
}

func (sw *partitionSwitch) set(down bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.down != down {
		sw.down = down
		close(sw.changed)
		sw.changed = make(chan struct{})
	}
}

func (sw *partitionSwitch) state() (down bool, changed <-chan struct{}) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.down, sw.changed
}

// heldSince returns when the oldest upstream stream now held whose held
// bytes begin with prefix was first held (a request sent into the dead link
// and not yet delivered).
func (sw *partitionSwitch) heldSince(prefix string) (time.Time, bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var at time.Time
	for _, h := range sw.held {
		if h.dir == "upstream" && len(h.chunks) > 0 && bytes.HasPrefix(h.head, []byte(prefix)) && (at.IsZero() || h.first.Before(at)) {
			at = h.first
		}
	}
	return at, !at.IsZero()
}

// empty reports whether the link holds nothing.
func (sw *partitionSwitch) empty() bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return len(sw.held) == 0
}

// nextRetransmission is the first retransmission at or after now of a byte
// first sent at first, with the first retransmission timeout rto.
func nextRetransmission(first, now time.Time, rto time.Duration) time.Time {
	at, step := first, rto
	for {
		at = at.Add(step)
		if !at.Before(now) {
			return at
		}
		step = min(2*step, 120*rto)
	}
}

// Pipe passes chunks through while the link is up and nothing is held;
// otherwise it holds them. What one stub holds lives in the switch, so an
// interrupt (Toxiproxy interrupts the last toxic of a chain whenever
// another is added) loses nothing: the next Pipe on the stub resumes.
func (t *partitionToxic) Pipe(stub *toxics.ToxicStub) {
	v, ok := partitionSwitches.Load(t.Link)
	if !ok {
		new(toxics.NoopToxic).Pipe(stub)
		return
	}
	sw := v.(*partitionSwitch)
	input := stub.Input
	for {
		sw.mu.Lock()
		down, changed, h := sw.down, sw.changed, sw.held[stub]
		sw.mu.Unlock()
		if h != nil && h.eof {
			input = nil // the stream ended; only its delivery is left
		}
		var deliver <-chan time.Time
		var timer *time.Timer
		if !down && h != nil {
			timer = time.NewTimer(time.Until(nextRetransmission(h.first, time.Now(), sw.rto)))
			deliver = timer.C
		}
		stopTimer := func() {
			if timer != nil {
				timer.Stop()
			}
		}
		select {
		case <-stub.Interrupt:
			stopTimer()
			return
		case <-changed:
			stopTimer()
		case <-deliver:
			sw.mu.Lock()
			delete(sw.held, stub)
			sw.mu.Unlock()
			for _, c := range h.chunks {
				stub.Output <- c
			}
			if h.eof {
				stub.Close()
				return
			}
		case c := <-input:
			stopTimer()
			if !down && h == nil {
				if c == nil {
					stub.Close()
					return
				}
				stub.Output <- c
				continue
			}
			sw.mu.Lock()
			if h == nil {
				h = &heldBytes{dir: t.Dir, first: time.Now()}
				sw.held[stub] = h
			}
			if c == nil {
				h.eof = true
			} else {
				h.chunks = append(h.chunks, c)
				if len(h.head) < 64 {
					h.head = append(h.head, c.Data[:min(len(c.Data), 64-len(h.head))]...)
				}
			}
			sw.mu.Unlock()
		}
	}
}

// clear removes every toxic but the partition's, and brings the link back.
func (c *chaosProxy) clear() {
	c.t.Helper()
	for _, tx := range c.proxy.Toxics.GetToxicArray() {
		w, ok := tx.(*toxics.ToxicWrapper)
		if !ok || w.Type == "partition" {
			continue
		}
		if err := c.proxy.Toxics.RemoveToxic(context.Background(), w.Name); err != nil {
			c.t.Errorf("removing toxic %s: %v", w.Name, err)
		}
	}
	c.link.set(false)
}
