package realtime_test

import (
	"bytes"
	"encoding/json"
	"net"
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

	"github.com/bragerone/bragerone_exporter/internal/libglue"
)

// chaosProxy is an in-process Toxiproxy between the exporter and the
// simulated cloud: every byte of REST and Socket.IO (one origin) passes
// through it, and Toxiproxy's toxics fail the TCP link the way a home
// internet link fails (latency with jitter, a trickle, resets, sliced
// segments, a connection cut after N bytes), besides a partition of our own
// (partitionToxic) and a refused port.
//
// Toxics are never added to or removed from the running proxy: Toxiproxy
// v2.5.0 adds and removes them under its collection's lock and waits for
// every connection's chain to take the change, and a chain whose
// connection is closing at that moment never does (its last stage waits
// to hand a chunk to a writer that waits for that lock: upstream issue
// Shopify/toxiproxy#558); the proxy, and the test, would hang. Each
// direction has instead, from the start, the partition and chaosSlots slots
// (slotToxic) that run a Toxiproxy toxic while it is switched on and pass
// everything through otherwise; switching is ours, outside the lock.
type chaosProxy struct {
	t     testing.TB
	proxy *toxiproxy.Proxy
	url   string // the base URL the exporter is given
	link  *chaosLink
}

// chaosSlots is how many Toxiproxy toxics each direction can have on at once.
const chaosSlots = 2

func init() {
	// Toxiproxy logs through zerolog, some of it through zerolog's global
	// logger; the tests read what the exporter shows, not the proxy's log.
	zerolog.SetGlobalLevel(zerolog.Disabled)
	toxics.Register("partition", new(partitionToxic))
	toxics.Register("slot", new(slotToxic))
	toxics.Register("meter", new(meterToxic))
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
	link := newChaosLink(p)
	t.Cleanup(func() { chaosLinks.Delete(link.name) })
	for _, dir := range []string{"upstream", "downstream"} {
		install := func(name, typ string, attrs map[string]any) {
			body, _ := json.Marshal(map[string]any{"name": name, "type": typ, "stream": dir, "toxicity": 1.0, "attributes": attrs})
			if _, err := p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
				t.Fatalf("installing the %s toxic: %v", typ, err)
			}
		}
		install("partition_"+dir, "partition", map[string]any{"link": link.name, "dir": dir})
		for n := range chaosSlots {
			install("slot"+strconv.Itoa(n)+"_"+dir, "slot", map[string]any{"link": link.name, "dir": dir, "slot": n})
		}
		install("meter_"+dir, "meter", map[string]any{"link": link.name, "dir": dir})
	}
	if err := p.Start(); err != nil {
		t.Fatalf("starting the chaos proxy: %v", err)
	}
	t.Cleanup(p.Stop)
	return &chaosProxy{t: t, proxy: p, url: "http://" + p.Listen, link: link}
}

// toxic is one Toxiproxy toxic: its type and attributes as Toxiproxy's API
// takes them.
type toxic struct {
	Type       string
	Stream     string // "upstream" (exporter to cloud) or "downstream"
	Attributes map[string]any
}

// both is the same toxic in each direction.
func both(typ string, attrs map[string]any) []toxic {
	return []toxic{{Type: typ, Stream: "upstream", Attributes: attrs}, {Type: typ, Stream: "downstream", Attributes: attrs}}
}

// add switches toxics on at once, each on the connections open now and on
// every new one, and returns what switches them off again (safe to call
// more than once).
func (c *chaosProxy) add(txs ...toxic) (remove func()) {
	c.t.Helper()
	var offs []func()
	for _, tx := range txs {
		w := &toxics.ToxicWrapper{Type: tx.Type}
		tc := toxics.New(w)
		if tc == nil {
			c.t.Fatalf("no Toxiproxy toxic %q", tx.Type)
		}
		attrs, _ := json.Marshal(tx.Attributes)
		if err := json.Unmarshal(attrs, tc); err != nil {
			c.t.Fatalf("toxic %s attributes %s: %v", tx.Type, attrs, err)
		}
		off, ok := c.link.switchOn(tx.Stream, tc)
		if !ok {
			c.t.Fatalf("no free slot for %s %s (%d a direction)", tx.Type, tx.Stream, chaosSlots)
		}
		offs = append(offs, off)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, off := range offs {
				off()
			}
		})
	}
}

// partition makes the link silent in both directions until the returned
// restore: nothing gets through and nothing is closed, on the connections
// open now and on new ones (see partitionToxic for what happens to the bytes
// sent meanwhile). Safe to call restore more than once.
func (c *chaosProxy) partition() (restore func()) {
	c.link.setDown(true)
	var once sync.Once
	return func() { once.Do(func() { c.link.setDown(false) }) }
}

// refuse stops the proxy: open connections are closed and new ones are
// refused until the returned restore listens again on the same port.
func (c *chaosProxy) refuse() (restore func()) {
	c.t.Helper()
	c.proxy.Stop()
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := c.proxy.Start(); err != nil {
				c.t.Fatalf("restarting the chaos proxy: %v", err)
			}
		})
	}
}

