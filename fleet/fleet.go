package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// Defaults of Config's durations.
const (
	// DefaultRefreshInterval is how often the account's objects are read
	// again: objects are added or shared rarely, and a login reads them at
	// once too.
	DefaultRefreshInterval = 5 * time.Minute
	// DefaultReconnectSpread is the range the gateways' reconnect offsets
	// are spread over (see realtime.Config.ReconnectOffset).
	DefaultReconnectSpread = 3 * time.Second
	// DefaultStartSpread is the pause between starting two objects'
	// gateways, so a start with many objects is not one burst of handshakes.
	DefaultStartSpread = 20 * time.Millisecond
	// DefaultStartRetryMax caps the pause between attempts to read the
	// account at start while the cloud answers with errors.
	DefaultStartRetryMax = time.Minute
	// DefaultStopTimeout bounds the wait for one object's gateway to stop.
	DefaultStopTimeout = 10 * time.Second
)

// Config configures a Fleet.
type Config struct {
	Client *cloudclient.Client
	// Store is shared by every object's gateway (devids are unique across
	// the account); the fleet forgets the modules of an object it stops.
	Store *store.Store
	// Objects restricts the objects watched (--cloud.object-id); empty:
	// every object of the account, following objects that join or leave.
	Objects []int
	// Modules restricts the modules watched, across objects
	// (--cloud.modules); empty: every module of the watched objects.
	Modules []string
	// Gateway returns the configuration of one object's gateway; the fleet
	// then sets its ObjectID, Modules, Store and ReconnectOffset.
	Gateway func(objectID int) realtime.Config

	// RefreshInterval is how often the account's objects are read again
	// (0: DefaultRefreshInterval).
	RefreshInterval time.Duration
	// ReconnectSpread is the range the objects' reconnect offsets are
	// spread over, StartSpread the pause between starting two objects'
	// gateways; 0 = none (DefaultConfig has the defaults).
	ReconnectSpread time.Duration
	StartSpread     time.Duration
	// StartRetryMax caps the pause between attempts at start, StopTimeout
	// bounds the wait for one gateway to stop (0: their defaults).
	StartRetryMax time.Duration
	StopTimeout   time.Duration

	Logger *slog.Logger
	Now    func() time.Time
}

