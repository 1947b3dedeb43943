package fleet

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

func testLogger() *slog.Logger {
	if os.Getenv("FLEET_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// account is a simulated cloud and a fleet watching it.
type account struct {
	sim   *cloudsim.Cloud
	fleet *Fleet
	store *store.Store
	cfg   Config
	done  chan error
	stop  context.CancelFunc
}

// startAccount runs a fleet against a simulated account of objects objects
// holding modules modules; tune adjusts the fleet's configuration, before
// adjusts the simulator before the fleet starts.
func startAccount(t *testing.T, objects, modules int, tune func(*Config), before func(*cloudsim.Cloud)) *account {
	t.Helper()
	return startAccountWith(t, cloudsim.Options{Objects: objects, Modules: modules}, nil, tune, before)
}

// startAccountWith is startAccount with the simulator's options and the
// REST client's configuration tuned.
func startAccountWith(t *testing.T, opts cloudsim.Options, tuneClient func(*cloudclient.Config), tune func(*Config), before func(*cloudsim.Cloud)) *account {
	t.Helper()
	opts.ParamsPerModule, opts.Seed, opts.Logger = 30, cloudsim.DefaultSeed, testLogger()
	sim := cloudsim.New(opts)
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	if before != nil {
		before(sim)
	}
	ccfg := cloudclient.Config{BaseURL: sim.URL(), AssetsURL: sim.URL(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
		Logger:      testLogger()}
	if tuneClient != nil {
		tuneClient(&ccfg)
	}
	client, err := cloudclient.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	a := &account{sim: sim, store: store.New(), done: make(chan error, 1)}
	a.cfg = Config{
		Client: client, Store: a.store, Logger: testLogger(),
		Gateway: func(int) realtime.Config {
			cfg := realtime.DefaultConfig()
			cfg.Client, cfg.Logger = client, testLogger()
			cfg.PollInterval = 40 * time.Millisecond
			cfg.SupervisorInterval = 50 * time.Millisecond
			cfg.HealthInterval = 5 * time.Millisecond
			cfg.SessionHysteresis = 0
			cfg.ReconnectBackoff = 10 * time.Millisecond
			cfg.TeardownTimeout = time.Second
			cfg.StartRetryMax = 50 * time.Millisecond
			cfg.Ladder.StaleAfter = time.Hour
			cfg.NewTransport = func() (transport.Transport, error) {
				return transport.New(transport.Config{BaseURL: sim.URL(), Header: realtime.HandshakeHeaders(client, sim.URL()), Logger: testLogger()})
			}
			return cfg
		},
		RefreshInterval: time.Hour, // tests ask for listings with Relist
		ReconnectSpread: 30 * time.Millisecond,
		StartSpread:     time.Millisecond,
		StartRetryMax:   50 * time.Millisecond,
	}
	if tune != nil {
		tune(&a.cfg)
	}
	a.fleet, err = New(a.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.stop = cancel
	go func() { a.done <- a.fleet.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-a.done:
		case <-time.After(15 * time.Second):
			t.Error("the fleet did not stop")
		}
	})
	return a
}

// waitFor polls cond until it holds, or fails after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// object returns the watched object id's status, nil when not watched.
func (a *account) object(id int) *ObjectStatus {
	for _, o := range a.fleet.Status().Objects {
		if o.Object.ID == id {
			return &o
		}
	}
	return nil
}

// healthy: the object's session is up, bound and primed, and its push
// health has seen live updates.
func healthy(o *ObjectStatus) bool {
	return o != nil && o.Gateway != nil && o.Gateway.Session.Up && o.Gateway.Connected && o.Gateway.Binding == 0 &&
		o.Gateway.Ready && o.Gateway.Push.State == outage.PushHealthy
}

// waitAllLive drifts the simulator until every object is healthy and every
// module has live values.
func (a *account) waitAllLive(t *testing.T) {
	t.Helper()
	waitFor(t, "every object primed, bound and live", func() bool {
		a.sim.Drift()
		for _, o := range a.sim.Objects() {
			if o.Hidden {
				continue
			}
			if !healthy(a.object(o.ID)) {
				return false
			}
			stats := a.store.Stats()
			for _, d := range o.Devids {
				if stats[d].Params == 0 || stats[d].LastLive.IsZero() {
					return false
				}
			}
		}
		return true
	})
}

// TestEveryObjectOneLoginOneSessionEach: two and five objects; one login at
// start; each object's gateway bound by its own session to exactly its own
// modules with its own group_id; values primed and live for every module.
func TestEveryObjectOneLoginOneSessionEach(t *testing.T) {
	for _, n := range []int{2, 5} {
		t.Run(strings.Repeat("o", n), func(t *testing.T) {
			a := startAccount(t, n, 2*n, nil, nil)
			select {
			case <-a.fleet.Ready():
			case <-time.After(20 * time.Second):
				t.Fatal("not ready")
			}
			a.waitAllLive(t)
			if got := a.sim.Logins(); got != 1 {
				t.Errorf("logins = %d, want 1 for %d objects", got, n)
			}
			st := a.fleet.Status()
			if len(st.Objects) != n {
				t.Fatalf("watching %d objects, want %d", len(st.Objects), n)
			}
			for _, o := range a.sim.Objects() {
				got := a.object(o.ID)
				if got.Object.Name != o.Name || !slices.Equal(got.Gateway.Subscribed, o.Devids) {
					t.Errorf("object %d: name %q modules %v, want %q %v", o.ID, got.Object.Name, got.Gateway.Subscribed, o.Name, o.Devids)
				}
				// The simulator's view: the object's live session is bound to
				// its modules and listens with its id.
				bound := false
				for _, s := range a.sim.Sessions() {
					if s.Connected && s.SID == got.Gateway.NamespaceSID {
						bound = s.ObjectID == o.ID && slices.Equal(s.Bound, o.Devids)
					}
				}
				if !bound {
					t.Errorf("object %d: its session %s is not bound to %v in the simulator", o.ID, got.Gateway.NamespaceSID, o.Devids)
				}
			}
			sids := map[string]bool{}
			for _, o := range st.Objects {
				sids[o.Gateway.NamespaceSID] = true
			}
			if len(sids) != n {
				t.Errorf("%d objects share %d sessions", n, len(sids))
			}
		})
	}
}

// TestOneObjectMutedOthersUntouched: one object's session turned zombie
// (its pushes muted) and then dropped; the other objects stay healthy,
// keep every value and see no outage, and the muted one's push health
// alone goes unhealthy.
func TestOneObjectMutedOthersUntouched(t *testing.T) {
	a := startAccount(t, 3, 3, func(c *Config) {
		gw := c.Gateway
		c.Gateway = func(id int) realtime.Config {
			cfg := gw(id)
			cfg.Ladder.StaleAfter = 300 * time.Millisecond
			cfg.Ladder.ZombiePrimes = 1000 // stay on the first step: the test watches push health
			return cfg
		}
	}, nil)
	a.waitAllLive(t)
	objs := a.sim.Objects()
	victim, others := objs[1], []cloudsim.ObjectInfo{objs[0], objs[2]}
	before := map[int]uint64{}
	for _, o := range others {
		before[o.ID] = a.object(o.ID).Gateway.Session.Outages[outage.ReasonDisconnect]
	}
	mute := a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, ObjectID: victim.ID})
	waitFor(t, "the muted object's push unhealthy while the others stay healthy", func() bool {
		a.sim.Drift()
		for _, o := range others {
			if !healthy(a.object(o.ID)) {
				t.Fatalf("object %d lost health while object %d was muted: %+v", o.ID, victim.ID, a.object(o.ID).Gateway.Push)
			}
		}
		v := a.object(victim.ID).Gateway
		// Its own ladder sees its own silence: the other objects' live
		// updates do not hide it.
		return v.Push.State == outage.PushUnhealthy && v.Ladder.Count(ladder.ZombiePrime, ladder.OK) > 0
	})
	for _, o := range others {
		if n := a.object(o.ID).Gateway.Ladder.Count(ladder.ZombiePrime, ladder.OK); n != 0 {
			t.Errorf("object %d ran %d zombie primes for another object's silence", o.ID, n)
		}
	}
	a.sim.Clear(mute)

	a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAbortTransport, ObjectID: victim.ID, Count: 1})
	waitFor(t, "the dropped object back up and live", func() bool {
		a.sim.Drift()
		o := a.object(victim.ID)
		return healthy(o) && o.Gateway.Session.Blinks+sum(o.Gateway.Session.Outages) > 0
	})
	for _, o := range others {
		g := a.object(o.ID).Gateway
		if g.Session.Blinks != 0 || g.Session.Outages[outage.ReasonDisconnect] != before[o.ID] {
			t.Errorf("object %d saw the other object's drop: blinks %d, outages %v", o.ID, g.Session.Blinks, g.Session.Outages)
		}
		for _, d := range o.Devids {
			if a.store.Stats()[d].Params == 0 {
				t.Errorf("module %d/%s lost its values", o.ID, d)
			}
		}
	}
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// TestObjectHiddenAndShown: an object the account no longer lists is
// stopped and its modules leave the store; the others are untouched; shown
// again, it is watched again without a restart. A listing that fails in
// between stops nothing.
func TestObjectHiddenAndShown(t *testing.T) {
	a := startAccount(t, 2, 3, nil, nil)
	a.waitAllLive(t)
	home, cottage := a.sim.Objects()[0], a.sim.Objects()[1]
	homeSID := a.object(home.ID).Gateway.NamespaceSID
	homeParams := map[string]int{}
	for _, d := range home.Devids {
		homeParams[d] = a.store.Stats()[d].Params
	}

	// A failing listing proves nothing.
	failing := a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/objects", Status: 503})
	a.fleet.Relist()
	waitFor(t, "the failed listing counted", func() bool { return a.fleet.Status().ListFailureStreak > 0 })
	if a.object(cottage.ID) == nil {
		t.Fatal("a failed listing stopped an object")
	}
	a.sim.Clear(failing)

	if err := a.sim.HideObject(cottage.ID); err != nil {
		t.Fatal(err)
	}
	a.fleet.Relist()
	waitFor(t, "the hidden object stopped and forgotten", func() bool {
		if a.object(cottage.ID) != nil {
			return false
		}
		stats := a.store.Stats()
		for _, d := range cottage.Devids {
			if _, ok := stats[d]; ok {
				return false
			}
		}
		return true
	})
	if st := a.fleet.Status(); st.ListFailureStreak != 0 {
		t.Errorf("list failure streak %d after a trusted listing", st.ListFailureStreak)
	}
	h := a.object(home.ID)
	if !healthy(h) || h.Gateway.NamespaceSID != homeSID {
		t.Errorf("the other object was disturbed: healthy %v, session %s → %s", healthy(h), homeSID, h.Gateway.NamespaceSID)
	}
	for _, d := range home.Devids {
		if a.store.Stats()[d].Params == 0 {
			t.Errorf("module %s of the other object lost its values", d)
		}
	}

	if err := a.sim.ShowObject(cottage.ID); err != nil {
		t.Fatal(err)
	}
	a.fleet.Relist()
	a.waitAllLive(t)
	if got := a.object(cottage.ID); got == nil || !slices.Equal(got.Gateway.Subscribed, cottage.Devids) {
		t.Fatalf("the object shown again is not watched: %+v", got)
	}
	// Starting and stopping one object's gateway never touches the values
	// of another's modules in the shared store.
	for d, n := range homeParams {
		if got := a.store.Stats()[d].Params; got < n {
			t.Errorf("module %s of the other object holds %d parameters, had %d", d, got, n)
		}
	}
}

