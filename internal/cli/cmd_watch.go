package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/fleet"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// watchCmd runs a realtime gateway for each watched object (those holding
// the devids of --cloud.modules, else every object of --cloud.object-id or
// of the account), as serve does, and prints every live parameter change,
// and every change of state of a session, a module or live push, until
// interrupted: one line each, stamped with the time it was seen, as text or
// as one JSON object. The gateways re-bind and re-prime across reconnects,
// so the stream resumes by itself. Once the parameter
// catalog is read (after the first snapshot; unless --catalog.disable) each
// change of a described register also carries the parameter's name and the
// value the app displays, with its unit.
type watchCmd struct {
	cloudFlags         `embed:""`
	healthFlags        `embed:""`
	catalogCommonFlags `embed:""`

	Output  string   `name:"output" short:"o" default:"table" enum:"table,json" help:"Output format: table (a line of text per event) or json (a JSON object per line)."`
	Filter  []string `name:"filter" help:"Print only parameters whose register matches one of these patterns (path.Match on e.g. P4.v8: P4.v*)."`
	NoState bool     `name:"no-state" help:"Print parameter changes only, no session, module and push state events."`
}

const (
	// watchStatusTick is how often the gateway's published status is
	// compared with the last one for state events.
	watchStatusTick = 100 * time.Millisecond
	// maxQueuedEvents bounds the events waiting for a slow stdout; beyond
	// it events are counted and reported, never allowed to block the
	// gateway.
	maxQueuedEvents = 100_000
)

// The events of watch, the event member of its JSON lines.
const (
	eventChange             = "change"  // a live parameter change
	eventReady              = "ready"   // the first snapshot is stored
	eventCatalog            = "catalog" // the parameter catalog is read
	eventSessionUp          = "session_up"
	eventSessionPending     = "session_disconnected" // an outage unless back within the hysteresis
	eventSessionDown        = "session_down"
	eventSessionRecovered   = "session_recovered" // went down and came back between two looks
	eventSessionBlink       = "session_blink"     // reconnected within the hysteresis
	eventSessionReconnected = "session_reconnected"
	eventSessionClosed      = "session_closed"
	eventModuleOnline       = "module_online"
	eventModuleOffline      = "module_offline"
	eventModuleRecovered    = "module_recovered" // went offline and came back between two looks
	eventPush               = "push"             // live push health changed
	eventDropped            = "dropped"          // events lost to a slow stdout
)

// watchEvent is one thing watch saw.
type watchEvent struct {
	at     time.Time
	kind   string        // its event
	text   string        // its line for people, after the time
	fields orderedObject // its members after time and event, for JSON
}

