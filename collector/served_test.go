package collector_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/internal/promrequest"
	"github.com/bragerone/bragerone_exporter/serving"
)

// The collector's fixtures and family names, from export_test.go.
type (
	Snapshot    = collector.Snapshot
	ParamSource = collector.ParamSource
	Options     = collector.Options
	paramList   = collector.ParamList
)

var (
	num                    = collector.Num
	text                   = collector.Text
	healthySnapshot        = collector.HealthySnapshot
	healthyParams          = collector.HealthyParams
	hostileSnapshot        = collector.HostileSnapshot
	hostileParams          = collector.HostileParams
	catalogSnapshot        = collector.CatalogSnapshot
	catalogParams          = collector.CatalogParams
	catalogOpts            = collector.CatalogOpts
	testCatalog            = collector.TestCatalog
	hostileCatalog         = collector.HostileCatalog
	instrumentationFixture = collector.InstrumentationFixture
	newTestCollector       = collector.NewTestCollector
	compareGoldenGatherer  = collector.CompareGoldenGatherer
)

const (
	paramValueName   = collector.ParamValueName
	paramDisplayName = collector.ParamDisplayName
	paramInfoName    = collector.ParamInfoName
	paramStateName   = collector.ParamStateName
	paramTextName    = collector.ParamTextName
	paramRoleName    = collector.ParamRoleName
)

const (
	acceptText     = "text/plain;version=0.0.4"
	acceptProto    = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
	acceptOpenMetr = "application/openmetrics-text;version=1.0.0"
)

// handlerCases are the stores the fast path is compared on.
var handlerCases = []struct {
	name   string
	snap   func() Snapshot
	params func() ParamSource
	opts   Options
}{
	{"healthy", healthySnapshot, func() ParamSource { return healthyParams() }, Options{}},
	{"filters_cap", healthySnapshot, func() ParamSource { return healthyParams() },
		Options{Include: []string{"P4.*", "P5.v3"}, Exclude: []string{"*.s*"}, MaxSeries: 2}},
	{"cap_only", healthySnapshot, func() ParamSource { return healthyParams() }, Options{MaxSeries: 3}},
	{"hostile", hostileSnapshot, func() ParamSource { return hostileParams() }, Options{}},
	{"special_values", healthySnapshot, func() ParamSource {
		return paramList{
			num("MOD1", "P4.v1", math.NaN()), num("MOD1", "P4.v2", math.Inf(1)), num("MOD1", "P4.v3", math.Inf(-1)),
			num("MOD1", "P4.v4", math.Copysign(0, -1)), num("MOD1", "P4.v5", -1), num("MOD1", "P4.v6", 1),
			num("MOD1", "P4.v7", 1e-300), num("MOD1", "P4.v8", 123456789.123), num("MOD1", "P4.v9", -2.5e21),
			num("MOD2", "P5.s1", math.MaxFloat64), num("MOD2", "P5.s2", math.SmallestNonzeroFloat64), num("MOD2", "P5.s3", 0.1),
		}
	}, Options{}},
	{"no_param_source", healthySnapshot, func() ParamSource { return nil }, Options{}},
	{"no_numeric", healthySnapshot, func() ParamSource { return paramList{text("MOD1", "P6.x2"), num("GONE", "P4.v1", 1)} }, Options{}},
	{"no_modules", func() Snapshot { s := healthySnapshot(); s.Modules = nil; return s }, func() ParamSource { return healthyParams() }, Options{}},
	{"catalog", catalogSnapshot, func() ParamSource { return catalogParams() }, catalogOpts(testCatalog())},
	{"catalog_filters", catalogSnapshot, func() ParamSource { return catalogParams() },
		Options{Include: []string{"P4.*", "P5.v3"}, Exclude: []string{"*.s*"}, MaxSeries: 3, Catalog: collector.CatalogSourceFunc(testCatalog)}},
	{"catalog_hostile", hostileSnapshot, func() ParamSource { return hostileParams() }, catalogOpts(hostileCatalog())},
	{"label_order", healthySnapshot, func() ParamSource {
		return collector.InLabelValueOrder(healthyParams())
	}, Options{}},
	// Sources in exposition order are written from a walk of their own;
	// these check that it gives the same answer, and that what it cannot
	// write (over the cap, labels that sort otherwise once repaired) falls
	// back to the series slab (a repeated series: TestHandlerContinuesOnError
	// and TestParamStream).
	{"label_order_under_cap", healthySnapshot, func() ParamSource {
		return collector.InLabelValueOrder(healthyParams())
	}, Options{MaxSeries: 4}},
	{"label_order_over_cap", healthySnapshot, func() ParamSource {
		return collector.InLabelValueOrder(healthyParams())
	}, Options{MaxSeries: 3}},
	{"label_order_hostile", hostileSnapshot, func() ParamSource { return collector.InLabelValueOrder(hostileParams()) }, Options{}},
	{"label_order_catalog", catalogSnapshot, func() ParamSource { return collector.InLabelValueOrder(catalogParams()) }, catalogOpts(testCatalog())},
}

