package realtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/lifecycle"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// ErrStartAuth is returned by Run when the cloud rejects the credentials at
// start: a configuration problem no retry will cure.
var ErrStartAuth = errors.New("realtime: the cloud rejected the login")

// Gateway keeps one realtime session to the cloud healthy and the parameter
// store current. Create it with New and drive it with Run.
type Gateway struct {
	cfg    Config
	log    *slog.Logger
	client *cloudclient.Client
	store  *store.Store

	results chan func() // worker completions, run on the loop goroutine
	done    chan struct{}
	ready   chan struct{}
	readyMu sync.Once
	// settled is closed once the first prime is stored or the object's
	// module list, read in full, was empty: there is nothing to wait for.
	settled   chan struct{}
	settledMu sync.Once
	emptySeen bool // an empty module list was logged (once a start)
	// listedAt is when the module list the start went on was read, when it
	// was handed in (Config.StartListing): the first poll is paced from it.
	listedAt time.Time

	status atomic.Pointer[Status]

	// bind is shared with worker goroutines: it serialises resubscribes and
	// remembers which (namespace SID, module set) is bound.
	bind binder

	// alarmPushes counts the alarm-quantity pushes applied: a prime's
	// count answer asked before a module's last push is older than it.
	alarmPushes atomic.Uint64

	// Everything below is owned by the loop goroutine.
	objectID   int
	subscribed []string
	meta       map[string]cloudclient.Module // last usable listing row per devid
	missing    map[string]time.Time          // devid -> first usable listing it was absent from
	alarms     map[string]int
	// alarmPushedAt is, per devid, alarmPushes when a push last set its
	// count.
	alarmPushedAt map[string]uint64

	// activeAlarms is the last active alarm list per watched devid; a devid
	// is present once a list including it was read.
	activeAlarms   map[string][]Alarm
	alarmsInFlight bool // an active alarm list fetch is running
	alarmsAgain    bool // fetch again when it completes
	alarmsRead     listSchedule

	// history holds each watched module's alarm and change trackers;
	// alarmHistory and activityLog read the lists that feed them.
	history map[string]*moduleHistory
	// stepLoginAt is what this object's next recovery step needs its token
	// to be newer than: when its last step with a fresh login was chosen
	// in the current episode, then just after the token that step got
	// (zero: no step yet). stepLoginSince is what the step being started
	// needs.
	stepLoginAt, stepLoginSince time.Time
	// sessToken holds the token the current session authenticated with
	// (the dial in progress holds its own in dialled.tok).
	sessToken    *cloudclient.SessionToken
	dialAt       time.Time // when the last dial began
	alarmHistory *alarmHistoryReader
	activityLog  *activityReader

	tr         transport.Transport
	sess       transport.Session
	sessEvents <-chan transport.Event
	dialled    dialResult // the dial being decided on (see connected)

	session  *outage.Session
	modules  *outage.Modules
	push     *outage.Push
	episodes *outage.Episodes
	ladder   ladder.State

	// life is the connection lifecycle (dialling, session up, binds in
	// flight, reconnect backoff, relogin, the recovery step in flight, the
	// connect prime owed, stopping); only feed changes it.
	life    lifecycle.State
	lifeCfg lifecycle.Config
	runCtx  context.Context // the run's context, for results fed to the machine

	pollInFlight bool
	overflowed   int64
	decodeErrors int64

	// owedModules: modules whose event-22 prime failed, with the mark of
	// that prime; a prime of the module requested after it pays the debt.
	owedModules   map[string]store.PrimeMark
	owedInFlight  bool              // a prime paying what is owed is running
	primeFailures map[string]uint64 // failed primes by trigger
	primeStreak   int               // primes failed since the last that succeeded (one WARN a streak)
	renewAt       time.Time         // when the access token is renewed next; zero = nothing to renew
	renewing      bool              // a token renewal is in flight
	renewFails    int               // token renewals failed in a row

	// lastAny is when a parameter of this gateway's modules was last
	// stored from any source (unix ns; 0 = never): primes store from
	// workers. lastLive is the last live one, stored on the loop. They are
	// the gateway's own, not the store's: a store shared by several
	// objects' gateways must not let one object's updates hide another's
	// silence.
	lastAny  atomic.Int64
	lastLive time.Time

	// events counts realtime events of this session by kind.
	events map[cloudapi.EventKind]uint64
}

