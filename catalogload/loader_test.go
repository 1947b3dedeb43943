package catalogload

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

func testLogger() *slog.Logger {
	if os.Getenv("CATALOG_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// fixture is a simulated cloud, an asset client that counts the answers of
// the assets site, and the simulated modules as the module list describes
// them, with their primed values.
type fixture struct {
	t      *testing.T
	sim    *cloudsim.Cloud
	assets *cloudclient.Client
	rest   *cloudclient.Client
	store  *store.Store
	all    []catalog.ModuleSpec
	shown  atomic.Int32 // how many of all the module list shows

	mu    sync.Mutex
	codes map[int]int // asset answers by status
}

func newFixture(t *testing.T, modules int) *fixture {
	t.Helper()
	sim := cloudsim.New(cloudsim.Options{Modules: modules, ParamsPerModule: 120, Seed: 3, Logger: testLogger()})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	f := &fixture{t: t, sim: sim, store: store.New(), codes: map[int]int{}}
	var err error
	f.rest, err = cloudclient.New(cloudclient.Config{BaseURL: sim.URL(), Timeout: 2 * time.Second, Logger: testLogger(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword})})
	if err != nil {
		t.Fatal(err)
	}
	f.assets, err = cloudclient.New(cloudclient.Config{BaseURL: sim.URL(), Timeout: 2 * time.Second, Logger: testLogger(),
		Observer: func(endpoint string, code int, _ time.Duration) {
			if endpoint == "GET {assets}" {
				f.mu.Lock()
				f.codes[code]++
				f.mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	listing, err := f.rest.Modules(ctx, sim.ObjectID())
	if err != nil {
		t.Fatal(err)
	}
	var devids []string
	for _, m := range listing.Modules {
		devids = append(devids, m.Devid)
	}
	ups, err := f.rest.Prime(ctx, devids)
	if err != nil {
		t.Fatal(err)
	}
	f.store.ApplyPrime(f.store.BeginPrime(), ups, time.Now())
	for _, m := range listing.Modules {
		devid := m.Devid
		f.all = append(f.all, catalog.ModuleSpec{DevID: devid, DeviceMenu: m.DeviceMenu, Permissions: m.Permissions, ConnectedAt: m.ConnectedAt,
			Values: func(pool, chanIdx string) (float64, bool) {
				k, ok := store.ParseKey(pool + "." + chanIdx)
				if !ok {
					return 0, false
				}
				e, ok := f.store.Get(devid, k)
				return e.Numeric, ok && e.IsNumeric
			}})
	}
	f.shown.Store(int32(len(f.all)))
	return f
}

func (f *fixture) answers(code int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.codes[code]
}

func (f *fixture) modules() []catalog.ModuleSpec { return f.all[:f.shown.Load()] }

// run is a loader running until the test ends.
type run struct {
	t    *testing.T
	l    *Loader
	done chan error
}

func (f *fixture) start(ready <-chan struct{}, tune func(*Config)) *run {
	f.t.Helper()
	if ready == nil {
		c := make(chan struct{})
		close(c)
		ready = c
	}
	cfg := Config{
		Fetcher: f.assets, Modules: f.modules, Ready: ready,
		Version: func(ctx context.Context) (string, error) {
			v, err := f.assets.SystemVersion(ctx)
			if err != nil {
				return "", err
			}
			return v.Version, nil
		},
		Options:         catalog.Options{Language: "en", Timeout: 10 * time.Second},
		RefreshInterval: time.Hour, CheckInterval: 10 * time.Millisecond, VersionInterval: time.Hour,
		RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		Logger: testLogger(),
	}
	if tune != nil {
		tune(&cfg)
	}
	l, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{t: f.t, l: l, done: make(chan error, 1)}
	go func() { r.done <- l.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil && !errors.Is(err, ErrLanguage) {
				f.t.Errorf("Run = %v", err)
			}
			r.done <- err
		case <-time.After(15 * time.Second):
			f.t.Error("Run did not return after cancel")
		}
	})
	return r
}

// wait polls the loader's state until cond holds (deadline 20 s: an
// unreachable site costs a retried fetch per asset).
func (r *run) wait(what string, cond func(*State) bool) *State {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := r.l.State()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; state: loads=%d loaded=%v assets_up=%v failures=%v err=%v",
				what, st.Loads, st.Catalog != nil, st.AssetsUp, st.Failures, st.LastError)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func loaded(st *State) bool { return st.Catalog != nil }

// param is the description of a register of the fixture's first module.
func param(st *State, devid, pool, chanIdx string) *catalog.Param {
	return st.Catalog.Module(devid).Lookup(pool, chanIdx)
}

// The first load waits for the first prime, then discovers the index and
// describes every module from its own menu.
func TestLoadWaitsForReadyThenDescribesEveryModule(t *testing.T) {
	f := newFixture(t, 3)
	ready := make(chan struct{})
	r := f.start(ready, nil)
	time.Sleep(50 * time.Millisecond)
	if st := r.l.State(); st.Loads != 0 || f.answers(200) != 0 {
		t.Fatalf("loaded before the first prime: %d loads, %d asset answers", st.Loads, f.answers(200))
	}
	close(ready)
	st := r.wait("first load", loaded)
	if st.IndexAsset != f.sim.IndexAsset() || st.Language != "en" || !st.AssetsKnown || !st.AssetsUp || st.LoadedAt.IsZero() || st.Loads != 1 {
		t.Errorf("state after the first load: %+v (sim index %s)", st, f.sim.IndexAsset())
	}
	for _, spec := range f.all {
		m := st.Catalog.Module(spec.DevID)
		if m == nil || len(m.Params()) == 0 {
			t.Errorf("module %s (deviceMenu %d) not described", spec.DevID, spec.DeviceMenu)
		}
	}
	p := param(st, f.all[0].DevID, "P4", "v7")
	if p == nil || p.Name != "Boiler power" || p.Unit != "kW" {
		t.Fatalf("P4.v7 of %s: %+v, want Boiler power in kW", f.all[0].DevID, p)
	}
	raw, _ := f.all[0].Values("P4", "v7")
	if v, _, ok := p.Display(f.all[0].Values); !ok || v != float64(int(raw))*0.1 && v != roundTenth(raw*0.1) {
		t.Errorf("display of P4.v7 = %v (ok %v) for raw %v, want raw × 0.1", v, ok, raw)
	}
}

func roundTenth(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// A scheduled refresh revalidates every asset (304) and, finding the same
// content, keeps the same catalog.
func TestRefreshRevalidatesAndKeepsTheSameCatalog(t *testing.T) {
	f := newFixture(t, 2)
	r := f.start(nil, func(c *Config) { c.RefreshInterval = 30 * time.Millisecond })
	first := r.wait("first load", loaded)
	fetched := f.answers(200)
	st := r.wait("two refreshes", func(st *State) bool { return st.Loads >= 3 })
	if st.Catalog != first.Catalog {
		t.Error("a refresh that found the same assets replaced the catalog")
	}
	if !st.LoadedAt.After(first.LoadedAt) {
		t.Error("a good refresh did not move the load time")
	}
	if f.answers(304) == 0 {
		t.Errorf("no asset was revalidated with 304 (answers: %v)", f.codes)
	}
	// The pages are no-cache and revalidate too; no chunk is fetched whole again.
	if extra := f.answers(200) - fetched; extra > 0 {
		t.Errorf("%d assets fetched whole again by refreshes", extra)
	}
}

// A new deployment (a new frontend version and a new index hash; the old
// one answers 404) is found by the version watch and read.
func TestNewFrontendVersionRediscoversTheIndex(t *testing.T) {
	f := newFixture(t, 2)
	r := f.start(nil, func(c *Config) { c.VersionInterval = 10 * time.Millisecond })
	first := r.wait("first load", loaded)
	old := first.IndexAsset
	next := f.sim.RotateIndex()
	if next == old {
		t.Fatal("the simulator kept the index name")
	}
	st := r.wait("the new index", func(st *State) bool { return st.IndexAsset == next })
	if st.Catalog != first.Catalog {
		t.Error("a redeployment with the same content replaced the catalog (its series would change)")
	}
	if st.Failures[catalog.StageDiscovery] != 0 || st.LastError != nil {
		t.Errorf("rediscovery counted a failure: %v, %v", st.Failures, st.LastError)
	}
}

// One broken definition chunk costs that symbol only.
func TestBrokenChunkCostsThatChunkOnly(t *testing.T) {
	f := newFixture(t, 2)
	f.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAssetBroken, Path: "/assets/PARAM_P4_7"})
	r := f.start(nil, nil)
	st := r.wait("first load", loaded)
	if st.Failures[catalog.StageDefinition] == 0 {
		t.Errorf("the broken chunk was not counted: %v", st.Failures)
	}
	d := f.all[0].DevID
	if p := param(st, d, "P4", "v7"); p != nil && p.Symbol == "PARAM_P4_7" && p.Name == "Boiler power" {
		t.Error("the symbol of the broken chunk is described anyway")
	}
	if p := param(st, d, "P4", "v1"); p == nil || p.Name != "Boiler temperature" {
		t.Errorf("P4.v1 beside the broken chunk: %+v", p)
	}
}

// A language the web app does not offer stops the loader with the offered
// ones.
func TestUnknownLanguageIsFatalAtStart(t *testing.T) {
	f := newFixture(t, 1)
	r := f.start(nil, func(c *Config) { c.Options.Language = "xx" })
	var err error
	select {
	case err = <-r.done:
		r.done <- err
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not stop on an unknown language")
	}
	var le *catalog.LanguageError
	if !errors.Is(err, ErrLanguage) || !errors.As(err, &le) {
		t.Fatalf("Run = %v, want ErrLanguage with a *catalog.LanguageError", err)
	}
	if !slices.Contains(le.Offered, "en") || !slices.Contains(le.Offered, "pl") {
		t.Errorf("offered %v, want en and pl", le.Offered)
	}
	if st := r.l.State(); st.Failures[StageLanguage] != 1 || st.Catalog != nil {
		t.Errorf("state: failures %v, catalog %v", st.Failures, st.Catalog != nil)
	}
}

// An unreachable assets site: the last good catalog stays in use, the
// failure is counted at discovery and the site shown down; once it is back
// the next refresh finds it.
func TestUnreachableAssetsKeepTheLastGoodCatalog(t *testing.T) {
	f := newFixture(t, 2)
	r := f.start(nil, func(c *Config) { c.RefreshInterval = 30 * time.Millisecond })
	first := r.wait("first load", loaded)
	id := f.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAssetsUnreachable})
	st := r.wait("a failed refresh", func(st *State) bool { return st.AssetsKnown && !st.AssetsUp })
	if st.Catalog != first.Catalog || st.Failures[catalog.StageDiscovery] == 0 || st.LastError == nil {
		t.Errorf("after a failed refresh: same catalog %v, failures %v, err %v", st.Catalog == first.Catalog, st.Failures, st.LastError)
	}
	f.sim.Clear(id)
	st = r.wait("assets back", func(st *State) bool { return st.AssetsUp && st.LastError == nil })
	if st.Catalog != first.Catalog {
		t.Error("the catalog changed although the assets did not")
	}
}