// TestStartLoginDuplicateEntryOnce: a login answered 500 ER_DUP_ENTRY once
// at start is retried by the client and the start goes on: one successful
// login for every object.
func TestStartLoginDuplicateEntryOnce(t *testing.T) {
	a := startAccount(t, 3, 3, nil, func(sim *cloudsim.Cloud) {
		sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLoginDupEntry, Count: 1})
	})
	a.waitAllLive(t)
	if got := a.sim.Logins(); got != 1 {
		t.Errorf("successful logins = %d, want 1", got)
	}
	if got := a.sim.Requests("POST /v1/auth/user"); got != 2 {
		t.Errorf("login requests = %d, want 2 (the duplicate and its retry)", got)
	}
}

// TestUnknownObjectAtStart: an object id the account does not list fails
// the start naming the offered objects.
func TestUnknownObjectAtStart(t *testing.T) {
	a := startAccount(t, 2, 3, func(c *Config) { c.Objects = []int{99} }, nil)
	var err error
	select {
	case err = <-a.done:
		a.done <- err
	case <-time.After(20 * time.Second):
		t.Fatal("the start did not fail")
	}
	var ue *UnknownObjectsError
	if !errors.As(err, &ue) {
		t.Fatalf("Run = %v, want *UnknownObjectsError", err)
	}
	for _, o := range a.sim.Objects() {
		if !strings.Contains(err.Error(), o.Name) {
			t.Errorf("%q does not offer %s", err, o.Name)
		}
	}
}