// New validates cfg and returns a gateway; nothing runs until Run.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.GetModulesFailOfflineAfter != 0 {
		cfg.Logger.Warn("get_modules_fail_offline_after is deprecated and has no effect: unusable module lists never take a module offline")
	}
	eps := outage.NewEpisodes(cfg.EpisodeLimit)
	g := &Gateway{
		cfg:      cfg,
		log:      cfg.Logger,
		client:   cfg.Client,
		store:    cfg.Store,
		results:  make(chan func(), 64),
		done:     make(chan struct{}),
		ready:    make(chan struct{}),
		settled:  make(chan struct{}),
		meta:     map[string]cloudclient.Module{},
		missing:  map[string]time.Time{},
		alarms:   map[string]int{},
		episodes: eps,

		alarmPushedAt: map[string]uint64{},
		session:       outage.NewSession(outage.SessionConfig{Hysteresis: cfg.SessionHysteresis, Episodes: eps}),
		push:          outage.NewPush(outage.PushConfig{StaleAfter: cfg.Ladder.StaleAfter, Episodes: eps}),
		modules:       outage.NewModules(outage.ModulesConfig{Episodes: eps}),
		runCtx:        context.Background(),
		// Reconnects back off up to the supervisor's pace
		// (docs/spec.md W-3.1c: attempts about every 15 s).
		lifeCfg: lifecycle.Config{ReconnectBackoff: cfg.ReconnectBackoff, ReconnectMax: cfg.SupervisorInterval, SilentGrace: cfg.SilentGrace, ReconnectOffset: cfg.ReconnectOffset},
	}
	if cfg.ObjectID != 0 {
		// Every line of an object's gateway says which object it is about.
		g.log = g.log.With("object_id", cfg.ObjectID)
	}
	g.owedModules = map[string]store.PrimeMark{}
	g.primeFailures = map[string]uint64{}
	for _, t := range PrimeTriggers() {
		g.primeFailures[t] = 0
	}
	g.activeAlarms = map[string][]Alarm{}
	g.history = map[string]*moduleHistory{}
	g.alarmHistory, g.activityLog = newAlarmHistoryReader(), newActivityReader()
	g.events = map[cloudapi.EventKind]uint64{}
	g.publish()
	return g, nil
}

// Ready is closed once the first prime has been stored.
func (g *Gateway) Ready() <-chan struct{} { return g.ready }

// Settled is closed once the first prime has been stored, or the object's
// module list was read in full and named no module: an installation without
// modules has nothing to prime, and must not hold back an account's
// readiness. The gateway keeps reading the list, and watches the modules
// once there are some.
func (g *Gateway) Settled() <-chan struct{} { return g.settled }

func (g *Gateway) settle() { g.settledMu.Do(func() { close(g.settled) }) }

// Status returns the latest published health picture. Safe for any goroutine.
func (g *Gateway) Status() *Status { return g.status.Load() }