// A first load that fails is retried on its own pause until it succeeds.
func TestFailedFirstLoadIsRetried(t *testing.T) {
	f := newFixture(t, 1)
	id := f.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAssetsUnreachable})
	r := f.start(nil, nil)
	st := r.wait("a failed first load", func(st *State) bool { return st.Loads >= 1 })
	if st.Catalog != nil || st.AssetsUp {
		t.Fatalf("a load against an unreachable site: %+v", st)
	}
	f.sim.Clear(id)
	r.wait("a retried load", loaded)
}

// A module that joins the account makes the catalog load again for it.
func TestNewModuleTriggersALoad(t *testing.T) {
	f := newFixture(t, 3)
	f.shown.Store(1)
	r := f.start(nil, nil)
	first := r.wait("first load", loaded)
	joined := f.all[2].DevID
	if first.Catalog.Module(joined) != nil {
		t.Fatal("a module not yet listed is described")
	}
	f.shown.Store(3)
	st := r.wait("the joined module described", func(st *State) bool { return st.Catalog.Module(joined) != nil })
	if st.Loads != 2 {
		t.Errorf("%d loads, want 2 (start, module joined)", st.Loads)
	}
	time.Sleep(50 * time.Millisecond)
	if n := r.l.State().Loads; n != 2 {
		t.Errorf("%d loads after the join settled: the module check loads while nothing changes", n)
	}
}