// clear switches every toxic off and brings the link back.
func (c *chaosProxy) clear() {
	c.link.clearSlots()
	c.link.setDown(false)
}

// chaosLink is the switchboard of one proxy's permanent toxics, found by
// name from inside them.
type chaosLink struct {
	name  string
	proxy *toxiproxy.Proxy
	rto   time.Duration // the first retransmission timeout of held bytes; partitionRTO unless scaled

	mu      sync.Mutex
	down    bool
	changed chan struct{} // closed and replaced whenever down changes
	held    map[*toxics.ToxicStub]*heldBytes
	slots   map[slotKey]*faultSlot
	resets  int // reset_peer toxics switched on
	// transit is the longest a byte of the Socket.IO WebSocket took
	// through the proxy in each direction since resetTransit (meterToxic).
	transit map[string]time.Duration
}

type slotKey struct {
	dir string
	n   int
}

// faultSlot is one slot's toxic: nil while switched off.
type faultSlot struct {
	toxic   toxics.Toxic
	changed chan struct{} // closed and replaced whenever toxic changes
}

var (
	chaosLinks   sync.Map // name -> *chaosLink
	chaosLinkSeq atomic.Int64
)

func newChaosLink(p *toxiproxy.Proxy) *chaosLink {
	l := &chaosLink{
		name: "link" + strconv.FormatInt(chaosLinkSeq.Add(1), 10), proxy: p, rto: partitionRTO,
		changed: make(chan struct{}), held: map[*toxics.ToxicStub]*heldBytes{}, slots: map[slotKey]*faultSlot{},
		transit: map[string]time.Duration{},
	}
	for _, dir := range []string{"upstream", "downstream"} {
		for n := range chaosSlots {
			l.slots[slotKey{dir, n}] = &faultSlot{changed: make(chan struct{})}
		}
	}
	chaosLinks.Store(l.name, l)
	return l
}

// setRTO scales the first retransmission timeout of held bytes.
func (l *chaosLink) setRTO(rto time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rto = rto
}

func linkNamed(name string) *chaosLink {
	v, ok := chaosLinks.Load(name)
	if !ok {
		return nil
	}
	return v.(*chaosLink)
}

// switchOn runs tc in a free slot of dir until the returned off.
func (l *chaosLink) switchOn(dir string, tc toxics.Toxic) (off func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for n := range chaosSlots {
		sl := l.slots[slotKey{dir, n}]
		if sl == nil || sl.toxic != nil {
			continue
		}
		l.setSlotLocked(sl, tc)
		return func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if sl.toxic == tc {
				l.setSlotLocked(sl, nil)
			}
		}, true
	}
	return nil, false
}

func (l *chaosLink) setSlotLocked(sl *faultSlot, tc toxics.Toxic) {
	_, wasReset := sl.toxic.(*toxics.ResetToxic)
	_, isReset := tc.(*toxics.ResetToxic)
	switch {
	case isReset && !wasReset:
		l.resets++
	case wasReset && !isReset:
		l.resets--
		if l.resets == 0 {
			l.lingerAllLocked(-1) // the survivors close gracefully again
		}
	}
	sl.toxic = tc
	close(sl.changed)
	sl.changed = make(chan struct{})
}

func (l *chaosLink) clearSlots() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, sl := range l.slots {
		if sl.toxic != nil {
			l.setSlotLocked(sl, nil)
		}
	}
}

func (l *chaosLink) slot(dir string, n int) (toxics.Toxic, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl := l.slots[slotKey{dir, n}]
	if sl == nil {
		return nil, nil
	}
	return sl.toxic, sl.changed
}

// lingerAll makes every connection of the proxy close with an RST while a
// reset_peer toxic is on. Toxiproxy does that only for the connections that
// open while a reset_peer toxic is configured (the slots are configured
// before any connection, with a toxic of their own); the connections live
// in an unexported field of the proxy, reached by reflection.
func (l *chaosLink) lingerAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.resets > 0 {
		l.lingerAllLocked(0)
	}
}

func (l *chaosLink) lingerAllLocked(sec int) {
	list := libglue.FieldAt[toxiproxy.ConnectionList](l.proxy, "connections")
	conns := libglue.FieldAt[map[string]net.Conn](l.proxy, "connections", "list")
	if list == nil || conns == nil {
		return
	}
	list.Lock()
	defer list.Unlock()
	for _, c := range *conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(sec)
		}
	}
}

// slotToxic runs its slot's Toxiproxy toxic on the stream while one is
// switched on, and passes the stream through otherwise.
type slotToxic struct {
	Link string `json:"link"`
	Dir  string `json:"dir"`
	Slot int    `json:"slot"`
}

// GetBufferSize lets a latency toxic in the slot hold chunks as it does
// when Toxiproxy runs it itself.
func (t *slotToxic) GetBufferSize() int { return 1024 }