// TestChosenObjectsAndModules: --cloud.object-id restricts the objects;
// --cloud.modules narrows across objects, and an object holding none of the
// named modules is not watched; a devid no object lists fails the start.
func TestChosenObjectsAndModules(t *testing.T) {
	probe := cloudsim.New(cloudsim.Options{Objects: 3, Modules: 3, ParamsPerModule: 30, Seed: cloudsim.DefaultSeed})
	objs := probe.Objects()
	t.Run("objects", func(t *testing.T) {
		a := startAccount(t, 3, 3, func(c *Config) { c.Objects = []int{objs[2].ID} }, nil)
		a.waitAllLiveOf(t, objs[2])
		if st := a.fleet.Status(); len(st.Objects) != 1 || st.Objects[0].Object.ID != objs[2].ID {
			t.Errorf("watching %+v, want only object %d", st.Objects, objs[2].ID)
		}
	})
	t.Run("modules", func(t *testing.T) {
		a := startAccount(t, 3, 3, func(c *Config) { c.Modules = []string{objs[1].Devids[0]} }, nil)
		a.waitAllLiveOf(t, objs[1])
		if st := a.fleet.Status(); len(st.Objects) != 1 || st.Objects[0].Object.ID != objs[1].ID {
			t.Errorf("watching %+v, want only object %d", st.Objects, objs[1].ID)
		}
	})
	t.Run("unknown module", func(t *testing.T) {
		a := startAccount(t, 3, 3, func(c *Config) { c.Modules = []string{"TYPO"} }, nil)
		var err error
		select {
		case err = <-a.done:
			a.done <- err
		case <-time.After(20 * time.Second):
			t.Fatal("the start did not fail")
		}
		var me *cloudclient.MissingModulesError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), objs[0].Devids[0]) {
			t.Fatalf("Run = %v, want a *MissingModulesError naming the offered devids", err)
		}
	})
}

