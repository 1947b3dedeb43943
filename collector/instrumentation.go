package collector

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// EndpointOther is the endpoint label of requests beyond the endpoint cap.
const EndpointOther = "other"

// DefaultMaxEndpoints bounds the endpoint label values of the HTTP metrics.
const DefaultMaxEndpoints = 64

// HTTPDurationBuckets suit cloud REST latency: 50 ms to 10 s, with the
// client's default timeout (8 s) as a bucket boundary.
var HTTPDurationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 10}

// Instrumentation holds the exporter's own metrics: REST requests, logins
// and the build information. (Realtime events are counted per object by the
// gateways and exported by Collector from the snapshot.) Its methods are safe for
// concurrent use and never fail.
type Instrumentation struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	logins   *prometheus.CounterVec
	// buildInfo is bragerone_exporter_build_info, client_golang's version
	// collector: labelled from github.com/prometheus/common/version.
	buildInfo prometheus.Collector

	loginCounters map[cloudapi.LoginOutcome]prometheus.Counter

	mu           sync.Mutex
	endpoints    map[string]bool // endpoint label values admitted so far
	maxEndpoints int
}

// InstrumentationOptions configures NewInstrumentation.
type InstrumentationOptions struct {
	// Endpoints are the REST endpoint templates known in advance (for example
	// "POST /v1/modules/parameters"): they are admitted to the endpoint label
	// ahead of any other, so the cap never folds them into "other". Their
	// series appear when they are first called: a latency histogram of an
	// endpoint never called would be all zeros, and its quantile NaN.
	Endpoints []string
	// MaxEndpoints bounds how many distinct endpoint values are ever labelled
	// (known ones included); later ones are counted as "other". 0 means
	// DefaultMaxEndpoints.
	MaxEndpoints int

	// buildInfoLabels replace labels of the build information (the golden
	// files pin the toolchain's goversion, goos, goarch and tags).
	buildInfoLabels prometheus.Labels
}

// NewInstrumentation creates the exporter's own metrics and registers them on
// reg. The series whose label values are known in advance and that alerts
// take increase() of exist from the start with value 0: logins by result.
// Request counters and latency histograms appear per
// endpoint when it is first called.
func NewInstrumentation(reg prometheus.Registerer, opts InstrumentationOptions) (*Instrumentation, error) {
	in := &Instrumentation{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "http_requests_total",
			Help: "REST requests to the cloud by endpoint template and status code (0 = transport error).",
		}, []string{"endpoint", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: "http_request_duration_seconds",
			Help:    "REST request latency by endpoint template.",
			Buckets: HTTPDurationBuckets,
		}, []string{"endpoint"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "logins_total",
			Help: "Logins to the cloud by result (ok; rejected: the cloud refused the credentials; blocked: something in front of the cloud refused the login; rate_limited: the cloud throttles the account; unreachable: no verdict, the auth endpoint failed or was not reached).",
		}, []string{"result"}),
		buildInfo:     versioncollector.NewCollector(namespace+"_exporter", versioncollector.WithExtraConstLabels(opts.buildInfoLabels)),
		loginCounters: make(map[cloudapi.LoginOutcome]prometheus.Counter, len(cloudapi.LoginOutcomes())),
		endpoints:     make(map[string]bool),
		maxEndpoints:  opts.MaxEndpoints,
	}
	if in.maxEndpoints <= 0 {
		in.maxEndpoints = DefaultMaxEndpoints
	}
	for _, c := range []prometheus.Collector{in.requests, in.duration, in.logins, in.buildInfo} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, o := range cloudapi.LoginOutcomes() {
		in.loginCounters[o] = in.logins.WithLabelValues(string(o))
	}
	for _, ep := range opts.Endpoints {
		in.endpointLabel(ep)
	}
	return in, nil
}

// endpointLabel admits endpoint values first come, first served, up to the cap.
func (in *Instrumentation) endpointLabel(endpoint string) string {
	endpoint = LabelValue(endpoint)
	if endpoint == "" {
		return EndpointOther
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.endpoints[endpoint] {
		return endpoint
	}
	// One slot stays for "other" itself.
	if len(in.endpoints) >= in.maxEndpoints-1 {
		return EndpointOther
	}
	in.endpoints[endpoint] = true
	return endpoint
}

// ObserveHTTP records one REST request; code 0 means a transport error. It
// has the signature of cloudclient.Config.Observer.
func (in *Instrumentation) ObserveHTTP(endpoint string, code int, d time.Duration) {
	ep := in.endpointLabel(endpoint)
	in.requests.WithLabelValues(ep, codeLabel(code)).Inc()
	if d < 0 {
		d = 0
	}
	in.duration.WithLabelValues(ep).Observe(d.Seconds())
}

// codeLabel bounds the code label to 0 and the HTTP status range.
func codeLabel(code int) string {
	if code == 0 || (code >= 100 && code <= 599) {
		return strconv.Itoa(code)
	}
	return "other"
}

// ObserveLogin counts one login by outcome; an outcome outside
// cloudapi.LoginOutcomes counts as unreachable, so the label set stays
// fixed. It has the signature of cloudclient.Config.LoginObserver.
func (in *Instrumentation) ObserveLogin(o cloudapi.LoginOutcome) {
	c, ok := in.loginCounters[o]
	if !ok {
		c = in.loginCounters[cloudapi.LoginUnreachable]
	}
	c.Inc()
}