type answer struct {
	code   int
	header http.Header
	body   []byte
}

func get(t *testing.T, url, accept, acceptEncoding string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	// A transport of its own that never decompresses on its own.
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	switch resp.Header.Get("Content-Encoding") {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return answer{resp.StatusCode, resp.Header, body}
}

func serveOpts(reg *prometheus.Registry) promhttp.HandlerOpts {
	return promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, Registry: reg, EnableOpenMetrics: true}
}

// encodeText is what expfmt writes for families, in order.
func encodeText(t *testing.T, mfs []*dto.MetricFamily) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// byName renders families one by one, keyed by name, for comparing sets.
func byName(t *testing.T, mfs []*dto.MetricFamily) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, mf := range mfs {
		out[mf.GetName()] = string(encodeText(t, []*dto.MetricFamily{mf}))
	}
	return out
}

func parseText(t *testing.T, body []byte) []*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("fast-path exposition does not parse: %v\n%s", err, body)
	}
	var out []*dto.MetricFamily
	for _, mf := range fams {
		out = append(out, mf)
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

func parseProto(t *testing.T, body []byte) []*dto.MetricFamily {
	t.Helper()
	dec := expfmt.NewDecoder(bytes.NewReader(body), expfmt.NewFormat(expfmt.TypeProtoDelim))
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, mf)
	}
}

// fastAccepts are requests the handler answers itself: every text format
// promhttp negotiates, with the escaping schemes a client may ask for.
var fastAccepts = []string{
	acceptText,
	acceptOpenMetr,
	"application/openmetrics-text;version=0.0.1",
	"application/openmetrics-text",
	promrequest.Prometheus2Accept,
	promrequest.Prometheus3Accept,
	"application/openmetrics-text;version=1.0.0;escaping=underscores",
	"text/plain;version=1.0.0;escaping=values",
	"text/plain;version=0.0.4;escaping=dots",
}

// TestHandlerFastPathMatchesRegistry: for every store and every text format
// and encoding, the handler's own answer is byte for byte promhttp's answer
// over the registry holding the same families (the large ones in their
// place among the others, OpenMetrics' counter names, value spelling,
// HELP escaping and "# EOF" line, created samples when asked for), the
// registry path is not used for it, the text answer parses to the same
// families as the protobuf answer, and promtool accepts it.
func TestHandlerFastPathMatchesRegistry(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install the Debian package `prometheus` (apt-get install --no-install-recommends prometheus)")
	}
	for _, tc := range handlerCases {
		for _, created := range []bool{false, true} {
			name := tc.name
			if created {
				name += "/created_samples"
			}
			t.Run(name, func(t *testing.T) {
				reg, _ := instrumentationFixture(t)
				c := newTestCollector(t, tc.snap(), tc.params(), tc.opts)
				opts := serveOpts(reg)
				opts.EnableOpenMetricsTextCreatedSamples = created
				var slowUsed atomic.Bool
				h := serving.NewHandler(reg, registryPathSpy{c, &slowUsed}, opts)
				fast := httptest.NewServer(h)
				defer fast.Close()
				// The registry path over the same families: reg and the
				// collector, promhttp as serve configures it.
				own := prometheus.NewPedanticRegistry()
				own.MustRegister(c)
				ref := httptest.NewServer(promhttp.HandlerFor(prometheus.Gatherers{reg, own}, opts))
				defer ref.Close()

				for _, accept := range fastAccepts {
					for _, ae := range []string{"", "gzip", "zstd"} {
						slowUsed.Store(false)
						got := get(t, fast.URL, accept, ae)
						if slowUsed.Load() {
							t.Fatalf("Accept %q, Accept-Encoding %q: answered by the registry path", accept, ae)
						}
						want := get(t, ref.URL, accept, ae)
						if got.code != http.StatusOK || got.code != want.code {
							t.Fatalf("Accept %q, Accept-Encoding %q: status %d, registry path %d", accept, ae, got.code, want.code)
						}
						for _, hdr := range []string{"Content-Type", "Content-Encoding"} {
							if got.header.Get(hdr) != want.header.Get(hdr) {
								t.Errorf("Accept %q, Accept-Encoding %q: %s %q, registry path %q", accept, ae, hdr, got.header.Get(hdr), want.header.Get(hdr))
							}
						}
						if !bytes.Equal(got.body, want.body) {
							t.Fatalf("Accept %q, Accept-Encoding %q: answer differs from the registry path's:\n%s", accept, ae, firstDifference(got.body, want.body))
						}
					}
				}
				if tc.name != "no_param_source" && tc.name != "no_numeric" && tc.name != "no_modules" &&
					!bytes.Contains(get(t, fast.URL, acceptText, "").body, []byte(paramValueName+"{")) {
					t.Fatal("case without parameter series")
				}
				if strings.HasPrefix(tc.name, "catalog") {
					om := get(t, fast.URL, acceptOpenMetr, "").body
					for _, f := range []string{paramDisplayName, paramInfoName, paramStateName, paramTextName, paramRoleName} {
						if tc.name != "catalog_filters" && !bytes.Contains(om, []byte("\n"+f+"{")) {
							t.Errorf("catalog case without %s series", f)
						}
					}
				}

				text := get(t, fast.URL, acceptText, "")
				proto := get(t, fast.URL, acceptProto, "")
				if !slowUsed.Load() {
					t.Error("protobuf was not answered by the registry path")
				}
				if got, want := byName(t, parseText(t, text.body)), byName(t, parseProto(t, proto.body)); !mapsEqual(got, want) {
					t.Errorf("parsed text answer differs from the protobuf answer:\n%v\n%v", got, want)
				}
				cmd := exec.Command(promtool, "check", "metrics")
				cmd.Stdin = bytes.NewReader(text.body)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("promtool check metrics: %v\n%s", err, out)
				}
			})
		}
	}
}

