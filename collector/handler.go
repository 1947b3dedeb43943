package collector

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// NewHandler returns the /metrics handler for the families of reg and of c.
// reg must not have c registered: the handler gathers c itself.
//
// It answers exactly as promhttp.HandlerFor(reg + c, opts) does. When the
// negotiated format is one of the text formats (Prometheus text 0.0.4 or
// OpenMetrics 1.0.0 / 0.0.1, compressed or not), it writes the large
// families (bragerone_parameter_value, devid × parameter, and the catalog's
// parameter families) straight into the response in their place among the
// other families, without building a dto.Metric per series and without the
// registry's per-series consistency checks and sort: the series are unique
// and in order by construction (the handler still sorts the parameter
// values if the source does not hand them out in exposition order, and
// drops a duplicate as the registry would). Any other format (protobuf,
// OpenMetrics 2.0) takes the registry path, so correctness never depends on
// the fast path.
//
// Of opts, ErrorLog, ErrorHandling, Registry, DisableCompression,
// OfferedCompressions, AcceptedFormats, EnableOpenMetrics,
// EnableOpenMetricsTextCreatedSamples, ProcessStartTime, MaxRequestsInFlight
// and Timeout apply to both paths; CoalesceGather applies to the registry
// path only. The fast path compresses with its own pooled writers (see
// compress.go); the registry path with promhttp's.
func NewHandler(reg prometheus.Gatherer, c *Collector, opts promhttp.HandlerOpts) http.Handler {
	own := prometheus.NewRegistry()
	own.MustRegister(c)

	slowOpts := opts
	// Applied once around both paths below.
	slowOpts.MaxRequestsInFlight, slowOpts.Timeout, slowOpts.ProcessStartTime = 0, 0, time.Time{}
	h := &metricsHandler{
		base: reg,
		c:    c,
		opts: opts,
		slow: promhttp.HandlerFor(prometheus.Gatherers{reg, own}, slowOpts),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promhttp_metric_handler_errors_total",
			Help: "Total number of internal errors encountered by the promhttp metric handler.",
		}, []string{"cause"}),
	}
	if opts.Registry != nil {
		// promhttp has registered its counter; count into the same one.
		are := prometheus.AlreadyRegisteredError{}
		if err := opts.Registry.Register(h.errs); errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				h.errs = existing
			}
		}
	}
	h.formats = opts.AcceptedFormats
	if len(h.formats) == 0 {
		h.formats = expfmt.DefaultAcceptedFormats()
		if opts.EnableOpenMetrics {
			h.formats = expfmt.DefaultOpenMetricsAcceptedFormats()
		}
	}
	if opts.EnableOpenMetricsTextCreatedSamples {
		h.encOpts = append(h.encOpts, expfmt.WithCreatedLines())
	}
	if !opts.DisableCompression {
		offers := opts.OfferedCompressions
		if len(offers) == 0 {
			offers = defaultCompressions
		}
		for _, o := range offers {
			h.compressions = append(h.compressions, string(o))
		}
	}
	if opts.MaxRequestsInFlight > 0 {
		h.inFlight = make(chan struct{}, opts.MaxRequestsInFlight)
	}
	if opts.Timeout <= 0 {
		return h
	}
	return http.TimeoutHandler(h, opts.Timeout, fmt.Sprintf("Exceeded configured timeout of %v.\n", opts.Timeout))
}

type metricsHandler struct {
	base         prometheus.Gatherer
	c            *Collector
	opts         promhttp.HandlerOpts
	slow         http.Handler
	errs         *prometheus.CounterVec
	formats      []expfmt.Format
	encOpts      []expfmt.EncoderOption
	compressions []string
	inFlight     chan struct{}
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.opts.ProcessStartTime.IsZero() {
		w.Header().Set("Process-Start-Time-Unix", strconv.FormatInt(h.opts.ProcessStartTime.Unix(), 10))
	}
	if h.inFlight != nil {
		select {
		case h.inFlight <- struct{}{}:
			defer func() { <-h.inFlight }()
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", h.opts.MaxRequestsInFlight), http.StatusServiceUnavailable)
			return
		}
	}
	format := expfmt.NegotiateAccept(r.Header, h.formats...)
	encoding := "identity"
	if len(h.compressions) > 0 {
		encoding = negotiateEncoding(r, h.compressions)
	}
	tf, ok := textFormatOf(format)
	if !ok || !compressible(encoding) {
		h.slow.ServeHTTP(w, r)
		return
	}
	h.serveDirect(w, r, format, tf, encoding)
}

// textFormat is how the families the handler writes itself are spelled:
// the Prometheus text format or OpenMetrics 1.0 (0.0.1 is spelled the same),
// as expfmt's MetricFamilyToText and MetricFamilyToOpenMetrics write gauges.
type textFormat struct{ openMetrics bool }

