package serving

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/exposition"
)

// Collector is what the handler serves beside the registry: a
// prometheus.Collector whose large families a scrape can keep back for the
// handler to write itself (collector.Collector).
type Collector interface {
	prometheus.Collector
	NewDirectScrape() *collector.DirectScrape
}

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
func NewHandler(reg prometheus.Gatherer, c Collector, opts promhttp.HandlerOpts) http.Handler {
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
	c            Collector
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
	tf, ok := exposition.FormatOf(format)
	if !ok || !compressible(encoding) {
		h.slow.ServeHTTP(w, r)
		return
	}
	h.serveDirect(w, r, format, tf, encoding)
}

// serveDirect is promhttp's handler for the text formats with the large
// families written directly.
func (h *metricsHandler) serveDirect(w http.ResponseWriter, r *http.Request, format expfmt.Format, tf exposition.Format, encoding string) {
	scrape := h.c.NewDirectScrape()
	own := prometheus.NewRegistry()
	var mfs []*dto.MetricFamily
	err := own.Register(scrape)
	if err == nil {
		// Gather waits for every Collect: the kept-back families are known after it.
		mfs, err = prometheus.Gatherers{h.base, own}.Gather()
	}
	direct, repeated := scrape.Families()
	// The registry hands out families sorted by name; the direct ones take
	// their place among them.
	slices.SortFunc(direct, func(a, b exposition.Family) int { return cmp.Compare(a.Name, b.Name) })
	if repeated != nil {
		// The registry would have rejected them; say so as it would.
		err = errors.Join(err, repeated)
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
	series := 0
	for _, mf := range mfs {
		series += len(mf.GetMetric())
	}
	for _, f := range direct {
		series += f.Series
	}
	if encoding != "identity" {
		w.Header().Set("Content-Encoding", encoding)
	}
	out, closeOut := compressor(encoding, series, w)
	defer closeOut()

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
		for len(direct) > 0 && (last || direct[0].Name < name) {
			f := direct[0]
			direct = direct[1:]
			if wanted != nil && !wanted[f.Name] {
				continue
			}
			if handleError(f.Write(out, tf)) {
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
