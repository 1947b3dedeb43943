package collector_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/serving"
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
			plain, col, n := collector.CatalogBenchCollectors(b)
			opts := promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true}
			base := serving.NewHandler(prometheus.NewRegistry(), plain, opts)
			with := serving.NewHandler(prometheus.NewRegistry(), col, opts)
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