// textFormatOf reports whether the handler writes format itself, and how.
// expfmt encodes every TypeOpenMetrics format but version 2.0.0 with its
// OpenMetrics 1.0 encoder; names are never changed by the format's escaping
// scheme because every name the handler writes is a legacy-valid name.
func textFormatOf(format expfmt.Format) (textFormat, bool) {
	switch format.FormatType() {
	case expfmt.TypeTextPlain:
		return textFormat{}, true
	case expfmt.TypeOpenMetrics:
		if _, params, err := mime.ParseMediaType(string(format)); err == nil && params["version"] == expfmt.OpenMetricsVersion_2_0_0 {
			return textFormat{}, false
		}
		return textFormat{openMetrics: true}, true
	}
	return textFormat{}, false
}

// appendGaugeHeader appends the HELP and TYPE lines of a gauge family.
// OpenMetrics escapes double quotes in HELP text, the text format does not.
func (f textFormat) appendGaugeHeader(b []byte, name, help string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = appendEscaped(b, help, f.openMetrics)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	return append(b, " gauge\n"...)
}

// appendValue appends a sample value.
func (f textFormat) appendValue(b []byte, v float64) []byte {
	if f.openMetrics {
		return appendOpenMetricsFloat(b, v)
	}
	return appendFloat(b, v)
}

// directFamily is one family the handler writes itself.
type directFamily struct {
	name string
	n    int
	// write writes HELP, TYPE and every series.
	write func(io.Writer, textFormat) error
}

// directScrape is the collector as one fast-path scrape sees it: everything
// but the large families goes to the registry; those are kept for the
// handler.
type directScrape struct {
	c      *Collector
	direct directSeries
}

func (s *directScrape) Describe(ch chan<- *prometheus.Desc) { s.c.Describe(ch) }

func (s *directScrape) Collect(ch chan<- prometheus.Metric) {
	s.c.collect(ch, &s.direct)
}

// serveDirect is promhttp's handler for the text formats with the large
// families written directly.
func (h *metricsHandler) serveDirect(w http.ResponseWriter, r *http.Request, format expfmt.Format, tf textFormat, encoding string) {
	scrape := &directScrape{c: h.c}
	own := prometheus.NewRegistry()
	var mfs []*dto.MetricFamily
	err := own.Register(scrape)
	if err == nil {
		// Gather waits for every Collect: scrape.direct is set after it.
		mfs, err = prometheus.Gatherers{h.base, own}.Gather()
	}
	series, dups := exposition(scrape.direct.params)
	direct := directCatalogFamilies(&scrape.direct.catalog)
	if len(series) > 0 {
		direct = append(direct, directFamily{paramValueName, len(series), func(w io.Writer, f textFormat) error {
			return writeParamFamily(w, f, series)
		}})
	}
	// The registry hands out families sorted by name; the direct ones take
	// their place among them.
	slices.SortFunc(direct, func(a, b directFamily) int { return cmp.Compare(a.name, b.name) })
	if dups > 0 {
		// The registry would have rejected them; say so as it would.
		err = errors.Join(err, fmt.Errorf("%d %s series collected more than once; the first of each is exported", dups, paramValueName))
	}
	if err != nil {
		if h.opts.ErrorLog != nil {
			h.opts.ErrorLog.Println("error gathering metrics:", err)
		}
		h.errs.WithLabelValues("gathering").Inc()
		switch h.opts.ErrorHandling {
		case promhttp.PanicOnError:
			panic(err)
		case promhttp.ContinueOnError:
			if len(mfs) == 0 && len(direct) == 0 {
				httpError(w, err)
				return
			}
		case promhttp.HTTPErrorOnError:
			httpError(w, err)
			return
		}
	}

	w.Header().Add("Vary", "Accept")
	if len(h.compressions) > 0 {
		w.Header().Add("Vary", "Accept-Encoding")
	}
	w.Header().Set("Content-Type", string(format))
	out, closeOut := compressor(encoding, w)
	defer closeOut()
	if encoding != "identity" {
		w.Header().Set("Content-Encoding", encoding)
	}

	// handleError reports an encoding error and tells whether to stop.
	handleError := func(err error) bool {
		if err == nil {
			return false
		}
		if h.opts.ErrorLog != nil {
			h.opts.ErrorLog.Println("error encoding and sending metric family:", err)
		}
		h.errs.WithLabelValues("encoding").Inc()
		switch h.opts.ErrorHandling {
		case promhttp.PanicOnError:
			panic(err)
		case promhttp.HTTPErrorOnError:
			return true
		}
		return false
	}
	var wanted map[string]bool
	if r.URL != nil {
		if names := r.URL.Query()["name[]"]; len(names) > 0 {
			wanted = make(map[string]bool, len(names))
			for _, n := range names {
				wanted[n] = true
			}
		}
	}
	enc := expfmt.NewEncoder(out, format, h.encOpts...)
	// writeDirect writes the direct families that sort before name.
	writeDirect := func(name string, last bool) bool {
		for len(direct) > 0 && (last || direct[0].name < name) {
			f := direct[0]
			direct = direct[1:]
			if wanted != nil && !wanted[f.name] {
				continue
			}
			if handleError(f.write(out, tf)) {
				return true
			}
		}
		return false
	}
	for _, mf := range mfs {
		if writeDirect(mf.GetName(), false) {
			return
		}
		if wanted != nil && !wanted[mf.GetName()] {
			continue
		}
		if handleError(enc.Encode(mf)) {
			return
		}
	}
	if writeDirect("", true) {
		return
	}
	if closer, ok := enc.(expfmt.Closer); ok {
		// OpenMetrics' closing "# EOF" line.
		handleError(closer.Close())
	}
}

