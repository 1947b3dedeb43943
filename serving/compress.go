package serving

import (
	"io"
	"net/http"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	// promhttp offers zstd only when this package is linked in; with it,
	// both paths of the /metrics handler offer the same encodings.
	_ "github.com/prometheus/client_golang/prometheus/promhttp/zstd"
)

// defaultCompressions are the encodings promhttp offers when
// HandlerOpts.OfferedCompressions is empty and its zstd package is linked
// in (imported above), in promhttp's order.
var defaultCompressions = []promhttp.Compression{promhttp.Identity, promhttp.Gzip, promhttp.Zstd}

// gzipLevel is the fast path's gzip level. A scrape body is highly
// repetitive text (the same label names and devid on every line), so the
// fastest levels already compress it about 15:1; promhttp's default level
// (compress/gzip's 6) spends several times the CPU of the rest of the scrape
// for a body a few percent smaller. BENCHMARKS.md has the measurements
// behind the choice.
const gzipLevel = gzip.BestSpeed

// statefulGzipSeries is the size of answer, in series, from which gzip
// uses a pooled BestSpeed writer rather than a stateless one. A BestSpeed
// writer keeps about 0.8 MB of tables, which stay warm in the pool between
// scrapes and count twice in the heap the garbage collector lets grow; the
// stateless writer keeps nothing, answers about 3 % larger and costs about
// 40 ns more per series (BENCHMARKS.md, sections 4 and 5). Below this size
// that is under a millisecond a scrape, while the tables would be a fifth of
// a small account's whole live heap; above it the time counts and the
// tables are a small share of what the account holds anyway.
const statefulGzipSeries = 25_000

// pipedGzipSeries is the size of answer, in series, from which gzip
// compresses on a goroutine of its own beside the one writing the text
// (pipe.go), when the process may use two CPUs or more. Below it, handing
// chunks between goroutines costs more than the overlap saves.
const pipedGzipSeries = statefulGzipSeries

// Writers are pooled: a stateful gzip writer holds several hundred KiB of
// tables and a zstd encoder more, far more than a scrape should allocate
// each time. A pooled writer that is not used for two garbage collections
// is released.
var (
	gzipWriters = sync.Pool{New: func() any {
		zw, err := gzip.NewWriterLevel(nil, gzipLevel)
		if err != nil {
			panic(err) // gzipLevel is a valid level
		}
		return zw
	}}
	statelessGzipWriters = sync.Pool{New: func() any {
		zw, err := gzip.NewWriterLevel(nil, gzip.StatelessCompression)
		if err != nil {
			panic(err) // a valid level
		}
		return zw
	}}
	zstdWriters = sync.Pool{New: func() any {
		// One goroutine per encoder (the scrape is the concurrency), and
		// promhttp's level; a 1 MiB window keeps the encoder small while
		// still reaching back across a module's lines.
		zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // the options are valid
		}
		return zw
	}}
)

// compressible reports whether the fast path compresses encoding itself.
func compressible(encoding string) bool {
	return encoding == "identity" || encoding == "gzip" || encoding == "zstd"
}

// compressor returns the writer of a response body of about series series
// in encoding (one for which compressible is true) and the function that
// finishes the body and returns the writer to its pool.
func compressor(encoding string, series int, w http.ResponseWriter) (io.Writer, func()) {
	switch encoding {
	case "gzip":
		pool := &gzipWriters
		if series < statefulGzipSeries {
			pool = &statelessGzipWriters
		}
		zw := pool.Get().(*gzip.Writer)
		zw.Reset(w)
		if series < pipedGzipSeries || runtime.GOMAXPROCS(0) < 2 {
			return zw, func() {
				_ = zw.Close()
				zw.Reset(nil) // drop the response writer
				pool.Put(zw)
			}
		}
		p := newPipe(zw)
		return p, func() {
			_ = p.Close()
			_ = zw.Close()
			zw.Reset(nil)
			pool.Put(zw)
		}
	case "zstd":
		zw := zstdWriters.Get().(*zstd.Encoder)
		zw.Reset(w)
		return zw, func() {
			_ = zw.Close()
			zw.Reset(nil)
			zstdWriters.Put(zw)
		}
	}
	return w, func() {}
}
