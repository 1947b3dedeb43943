package serving_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/internal/promrequest"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/serving"
	"github.com/bragerone/bragerone_exporter/wire"
)

// scrapeSizes are the parameter series counts of the scrape benchmark, as
// modules × parameters per module.
var scrapeSizes = []struct{ modules, perModule int }{
	{1, 1000},
	{10, 1000},
	{100, 1000},
}

// filledStore returns a real parameter store primed with modules ×
// perModule numeric parameters spread over pools P4-P6 and channels
// v/s/u/n/x, and the snapshot listing those modules.
func filledStore(modules, perModule int) (*store.Store, collector.Snapshot) {
	st := store.New()
	now := time.Unix(1757000000, 0)
	snap := collector.Snapshot{Now: now, Objects: []collector.ObjectState{{ID: 1, Name: "Home", Session: collector.SessionState{Up: true}}}}
	for m := range modules {
		devid := fmt.Sprintf("FTTC%06d", m)
		ups := make([]wire.ParamUpdate, 0, perModule)
		for i := range perModule {
			ups = append(ups, wire.ParamUpdate{
				Devid: devid, Pool: "P" + strconv.Itoa(4+i%3), Chan: "vsunx"[(i/3)%5], Idx: i / 15,
				Value: float64(i) * 0.5, HasValue: true,
			})
		}
		st.ApplyPrime(st.BeginPrime(), ups, now)
		snap.Modules = append(snap.Modules, collector.ModuleState{
			Devid: devid, Name: "Module " + devid, Title: "Boiler", Version: "1.2.3",
			OnlineKnown: true, Online: true, ConnectedAt: 1757000000, LastUpdate: now, Params: perModule,
		})
	}
	return st, snap
}

// baselineCollector is what a plain client_golang exporter does: one
// prometheus.MustNewConstMetric per series, with the label values built
// afresh for every series at every scrape.
type baselineCollector struct {
	desc  *prometheus.Desc
	store *store.Store
}

func (b *baselineCollector) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }

func (b *baselineCollector) Collect(ch chan<- prometheus.Metric) {
	type series struct {
		devid, pool, param string
		value              float64
	}
	var all []series
	b.store.ForEachParam(func(devid, pool, param string, value float64, numeric bool) {
		if numeric {
			all = append(all, series{devid, pool, param, value})
		}
	})
	for _, s := range all {
		// Label values as a naive exporter builds them: a fresh slice and
		// a param label rendered per scrape.
		labels := []string{s.devid, s.pool, string(s.param[0]) + s.param[1:]}
		ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, s.value, labels...)
	}
}

// countingWriter is an http.ResponseWriter that keeps nothing but the size.
type countingWriter struct {
	h http.Header
	n int
}

func (w *countingWriter) Header() http.Header         { return w.h }
func (w *countingWriter) WriteHeader(int)             {}
func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// serveOpts are the promhttp options of the serve command's /metrics.
func serveOpts(reg *prometheus.Registry) promhttp.HandlerOpts {
	return promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: reg, EnableOpenMetrics: true}
}

// scrapeFormats are the requests of the scrape benchmark.
var scrapeFormats = []struct{ name, accept, encoding string }{
	{"text", "text/plain;version=0.0.4", ""},
	{"text+gzip", "text/plain;version=0.0.4", "gzip"},
	{"openmetrics", "application/openmetrics-text;version=1.0.0", ""},
	{"openmetrics+gzip", "application/openmetrics-text;version=1.0.0", "gzip"},
}

// benchHandler scrapes h with the request's Accept and Accept-Encoding and
// reports the cost per parameter series.
func benchHandler(b *testing.B, h http.Handler, series int, accept, encoding string) {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", accept)
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	w := &countingWriter{h: http.Header{}}
	h.ServeHTTP(w, req) // warm caches and pools
	if w.n == 0 {
		b.Fatal("empty /metrics answer")
	}
	body := w.n
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.n = 0
		clear(w.h)
		h.ServeHTTP(w, req)
	}
	b.StopTimer()
	if w.n == 0 {
		b.Fatal("empty /metrics answer")
	}
	perScrape := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perScrape/float64(series), "ns/series")
	b.ReportMetric(float64(body)/float64(series), "body-B/series")
}

