package collector

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
)

var update = flag.Bool("update", false, "rewrite the golden exposition files in testdata/")

// testBuildInfoLabels replace the labels of bragerone_exporter_build_info in
// golden files, so they depend neither on the build nor on the toolchain.
var testBuildInfoLabels = map[string]string{
	"version": "1.2.3", "revision": "abc1234", "branch": "main",
	"goversion": "go1.test", "goos": "linux", "goarch": "amd64", "tags": "unknown",
}

func newTestCollector(t testing.TB, s Snapshot, params ParamSource, opts Options) *Collector {
	t.Helper()
	c, err := New(SnapshotFunc(func() Snapshot { return s }), params, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// goldenCases are the snapshots compared with testdata/<name>.prom.
var goldenCases = []struct {
	name   string
	snap   func() Snapshot
	params func() ParamSource
	opts   Options
}{
	{"healthy", healthySnapshot, func() ParamSource { return healthyParams() }, Options{}},
	{"session_down", sessionDownSnapshot, func() ParamSource { return healthyParams() }, Options{}},
	{"module_offline", moduleOfflineSnapshot, func() ParamSource { return healthyParams() }, Options{}},
	{"push_unknown", pushUnknownSnapshot, func() ParamSource { return nil }, Options{}},
	{"push_zombie", zombieSnapshot, func() ParamSource { return healthyParams() }, Options{}},
	{"quarantine", quarantineSnapshot, func() ParamSource { return healthyParams() }, Options{}},
	{"filters_cap", healthySnapshot, func() ParamSource { return healthyParams() },
		Options{Include: []string{"P4.*", "P5.v3"}, Exclude: []string{"*.s*"}, MaxSeries: 2}},
	{"hostile", hostileSnapshot, func() ParamSource { return hostileParams() }, Options{}},
	{"catalog", catalogSnapshot, func() ParamSource { return catalogParams() }, catalogOpts(testCatalog())},
	{"account_ok", accountOKSnapshot, func() ParamSource { return nil }, Options{}},
	{"account_throttled", accountThrottledSnapshot, func() ParamSource { return nil }, Options{}},
	{"departed", departedSnapshot, func() ParamSource { return healthyParams() }, Options{}},
}

func goldenPath(name string) string { return filepath.Join("testdata", name+".prom") }

// compareGolden compares what c exposes with testdata/<name>.prom, or
// rewrites the file with -update.
func compareGolden(t *testing.T, c prometheus.Collector, name string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	compareGoldenGatherer(t, reg, name)
}

func compareGoldenGatherer(t *testing.T, g prometheus.Gatherer, name string) {
	t.Helper()
	if *update {
		got, err := exposeGatherer(g)
		if err != nil {
			t.Fatalf("format: %v", err)
		}
		if err := os.WriteFile(goldenPath(name), got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenPath(name))
	if err != nil {
		t.Fatalf("golden file: %v (run go test -update to create it)", err)
	}
	if err := testutil.GatherAndCompare(g, bytes.NewReader(want)); err != nil {
		t.Fatalf("exposition differs from %s:\n%v", goldenPath(name), err)
	}
}

// expose returns the text exposition of collectors, as /metrics serves it.
// (testutil.CollectAndFormat returns nothing when no names are given.)
func expose(cs ...prometheus.Collector) ([]byte, error) {
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return exposeGatherer(reg)
}

func exposeGatherer(g prometheus.Gatherer) ([]byte, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func TestCollectGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCollector(t, tc.snap(), tc.params(), tc.opts)
			compareGolden(t, c, tc.name)

			problems, err := testutil.CollectAndLint(c)
			if err != nil {
				t.Fatalf("lint: %v", err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
			if n := c.Skipped(); n != 0 {
				t.Errorf("skipped %d series", n)
			}
		})
	}
}

// samples gathers c and returns the samples of one metric as "labels value"
// lines, e.g. `{devid="MOD1",pool="P4",param="v1"} 21.5`, for direct checks.
func gather(t *testing.T, c prometheus.Collector) map[string]map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := make(map[string]map[string]float64)
	for _, mf := range mfs {
		series := make(map[string]float64)
		for _, m := range mf.GetMetric() {
			var parts []string
			for _, lp := range m.GetLabel() {
				parts = append(parts, lp.GetName()+"="+lp.GetValue())
			}
			key := strings.Join(parts, ",")
			switch {
			case m.Gauge != nil:
				series[key] = m.GetGauge().GetValue()
			case m.Counter != nil:
				series[key] = m.GetCounter().GetValue()
			default:
				series[key] = 1
			}
			if m.TimestampMs != nil {
				t.Errorf("%s{%s} carries a client-side timestamp", mf.GetName(), key)
			}
		}
		out[mf.GetName()] = series
	}
	return out
}

func TestPresenceRules(t *testing.T) {
	cases := []struct {
		name    string
		snap    func() Snapshot
		present []string
		absent  []string
	}{
		{"healthy", healthySnapshot,
			[]string{"bragerone_push_healthy", "bragerone_token_expiry_timestamp_seconds", "bragerone_session_last_outage_seconds"},
			[]string{"bragerone_live_stale_seconds", "bragerone_session_outage_seconds", "bragerone_module_outage_seconds", "bragerone_module_last_outage_seconds"}},
		{"session down: push false, no stale age", sessionDownSnapshot,
			[]string{"bragerone_push_healthy", "bragerone_session_outage_seconds"},
			[]string{"bragerone_live_stale_seconds"}},
		{"push unknown", pushUnknownSnapshot,
			nil,
			[]string{"bragerone_push_healthy", "bragerone_live_stale_seconds", "bragerone_last_live_update_timestamp_seconds", "bragerone_token_expiry_timestamp_seconds"}},
		{"zombie", zombieSnapshot,
			[]string{"bragerone_push_healthy", "bragerone_live_stale_seconds"}, nil},
		{"module offline", moduleOfflineSnapshot,
			[]string{"bragerone_module_outage_seconds", "bragerone_module_last_outage_seconds"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := gather(t, newTestCollector(t, tc.snap(), healthyParams(), Options{}))
			for _, n := range tc.present {
				if len(got[n]) == 0 {
					t.Errorf("%s absent, want present", n)
				}
			}
			for _, n := range tc.absent {
				if len(got[n]) != 0 {
					t.Errorf("%s present %v, want absent", n, got[n])
				}
			}
		})
	}
}

func TestModuleOnlineAbsentWhileUnknown(t *testing.T) {
	got := gather(t, newTestCollector(t, moduleOfflineSnapshot(), nil, Options{}))
	if v, ok := got["bragerone_module_online"]["devid=MOD1"]; !ok || v != 0 {
		t.Errorf("MOD1 online = %v (present %v), want 0", v, ok)
	}
	if _, ok := got["bragerone_module_online"]["devid=MOD2"]; ok {
		t.Errorf("MOD2 online exported while unknown")
	}
	if _, ok := got["bragerone_module_alarms"]["devid=MOD2"]; ok {
		t.Errorf("MOD2 alarms exported while unknown")
	}
	if v := got["bragerone_module_outage_seconds"]["devid=MOD1,reason=ws"]; v != 600 {
		t.Errorf("MOD1 outage = %v, want 600", v)
	}
}

func TestNoStaleSeries(t *testing.T) {
	var mu sync.Mutex
	snap := healthySnapshot()
	params := healthyParams()
	src := SnapshotFunc(func() Snapshot { mu.Lock(); defer mu.Unlock(); return snap })
	c, err := New(src, ParamSourceFunc(func(fn func(string, string, string, float64, bool)) {
		mu.Lock()
		p := params
		mu.Unlock()
		p.ForEachParam(fn)
	}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "bragerone_parameter_value"); n != 8 {
		t.Fatalf("parameter series = %d, want 8 (GONE is not in the snapshot)", n)
	}

	// MOD2 leaves the account; its parameters are still in the store.
	mu.Lock()
	snap.Modules = snap.Modules[:1]
	mu.Unlock()
	got := gather(t, c)
	for name, series := range got {
		for key := range series {
			if strings.Contains(key, "MOD2") {
				t.Errorf("%s{%s} still exported after MOD2 left", name, key)
			}
		}
	}
	if n := len(got["bragerone_parameter_value"]); n != 4 {
		t.Errorf("parameter series = %d, want 4", n)
	}

	// A parameter disappears from the store.
	mu.Lock()
	params = params[1:]
	mu.Unlock()
	if _, ok := gather(t, c)["bragerone_parameter_value"]["devid=MOD1,param=v1,pool=P4"]; ok {
		t.Errorf("removed parameter P4.v1 still exported")
	}
}

func TestFilters(t *testing.T) {
	cases := []struct {
		name             string
		include, exclude []string
		want             []string // "devid/pool.param"
	}{
		{"no filters", nil, nil, []string{"MOD1/P4.s40", "MOD1/P4.v1", "MOD1/P4.v8", "MOD1/P5.v3"}},
		{"include values of P4", []string{"P4.v*"}, nil, []string{"MOD1/P4.v1", "MOD1/P4.v8"}},
		{"include whole pool", []string{"P5.*"}, nil, []string{"MOD1/P5.v3"}},
		{"star spans the dot", []string{"P4*"}, nil, []string{"MOD1/P4.s40", "MOD1/P4.v1", "MOD1/P4.v8"}},
		{"exclude status bits", nil, []string{"*.s*"}, []string{"MOD1/P4.v1", "MOD1/P4.v8", "MOD1/P5.v3"}},
		{"exclude wins over include", []string{"P4.*"}, []string{"P4.v8"}, []string{"MOD1/P4.s40", "MOD1/P4.v1"}},
		{"character class", []string{"P[45].v[13]"}, nil, []string{"MOD1/P4.v1", "MOD1/P5.v3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := healthySnapshot()
			snap.Modules = snap.Modules[:1]
			c := newTestCollector(t, snap, healthyParams(), Options{Include: tc.include, Exclude: tc.exclude})
			// Twice: the second scrape is answered from the decision cache.
			for range 2 {
				got := paramKeys(gather(t, c))
				if strings.Join(got, " ") != strings.Join(tc.want, " ") {
					t.Fatalf("exported %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func paramKeys(g map[string]map[string]float64) []string {
	var keys []string
	for k := range g["bragerone_parameter_value"] {
		var devid, pool, param string
		for _, kv := range strings.Split(k, ",") {
			name, v, _ := strings.Cut(kv, "=")
			switch name {
			case "devid":
				devid = v
			case "pool":
				pool = v
			case "param":
				param = v
			}
		}
		keys = append(keys, devid+"/"+pool+"."+param)
	}
	slices.Sort(keys)
	return keys
}

// The cap is per module: each module keeps its first MaxSeries series in
// (pool, param) order, whatever order the store hands them out in.
func TestMaxSeriesIsDeterministic(t *testing.T) {
	params := healthyParams()
	params = append(params, num("MOD2", "P3.v9", 3))
	reversed := make(paramList, len(params))
	for i, p := range params {
		reversed[len(params)-1-i] = p
	}
	for i, src := range []paramList{params, reversed, params} {
		c := newTestCollector(t, healthySnapshot(), src, Options{MaxSeries: 3})
		g := gather(t, c)
		keys := paramKeys(g)
		want := []string{"MOD1/P4.s40", "MOD1/P4.v1", "MOD1/P4.v8", "MOD2/P3.v9", "MOD2/P4.s40", "MOD2/P4.v1"}
		if strings.Join(keys, " ") != strings.Join(want, " ") {
			t.Fatalf("order %d: kept %v, want %v", i, keys, want)
		}
		if d := g["bragerone_parameter_series_dropped"]; d["devid=MOD1"] != 1 || d["devid=MOD2"] != 2 {
			t.Fatalf("order %d: dropped = %v, want MOD1 1, MOD2 2", i, d)
		}
	}
}

func TestDroppedIsZeroWithoutCap(t *testing.T) {
	g := gather(t, newTestCollector(t, healthySnapshot(), healthyParams(), Options{}))
	d := g["bragerone_parameter_series_dropped"]
	if len(d) != 2 || d["devid=MOD1"] != 0 || d["devid=MOD2"] != 0 {
		t.Fatalf("dropped = %v, want 0 for both modules", d)
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name    string
		opts    Options
		wantErr []string // substrings of the error; none = valid
	}{
		{"empty", Options{}, nil},
		{"good patterns", Options{Include: []string{"P4.v*", "P5.*"}, Exclude: []string{"*.s*", "P[4-6].v1?"}, MaxSeries: 10}, nil},
		{"unclosed class", Options{Include: []string{"P4.[v"}}, []string{`include pattern "P4.[v"`, "syntax error"}},
		{"trailing escape", Options{Exclude: []string{`P4.v\`}}, []string{`exclude pattern "P4.v\\"`}},
		{"empty pattern", Options{Include: []string{""}}, []string{`include pattern ""`, "empty pattern"}},
		{"negative cap", Options{MaxSeries: -1}, []string{"max series", "-1"}},
		{"every problem reported", Options{Include: []string{"["}, Exclude: []string{"]["}, MaxSeries: -5},
			[]string{`include pattern "["`, `exclude pattern "]["`, "-5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted invalid options")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, nerr := New(SnapshotFunc(healthySnapshot), nil, tc.opts); nerr == nil {
				t.Errorf("New accepted invalid options")
			}
		})
	}
	var pe *PatternError
	if err := (Options{Include: []string{"["}}).Validate(); !errors.As(err, &pe) || !errors.Is(err, path.ErrBadPattern) {
		t.Errorf("error %v is not a *PatternError wrapping path.ErrBadPattern", err)
	}
	if err := (Options{MaxSeries: -1}).Validate(); !errors.Is(err, ErrNegativeMaxSeries) {
		t.Errorf("error %v is not ErrNegativeMaxSeries", err)
	}
}

func TestNewRejectsNilSource(t *testing.T) {
	if _, err := New(nil, nil, Options{}); err == nil {
		t.Fatal("New accepted a nil snapshot source")
	}
}

func TestNegativeDurationsExportedAsZero(t *testing.T) {
	s := sessionDownSnapshot()
	home(&s).Session.Outage.DownFor = -3e9
	home(&s).Recovery.CooldownLeft = -1
	g := gather(t, newTestCollector(t, s, nil, Options{}))
	if v, ok := g["bragerone_session_outage_seconds"]["object_id=1001,reason=disconnect"]; !ok || v != 0 {
		t.Errorf("session outage = %v (present %v), want 0", v, ok)
	}
	if v, ok := g["bragerone_recovery_cooldown_seconds"]["object_id=1001"]; !ok || v != 0 {
		t.Errorf("cooldown = %v (present %v), want 0", v, ok)
	}
}

func TestConcurrentScrapes(t *testing.T) {
	c := newTestCollector(t, healthySnapshot(), healthyParams(), Options{Exclude: []string{"*.s*"}, MaxSeries: 2})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			mfs, err := reg.Gather()
			if err != nil {
				errs <- err
				return
			}
			for _, mf := range mfs {
				if mf.GetName() == "bragerone_parameter_value" && len(mf.GetMetric()) != 4 {
					errs <- errors.New("wrong number of parameter series under concurrency")
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStoreIsNotHeldWhileEmitting checks that no parameter series is sent
// while the store is being walked: the store's lock is held only for the walk,
// never while the registry drains the channel.
//
// The walk brackets itself with two markers sent on the same unbuffered
// channel from the collecting goroutine: a marker is received only once every
// series sent before it has been received, and the walk goes on only once its
// marker has been received. A series the receiver takes between the two
// markers was therefore sent during the walk, and only such a series: the
// assertion depends on the order of the channel, not on timing.
func TestStoreIsNotHeldWhileEmitting(t *testing.T) {
	ch := make(chan prometheus.Metric) // unbuffered: every send waits for the receiver
	marker := prometheus.NewDesc("test_walk_marker", "Marks the start or the end of the store's walk.", nil, nil)
	walkStart := prometheus.MustNewConstMetric(marker, prometheus.GaugeValue, 1)
	walkEnd := prometheus.MustNewConstMetric(marker, prometheus.GaugeValue, 0)
	src := ParamSourceFunc(func(fn func(devid, pool, param string, value float64, numeric bool)) {
		ch <- walkStart
		healthyParams().ForEachParam(fn)
		ch <- walkEnd
	})
	c := newTestCollector(t, healthySnapshot(), src, Options{})
	type tally struct{ walks, duringWalk, params int }
	done := make(chan tally)
	go func() {
		var got tally
		walking := false
		for m := range ch {
			switch m {
			case walkStart:
				walking = true
				got.walks++
			case walkEnd:
				walking = false
			default:
				if walking {
					got.duringWalk++
				}
				if strings.Contains(m.Desc().String(), `"bragerone_parameter_value"`) {
					got.params++
				}
			}
		}
		done <- got
	}()
	c.Collect(ch)
	close(ch)
	got := <-done
	if got.walks != 1 {
		t.Fatalf("the store was walked %d times in one scrape, want 1", got.walks)
	}
	if got.params == 0 {
		t.Fatal("no parameter series was sent: the test would prove nothing")
	}
	if got.duringWalk != 0 {
		t.Fatalf("%d series were sent while the store was being walked", got.duringWalk)
	}
}

// TestParamSeriesAllocationsDoNotGrowPerSeries guards the design of the
// parameter pass: a scrape allocates a few slabs, not objects per series.
func TestParamSeriesAllocationsDoNotGrowPerSeries(t *testing.T) {
	store, snap := newBenchStore(10, 1000) // 10 000 series
	c := newTestCollector(t, snap, store, Options{Exclude: []string{"*.x*"}})
	ch := make(chan prometheus.Metric, 20000)
	allocs := fewestAllocs(3, func() {
		c.Collect(ch)
		for len(ch) > 0 {
			<-ch
		}
	})
	// The module series (about 25 per module) go through NewConstMetric;
	// 10 000 parameter series must add only a handful.
	t.Logf("allocations per scrape: %v", allocs)
	if allocs > 3000 {
		t.Fatalf("one scrape of 10 000 parameter series allocates %v times", allocs)
	}
}
