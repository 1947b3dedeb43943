package serving_test

import (
	stdgzip "compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/serving"
)

// resetWriter is a compressor that can be pooled.
type resetWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressors are the candidates for the fast path's response compression.
// "new" variants build a writer per body, as promhttp does for zstd; the
// others are reset and reused, as from a pool.
var compressors = []struct {
	name string
	make func() resetWriter
	new  bool
}{
	{"stdlib-gzip-6", func() resetWriter { w, _ := stdgzip.NewWriterLevel(nil, stdgzip.DefaultCompression); return w }, false},
	{"stdlib-gzip-1", func() resetWriter { w, _ := stdgzip.NewWriterLevel(nil, stdgzip.BestSpeed); return w }, false},
	{"stdlib-gzip-huffman", func() resetWriter { w, _ := stdgzip.NewWriterLevel(nil, stdgzip.HuffmanOnly); return w }, false},
	{"klauspost-gzip-1", func() resetWriter { w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed); return w }, false},
	{"klauspost-gzip-2", func() resetWriter { w, _ := gzip.NewWriterLevel(nil, 2); return w }, false},
	{"klauspost-gzip-3", func() resetWriter { w, _ := gzip.NewWriterLevel(nil, 3); return w }, false},
	{"klauspost-gzip-5", func() resetWriter { w, _ := gzip.NewWriterLevel(nil, 5); return w }, false},
	{"klauspost-gzip-6", func() resetWriter { w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression); return w }, false},
	{"klauspost-gzip-stateless", func() resetWriter { w, _ := gzip.NewWriterLevel(nil, gzip.StatelessCompression); return w }, false},
	{"klauspost-gzip-huffman", func() resetWriter { w, _ := gzip.NewWriterLevel(nil, gzip.HuffmanOnly); return w }, false},
	{"zstd-fastest-pooled", func() resetWriter {
		w, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
		return w
	}, false},
	{"zstd-fastest-promhttp", func() resetWriter {
		w, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
		return w
	}, true},
}

// BenchmarkCompress compresses the serve handler's uncompressed OpenMetrics
// answer for 1k, 10k and 100k parameter series with each candidate and
// reports the time and compressed size per series. The scrape benchmarks
// measure the fast path's chosen compressor end to end.
func BenchmarkCompress(b *testing.B) {
	for _, size := range scrapeSizes {
		n := size.modules * size.perModule
		st, snap := filledStore(size.modules, size.perModule)
		c, err := collector.New(collector.SnapshotFunc(func() collector.Snapshot { return snap }),
			collector.ParamSourceFunc(st.ForEachParamInLabelOrder), collector.Options{})
		if err != nil {
			b.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
		rec := httptest.NewRecorder()
		serving.NewHandler(reg, c, serveOpts(reg)).ServeHTTP(rec, req)
		body := rec.Body.Bytes()
		for _, cmp := range compressors {
			b.Run(fmt.Sprintf("series=%d/%s", n, cmp.name), func(b *testing.B) {
				out := &countingWriter{h: http.Header{}}
				zw := cmp.make()
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					out.n = 0
					if cmp.new {
						zw = cmp.make()
					}
					zw.Reset(out)
					// Written as the handler writes: chunks of about 32 KiB.
					for p := body; len(p) > 0; {
						k := min(len(p), 32<<10)
						if _, err := zw.Write(p[:k]); err != nil {
							b.Fatal(err)
						}
						p = p[k:]
					}
					if err := zw.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/series")
				b.ReportMetric(float64(out.n)/float64(n), "zB/series")
				b.ReportMetric(float64(len(body))/float64(out.n), "ratio")
			})
		}
	}
}