// registryPathSpy is a collector that notes when the handler's registry
// path collects it: the fast path collects through NewDirectScrape instead.
type registryPathSpy struct {
	*collector.Collector
	used *atomic.Bool
}

func (s registryPathSpy) Collect(ch chan<- prometheus.Metric) {
	s.used.Store(true)
	s.Collector.Collect(ch)
}

// firstDifference shows where two answers part, with some context.
func firstDifference(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, bytes.LastIndexByte(got[:i], '\n')-300)
	return fmt.Sprintf("at byte %d of %d (want %d)\n--- got\n%s\n--- want\n%s", i, len(got), len(want),
		got[from:min(len(got), i+200)], want[from:min(len(want), i+200)])
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestHandlerGolden: the golden expositions, served by the handler's text
// path.
func TestHandlerGolden(t *testing.T) {
	for _, tc := range collector.GoldenCases() {
		t.Run(tc.Name, func(t *testing.T) {
			c := newTestCollector(t, tc.Snap(), tc.Params(), tc.Opts)
			srv := httptest.NewServer(serving.NewHandler(prometheus.NewRegistry(), c, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
			defer srv.Close()
			body := get(t, srv.URL, acceptText, "gzip").body
			compareGoldenGatherer(t, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
				return parseText(t, body), nil
			}), tc.Name)
		})
	}
}

// TestHandlerAnswersLikePromhttp: headers and the chosen encoding are those
// of promhttp for the same request, whichever path answers.
func TestHandlerAnswersLikePromhttp(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newTestCollector(t, healthySnapshot(), healthyParams(), Options{})
	fast := httptest.NewServer(serving.NewHandler(reg, c, serveOpts(reg)))
	defer fast.Close()
	refReg := prometheus.NewRegistry()
	refReg.MustRegister(newTestCollector(t, healthySnapshot(), healthyParams(), Options{}))
	ref := httptest.NewServer(promhttp.HandlerFor(refReg, serveOpts(refReg)))
	defer ref.Close()

	accepts := append([]string{"text/plain;version=1.0.0", "text/plain", "*/*", "", acceptProto, "application/json",
		"application/openmetrics-text;version=2.0.0", "application/openmetrics-text;version=9"}, fastAccepts...)
	for _, accept := range accepts {
		for _, ae := range []string{"", "gzip", "gzip;q=0", "identity;q=0, gzip;q=0.5", "*", "br", "GZIP", "deflate, gzip;q=1.0, *;q=0.5", "gzip;q=0.5, identity",
			"zstd", "zstd;q=0.5, gzip", "zstd, gzip", "zstd;q=0, gzip;q=0"} {
			got, want := get(t, fast.URL, accept, ae), get(t, ref.URL, accept, ae)
			for _, h := range []string{"Content-Type", "Content-Encoding"} {
				if got.header.Get(h) != want.header.Get(h) {
					t.Errorf("Accept %q, Accept-Encoding %q: %s %q, promhttp %q", accept, ae, h, got.header.Get(h), want.header.Get(h))
				}
			}
			if !slices.Equal(got.header.Values("Vary"), want.header.Values("Vary")) || got.code != want.code {
				t.Errorf("Accept %q, Accept-Encoding %q: %d Vary %q, promhttp %d %q", accept, ae, got.code, got.header.Values("Vary"), want.code, want.header.Values("Vary"))
			}
		}
	}
}

