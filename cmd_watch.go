package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// watchCmd runs the realtime gateway, as serve does, and prints every live
// parameter change, plus a "#" line whenever the session, a module or live
// push health changes state, until interrupted. The gateway re-binds and
// re-primes across reconnects, so the stream resumes by itself. Once the
// parameter catalog is read (after the first snapshot; unless
// --catalog.disable) each change of a described register also shows the
// parameter's name and the value the app displays, with its unit.
type watchCmd struct {
	cloudFlags         `embed:""`
	healthFlags        `embed:""`
	catalogCommonFlags `embed:""`

	Filter  []string `name:"filter" help:"Print only parameters whose key matches one of these patterns (path.Match on e.g. P4.v8: P4.v*)."`
	NoState bool     `name:"no-state" help:"Print parameter changes only, no session, module and push state lines."`
}

const (
	// watchStatusTick is how often the gateway's published status is
	// compared with the last one for state lines.
	watchStatusTick = 100 * time.Millisecond
	// maxQueuedLines bounds the lines waiting for a slow stdout; beyond it
	// lines are counted and reported, never allowed to block the gateway.
	maxQueuedLines = 100_000
)

func (c *watchCmd) Run(ctx context.Context, g *Globals) error {
	if err := c.healthFlags.validate(); err != nil {
		return err
	}
	filter := keyFilter(c.Filter)
	if err := filter.validate("--filter"); err != nil {
		return err
	}
	if _, err := c.overrides(); err != nil {
		return err
	}
	client, platform, err := c.cloudFlags.newClient(g, nil)
	if err != nil {
		return err
	}
	// Log in before starting the gateway, so wrong credentials and an
	// unreachable cloud fail at once instead of being retried.
	if _, err := client.Login(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while logging in
		}
		return loginError(err)
	}
	defer func() {
		logoutCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if err := client.Logout(logoutCtx); err != nil {
			g.Logger.Debug("logout", "err", err)
		}
	}()

	q := newLineQueue()
	st := store.New()
	var cat atomic.Pointer[catalog.Catalog] // nil until read
	cfg := c.healthFlags.gatewayConfig(&c.cloudFlags, client, platform, st, g.Logger)
	cfg.OnLive = func(updates []wire.ParamUpdate) {
		lines := make([]string, 0, len(updates))
		named := cat.Load()
		for _, u := range updates {
			if !u.HasValue || !filter.match(u.Key()) {
				continue
			}
			line := fmt.Sprintf("%s %s = %s (live)", u.Devid, u.Key(), formatValue(u.Value))
			if named != nil {
				// The update is stored already, so the store reads it.
				p := named.Module(u.Devid).Lookup(u.Pool, string(u.Chan)+strconv.Itoa(u.Idx))
				if p != nil {
					line += " · " + p.Name
					if v, unit, ok := shownValue(p, storeReader(st, u.Devid)); ok {
						line += " " + withUnit(v, unit)
					}
				}
			}
			lines = append(lines, line)
		}
		q.push(lines...)
	}
	gw, err := realtime.New(cfg)
	if err != nil {
		return usageError{err}
	}

	printed := make(chan struct{})
	go func() {
		defer close(printed)
		q.drainTo(g.Stdout)
	}()
	defer func() {
		q.close()
		<-printed
	}()

	done := make(chan error, 1)
	go func() { done <- gw.Run(ctx) }()
	if !c.Disable {
		// Stopped with the command, however it ends, before the printer.
		catCtx, stopCatalog := context.WithCancel(ctx)
		loaded := make(chan struct{})
		defer func() {
			stopCatalog()
			<-loaded
		}()
		go func() {
			defer close(loaded)
			c.readCatalog(catCtx, gw, client, st, &cat, q, g)
		}()
	}
	var states stateTracker
	states.hysteresis = c.SessionHysteresis
	ticker := time.NewTicker(watchStatusTick)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			if !c.NoState {
				q.push(states.observe(gw.Status(), st)...)
			}
			return startError(err)
		case <-ticker.C:
			if !c.NoState {
				q.push(states.observe(gw.Status(), st)...)
			}
		}
	}
}

// readCatalog reads the parameter catalog once the first snapshot is
// stored, for the modules the listing described, and hands it to the line
// printer; a failure leaves the lines without names.
func (c *watchCmd) readCatalog(ctx context.Context, gw *realtime.Gateway, fetch catalog.Fetcher, st *store.Store,
	cat *atomic.Pointer[catalog.Catalog], q *lineQueue, g *Globals) {
	select {
	case <-gw.Ready():
	case <-ctx.Done():
		return
	}
	loaded, err := c.load(ctx, fetch, moduleSpecs(gw.Status(), st), false, g.Logger)
	if err != nil || loaded == nil {
		if err != nil && ctx.Err() == nil {
			g.Logger.Warn("parameters are shown without names", "err", err)
		}
		return
	}
	cat.Store(loaded)
	if !c.NoState {
		named := 0
		for _, m := range loaded.Modules() {
			named += len(m.Params())
		}
		q.push(fmt.Sprintf("# catalog: %d parameters named (%s, language %s)", named, loaded.IndexAsset(), loaded.Language()))
	}
}

// stateTracker turns successive gateway statuses into "#" lines for the
// changes between them. A down-and-up faster than one status tick is still
// reported, from the outage and blink counters.
type stateTracker struct {
	hysteresis time.Duration
	ready      bool

	session        string // "", "up", "pending", "down", "stopped"
	sessionOutages uint64
	sessionBlinks  uint64
	upSince        time.Time

	modules map[string]moduleSeen
	push    string // "" until observed during the current session
}