// Run starts the gateway and keeps it running until ctx is cancelled, then
// stops it: the session is published down (reason stop) and closed. It
// returns an error only when the start cannot succeed (ErrStartAuth, no
// object, or a *cloudclient.MissingModulesError when the object's module
// list lacks a devid of Modules).
func (g *Gateway) Run(ctx context.Context) error {
	defer close(g.done)
	g.runCtx = ctx
	if err := g.start(ctx); err != nil {
		if ctx.Err() != nil {
			g.stop()
			return nil
		}
		return err
	}
	defer g.stop()

	var pollC <-chan time.Time
	var pollTicker *time.Ticker
	pollPaced := true // the ticker runs at PollInterval
	if g.cfg.PollInterval > 0 {
		first := g.cfg.PollInterval
		if !g.listedAt.IsZero() {
			// The list the start went on is read again when a read of
			// the start's own would have been.
			first = max(g.listedAt.Add(g.cfg.PollInterval).Sub(g.cfg.Now()), time.Nanosecond)
			pollPaced = first == g.cfg.PollInterval
		}
		pollTicker = time.NewTicker(first)
		defer pollTicker.Stop()
		pollC = pollTicker.C
	}
	super := time.NewTicker(g.cfg.SupervisorInterval)
	defer super.Stop()
	health := time.NewTicker(g.cfg.HealthInterval)
	defer health.Stop()
	reconnect := newDeadline()
	defer reconnect.stop()
	renew := newDeadline()
	defer renew.stop()

	g.scheduleRenewal(false)
	g.feed(ctx, lifecycle.ConnectWanted{Cancelled: ctx.Err() != nil})
	g.pollAlarms(ctx)
	g.readHistory(ctx)
	for {
		dirty := true
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-g.sessEvents:
			dirty = g.handleEvent(ctx, ev, ok)
		case fn := <-g.results:
			fn()
		case <-pollC:
			if !pollPaced {
				pollTicker.Reset(g.cfg.PollInterval)
				pollPaced = true
			}
			g.poll(ctx)
		case <-super.C:
			g.supervise(ctx)
		case <-health.C:
			g.evaluateHealth(ctx)
		case <-reconnect.C():
			reconnect.fired()
			g.feed(ctx, lifecycle.ReconnectDue{Cancelled: ctx.Err() != nil})
		case <-renew.C():
			renew.fired()
			g.renewToken(ctx)
		}
		reconnect.arm(g.life.ReconnectAt, g.cfg.Now)
		renew.arm(g.renewAt, g.cfg.Now)
		if dirty {
			g.publish()
		}
	}
}

// post hands a worker's result to the loop; it gives up once the loop ended.
func (g *Gateway) post(fn func()) {
	select {
	case g.results <- fn:
	case <-g.done:
	}
}

// start logs in and discovers the object and its modules, retrying while the
// cloud fails with anything but a rejected login. Every failed attempt is
// published (see startFailed), so an exporter started during a cloud outage
// says why it is not up.
func (g *Gateway) start(ctx context.Context) error {
	if err := g.client.EnsureAuth(ctx); err != nil {
		g.startFailed(ctx, err, true)
		if isAuthRejected(err) {
			return fmt.Errorf("%w: %w", ErrStartAuth, err)
		}
		g.log.Warn("login failed, retrying", "err", err)
		if err := g.retry(ctx, func() error { return g.client.EnsureAuth(ctx) }, true); err != nil {
			return err
		}
	}
	g.objectID = g.cfg.ObjectID
	if g.objectID == 0 {
		var objects []cloudclient.Object
		err := g.retry(ctx, func() (err error) {
			objects, err = g.client.Objects(ctx)
			if err == nil && len(objects) == 0 {
				return errNoObjects
			}
			return err
		}, false)
		if err != nil {
			return err
		}
		g.objectID = objects[0].ID
		g.log = g.log.With("object_id", g.objectID)
		if len(objects) > 1 {
			g.log.Info("account has several objects; watching the first (set --cloud.object-id to choose)", "objects", len(objects))
		}
	}

	listing := g.handedListing()
	if listing == nil {
		err := g.retry(ctx, func() (err error) {
			listing, err = g.client.Modules(ctx, g.objectID)
			if err != nil {
				return err
			}
			err = g.startListingErr(listing)
			if errors.Is(err, errNoModules) {
				g.settle()
				if !g.emptySeen {
					g.emptySeen = true
					g.log.Info("the object lists no modules yet; waiting for some")
				}
			}
			return err
		}, false)
		if err != nil {
			return err
		}
	}
	// A devid of Modules that a whole, non-empty listing lacks is a mistake
	// in the configuration, not a module to wait for: the start fails with
	// the devids the object offers. An empty listing, or one that dropped
	// rows it could not read, proves nothing.
	if len(listing.Modules) > 0 && listing.Dropped == 0 {
		if err := cloudclient.MissingModules(g.objectID, listing.Modules, g.cfg.Modules); err != nil {
			return err
		}
	}
	g.setSubscribed(g.chooseModules(listing))
	gen := g.modules.BeginPoll()
	g.applyListing(ctx, gen, listing, nil)
	g.log.Info("watching modules", "modules", g.subscribed)
	return nil
}

