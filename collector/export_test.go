package collector

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// The tests that serve the collector through package serving are an
// external test package (serving imports collector); these names give them
// the fixtures and family names the internal tests use.

type (
	ParamList   = paramList
	StoredParam = storedParam
)

var (
	T0                     = t0
	Num                    = num
	Text                   = text
	HealthySnapshot        = healthySnapshot
	HealthyParams          = healthyParams
	HostileSnapshot        = hostileSnapshot
	HostileParams          = hostileParams
	CatalogSnapshot        = catalogSnapshot
	CatalogParams          = catalogParams
	CatalogOpts            = catalogOpts
	TestCatalog            = testCatalog
	HostileCatalog         = hostileCatalog
	InstrumentationFixture = instrumentationFixture
	NewTestCollector       = newTestCollector
	CompareGoldenGatherer  = compareGoldenGatherer
)

const (
	ParamValueName   = paramValueName
	ParamDisplayName = paramDisplayName
	ParamInfoName    = paramInfoName
	ParamStateName   = paramStateName
	ParamTextName    = paramTextName
	ParamRoleName    = paramRoleName
)

// InLabelValueOrder sorts l by devid, param, pool: the order of the label
// values in the exposition.
func InLabelValueOrder(l ParamList) ParamList {
	slices.SortFunc(l, func(a, b storedParam) int {
		return strings.Compare(a.devid+"\x00"+a.param+"\x00"+a.pool, b.devid+"\x00"+b.param+"\x00"+b.pool)
	})
	return l
}

// GoldenCase is one of goldenCases.
type GoldenCase struct {
	Name   string
	Snap   func() Snapshot
	Params func() ParamSource
	Opts   Options
}

// GoldenCases are goldenCases.
func GoldenCases() []GoldenCase {
	var out []GoldenCase
	for _, tc := range goldenCases {
		out = append(out, GoldenCase{tc.name, tc.snap, tc.params, tc.opts})
	}
	return out
}

// catalogBenchSources primes a real store with modules × perModule
// parameters and describes 500 of each module's; src walks the store in
// exposition order, as serve does.
func catalogBenchSources(modules, perModule int) (Snapshot, ParamSource, *CatalogState) {
	fake, snap := newBenchStore(modules, perModule)
	st := store.New()
	for _, d := range fake.devids {
		ups := make([]wire.ParamUpdate, len(fake.params))
		for i := range fake.params {
			ups[i] = wire.ParamUpdate{Devid: d, Pool: fake.pools[i], Chan: fake.params[i][0], Idx: i, Value: fake.values[i], HasValue: true}
		}
		st.ApplyPrime(st.BeginPrime(), ups, t0)
	}
	return snap, ParamSourceFunc(st.ForEachParamInLabelOrder), catalogBench(fake.devids, fake.pools, fake.params, 500)
}

// CatalogBenchCollectors are the two collectors BenchmarkScrapeCatalogFamilies
// compares: 3 modules × 800 stored parameters in a real store, walked in
// exposition order as serve does, without a catalog (base) and with 500 of
// each module's parameters described (with); n is how many catalog series
// one scrape of with has.
func CatalogBenchCollectors(b testing.TB) (base, with *Collector, n int) {
	b.Helper()
	snap, src, cs := catalogBenchSources(3, 800)
	base = newTestCollector(b, snap, src, Options{})
	with = catalogCollector(b, snap, src, func() *CatalogState { return cs }, Options{})
	var d directSeries
	with.collect(make(chan prometheus.Metric, 4096), &d)
	n = len(d.catalog.info) + len(d.catalog.display) + len(d.catalog.state)
	return base, with, n
}