// waitAllLiveOf waits until object o is healthy with live values.
func (a *account) waitAllLiveOf(t *testing.T, o cloudsim.ObjectInfo) {
	t.Helper()
	waitFor(t, "the object live", func() bool {
		a.sim.Drift()
		if !healthy(a.object(o.ID)) {
			return false
		}
		for _, d := range o.Devids {
			if a.store.Stats()[d].LastLive.IsZero() {
				return false
			}
		}
		return true
	})
}

// TestOneTokenRenewalForAllObjects: every object's gateway renews the
// shared token ahead of its expiry, and the renewals of all of them are one
// login each time, not one per object.
func TestOneTokenRenewalForAllObjects(t *testing.T) {
	// Expiry times travel in whole seconds (RFC 3339): a renewal every
	// 1 to 2 s.
	const ttl, leeway = 4 * time.Second, 2 * time.Second
	a := startAccountWith(t, cloudsim.Options{Objects: 4, Modules: 4, TokenTTL: ttl},
		func(c *cloudclient.Config) { c.RefreshLeeway = leeway }, nil, nil)
	a.waitAllLive(t)
	start, logins0 := time.Now(), a.sim.Logins()
	waitFor(t, "several renewals", func() bool { return a.sim.Logins() >= logins0+3 })
	elapsed, renewals := time.Since(start), a.sim.Logins()-logins0
	// One login per second at most (plus the one in flight); four objects
	// renewing each on their own would log in four times as often.
	if limit := int(elapsed/time.Second) + 2; renewals > limit {
		t.Errorf("%d logins in %v for 4 objects, want at most %d (one renewal for all)", renewals, elapsed, limit)
	}
	for _, o := range a.fleet.Status().Objects {
		if !healthy(&o) {
			t.Errorf("object %d not healthy across renewals", o.Object.ID)
		}
	}
}