// DefaultConfig returns the defaults of every duration; the caller sets
// Client, Store, Gateway and the objects and modules to watch.
func DefaultConfig() Config {
	return Config{
		RefreshInterval: DefaultRefreshInterval, ReconnectSpread: DefaultReconnectSpread, StartSpread: DefaultStartSpread,
		StartRetryMax: DefaultStartRetryMax, StopTimeout: DefaultStopTimeout,
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("a Client is required"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("a Store is required"))
	}
	if c.Gateway == nil {
		errs = append(errs, errors.New("a Gateway configuration is required"))
	}
	for name, d := range map[string]*time.Duration{
		"RefreshInterval": &c.RefreshInterval, "ReconnectSpread": &c.ReconnectSpread, "StartSpread": &c.StartSpread,
		"StartRetryMax": &c.StartRetryMax, "StopTimeout": &c.StopTimeout,
	} {
		if *d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", name, *d))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fleet: invalid config: %w", err)
	}
	defaults := map[*time.Duration]time.Duration{
		&c.RefreshInterval: DefaultRefreshInterval, &c.StartRetryMax: DefaultStartRetryMax, &c.StopTimeout: DefaultStopTimeout,
	}
	for d, def := range defaults {
		if *d == 0 {
			*d = def
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Fleet watches the objects of one account: one login shared by all, the
// object list re-read every RefreshInterval and after every login, and one
// realtime gateway per watched object. Create it with New, drive it with Run.
type Fleet struct {
	cfg    Config
	log    *slog.Logger
	client *cloudclient.Client

	relist chan struct{} // a listing is wanted now (capacity 1)
	ready  chan struct{}

	mu      sync.Mutex
	members map[int]*member
	// unwatched are the objects the last trusted listing named (and
	// Objects allows) that no gateway watches: none of the requested
	// Modules is in their module list, or their gateway could not start.
	unwatched    map[int]cloudclient.Object
	listFailures int // unusable object listings in a row
	listed       bool
}

// member is one watched object and its gateway.
type member struct {
	object  cloudclient.Object
	gateway *realtime.Gateway
	cancel  context.CancelFunc
	done    chan struct{} // closed when the gateway's Run returned
	err     error         // Run's error; read after done
}

// New validates cfg and returns a fleet; nothing runs until Run.
func New(cfg Config) (*Fleet, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Fleet{
		cfg: cfg, log: cfg.Logger, client: cfg.Client,
		relist:  make(chan struct{}, 1),
		ready:   make(chan struct{}),
		members: map[int]*member{}, unwatched: map[int]cloudclient.Object{},
	}, nil
}

// Ready is closed once every object watched from the start has stored its
// first parameter snapshot (an object whose module list names no module has
// nothing to store, and does not hold it back).
func (f *Fleet) Ready() <-chan struct{} { return f.ready }

// Relist asks for a fresh reading of the account's objects (after a login:
// the login answer is when an account's objects change hands). It never
// blocks; requests made while one is pending are one.
func (f *Fleet) Relist() {
	select {
	case f.relist <- struct{}{}:
	default:
	}
}

// Status is the account at one instant: each watched object with its
// gateway's published status.
type Status struct {
	Objects []ObjectStatus // in ID order
	// ListFailureStreak counts unusable object listings in a row.
	ListFailureStreak int
	// Listed is false until the first trusted listing of the objects.
	Listed bool
	// TokenExpiry is when the shared access token expires; zero when it
	// never does or there is none.
	TokenExpiry time.Time
	// Unwatched are the objects the account lists that no gateway watches
	// (none of the requested modules is in their module list, or their
	// gateway could not start), in ID order: listed, yet not in Objects.
	Unwatched []cloudclient.Object
}

// ObjectStatus is one watched object.
type ObjectStatus struct {
	Object  cloudclient.Object
	Gateway *realtime.Status
}

// Status returns the account's picture now. Safe for any goroutine.
func (f *Fleet) Status() *Status {
	f.mu.Lock()
	st := &Status{ListFailureStreak: f.listFailures, Listed: f.listed}
	for _, m := range f.members {
		st.Objects = append(st.Objects, ObjectStatus{Object: m.object, Gateway: m.gateway.Status()})
	}
	for _, o := range f.unwatched {
		st.Unwatched = append(st.Unwatched, o)
	}
	f.mu.Unlock()
	sort.Slice(st.Objects, func(i, j int) bool { return st.Objects[i].Object.ID < st.Objects[j].Object.ID })
	slices.SortFunc(st.Unwatched, byID)
	if tok, ok := f.client.Token(); ok {
		st.TokenExpiry = tok.ExpiresAt
	}
	return st
}

// Run logs in, reads the account's objects and runs one gateway per watched
// object until ctx ends (it then stops them all and returns nil). It returns
// an error only when the start cannot succeed: a login the cloud rejects
// (realtime.ErrStartAuth), an object id the
// account does not list (*UnknownObjectsError), a devid of Modules no
// object lists (*cloudclient.MissingModulesError), or a gateway failing for
// one of those reasons.
func (f *Fleet) Run(ctx context.Context) error {
	defer f.stopAll()
	start, named, err := f.start(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// The start's own login asked for a listing it has just made.
	select {
	case <-f.relist:
	default:
	}
	exited := make(chan *member, 16)
	f.launch(ctx, start, exited, true)
	f.setUnwatched(named)

	refresh := time.NewTicker(f.cfg.RefreshInterval)
	defer refresh.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-refresh.C:
			f.refresh(ctx, exited)
		case <-f.relist:
			f.refresh(ctx, exited)
		case m := <-exited:
			if err := f.exited(m); err != nil {
				return err
			}
		}
	}
}

// launched is an object to start with the modules to watch on it (nil:
// every module of the object), and the object's module list when the fleet
// read it to choose them (nil: it did not, or the read failed).
type launched struct {
	object  cloudclient.Object
	modules []string
	listing *realtime.ListingRead // ReadAt on the fleet's clock
}

// start logs in and reads the account until a trusted listing, retrying
// while the cloud fails with anything but a rejected login; then checks the
// wanted objects and modules against it. named are the objects the listing
// names to watch; start, those of them to start and how.
func (f *Fleet) start(ctx context.Context) (start []launched, named []cloudclient.Object, err error) {
	if err := f.retry(ctx, func() error { return f.client.EnsureAuth(ctx) }); err != nil {
		return nil, nil, err
	}
	var listing Listing
	err = f.retry(ctx, func() error {
		l, err := f.client.ListObjects(ctx)
		if err != nil {
			return err
		}
		listing = ListingOf(l)
		if l.Recognised && l.Dropped == 0 && len(l.Objects) == 0 {
			return errNoObjects
		}
		if !listing.Trusted {
			return errUntrustedListing
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	f.setListed(true)
	if err := UnknownObjects(listing, f.cfg.Objects); err != nil {
		return nil, nil, err
	}
	plan := Decide(nil, listing, f.cfg.Objects)
	if len(f.cfg.Modules) == 0 {
		out := make([]launched, len(plan.Start))
		for i, o := range plan.Start {
			out[i] = launched{object: o}
		}
		f.logObjects(plan.Start)
		return out, plan.Start, nil
	}
	start, err = f.assign(ctx, plan.Start, true)
	return start, plan.Start, err
}

var (
	errNoObjects        = errors.New("the account has no objects (installations)")
	errUntrustedListing = errors.New("the object list is of an unknown shape or dropped rows")
)

// assign reads the module lists of objects and keeps those that hold a
// devid of Modules, each with its share. At start (strict) a devid no list
// names fails the start when every list was read in full; otherwise it is
// warned about.
func (f *Fleet) assign(ctx context.Context, objects []cloudclient.Object, strict bool) ([]launched, error) {
	listings := make(map[int]*cloudclient.ModuleListing, len(objects))
	readAt := make(map[int]time.Time, len(objects))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, o := range objects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := f.cfg.Now()
			l, err := f.client.Modules(ctx, o.ID)
			if err != nil {
				f.log.Warn("could not read an object's module list", "object_id", o.ID, "err", err)
				l = nil
			}
			mu.Lock()
			listings[o.ID], readAt[o.ID] = l, at
			mu.Unlock()
		}()
	}
	wg.Wait()
	byObject, missing, complete := Assign(f.cfg.Modules, listings)
	if len(missing) > 0 {
		if strict && complete {
			lists := make([]cloudclient.ObjectModules, 0, len(objects))
			for _, o := range objects {
				lists = append(lists, cloudclient.ObjectModules{ObjectID: o.ID, Modules: listings[o.ID].Modules})
			}
			return nil, cloudclient.MissingModulesAcross(lists, missing)
		}
		if strict {
			f.log.Warn("requested modules are not in any module list read so far", "devids", missing)
		}
	}
	var out []launched
	var started []cloudclient.Object
	for _, o := range objects {
		if d := byObject[o.ID]; len(d) > 0 {
			// The gateway starts on this list rather than read it again
			// (one request per object at start), as far as it would trust
			// a read of its own (see realtime.Config.StartListing).
			out = append(out, launched{object: o, modules: d, listing: &realtime.ListingRead{Listing: listings[o.ID], ReadAt: readAt[o.ID]}})
			started = append(started, o)
		}
	}
	f.logObjects(started)
	return out, nil
}

func (f *Fleet) logObjects(objects []cloudclient.Object) {
	for _, o := range objects {
		f.log.Info("watching object", "object_id", o.ID, "name", o.Name)
	}
}

// retry runs fn until it succeeds, the login is rejected or ctx ends,
// pausing 1 s, 2 s, 4 s, ... up to StartRetryMax. An account without
// objects is retried too: an object added to it is watched when it comes.
func (f *Fleet) retry(ctx context.Context, fn func() error) error {
	pause := min(time.Second, f.cfg.StartRetryMax)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if isAuthRejected(err) {
			return fmt.Errorf("%w: %w", realtime.ErrStartAuth, err)
		}
		f.mu.Lock()
		f.listFailures++
		f.mu.Unlock()
		f.log.Warn("cloud not ready, retrying", "err", err, "in", pause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, f.cfg.StartRetryMax)
	}
}

// isAuthRejected: the account, not the cloud, is the problem
// (cloudclient.IsCredentialVerdict): nothing else stops a start.
func isAuthRejected(err error) bool { return cloudclient.IsCredentialVerdict(err) }

func (f *Fleet) setListed(trusted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if trusted {
		f.listFailures, f.listed = 0, true
	} else {
		f.listFailures++
	}
}

// launch starts the gateways of objects, StartSpread apart. first: they are
// the objects of the start, whose first snapshots make the fleet ready.
func (f *Fleet) launch(ctx context.Context, objects []launched, exited chan<- *member, first bool) {
	var readies []<-chan struct{}
	var dones []<-chan struct{}
	for i, l := range objects {
		if i > 0 && f.cfg.StartSpread > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(f.cfg.StartSpread):
			}
		}
		m, err := f.startMember(ctx, l, len(objects) > 1 || f.watching() > 0, exited)
		if err != nil {
			f.log.Error("could not start an object's gateway", "object_id", l.object.ID, "err", err)
			continue
		}
		readies = append(readies, m.gateway.Settled())
		dones = append(dones, m.done)
	}
	if first {
		go func() {
			// An object stopped before its first snapshot no longer holds
			// the fleet back.
			for i := range readies {
				select {
				case <-readies[i]:
				case <-dones[i]:
				case <-ctx.Done():
					return
				}
			}
			close(f.ready)
		}()
	}
}

