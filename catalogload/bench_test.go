package catalogload_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/serving"
)

// simulated is the simulator as serve --simulate runs it (3 modules × 800
// parameters), its modules as the module list describes them, and a store
// primed from it.
type simulated struct {
	sim   *cloudsim.Cloud
	specs []catalog.ModuleSpec
	store *store.Store
	snap  collector.Snapshot
}

func startSimulated(b *testing.B) *simulated {
	b.Helper()
	sim := cloudsim.New(cloudsim.Options{Modules: 3, ParamsPerModule: 800, Seed: 1, Logger: slog.New(slog.DiscardHandler)})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sim.Close() })
	rest, err := cloudclient.New(cloudclient.Config{BaseURL: sim.URL(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword})})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	listing, err := rest.Modules(ctx, sim.ObjectID())
	if err != nil {
		b.Fatal(err)
	}
	s := &simulated{sim: sim, store: store.New()}
	var devids []string
	for _, m := range listing.Modules {
		devids = append(devids, m.Devid)
		s.snap.Modules = append(s.snap.Modules, collector.ModuleState{Devid: m.Devid, Name: m.Name, OnlineKnown: true, Online: true})
	}
	ups, err := rest.Prime(ctx, devids)
	if err != nil {
		b.Fatal(err)
	}
	s.store.ApplyPrime(s.store.BeginPrime(), ups, time.Now())
	for _, m := range listing.Modules {
		devid := m.Devid
		s.specs = append(s.specs, catalog.ModuleSpec{DevID: devid, DeviceMenu: m.DeviceMenu, Permissions: m.Permissions,
			Values: func(pool, chanIdx string) (float64, bool) {
				k, ok := store.ParseKey(pool + "." + chanIdx)
				if !ok {
					return 0, false
				}
				e, ok := s.store.Get(devid, k)
				return e.Numeric, ok && e.IsNumeric
			}})
	}
	return s
}

// memFetcher serves assets recorded from one load, so a benchmark measures
// parsing and resolving, not the network.
type memFetcher struct {
	f     catalog.Fetcher
	mu    sync.Mutex
	files map[string][]byte
}

func (m *memFetcher) Asset(ctx context.Context, path string) ([]byte, error) {
	m.mu.Lock()
	b, ok := m.files[path]
	m.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := m.f.Asset(ctx, path)
	if err == nil {
		m.mu.Lock()
		m.files[path] = b
		m.mu.Unlock()
	}
	return b, err
}

func assetClient(b *testing.B, url string) *cloudclient.Client {
	b.Helper()
	c, err := cloudclient.New(cloudclient.Config{BaseURL: url})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCatalogLoad is a full catalog load for the 3 simulated modules:
// "parse" from assets in memory (discovery, index, menus, definitions,
// translations, resolution of every module), "refresh" through the asset
// client with every asset cached (each one revalidated, 304).
func BenchmarkCatalogLoad(b *testing.B) {
	s := startSimulated(b)
	opts := catalog.Options{Language: catalog.DefaultLanguage}
	for _, tc := range []struct {
		name string
		f    catalog.Fetcher
	}{
		{"parse", &memFetcher{f: assetClient(b, s.sim.URL()), files: map[string][]byte{}}},
		{"refresh", assetClient(b, s.sim.URL())},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, err := catalog.Load(context.Background(), tc.f, s.specs, opts) // fill the cache
			if err != nil {
				b.Fatal(err)
			}
			params := 0
			for _, spec := range s.specs {
				if m := c.Module(spec.DevID); m != nil {
					params += len(m.Params())
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := catalog.Load(context.Background(), tc.f, s.specs, opts); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/load")
			b.ReportMetric(float64(params), "described")
		})
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkCatalogSteadyStateMemory is the heap the catalog adds to serve
// for the 3 simulated modules once loaded and scraped: the loader with its
// asset client (which keeps every asset body for revalidation), the catalog,
// its conversion for the collector and the collector's rendered families.
// The store and a collector without the catalog exist before the first
// reading. Reported as added-heap-B (one figure per run; b.N does not
// change it).
func BenchmarkCatalogSteadyStateMemory(b *testing.B) {
	s := startSimulated(b)
	scrape := func(col *collector.Collector) {
		h := serving.NewHandler(prometheus.NewRegistry(), col, promhttp.HandlerOpts{})
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", "text/plain;version=0.0.4")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	params := collector.ParamSourceFunc(s.store.ForEachParamInLabelOrder)
	snap := collector.SnapshotFunc(func() collector.Snapshot { return s.snap })
	plain, err := collector.New(snap, params, collector.Options{})
	if err != nil {
		b.Fatal(err)
	}
	scrape(plain)

	var added uint64
	for b.Loop() {
		before := heapInUse()
		ready := make(chan struct{})
		close(ready)
		l, err := catalogload.New(catalogload.Config{
			Fetcher: assetClient(b, s.sim.URL()), Modules: func() []catalog.ModuleSpec { return s.specs }, Ready: ready,
			Options: catalog.Options{Language: catalog.DefaultLanguage},
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.Run(ctx) }()
		for l.State().Catalog == nil {
			if l.State().Loads > 0 {
				b.Fatalf("load failed: %v", l.State().LastError)
			}
			time.Sleep(time.Millisecond)
		}
		col, err := collector.New(snap, params, collector.Options{Catalog: &exporter.CatalogLoaderSource{State: l.State}})
		if err != nil {
			b.Fatal(err)
		}
		scrape(col)
		after := heapInUse()
		if after > before {
			added = after - before
		}
		runtime.KeepAlive(col)
		cancel()
		<-done
	}
	runtime.KeepAlive(plain)
	b.ReportMetric(float64(added), "added-heap-B")
}