// startListingErr says why the start cannot go on with a module list it
// read (nil: it can).
func (g *Gateway) startListingErr(l *cloudclient.ModuleListing) error {
	if l.Recognised && l.Dropped == 0 && len(l.Modules) == 0 && len(g.cfg.Modules) == 0 {
		return errNoModules
	}
	if !l.Recognised || len(l.Modules) == 0 && len(g.cfg.Modules) == 0 {
		return errUnusableListing
	}
	return nil
}

// handedListing returns the module list handed in (Config.StartListing)
// when the start may go on with it as with a read of its own; nil: the
// start reads the list itself. A list handed in is never the reason a
// start fails or waits: one the start would not go on with, one that lacks
// a devid of Modules, or one read a poll interval ago or more is set aside
// for a fresh read.
func (g *Gateway) handedListing() *cloudclient.ModuleListing {
	h := g.cfg.StartListing
	if h == nil || h.Listing == nil {
		return nil
	}
	age := g.cfg.Now().Sub(h.ReadAt)
	var why string
	switch {
	case g.cfg.PollInterval <= 0:
		why = "no poll would read it again"
	case age < 0 || age >= g.cfg.PollInterval:
		why = "read a poll interval ago or more"
	case g.startListingErr(h.Listing) != nil:
		why = g.startListingErr(h.Listing).Error()
	case !coversAll(devidsOf(h.Listing), g.cfg.Modules):
		why = "it lacks a requested module"
	}
	if why != "" {
		g.log.Debug("reading the module list again at start", "why", why, "age", age)
		return nil
	}
	g.listedAt = h.ReadAt
	return h.Listing
}

func devidsOf(l *cloudclient.ModuleListing) []string {
	out := make([]string, len(l.Modules))
	for i, m := range l.Modules {
		out[i] = m.Devid
	}
	return out
}

var (
	errNoObjects       = errors.New("the account has no objects (installations)")
	errUnusableListing = errors.New("the module list is empty or of an unknown shape")
	errNoModules       = errors.New("the object lists no modules")
)

// startFailed publishes one failed attempt of the start. Each is a module
// list the exporter could not read, whichever step failed (the login, the
// object list it needs, or the list itself), so it counts as an unusable
// poll, as a failed poll does later; a failed login is also why the first
// connect cannot be made, the session's connect failure reason.
func (g *Gateway) startFailed(ctx context.Context, err error, login bool) {
	if ctx.Err() != nil {
		return // cancelled by the shutdown, not failed by the cloud
	}
	if login {
		g.session.ConnectFailed(loginFailureReason(err))
	}
	gen := g.modules.BeginPoll()
	if _, cerr := g.modules.CompletePoll(gen, outage.Listing{Err: err}, g.cfg.Now()); cerr != nil {
		g.log.Debug("start failure not counted", "err", cerr)
	}
	g.publish()
}

// loginFailureReason is the connect failure reason of a failed login, after
// the login's outcome: the cloud refused the credentials, something in
// front of it refused the login, the cloud throttles the account, or no
// answer about the credentials came.
func loginFailureReason(err error) string {
	if errors.Is(err, cloudclient.ErrNoCredentials) {
		return outage.ReasonLoginRejected
	}
	if _, ok := cloudclient.RateLimited(err, time.Now()); ok {
		return outage.ReasonRateLimited // the handshake or its login waited out a pause
	}
	switch cloudclient.ClassifyLogin(err) {
	case cloudapi.LoginRejected:
		return outage.ReasonLoginRejected
	case cloudapi.LoginBlocked:
		return outage.ReasonLoginBlocked
	case cloudapi.LoginRateLimited:
		return outage.ReasonRateLimited
	}
	return outage.ReasonLoginUnreachable
}

// retry runs fn until it succeeds, the login is rejected, or ctx ends,
// pausing 1 s, 2 s, 4 s, ... up to StartRetryMax. Every failure is
// published through startFailed, as a login's when login is set.
func (g *Gateway) retry(ctx context.Context, fn func() error, login bool) error {
	pause := min(time.Second, g.cfg.StartRetryMax)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		g.startFailed(ctx, err, login)
		if isAuthRejected(err) {
			return fmt.Errorf("%w: %w", ErrStartAuth, err)
		}
		if errors.Is(err, errNoObjects) {
			return err
		}
		if errors.Is(err, errNoModules) {
			// Said once at INFO: an installation without modules is no fault.
			g.log.Debug("the object lists no modules; reading again", "in", pause)
		} else {
			g.log.Warn("cloud not ready, retrying", "err", err, "in", pause)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, g.cfg.StartRetryMax)
	}
}