// setUnwatched records which of the objects a listing named to watch
// (listed, wanted, not watched before it) no gateway watches now, once
// their gateways were started.
func (f *Fleet) setUnwatched(named []cloudclient.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.unwatched)
	for _, o := range named {
		if _, watched := f.members[o.ID]; !watched {
			f.unwatched[o.ID] = o
		}
	}
}

func (f *Fleet) watching() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.members)
}

// startMember builds and runs one object's gateway.
func (f *Fleet) startMember(ctx context.Context, l launched, spread bool, exited chan<- *member) (*member, error) {
	gcfg := f.cfg.Gateway(l.object.ID)
	gcfg.ObjectID, gcfg.Modules, gcfg.Store = l.object.ID, l.modules, f.cfg.Store
	gcfg.ReconnectOffset = 0
	if spread {
		gcfg.ReconnectOffset = ReconnectOffset(l.object.ID, f.cfg.ReconnectSpread)
	}
	if gcfg.Logger == nil {
		gcfg.Logger = f.log
	}
	if l.listing != nil {
		// The gateway judges the list's age on its own clock.
		gwNow := gcfg.Now
		if gwNow == nil {
			gwNow = time.Now
		}
		age := f.cfg.Now().Sub(l.listing.ReadAt)
		gcfg.StartListing = &realtime.ListingRead{Listing: l.listing.Listing, ReadAt: gwNow().Add(-age)}
	}
	gw, err := realtime.New(gcfg)
	if err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	m := &member{object: l.object, gateway: gw, cancel: cancel, done: make(chan struct{})}
	f.mu.Lock()
	f.members[l.object.ID] = m
	f.mu.Unlock()
	go func() {
		m.err = gw.Run(mctx)
		close(m.done)
		if mctx.Err() == nil {
			select {
			case exited <- m:
			case <-ctx.Done():
			}
		}
	}()
	return m, nil
}