// render is the event's line: the time, then the text or the JSON object.
func (e watchEvent) render(asJSON bool) []byte {
	stamp := e.at.Format(eventTimeLayout)
	if !asJSON {
		return []byte(stamp + " " + e.text + "\n")
	}
	line, err := jsonLine(append(orderedObject{{keyTime, stamp}, {keyEvent, e.kind}}, e.fields...))
	if err != nil { // a value JSON cannot hold: say so rather than lose the event
		line, _ = jsonLine(orderedObject{{keyTime, stamp}, {keyEvent, e.kind}, {keyReason, err.Error()}})
	}
	return line
}

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
	var fl *fleet.Fleet // set below, before anything logs in
	client, platform, err := c.cloudFlags.newClient(g, func(cfg *cloudclient.Config) {
		cfg.LoginObserver = func(o cloudapi.LoginOutcome) {
			if o == cloudapi.LoginOK && fl != nil {
				fl.Relist() // a login is when objects change hands: read them again, as serve does
			}
		}
	})
	if err != nil {
		return err
	}
	defer c.cloudFlags.closeSimulation() // after the logout deferred below
	st := store.New()
	q := newEventQueue(maxQueuedEvents)
	var cat atomic.Pointer[catalog.Catalog] // nil until read
	onLive := func(updates []wire.ParamUpdate) {
		now := time.Now()
		events := make([]watchEvent, 0, len(updates))
		named := cat.Load()
		for _, u := range updates {
			if !u.HasValue || !filter.match(u.Key()) {
				continue
			}
			// The update is stored already, so the store reads it.
			events = append(events, changeEvent(now, u, named, st))
		}
		q.push(events...)
	}
	// The objects are watched as serve watches them: one gateway an object
	// (those holding the devids of --cloud.modules, else every object of
	// --cloud.object-id or of the account), all sharing the login and the
	// store, following objects that join or leave the account.
	fcfg := exporter.FleetConfig(c.cloud(), c.health(), client, platform, st, g.Logger)
	gateway := fcfg.Gateway
	fcfg.Gateway = func(objectID int) realtime.Config {
		cfg := gateway(objectID)
		cfg.OnLive = onLive
		return cfg
	}
	if fl, err = fleet.New(fcfg); err != nil {
		return usageError{err}
	}
	if _, err := realtime.New(c.healthFlags.gatewayConfig(&c.cloudFlags, client, platform, st, g.Logger)); err != nil {
		return usageError{err}
	}
	// Log in before starting the gateways, so wrong credentials and an
	// unreachable cloud fail at once instead of being retried.
	if _, err := client.Login(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while logging in
		}
		return loginFailed(err)
	}
	defer client.LogoutOnExit()

	printed := make(chan struct{})
	go func() {
		defer close(printed)
		q.drainTo(g.Stdout, c.Output == "json", time.Now)
	}()
	defer func() {
		q.close()
		<-printed
	}()

	done := make(chan error, 1)
	go func() { done <- fl.Run(ctx) }()
	if len(c.Filter) > 0 {
		// Once the first snapshots are stored: a filter that lets no
		// stored register through would print nothing, silently.
		go func() {
			select {
			case <-fl.Ready():
			case <-ctx.Done():
				return
			}
			if !filter.matchesAny(st, st.Devids()) {
				g.Logger.Warn(fmt.Sprintf("--filter %s matches no register of the watched modules (registers are written like P4.v8; any case matches)",
					strings.Join(c.Filter, ",")))
			}
		}()
	}
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
			c.readCatalog(catCtx, fl, client, st, &cat, q, g)
		}()
	}
	states := objectTrackers{hysteresis: c.SessionHysteresis}
	ticker := time.NewTicker(watchStatusTick)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			if !c.NoState {
				q.push(states.observe(fl.Status(), st, time.Now())...)
			}
			return exporter.StartError(err)
		case <-ticker.C:
			if !c.NoState {
				q.push(states.observe(fl.Status(), st, time.Now())...)
			}
		}
	}
}

// objectTrackers follow the watched objects' gateways, a stateTracker
// each.
type objectTrackers struct {
	hysteresis time.Duration
	byObject   map[int]*stateTracker
}

// observe turns the account's status into the events of each object's
// changes; while several objects are watched, their sessions' lines name
// them.
func (o *objectTrackers) observe(s *fleet.Status, st *store.Store, now time.Time) []watchEvent {
	if o.byObject == nil {
		o.byObject = map[int]*stateTracker{}
	}
	var events []watchEvent
	for _, obj := range s.Objects {
		t := o.byObject[obj.Object.ID]
		if t == nil {
			t = &stateTracker{hysteresis: o.hysteresis, objectID: obj.Object.ID}
			o.byObject[obj.Object.ID] = t
		}
		t.object = ""
		if len(s.Objects) > 1 {
			t.object = "object " + objectRef(obj.Object)
		}
		events = append(events, t.observe(obj.Gateway, st, now)...)
	}
	return events
}

// changeEvent is a live change of a register, named by the catalog (nil
// before it is read) where it describes the register.
func changeEvent(now time.Time, u wire.ParamUpdate, cat *catalog.Catalog, st *store.Store) watchEvent {
	register := u.Key()
	text := fmt.Sprintf("%s %s = %s (live)", u.Devid, register, formatValue(u.Value))
	var symbol, name, value, unit any
	if cat != nil {
		if p := cat.Module(u.Devid).Lookup(u.Pool, string(u.Chan)+strconv.Itoa(u.Idx)); p != nil {
			symbol, name = p.Symbol, p.Name
			value, unit = displayed(p, st.Reader(u.Devid))
			text += " · " + withUnit(p.Name, displayedText(value, unit))
		}
	}
	return watchEvent{at: now, kind: eventChange, text: text, fields: orderedObject{
		{keyDevid, u.Devid}, {keyRegister, register}, {keyRaw, u.Value}, {keySymbol, symbol},
		{keyName, name}, {keyValue, value}, {keyUnit, unit},
	}}
}