// isAuthRejected says whether err means the account, not the cloud, is the
// problem (cloudclient.IsCredentialVerdict): nothing else stops a start.
func isAuthRejected(err error) bool { return cloudclient.IsCredentialVerdict(err) }

// chooseModules picks the devids to watch from a listing.
func (g *Gateway) chooseModules(l *cloudclient.ModuleListing) []string {
	if len(g.cfg.Modules) > 0 {
		seen := map[string]bool{}
		for _, m := range l.Modules {
			seen[m.Devid] = true
		}
		for _, d := range g.cfg.Modules {
			if !seen[d] {
				g.log.Warn("requested module is not in the account's module list", "devid", d)
			}
		}
		return g.cfg.Modules
	}
	devids := make([]string, 0, len(l.Modules))
	for _, m := range l.Modules {
		devids = append(devids, m.Devid)
	}
	return sortedUnique(devids)
}

func (g *Gateway) setSubscribed(devids []string) {
	keep := map[string]bool{}
	for _, d := range devids {
		keep[d] = true
	}
	var left []string
	for _, d := range g.subscribed {
		if !keep[d] {
			left = append(left, d)
		}
	}
	g.subscribed = devids
	g.modules.SetSubscribed(devids)
	for d := range g.owedModules {
		if !keep[d] {
			delete(g.owedModules, d)
		}
	}
	for d := range g.meta {
		if !keep[d] {
			delete(g.meta, d)
		}
	}
	for d := range g.alarms {
		if !keep[d] {
			delete(g.alarms, d)
			delete(g.alarmPushedAt, d)
		}
	}
	for d := range g.activeAlarms {
		if !keep[d] {
			delete(g.activeAlarms, d)
		}
	}
	g.watchHistory(keep)
	// Only this gateway's own modules: the store may be shared with the
	// gateways of other objects.
	g.store.Forget(left)
}

// countEvent counts one realtime event of this session and tells OnEvent.
func (g *Gateway) countEvent(kind cloudapi.EventKind) {
	g.events[kind]++
	if g.cfg.OnEvent != nil {
		g.cfg.OnEvent(kind)
	}
}

// lastUpdates returns when this gateway's modules were last updated from
// any source and live; zero times mean never.
func (g *Gateway) lastUpdates() (anySource, live time.Time) {
	if ns := g.lastAny.Load(); ns != 0 {
		anySource = time.Unix(0, ns)
	}
	return anySource, g.lastLive
}

func (g *Gateway) isSubscribed(devid string) bool {
	for _, d := range g.subscribed {
		if d == devid {
			return true
		}
	}
	return false
}

// stop publishes the session down with reason stop, invalidates in-flight
// polls and closes the realtime session and transport (bounded).
func (g *Gateway) stop() {
	g.feed(context.Background(), lifecycle.Stop{})
	now := g.cfg.Now()
	g.modules.Stop()
	g.session.Stop(now)
	g.push.Evaluate(now, g.session.Link())
	sess, tr := g.sess, g.tr
	g.sess, g.sessEvents, g.tr = nil, nil, nil
	g.publish()
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.TeardownTimeout)
	defer cancel()
	if sess != nil {
		if err := sess.Disconnect(ctx); err != nil {
			g.log.Debug("session teardown", "err", err)
		}
	}
	g.sessToken.Release()
	g.sessToken = nil
	if tr != nil {
		closeBounded(tr, g.cfg.TeardownTimeout, g.log)
	}
	g.log.Info("realtime gateway stopped")
}

// closeBounded closes a transport without letting a hung library call hold
// the caller longer than d.
func closeBounded(tr transport.Transport, d time.Duration, log *slog.Logger) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := tr.Close(); err != nil {
			log.Debug("transport close", "err", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(d):
		log.Warn("transport close did not finish in time; abandoned", "after", d)
	}
}