// ReconnectOffset is the reconnect offset of an object's gateway: fixed
// for the object, spread evenly-ish over [0, spread) across objects.
func ReconnectOffset(objectID int, spread time.Duration) time.Duration {
	if spread <= 0 {
		return 0
	}
	// splitmix64's finaliser: neighbouring ids land far apart.
	x := uint64(objectID)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return time.Duration(x % uint64(spread))
}

// exited handles a gateway whose Run returned while the fleet runs: its
// start failed. A rejected login stops the fleet; anything else drops the
// object until a later listing starts it again.
func (f *Fleet) exited(m *member) error {
	f.mu.Lock()
	if f.members[m.object.ID] == m {
		delete(f.members, m.object.ID)
	}
	f.unwatched[m.object.ID] = m.object
	f.mu.Unlock()
	f.forget(m)
	if errors.Is(m.err, realtime.ErrStartAuth) {
		return m.err
	}
	f.log.Warn("an object's gateway could not start; trying again at the next object listing", "object_id", m.object.ID, "err", m.err)
	return nil
}

// refresh reads the account's objects and applies what changed. A failed,
// empty or partial listing changes nothing.
func (f *Fleet) refresh(ctx context.Context, exited chan<- *member) {
	l, err := f.client.ListObjects(ctx)
	if ctx.Err() != nil {
		return
	}
	listing := ListingOf(l)
	if err != nil || !listing.Trusted {
		f.setListed(false)
		f.log.Debug("object list unusable; every object stays watched", "err", err)
		return
	}
	f.setListed(true)
	f.mu.Lock()
	watched := make(map[int]string, len(f.members))
	for id, m := range f.members {
		watched[id] = m.object.Name
	}
	f.mu.Unlock()
	plan := Decide(watched, listing, f.cfg.Objects)
	for _, id := range plan.Stop {
		f.stopMember(id)
	}
	for _, o := range plan.Renamed {
		f.mu.Lock()
		if m := f.members[o.ID]; m != nil {
			f.log.Info("object renamed", "object_id", o.ID, "name", o.Name, "was", m.object.Name)
			m.object = o
		}
		f.mu.Unlock()
	}
	defer f.setUnwatched(plan.Start)
	if len(plan.Start) == 0 {
		return
	}
	var start []launched
	if len(f.cfg.Modules) == 0 {
		for _, o := range plan.Start {
			start = append(start, launched{object: o})
		}
		f.logObjects(plan.Start)
	} else {
		start, _ = f.assign(ctx, plan.Start, false)
	}
	f.launch(ctx, start, exited, false)
}