func (t *slotToxic) Pipe(stub *toxics.ToxicStub) {
	l := linkNamed(t.Link)
	if l == nil {
		new(toxics.NoopToxic).Pipe(stub)
		return
	}
	for {
		tc, changed := l.slot(t.Dir, t.Slot)
		if tc == nil {
			select {
			case <-stub.Interrupt:
				return
			case <-changed:
			case c := <-stub.Input:
				if c == nil {
					stub.Close()
					return
				}
				stub.Output <- c
			}
			continue
		}
		if _, ok := tc.(*toxics.ResetToxic); ok {
			l.lingerAll() // this connection too, should it be new
		}
		// The toxic runs on a stub of its own over the same channels, so
		// switching it off is an interrupt of ours.
		in := toxics.NewToxicStub(stub.Input, stub.Output)
		if st, ok := tc.(toxics.StatefulToxic); ok {
			in.State = st.NewState()
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			in.Run(&toxics.ToxicWrapper{Toxic: tc, Toxicity: 1})
		}()
		select {
		case <-done:
			// The toxic ended the stream (its end, a reset, a limit).
			return
		case <-changed:
			if !in.InterruptToxic() {
				<-done
				return // it ended the stream meanwhile
			}
			<-done
		case <-stub.Interrupt:
			in.InterruptToxic()
			<-done
			return
		}
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
// twice the interval before (capped at 120 times the first, two minutes).
// A link may scale the 1 s with the other durations of a test
// (chaosLink.rto).
type partitionToxic struct {
	Link string `json:"link"`
	Dir  string `json:"dir"`
}

// partitionRTO is TCP's initial retransmission timeout: the first
// retransmission of held bytes.
const partitionRTO = time.Second

// heldBytes is what one direction of one connection holds.
type heldBytes struct {
	dir    string
	chunks []*stream.StreamChunk
	eof    bool      // the end of the stream came while held
	first  time.Time // when the first byte (or the end) was held
	head   []byte    // the first held bytes, for heldSince
}

func (l *chaosLink) setDown(down bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down != down {
		l.down = down
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// heldSince returns when the oldest upstream stream now held whose held
// bytes begin with prefix was first held (a request sent into the dead link
// and not yet delivered).
func (l *chaosLink) heldSince(prefix string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var at time.Time
	for _, h := range l.held {
		if h.dir == "upstream" && len(h.chunks) > 0 && bytes.HasPrefix(h.head, []byte(prefix)) && (at.IsZero() || h.first.Before(at)) {
			at = h.first
		}
	}
	return at, !at.IsZero()
}

// empty reports whether the link holds nothing.
func (l *chaosLink) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.held) == 0
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
// otherwise it holds them. What one stub holds lives in the link, so an
// interrupt loses nothing: the next Pipe on the stub resumes.
func (t *partitionToxic) Pipe(stub *toxics.ToxicStub) {
	l := linkNamed(t.Link)
	if l == nil {
		new(toxics.NoopToxic).Pipe(stub)
		return
	}
	input := stub.Input
	for {
		l.mu.Lock()
		down, changed, h, rto := l.down, l.changed, l.held[stub], l.rto
		l.mu.Unlock()
		if h != nil && h.eof {
			input = nil // the stream ended; only its delivery is left
		}
		var deliver <-chan time.Time
		var timer *time.Timer
		if !down && h != nil {
			timer = time.NewTimer(time.Until(nextRetransmission(h.first, time.Now(), rto)))
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
			l.mu.Lock()
			delete(l.held, stub)
			l.mu.Unlock()
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
			l.mu.Lock()
			if h == nil {
				h = &heldBytes{dir: t.Dir, first: time.Now()}
				l.held[stub] = h
			}
			if c == nil {
				h.eof = true
			} else {
				h.chunks = append(h.chunks, c)
				if len(h.head) < 64 {
					h.head = append(h.head, c.Data[:min(len(c.Data), 64-len(h.head))]...)
				}
			}
			l.mu.Unlock()
		}
	}
}

// meterToxic is the last stage of each direction: it passes every chunk on
// and, on the Socket.IO WebSocket (whose Engine.IO pings and pongs a slow
// link delays), notes in its link how long the chunk's bytes spent in the
// proxy since Toxiproxy read them. A toxic that slows the link (a slicer
// on a busy machine, a trickle) shows there as a transit time.
type meterToxic struct {
	Link string `json:"link"`
	Dir  string `json:"dir"`
}

func (t *meterToxic) Pipe(stub *toxics.ToxicStub) {
	l := linkNamed(t.Link)
	// A connection is the WebSocket when its first bytes say so (the
	// upgrade request up, the 101 answer down).
	first, websocket := true, false
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if first {
				first = false
				websocket = bytes.Contains(c.Data, []byte("transport=websocket")) || bytes.HasPrefix(c.Data, []byte("HTTP/1.1 101 "))
			}
			if websocket && l != nil {
				l.noteTransit(t.Dir, time.Since(c.Timestamp))
			}
			stub.Output <- c
		}
	}
}

func (l *chaosLink) noteTransit(dir string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.transit[dir] = max(l.transit[dir], d)
}

// resetTransit forgets the transit times noted so far.
func (l *chaosLink) resetTransit() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.transit)
}

// longestTransit is the longest a byte of the WebSocket took through the
// proxy in dir since resetTransit.
func (l *chaosLink) longestTransit(dir string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.transit[dir]
}