// readCatalog reads the parameter catalog once every object watched from
// the start has stored its first snapshot, for the modules the listings
// described, and hands it to the event printer; a failure leaves the events
// without names.
func (c *watchCmd) readCatalog(ctx context.Context, fl *fleet.Fleet, fetch catalog.Fetcher, st *store.Store,
	cat *atomic.Pointer[catalog.Catalog], q *eventQueue, g *Globals) {
	select {
	case <-fl.Ready():
	case <-ctx.Done():
		return
	}
	var specs []catalog.ModuleSpec
	for _, o := range fl.Status().Objects {
		specs = append(specs, exporter.ModuleSpecs(o.Gateway, st)...)
	}
	loaded, err := c.load(ctx, fetch, specs, false, g.Logger)
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
		q.push(watchEvent{at: time.Now(), kind: eventCatalog,
			text:   fmt.Sprintf("# catalog: %d parameters named (%s, language %s)", named, loaded.IndexAsset(), loaded.Language()),
			fields: orderedObject{{keyParameters, named}, {keyIndexAsset, loaded.IndexAsset()}, {keyLanguage, loaded.Language()}},
		})
	}
}

// stateTracker turns successive gateway statuses into events for the
// changes between them. A down-and-up faster than one status tick is still
// reported, from the outage and blink counters.
type stateTracker struct {
	hysteresis time.Duration
	objectID   int    // the gateway's object, in the JSON of its session's events
	object     string // names it in their text when watch runs several ("object 5747 Home")
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

// stateEvent is a change of state seen at now.
func stateEvent(now time.Time, kind, text string, fields ...orderedMember) watchEvent {
	return watchEvent{at: now, kind: kind, text: text, fields: fields}
}

// sessionEvent is a change of the tracker's session or live push seen at
// now: its JSON names the object, and so does its text when watch runs
// several.
func (t *stateTracker) sessionEvent(now time.Time, kind, text string, fields ...orderedMember) watchEvent {
	if t.object != "" {
		text = "# " + t.object + ": " + strings.TrimPrefix(text, "# ")
	}
	return stateEvent(now, kind, text, append([]orderedMember{{keyObjectID, t.objectID}}, fields...)...)
}

func (t *stateTracker) observe(s *realtime.Status, st *store.Store, now time.Time) []watchEvent {
	if s == nil {
		return nil
	}
	var events []watchEvent
	if s.Ready && !t.ready {
		t.ready = true
		params := 0
		stats := st.Stats()
		for _, d := range s.Subscribed {
			params += stats[d].Params
		}
		modules := make([]orderedObject, len(s.Subscribed))
		for i, d := range s.Subscribed {
			modules[i] = orderedObject{{keyDevid, d}}
		}
		events = append(events, stateEvent(now, eventReady,
			fmt.Sprintf("# ready: object %d, modules %v, %d parameters primed", s.ObjectID, s.Subscribed, params),
			orderedMember{keyObjectID, s.ObjectID}, orderedMember{keyModules, modules}, orderedMember{keyParameters, params}))
	}
	events = append(events, t.observeSession(s, now)...)
	events = append(events, t.observeModules(s, st, now)...)

	if t.session != "up" {
		t.push = "" // push health is reported while a session is up
		return events
	}
	push := s.Push.State.String()
	if push != t.push {
		if t.push != "" && s.Push.State != outage.PushUnknown {
			text := "# live push " + push
			var stale any
			if s.Push.HasStaleFor {
				text += fmt.Sprintf(" (no live update for %s)", s.Push.LiveStaleFor.Round(time.Second))
				stale = s.Push.LiveStaleFor.Seconds()
			}
			events = append(events, t.sessionEvent(now, eventPush, text, orderedMember{keyState, push}, orderedMember{keyStaleSeconds, stale}))
		}
		t.push = push
	}
	return events
}

func (t *stateTracker) observeSession(s *realtime.Status, now time.Time) []watchEvent {
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
	one := func(kind, text string, fields ...orderedMember) []watchEvent {
		return []watchEvent{t.sessionEvent(now, kind, text, fields...)}
	}
	if session == t.session {
		if session != "up" || t.session == "" {
			return nil
		}
		// Still up, but it may have gone down and come back between ticks.
		switch {
		case outages > t.sessionOutages && ss.Outage.HasLast:
			downFor := ss.Outage.LastDownFor
			return one(eventSessionRecovered,
				fmt.Sprintf("# session down (%s) for %s, up again", dash(ss.Outage.LastReason), downFor.Round(time.Millisecond)),
				orderedMember{keyReason, orNull(ss.Outage.LastReason)}, orderedMember{keyDownSeconds, downFor.Seconds()})
		case blinks > t.sessionBlinks:
			return one(eventSessionBlink, fmt.Sprintf("# session blinked: reconnected within the %s hysteresis", t.hysteresis),
				orderedMember{keyHysteresis, t.hysteresis.Seconds()})
		case !ss.UpSince.Equal(t.upSince) && !t.upSince.IsZero():
			return one(eventSessionReconnected, "# session reconnected")
		}
		return nil
	}
	prev := t.session
	t.session = session
	switch session {
	case "up":
		return one(eventSessionUp, "# session up")
	case "pending":
		return one(eventSessionPending,
			fmt.Sprintf("# session disconnected (%s); an outage if not back within %s", dash(ss.PendingReason), t.hysteresis),
			orderedMember{keyReason, orNull(ss.PendingReason)}, orderedMember{keyHysteresis, t.hysteresis.Seconds()})
	case "down":
		if prev == "" {
			return nil // not connected yet
		}
		reason := ss.PendingReason
		if ss.Outage.Down {
			reason = ss.Outage.Reason
		}
		return one(eventSessionDown, fmt.Sprintf("# session down (%s)", dash(reason)), orderedMember{keyReason, orNull(reason)})
	case "stopped":
		if prev == "" {
			return nil
		}
		return one(eventSessionClosed, "# session closed")
	}
	return nil
}

func (t *stateTracker) observeModules(s *realtime.Status, st *store.Store, now time.Time) []watchEvent {
	if t.modules == nil {
		t.modules = map[string]moduleSeen{}
	}
	var events []watchEvent
	for _, m := range s.Modules {
		if !m.Known {
			continue
		}
		seenNow := moduleSeen{online: m.Online, outages: sum(m.Outages)}
		was, seen := t.modules[m.Devid]
		t.modules[m.Devid] = seenNow
		devid := orderedMember{keyDevid, m.Devid}
		switch {
		case seen && was.online == seenNow.online:
			if seenNow.online && seenNow.outages > was.outages && m.Outage.HasLast {
				downFor := m.Outage.LastDownFor
				events = append(events, stateEvent(now, eventModuleRecovered,
					fmt.Sprintf("# module %s offline (%s) for %s, online again", m.Devid, dash(m.Outage.LastReason), downFor.Round(time.Millisecond)),
					devid, orderedMember{keyReason, orNull(m.Outage.LastReason)}, orderedMember{keyDownSeconds, downFor.Seconds()}))
			}
		case seenNow.online:
			events = append(events, stateEvent(now, eventModuleOnline, fmt.Sprintf("# module %s online", m.Devid), devid))
		default:
			// Its values stop being current: say how old the newest is.
			text := fmt.Sprintf("# module %s offline (%s)", m.Devid, dash(m.Outage.Reason))
			last := st.Stats()[m.Devid].LastUpdate
			if !last.IsZero() {
				text += fmt.Sprintf("; its values are stale, the newest arrived %s ago (%s)",
					now.Sub(last).Round(time.Second), last.Format(eventTimeLayout))
			}
			events = append(events, stateEvent(now, eventModuleOffline, text,
				devid, orderedMember{keyReason, orNull(m.Outage.Reason)}, orderedMember{keyStale, true}, orderedMember{keyAsOf, timeOrNull(last)}))
		}
	}
	return events
}

// eventQueue hands events from the gateway's goroutine (which must never
// block) to the goroutine writing stdout.
type eventQueue struct {
	limit   int // events held at most; beyond it they are counted as dropped
	mu      sync.Mutex
	events  []watchEvent
	dropped int
	closed  bool
	wake    chan struct{}
}

func newEventQueue(limit int) *eventQueue {
	return &eventQueue{limit: limit, wake: make(chan struct{}, 1)}
}

func (q *eventQueue) push(events ...watchEvent) {
	if len(events) == 0 {
		return
	}
	q.mu.Lock()
	room := q.limit - len(q.events)
	if room < len(events) {
		q.dropped += len(events) - max(room, 0)
		events = events[:max(room, 0)]
	}
	q.events = append(q.events, events...)
	q.mu.Unlock()
	q.signal()
}

func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *eventQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drainTo writes events as they come until the queue is closed and empty;
// a count of dropped events is itself an event, stamped by now.
func (q *eventQueue) drainTo(w io.Writer, asJSON bool, now func() time.Time) {
	for range q.wake {
		q.mu.Lock()
		events, dropped, closed := q.events, q.dropped, q.closed
		q.events, q.dropped = nil, 0
		q.mu.Unlock()
		if dropped > 0 {
			w.Write(stateEvent(now(), eventDropped, fmt.Sprintf("# %d events dropped: output too slow", dropped),
				orderedMember{keyCount, dropped}).render(asJSON))
		}
		for _, e := range events {
			w.Write(e.render(asJSON))
		}
		if closed {
			return
		}
	}
}