// stopMember stops one object's gateway and forgets its modules: every
// series of the object and of its modules leaves /metrics.
func (f *Fleet) stopMember(id int) {
	f.mu.Lock()
	m := f.members[id]
	delete(f.members, id)
	f.mu.Unlock()
	if m == nil {
		return
	}
	m.cancel()
	f.wait(m)
	f.forget(m)
	f.log.Info("object no longer listed by the account; stopped watching it and its modules",
		"object_id", id, "name", m.object.Name, "modules", m.gateway.Status().Subscribed)
}

func (f *Fleet) wait(m *member) {
	select {
	case <-m.done:
	case <-time.After(f.cfg.StopTimeout):
		f.log.Warn("an object's gateway did not stop in time", "object_id", m.object.ID)
	}
}

// forget drops a stopped object's modules from the shared store.
func (f *Fleet) forget(m *member) {
	if st := m.gateway.Status(); st != nil {
		f.cfg.Store.Forget(st.Subscribed)
	}
}

// stopAll stops every gateway at once (each publishes its session down,
// reason stop) and waits for them, bounded.
func (f *Fleet) stopAll() {
	f.mu.Lock()
	members := make([]*member, 0, len(f.members))
	for _, m := range f.members {
		members = append(members, m)
	}
	f.mu.Unlock()
	for _, m := range members {
		m.cancel()
	}
	for _, m := range members {
		f.wait(m)
	}
}