// TestStartDuringCloudOutage: a fleet started while the cloud fails the
// login or the object list holds no object and counts every failed attempt
// as an unusable object listing; once the cloud answers, every object is
// watched and the streak clears.
func TestStartDuringCloudOutage(t *testing.T) {
	for name, path := range map[string]string{"login": "POST /v1/auth/user", "object list": "GET /v1/objects", "empty object list": "GET /v1/objects"} {
		t.Run(name, func(t *testing.T) {
			var end func()
			a := startAccount(t, 2, 2, nil, func(sim *cloudsim.Cloud) {
				if name == "empty object list" {
					// Every object hidden: the account lists none (yet).
					for _, o := range sim.Objects() {
						if err := sim.HideObject(o.ID); err != nil {
							t.Fatal(err)
						}
					}
					end = func() {
						for _, o := range sim.Objects() {
							_ = sim.ShowObject(o.ID)
						}
					}
					return
				}
				fault := sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: path, Status: 503})
				end = func() { sim.Clear(fault) }
			})
			waitFor(t, "failed attempts counted", func() bool { return a.fleet.Status().ListFailureStreak >= 2 })
			if st := a.fleet.Status(); len(st.Objects) != 0 || st.Listed {
				t.Fatalf("objects watched during the outage: %+v", st)
			}
			select {
			case <-a.fleet.Ready():
				t.Fatal("ready during the outage")
			default:
			}
			end()
			a.waitAllLive(t)
			if st := a.fleet.Status(); st.ListFailureStreak != 0 || !st.Listed || len(st.Objects) != 2 {
				t.Fatalf("after the outage: %+v", st)
			}
		})
	}
}

// dialRecorder wraps a transport and records when each Connect starts.
type dialRecorder struct {
	transport.Transport
	object int
	mu     *sync.Mutex
	dials  map[int][]time.Time
}

func (d dialRecorder) Connect(ctx context.Context) (transport.Session, error) {
	d.mu.Lock()
	d.dials[d.object] = append(d.dials[d.object], time.Now())
	d.mu.Unlock()
	return d.Transport.Connect(ctx)
}

// TestOutageEndingForAllIsSpread: when every object's session is dropped
// at once, the objects redial at their own offsets, spread over the
// reconnect spread, not all at the same instant.
func TestOutageEndingForAllIsSpread(t *testing.T) {
	const spread = 600 * time.Millisecond
	var mu sync.Mutex
	dials := map[int][]time.Time{}
	a := startAccount(t, 6, 6, func(c *Config) {
		c.ReconnectSpread = spread
		gw := c.Gateway
		c.Gateway = func(id int) realtime.Config {
			cfg := gw(id)
			newTransport := cfg.NewTransport
			cfg.NewTransport = func() (transport.Transport, error) {
				tr, err := newTransport()
				return dialRecorder{Transport: tr, object: id, mu: &mu, dials: dials}, err
			}
			return cfg
		}
	}, nil)
	a.waitAllLive(t)
	mu.Lock()
	before := map[int]int{}
	for id, d := range dials {
		before[id] = len(d)
	}
	mu.Unlock()
	sids := map[int]string{}
	for _, o := range a.fleet.Status().Objects {
		sids[o.Object.ID] = o.Gateway.NamespaceSID
	}
	dropped := time.Now()
	a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAbortTransport, Count: 1})
	waitFor(t, "every object on a new session", func() bool {
		for _, o := range a.fleet.Status().Objects {
			if o.Gateway.NamespaceSID == sids[o.Object.ID] || !o.Gateway.Connected {
				return false
			}
		}
		return true
	})
	a.waitAllLive(t)

	mu.Lock()
	defer mu.Unlock()
	var first, last time.Duration
	for i, o := range a.sim.Objects() {
		d := dials[o.ID]
		if len(d) <= before[o.ID] {
			t.Fatalf("object %d never redialled", o.ID)
		}
		at := d[before[o.ID]].Sub(dropped)
		// Every redial waits at least the object's own offset.
		if want := ReconnectOffset(o.ID, spread); at < want {
			t.Errorf("object %d redialled %v after the drop, before its offset %v", o.ID, at, want)
		}
		if i == 0 || at < first {
			first = at
		}
		if at > last {
			last = at
		}
	}
	if last-first < spread/4 {
		t.Errorf("6 objects redialled within %v of each other; want them spread over about %v", last-first, spread)
	}
}