// httpError is promhttp's answer when nothing can be served.
func httpError(w http.ResponseWriter, err error) {
	w.Header().Del("Content-Encoding")
	http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
}

// compareExposition orders series as the registry does: by label values in
// label name order (devid, param, pool), as byte strings.
func compareExposition(a, b *paramSeries) int {
	if a.mod != b.mod { // the same module has the same label
		if c := cmp.Compare(a.mod.label, b.mod.label); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(a.param, b.param), cmp.Compare(a.pool, b.pool))
}

// exposition puts series in exposition order and removes repeated label
// sets, keeping the first collected (the registry rejects later ones). It
// returns the series and how many were removed. A source in exposition order
// without repeats costs one linear check.
func exposition(series []paramSeries) ([]paramSeries, int) {
	repeats := false
	for i := 1; i < len(series); i++ {
		c := compareExposition(&series[i-1], &series[i])
		if c > 0 {
			slices.SortStableFunc(series, func(a, b paramSeries) int { return compareExposition(&a, &b) })
			repeats = true // not known: look
			break
		}
		repeats = repeats || c == 0
	}
	if !repeats {
		return series, 0
	}
	j := 1
	for i := 1; i < len(series); i++ {
		if compareExposition(&series[j-1], &series[i]) != 0 {
			series[j] = series[i]
			j++
		}
	}
	return series[:j], len(series) - j
}

// writeParamFamily writes bragerone_parameter_value in the text format f,
// as expfmt would write the registry's family: HELP, TYPE, then one line per
// series with labels devid, param, pool.
func writeParamFamily(w io.Writer, f textFormat, series []paramSeries) error {
	bp := textBufPool.Get().(*[]byte)
	defer textBufPool.Put(bp)
	b := f.appendGaugeHeader((*bp)[:0], paramValueName, paramValueHelp)

	var (
		mod    *exportedModule
		prefix []byte // `bragerone_parameter_value{devid="<devid>",param="` of mod
	)
	for i := range series {
		s := &series[i]
		if s.mod != mod {
			mod = s.mod
			prefix = append(prefix[:0], paramValueName+`{devid="`...)
			prefix = appendEscaped(prefix, mod.label, true)
			prefix = append(prefix, `",param="`...)
		}
		b = append(b, prefix...)
		b = appendEscaped(b, s.param, true)
		b = append(b, `",pool="`...)
		b = appendEscaped(b, s.pool, true)
		b = append(b, `"} `...)
		b = f.appendValue(b, s.value)
		b = append(b, '\n')
		if len(b) >= textFlushSize {
			if _, err := w.Write(b); err != nil {
				*bp = b
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	*bp = b
	return err
}

// textFlushSize is how much text is written to the response at once.
const textFlushSize = 32 << 10

var textBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, textFlushSize+1024)
	return &b
}}

// appendEscaped is expfmt's escaping: backslash and newline always, the
// double quote when quoted (label values; OpenMetrics HELP text).
func appendEscaped(b []byte, s string, quoted bool) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '"':
			if !quoted {
				continue
			}
			esc = `\"`
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		start = i + 1
	}
	return append(b, s[start:]...)
}

// appendFloat is expfmt's writeFloat.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case isSmallInteger(f):
		return strconv.AppendInt(b, int64(f), 10)
	default:
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
}

// isSmallInteger reports a whole number that strconv's shortest 'g' format
// writes as plain digits (exponent below 6), so that formatting it as an
// integer gives the same text at a fraction of the cost. Most parameters
// are such numbers.
func isSmallInteger(f float64) bool {
	return f > -1e6 && f < 1e6 && f == math.Trunc(f)
}

// appendOpenMetricsFloat is expfmt's writeOpenMetricsFloat: a float always
// looks like one (".0" added to integral values).
func appendOpenMetricsFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, "1.0"...)
	case f == 0:
		return append(b, "0.0"...)
	case f == -1:
		return append(b, "-1.0"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case isSmallInteger(f):
		return append(strconv.AppendInt(b, int64(f), 10), '.', '0')
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' {
			return b
		}
	}
	return append(b, '.', '0')
}
