package transport

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// A connect attempt sent into a dead link waits for TCP's retransmissions:
// a SYN or a request sent during a partition is retransmitted at growing
// intervals (1 s, 2 s, 4 s, ... for a SYN), so when the link comes back the
// attempt may hear nothing for seconds more, and without anything else
// nothing would end it before ConnectTimeout (20 s). A fresh connection
// would get through at once. Connect therefore probes the link while its
// attempt hears nothing: every ProbeInterval it sends one request (HEAD /)
// on a fresh connection and notes when, if ever, an answer comes back. The
// probes tell a dead link that has come back from a slow link or a slow
// cloud (see attemptStale); an attempt found waiting in a dead link is
// abandoned (its connection closed) and Connect makes a fresh one, inside
// the same ConnectTimeout.

// probeRecord is what the staleness rule reads of one probe.
type probeRecord struct {
	sent     time.Time
	answered time.Time // zero while no answer came
	pending  bool      // still waiting for its answer
	gaveUp   time.Time // when it was cancelled unanswered (zero otherwise)
}

// waited returns the probe's round trip, or how long it went unanswered
// (so far, or until it was given up); false for a probe that failed (a
// refused or reset connection says nothing about the link's delay).
func (p probeRecord) waited(now time.Time) (time.Duration, bool) {
	switch {
	case !p.answered.IsZero():
		return p.answered.Sub(p.sent), true
	case p.pending:
		return now.Sub(p.sent), true
	case !p.gaveUp.IsZero():
		return p.gaveUp.Sub(p.sent), true
	}
	return 0, false
}

// staleFactor: a probe that waited this many round trips of a later probe
// (plus the margin) was sent into a dead link.
const staleFactor = 3

// attemptStale reports whether an attempt that has heard nothing from the
// cloud since silentSince is waiting in a link that was dead and is back:
// a probe sent after silentSince waited (for its answer, or in vain)
// staleFactor times as long as a later probe's round trip, plus margin.
// The attempt's own request went into the link no later than that probe,
// so it met the same dead link, and TCP retransmits it on a schedule of
// its own: a fresh attempt gets through now.
//
// A slow link answers every probe slowly; a slow cloud answers every probe
// at once while the attempt waits: in neither does a probe wait several
// times as long as a later one. Jitter varies round trips, but not by a
// factor of staleFactor plus the margin; a caller that still finds an
// attempt stale and then sees the fresh one wait as long doubles the
// margin.
func attemptStale(silentSince time.Time, probes []probeRecord, margin time.Duration, now time.Time) bool {
	for _, k := range probes {
		if k.answered.IsZero() || !k.sent.After(silentSince) {
			continue
		}
		rtt := k.answered.Sub(k.sent)
		for _, i := range probes {
			if i.sent.Before(silentSince) || !i.sent.Before(k.sent) {
				continue
			}
			if w, ok := i.waited(now); ok && w >= staleFactor*rtt+margin {
				return true
			}
		}
	}
	return false
}

// linkProbe is one probe in flight or done.
type linkProbe struct {
	probeRecord
	cancel context.CancelFunc
}

// linkWatch probes the cloud's address for one Connect. It keeps at most
// two probes waiting: the oldest (the evidence that the link was dead) and
// the newest (the chance to hear that it is back); a probe in between is
// cancelled when a newer one starts.
type linkWatch struct {
	ctx    context.Context
	hc     *http.Client
	url    string
	wake   chan struct{} // a probe finished
	wg     sync.WaitGroup
	mu     sync.Mutex
	probes []*linkProbe
	last   time.Time // when the last probe was sent
}

func newLinkWatch(ctx context.Context, hc *http.Client, url string) *linkWatch {
	return &linkWatch{ctx: ctx, hc: hc, url: url, wake: make(chan struct{}, 1)}
}

// newProbeClient is the HTTP client of the probes: a fresh connection for
// every probe (a pooled one may be the dead one), no redirects followed
// (any answer will do).
func newProbeClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             http.ProxyFromEnvironment,
			DialContext:       (&net.Dialer{}).DialContext,
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// lastSent returns when the last probe was sent (zero before the first).
func (w *linkWatch) lastSent() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// send starts a probe at now.
func (w *linkWatch) send(now time.Time) {
	ctx, cancel := context.WithCancel(w.ctx)
	p := &linkProbe{probeRecord: probeRecord{sent: now, pending: true}, cancel: cancel}
	w.mu.Lock()
	w.last = now
	// Keep the oldest waiting probe and drop the newest one before this.
	var waiting []*linkProbe
	for _, q := range w.probes {
		if q.pending {
			waiting = append(waiting, q)
		}
	}
	if len(waiting) >= 2 {
		drop := waiting[len(waiting)-1]
		drop.cancel()
		drop.pending, drop.gaveUp = false, now
	}
	w.probes = append(w.probes, p)
	w.mu.Unlock()

	req, err := http.NewRequestWithContext(ctx, http.MethodHead, w.url, nil)
	if err != nil {
		w.finish(p, time.Time{})
		return
	}
	w.wg.Go(func() {
		resp, err := w.hc.Do(req)
		if err != nil {
			w.finish(p, time.Time{}) // no answer: refused, reset, or cancelled
			return
		}
		_ = resp.Body.Close()
		w.finish(p, time.Now())
	})
}

func (w *linkWatch) finish(p *linkProbe, answered time.Time) {
	w.mu.Lock()
	p.pending, p.answered = false, answered
	w.mu.Unlock()
	p.cancel()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// records returns the probes as the staleness rule reads them.
func (w *linkWatch) records() []probeRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]probeRecord, len(w.probes))
	for i, p := range w.probes {
		out[i] = p.probeRecord
	}
	return out
}

// reset cancels every probe: a fresh attempt starts a fresh record.
func (w *linkWatch) reset() {
	w.mu.Lock()
	for _, p := range w.probes {
		p.cancel()
		p.pending = false
	}
	w.probes = nil
	w.last = time.Time{}
	w.mu.Unlock()
}

// stop cancels every probe and waits for their goroutines.
func (w *linkWatch) stop() {
	w.reset()
	w.wg.Wait()
}