// TestObjectWithoutModulesDoesNotHoldBackReadiness: objects whose module
// lists, read in full, name no module have nothing to prime: the fleet is
// ready regardless, and once the modules appear they are watched.
func TestObjectWithoutModulesDoesNotHoldBackReadiness(t *testing.T) {
	var empty int
	a := startAccount(t, 2, 2, nil, func(sim *cloudsim.Cloud) {
		empty = sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultListing, Path: "GET /v1/modules", Body: `{"data":[]}`})
	})
	select {
	case <-a.fleet.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("objects without modules hold back readiness")
	}
	if n := len(a.store.Stats()); n != 0 {
		t.Fatalf("%d modules stored while every list was empty", n)
	}
	a.sim.Clear(empty)
	a.waitAllLive(t)
}

// TestNarrowedStartReadsEachModuleListOnce: with --cloud.modules the fleet
// reads every object's module list to share the devids out, and hands each
// gateway the list it read: a start makes one module-list request per
// object, not two.
func TestNarrowedStartReadsEachModuleListOnce(t *testing.T) {
	probe := cloudsim.New(cloudsim.Options{Objects: 2, Modules: 4, ParamsPerModule: 30, Seed: cloudsim.DefaultSeed})
	objs := probe.Objects()
	listings := &listingCounter{next: http.DefaultTransport, byObject: map[string]int{}}
	a := startAccountWith(t, cloudsim.Options{Objects: 2, Modules: 4},
		func(c *cloudclient.Config) { c.HTTPClient = &http.Client{Transport: listings} },
		func(c *Config) {
			c.Modules = []string{objs[0].Devids[0], objs[1].Devids[0]}
			gateway := c.Gateway
			c.Gateway = func(id int) realtime.Config {
				cfg := gateway(id)
				cfg.PollInterval = time.Hour // no poll reads the lists again during the test
				return cfg
			}
		}, nil)
	select {
	case <-a.fleet.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("not ready")
	}
	waitFor(t, "both objects bound and live", func() bool {
		a.sim.Drift()
		return healthy(a.object(objs[0].ID)) && healthy(a.object(objs[1].ID))
	})
	for _, o := range objs {
		if got := a.object(o.ID).Gateway.Subscribed; !slices.Equal(got, o.Devids[:1]) {
			t.Errorf("object %d watches %v, want %v", o.ID, got, o.Devids[:1])
		}
	}
	want := map[string]int{strconv.Itoa(objs[0].ID): 1, strconv.Itoa(objs[1].ID): 1}
	if got := listings.counts(); !maps.Equal(got, want) {
		t.Errorf("module-list requests by group_id %v, want %v", got, want)
	}
	if got := a.sim.Requests(cloudapi.EndpointModules); got != 2 {
		t.Errorf("the simulator served %d module-list requests, want 2", got)
	}
}

// listingCounter counts the module-list requests the client sends, by the
// group_id (object) they ask for.
type listingCounter struct {
	next     http.RoundTripper
	mu       sync.Mutex
	byObject map[string]int
}

func (c *listingCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/v1/modules") {
		c.mu.Lock()
		c.byObject[r.URL.Query().Get("group_id")]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

func (c *listingCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.byObject)
}