// BenchmarkScrape serves /metrics for 1k, 10k and 100k parameter series held
// in a real store, text format and OpenMetrics, with and without gzip, three
// ways in the same run:
//
//   - "collector": the serve command's handler, serving.NewHandler over
//     the collector fed in exposition order (ForEachParamInLabelOrder), which
//     writes the parameter family itself for the text formats;
//   - "collector-labelorder": the registry path, promhttp.HandlerFor over a
//     registry holding the same collector (what serve did before the
//     handler wrote the parameter family; what it still does for protobuf);
//   - "baseline": promhttp over a plain MustNewConstMetric collector.
//
// B/op and allocs/op are per scrape; divide by the series count (in the
// name) for per series.
func BenchmarkScrape(b *testing.B) {
	for _, size := range scrapeSizes {
		n := size.modules * size.perModule
		st, snap := filledStore(size.modules, size.perModule)
		source := collector.SnapshotFunc(func() collector.Snapshot { return snap })
		for _, f := range scrapeFormats {
			b.Run(fmt.Sprintf("series=%d/%s/collector", n, f.name), func(b *testing.B) {
				c, err := collector.New(source, collector.ParamSourceFunc(st.ForEachParamInLabelOrder), collector.Options{})
				if err != nil {
					b.Fatal(err)
				}
				reg := prometheus.NewRegistry()
				benchHandler(b, serving.NewHandler(reg, c, serveOpts(reg)), n, f.accept, f.encoding)
			})
			b.Run(fmt.Sprintf("series=%d/%s/collector-labelorder", n, f.name), func(b *testing.B) {
				c, err := collector.New(source, collector.ParamSourceFunc(st.ForEachParamInLabelOrder), collector.Options{})
				if err != nil {
					b.Fatal(err)
				}
				reg := prometheus.NewRegistry()
				reg.MustRegister(c)
				benchHandler(b, promhttp.HandlerFor(reg, serveOpts(reg)), n, f.accept, f.encoding)
			})
			b.Run(fmt.Sprintf("series=%d/%s/baseline", n, f.name), func(b *testing.B) {
				reg := prometheus.NewRegistry()
				reg.MustRegister(&baselineCollector{
					desc:  prometheus.NewDesc("bragerone_parameter_value", "Numeric value of parameter <pool>.<param>.", []string{"devid", "pool", "param"}, nil),
					store: st,
				})
				benchHandler(b, promhttp.HandlerFor(reg, serveOpts(reg)), n, f.accept, f.encoding)
			})
		}
	}
}

// peakWriter discards an answer, sampling the live heap every so many bytes
// written.
type peakWriter struct {
	h            http.Header
	n, next      int
	every        int
	base, high   uint64
	sampledCount int
}

func (w *peakWriter) Header() http.Header { return w.h }
func (w *peakWriter) WriteHeader(int)     {}
func (w *peakWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n >= w.next {
		w.next = w.n + w.every
		w.sample()
	}
	return len(p), nil
}

func (w *peakWriter) sample() {
	w.sampledCount++
	if h := liveHeap(); h > w.base && h-w.base > w.high {
		w.high = h - w.base
	}
}

// liveHeap is the heap in use after a forced collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkScrapePeak serves one 100k-series scrape (100 modules × 1000
// parameters in a real store) with Prometheus 2.42's request (OpenMetrics,
// gzip) through the serve handler, and reports the most live heap the
// scrape held above the store and the handler's pools while it wrote its
// answer (peak-live-MB: sampled after a forced collection every 64 KiB of
// compressed answer), and what it allocated (B/op).
func BenchmarkScrapePeak(b *testing.B) {
	st, snap := filledStore(100, 1000)
	c, err := collector.New(collector.SnapshotFunc(func() collector.Snapshot { return snap }),
		collector.ParamSourceFunc(st.ForEachParamInLabelOrder), collector.Options{})
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	h := serving.NewHandler(reg, c, serveOpts(reg))
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", promrequest.Prometheus2Accept)
	req.Header.Set("Accept-Encoding", promrequest.AcceptEncoding)
	h.ServeHTTP(&countingWriter{h: http.Header{}}, req) // warm the pools
	var peak float64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		w := &peakWriter{h: http.Header{}, every: 64 << 10, base: liveHeap()}
		b.StartTimer()
		h.ServeHTTP(w, req)
		if w.sampledCount == 0 || w.n == 0 {
			b.Fatal("nothing written")
		}
		peak += float64(w.high) / 1e6
	}
	b.ReportMetric(peak/float64(b.N), "peak-live-MB")
}