// Overrides are applied to every catalog loaded.
func TestOverridesAreApplied(t *testing.T) {
	f := newFixture(t, 1)
	o, err := catalog.ParseOverrides([]byte("P4.v7:\n  name: Burner output\n  scale: 0.01\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := f.start(nil, func(c *Config) { c.Overrides = o })
	st := r.wait("first load", loaded)
	p := param(st, f.all[0].DevID, "P4", "v7")
	if p == nil || p.Name != "Burner output" {
		t.Fatalf("P4.v7 with an override: %+v", p)
	}
	raw, _ := f.all[0].Values("P4", "v7")
	if v, _, ok := p.Display(f.all[0].Values); !ok || v != raw*0.01 {
		t.Errorf("display %v, want raw %v × 0.01", v, raw)
	}
}

// A refresh in which assets fail (a chunk broken by a deployment, a site
// going down midway) would give a poorer catalog: the one in use stays and
// the refresh is retried.
func TestRefreshWithFailedAssetsKeepsTheCatalogInUse(t *testing.T) {
	f := newFixture(t, 2)
	r := f.start(nil, func(c *Config) { c.RefreshInterval = 30 * time.Millisecond })
	first := r.wait("first load", loaded)
	id := f.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAssetBroken, Path: "/assets/PARAM_P4_7"})
	st := r.wait("a refresh with a broken chunk", func(st *State) bool { return st.Failures[catalog.StageDefinition] > 0 })
	if st.Catalog != first.Catalog || st.LastError == nil {
		t.Fatalf("after a refresh with a broken chunk: same catalog %v, err %v", st.Catalog == first.Catalog, st.LastError)
	}
	if p := param(st, f.all[0].DevID, "P4", "v7"); p == nil || p.Name != "Boiler power" {
		t.Errorf("P4.v7 lost its description: %+v", p)
	}
	f.sim.Clear(id)
	st = r.wait("a clean refresh", func(st *State) bool { return st.LastError == nil && st.Loads > first.Loads+1 })
	if st.Catalog != first.Catalog {
		t.Error("a clean refresh of the same assets replaced the catalog")
	}
}

// A reload for a new frontend version uses the version the check just read:
// it does not ask /v1/system/version a second time. Every ask here waits for
// the test's answer, so a second ask would hold the reload forever.
func TestVersionChangeReloadsWithoutAskingAgain(t *testing.T) {
	f := newFixture(t, 1)
	asks := make(chan chan string)
	r := f.start(nil, func(c *Config) {
		c.VersionInterval = 10 * time.Millisecond
		c.Version = func(ctx context.Context) (string, error) {
			answer := make(chan string)
			select {
			case asks <- answer:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			select {
			case v := <-answer:
				return v, nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
	})
	answer := func(v string) {
		t.Helper()
		select {
		case a := <-asks:
			a <- v
		case <-time.After(20 * time.Second):
			t.Fatalf("the loader never asked the frontend version (to answer %q)", v)
		}
	}
	answer("v1") // the first load's ask
	r.wait("first load", loaded)
	answer("v2") // a periodic check sees a new deployment
	st := r.wait("the reload for v2", func(st *State) bool { return st.Loads == 2 })
	if st.Catalog == nil || st.LastError != nil {
		t.Fatalf("reload for a new version: loaded=%v err=%v", st.Catalog != nil, st.LastError)
	}
}