// TestUnwatchedObjects: an object the account lists that no gateway
// watches is in Status.Unwatched: listed again without the module asked of
// it, or whose gateway's own read of its module list lacks that module (the
// gateway could not start); watched again once the module is back.
func TestUnwatchedObjects(t *testing.T) {
	// Four modules: Cottage keeps one when the one asked of it is gone (an
	// empty module list proves nothing).
	probe := cloudsim.New(cloudsim.Options{Objects: 2, Modules: 4, ParamsPerModule: 30, Seed: cloudsim.DefaultSeed})
	objs := probe.Objects()
	home, cottage := objs[0], objs[1]
	if len(cottage.Devids) < 2 {
		t.Fatalf("Cottage holds %v, want two modules", cottage.Devids)
	}
	asked := []string{home.Devids[0], cottage.Devids[0]}
	// waitHealthy waits until both objects are watched and healthy.
	waitHealthy := func(a *account) {
		t.Helper()
		waitFor(t, "both objects watched and healthy", func() bool {
			a.sim.Drift()
			return healthy(a.object(home.ID)) && healthy(a.object(cottage.ID))
		})
	}
	unwatched := func(a *account) []int {
		var ids []int
		for _, o := range a.fleet.Status().Unwatched {
			ids = append(ids, o.ID)
		}
		return ids
	}
	t.Run("listed again without the module", func(t *testing.T) {
		a := startAccount(t, 2, 4, func(c *Config) { c.Modules = asked }, nil)
		waitHealthy(a)
		if got := unwatched(a); len(got) != 0 {
			t.Fatalf("unwatched %v with every object watched", got)
		}
		if err := a.sim.HideObject(cottage.ID); err != nil {
			t.Fatal(err)
		}
		a.fleet.Relist()
		waitFor(t, "the hidden object stopped", func() bool { return a.object(cottage.ID) == nil })
		if got := unwatched(a); len(got) != 0 {
			t.Errorf("unwatched %v while the account does not list the object", got)
		}
		missing := a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: cottage.Devids[0]})
		if err := a.sim.ShowObject(cottage.ID); err != nil {
			t.Fatal(err)
		}
		a.fleet.Relist()
		waitFor(t, "the object listed and unwatched", func() bool { return slices.Equal(unwatched(a), []int{cottage.ID}) })
		if a.object(cottage.ID) != nil {
			t.Error("an object without the module asked of it is watched")
		}
		a.sim.Clear(missing)
		a.fleet.Relist()
		waitHealthy(a)
		if got := unwatched(a); len(got) != 0 {
			t.Errorf("unwatched %v once the module is back", got)
		}
	})
	t.Run("gateway could not start", func(t *testing.T) {
		// The gateway reads the module list again at start (no poll would
		// read the fleet's copy again), and that read no longer names the
		// module: the first read of Cottage's list injects the fault.
		var sim *cloudsim.Cloud
		var once sync.Once
		first := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			res, err := http.DefaultTransport.RoundTrip(r)
			if err == nil && r.URL.Path == "/v1/modules" && r.URL.Query().Get("group_id") == strconv.Itoa(cottage.ID) {
				once.Do(func() { sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: cottage.Devids[0]}) })
			}
			return res, err
		})
		a := startAccountWith(t, cloudsim.Options{Objects: 2, Modules: 4},
			func(c *cloudclient.Config) { c.HTTPClient = &http.Client{Transport: first} },
			func(c *Config) {
				c.Modules = asked
				gateway := c.Gateway
				c.Gateway = func(id int) realtime.Config {
					cfg := gateway(id)
					cfg.PollInterval = 0
					return cfg
				}
			},
			func(c *cloudsim.Cloud) { sim = c })
		waitFor(t, "the object whose gateway could not start unwatched", func() bool {
			return slices.Equal(unwatched(a), []int{cottage.ID}) && a.object(cottage.ID) == nil
		})
		if !healthy(a.object(home.ID)) {
			waitFor(t, "the other object watched", func() bool { a.sim.Drift(); return healthy(a.object(home.ID)) })
		}
		a.sim.ClearAll()
		a.fleet.Relist()
		waitFor(t, "the object watched once its module is back", func() bool {
			return a.object(cottage.ID) != nil && len(unwatched(a)) == 0
		})
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
