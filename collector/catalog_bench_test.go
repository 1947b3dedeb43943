package collector

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// BenchmarkScrapeCatalogFamilies measures what the catalog's families add
// to a scrape: 3 modules × 800 stored parameters, 500 of each described
// (half scaled, a tenth enums with three states, a fifth with a visibility
// rule), served by the /metrics handler in the text format (the direct
// path) and in OpenMetrics (the registry path, what Prometheus negotiates
// by default). Each iteration scrapes with the catalog and, as the same-run
// baseline, the same store without it; ns/catalog-series is the difference
// divided by the catalog series of one scrape.
func BenchmarkScrapeCatalogFamilies(b *testing.B) {
	for _, format := range []struct{ name, accept string }{{"text", acceptText}, {"openmetrics", acceptOpenMetr}} {
		b.Run(format.name, func(b *testing.B) {
			fake, snap := newBenchStore(3, 800)
			// A real store, walked in exposition order as serve does, so
			// the parameter family costs both sides the same.
			st := store.New()
			for _, d := range fake.devids {
				ups := make([]wire.ParamUpdate, len(fake.params))
				for i := range fake.params {
					ups[i] = wire.ParamUpdate{Devid: d, Pool: fake.pools[i], Chan: fake.params[i][0], Idx: i, Value: fake.values[i], HasValue: true}
				}
				st.ApplyPrime(st.BeginPrime(), ups, t0)
			}
			src := ParamSourceFunc(st.ForEachParamInLabelOrder)
			cs := catalogBench(fake.devids, fake.pools, fake.params, 500)
			opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true}
			base := NewHandler(prometheus.NewRegistry(), newTestCollector(b, snap, src, Options{}), opts)
			col := catalogCollector(b, snap, src, func() *CatalogState { return cs }, Options{})
			with := NewHandler(prometheus.NewRegistry(), col, opts)

			var d directSeries
			col.collect(make(chan prometheus.Metric, 4096), &d)
			n := len(d.catalog.info) + len(d.catalog.display) + len(d.catalog.state)
			if n == 0 {
				b.Fatal("no catalog series")
			}
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept", format.accept)
			w := &discardWriter{h: http.Header{}}
			scrape := func(h http.Handler) time.Duration {
				clear(w.h)
				start := time.Now()
				h.ServeHTTP(w, req)
				return time.Since(start)
			}
			scrape(with)
			scrape(base)
			var tWith, tBase time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				tWith += scrape(with)
				tBase += scrape(base)
			}
			b.StopTimer()
			b.ReportMetric(float64(n), "catalog-series")
			b.ReportMetric(float64(tWith-tBase)/float64(b.N)/float64(n), "ns/catalog-series")
		})
	}
}

// discardWriter is an http.ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