type moduleSeen struct {
	online  bool
	outages uint64
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func (t *stateTracker) observe(s *realtime.Status, st *store.Store) []string {
	if s == nil {
		return nil
	}
	var lines []string
	if s.Ready && !t.ready {
		t.ready = true
		params := 0
		for _, ms := range st.Stats() {
			params += ms.Params
		}
		lines = append(lines, fmt.Sprintf("# ready: object %d, modules %v, %d parameters primed", s.ObjectID, s.Subscribed, params))
	}
	lines = append(lines, t.observeSession(s)...)
	lines = append(lines, t.observeModules(s)...)

	if t.session != "up" {
		t.push = "" // push health is reported while a session is up
		return lines
	}
	push := s.Push.State.String()
	if push != t.push {
		if t.push != "" && s.Push.State != outage.PushUnknown {
			line := "# live push " + push
			if s.Push.HasStaleFor {
				line += fmt.Sprintf(" (no live update for %s)", s.Push.LiveStaleFor.Round(time.Second))
			}
			lines = append(lines, line)
		}
		t.push = push
	}
	return lines
}

func (t *stateTracker) observeSession(s *realtime.Status) []string {
	ss := s.Session
	outages, blinks := sum(ss.Outages), ss.Blinks
	defer func() { t.sessionOutages, t.sessionBlinks, t.upSince = outages, blinks, ss.UpSince }()

	session := "down"
	switch {
	case s.Connected:
		session = "up"
	case ss.Up:
		session = "pending"
	case ss.State == outage.SessionIdle:
		session = "stopped"
	}
	if session == t.session {
		if session != "up" || t.session == "" {
			return nil
		}
		// Still up, but it may have gone down and come back between ticks.
		switch {
		case outages > t.sessionOutages && ss.Outage.HasLast:
			return []string{fmt.Sprintf("# session down (%s) for %s, up again", dash(ss.Outage.LastReason), ss.Outage.LastDownFor.Round(time.Millisecond))}
		case blinks > t.sessionBlinks:
			return []string{fmt.Sprintf("# session blinked: reconnected within the %s hysteresis", t.hysteresis)}
		case !ss.UpSince.Equal(t.upSince) && !t.upSince.IsZero():
			return []string{"# session reconnected"}
		}
		return nil
	}
	prev := t.session
	t.session = session
	switch session {
	case "up":
		return []string{"# session up"}
	case "pending":
		return []string{fmt.Sprintf("# session disconnected (%s); an outage if not back within %s", dash(ss.PendingReason), t.hysteresis)}
	case "down":
		if prev == "" {
			return nil // not connected yet
		}
		reason := ss.PendingReason
		if ss.Outage.Down {
			reason = ss.Outage.Reason
		}
		return []string{fmt.Sprintf("# session down (%s)", dash(reason))}
	case "stopped":
		if prev == "" {
			return nil
		}
		return []string{"# session closed"}
	}
	return nil
}

func (t *stateTracker) observeModules(s *realtime.Status) []string {
	if t.modules == nil {
		t.modules = map[string]moduleSeen{}
	}
	var lines []string
	for _, m := range s.Modules {
		if !m.Known {
			continue
		}
		now := moduleSeen{online: m.Online, outages: sum(m.Outages)}
		was, seen := t.modules[m.Devid]
		t.modules[m.Devid] = now
		switch {
		case seen && was.online == now.online:
			if now.online && now.outages > was.outages && m.Outage.HasLast {
				lines = append(lines, fmt.Sprintf("# module %s offline (%s) for %s, online again", m.Devid, dash(m.Outage.LastReason), m.Outage.LastDownFor.Round(time.Millisecond)))
			}
		case now.online:
			lines = append(lines, fmt.Sprintf("# module %s online", m.Devid))
		default:
			lines = append(lines, fmt.Sprintf("# module %s offline (%s)", m.Devid, dash(m.Outage.Reason)))
		}
	}
	return lines
}

// lineQueue hands lines from the gateway's goroutine (which must never
// block) to the goroutine writing stdout.
type lineQueue struct {
	mu      sync.Mutex
	lines   []string
	dropped int
	closed  bool
	wake    chan struct{}
}

func newLineQueue() *lineQueue { return &lineQueue{wake: make(chan struct{}, 1)} }

func (q *lineQueue) push(lines ...string) {
	if len(lines) == 0 {
		return
	}
	q.mu.Lock()
	room := maxQueuedLines - len(q.lines)
	if room < len(lines) {
		q.dropped += len(lines) - max(room, 0)
		lines = lines[:max(room, 0)]
	}
	q.lines = append(q.lines, lines...)
	q.mu.Unlock()
	q.signal()
}

func (q *lineQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *lineQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drainTo writes lines as they come until the queue is closed and empty.
func (q *lineQueue) drainTo(w io.Writer) {
	for range q.wake {
		q.mu.Lock()
		lines, dropped, closed := q.lines, q.dropped, q.closed
		q.lines, q.dropped = nil, 0
		q.mu.Unlock()
		if dropped > 0 {
			fmt.Fprintf(w, "# %d lines dropped: output too slow\n", dropped)
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
		if closed {
			return
		}
	}
}