// TestHandlerNameFilter: promhttp's name[] query selects families on both
// paths, the parameter family included.
func TestHandlerNameFilter(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newTestCollector(t, healthySnapshot(), healthyParams(), Options{})
	srv := httptest.NewServer(serving.NewHandler(reg, c, serveOpts(reg)))
	defer srv.Close()
	for query, want := range map[string][]string{
		"?name[]=" + paramValueName:                                {paramValueName},
		"?name[]=bragerone_session_up":                             {"bragerone_session_up"},
		"?name[]=bragerone_session_up&name[]=" + paramValueName:    {paramValueName, "bragerone_session_up"},
		"?name[]=bragerone_parameter_series_dropped&name[]=nosuch": {"bragerone_parameter_series_dropped"},
	} {
		var got []string
		for _, mf := range parseText(t, get(t, srv.URL+query, acceptText, "").body) {
			got = append(got, mf.GetName())
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: families %v, want %v", query, got, want)
		}
	}
}

// TestHandlerContinuesOnError: a failing gatherer is logged and counted,
// and everything else is still served, as promhttp does with
// ContinueOnError; a repeated parameter series is treated as the registry
// treats it.
func TestHandlerContinuesOnError(t *testing.T) {
	reg := prometheus.NewRegistry()
	failing := prometheus.Gatherers{reg, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return nil, errors.New("broken source")
	})}
	params := append(healthyParams(), num("MOD1", "P4.v1", 99)) // repeats MOD1 P4.v1 (21.5)
	c := newTestCollector(t, healthySnapshot(), params, Options{})
	var log logLines
	opts := serveOpts(reg)
	opts.ErrorLog = &log
	srv := httptest.NewServer(serving.NewHandler(failing, c, opts))
	defer srv.Close()

	a := get(t, srv.URL, acceptText, "")
	if a.code != http.StatusOK {
		t.Fatalf("status %d", a.code)
	}
	fams := map[string]*dto.MetricFamily{}
	for _, mf := range parseText(t, a.body) {
		fams[mf.GetName()] = mf
	}
	var v1 []float64
	for _, m := range fams[paramValueName].GetMetric() {
		if labelsOf(m) == "devid=MOD1,param=v1,pool=P4" {
			v1 = append(v1, m.GetGauge().GetValue())
		}
	}
	if !slices.Equal(v1, []float64{21.5}) {
		t.Errorf("repeated series exported as %v, want the first one only", v1)
	}
	if fams["bragerone_session_up"] == nil {
		t.Error("the collector's families are missing")
	}
	if !strings.Contains(log.String(), "broken source") || !strings.Contains(log.String(), "collected more than once") {
		t.Errorf("error log: %q", log.String())
	}
	errs := fams["promhttp_metric_handler_errors_total"]
	if errs == nil {
		t.Fatal("no promhttp_metric_handler_errors_total")
	}
	a = get(t, srv.URL, acceptText, "")
	for _, mf := range parseText(t, a.body) {
		if mf.GetName() != "promhttp_metric_handler_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if labelsOf(m) == "cause=gathering" && m.GetCounter().GetValue() != 1 {
				t.Errorf("gathering errors counted %v after one failed scrape", m.GetCounter().GetValue())
			}
		}
	}
}

// TestHandlerHTTPErrorOnError: with HTTPErrorOnError a gathering error is
// a 500, as with promhttp.
func TestHandlerHTTPErrorOnError(t *testing.T) {
	failing := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return nil, errors.New("broken source") })
	c := newTestCollector(t, healthySnapshot(), healthyParams(), Options{})
	srv := httptest.NewServer(serving.NewHandler(failing, c, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	a := get(t, srv.URL, acceptText, "gzip")
	if a.code != http.StatusInternalServerError || !strings.Contains(string(a.body), "broken source") || a.header.Get("Content-Encoding") != "" {
		t.Fatalf("answer %d %q %q", a.code, a.header.Get("Content-Encoding"), a.body)
	}
}

func labelsOf(m *dto.Metric) string {
	var parts []string
	for _, lp := range m.GetLabel() {
		parts = append(parts, lp.GetName()+"="+lp.GetValue())
	}
	return strings.Join(parts, ",")
}

type logLines struct{ b strings.Builder }

func (l *logLines) Println(v ...any) {
	for _, x := range v {
		if err, ok := x.(error); ok {
			l.b.WriteString(err.Error())
		} else if s, ok := x.(string); ok {
			l.b.WriteString(s)
		}
		l.b.WriteByte(' ')
	}
	l.b.WriteByte('\n')
}

func (l *logLines) String() string { return l.b.String() }
