package collector

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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
		Options{Include: []string{"P4.*", "P5.v3"}, Exclude: []string{"*.s*"}, MaxSeries: 3}},
	{"cap_only", healthySnapshot, func() ParamSource { return healthyParams() }, Options{MaxSeries: 5}},
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
		Options{Include: []string{"P4.*", "P5.v3"}, Exclude: []string{"*.s*"}, MaxSeries: 3, Catalog: CatalogSourceFunc(testCatalog)}},
	{"catalog_hostile", hostileSnapshot, func() ParamSource { return hostileParams() }, catalogOpts(hostileCatalog())},
	{"label_order", healthySnapshot, func() ParamSource {
		l := healthyParams()
		slices.SortFunc(l, func(a, b storedParam) int {
			return strings.Compare(a.devid+"\x00"+a.param+"\x00"+a.pool, b.devid+"\x00"+b.param+"\x00"+b.pool)
		})
		return l
	}, Options{}},
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
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
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

// TestHandlerFastPathMatchesRegistry: for every store, the text answer is
// byte for byte what expfmt writes for the registry's families (the
// parameter family last), it parses to the same families as the registry
// path answers in protobuf, gzip changes nothing but the encoding, and
// promtool accepts it.
func TestHandlerFastPathMatchesRegistry(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install the Debian package `prometheus` (apt-get install --no-install-recommends prometheus)")
	}
	for _, tc := range handlerCases {
		t.Run(tc.name, func(t *testing.T) {
			reg, _ := instrumentationFixture(t)
			c := newTestCollector(t, tc.snap(), tc.params(), tc.opts)
			srv := httptest.NewServer(NewHandler(reg, c, serveOpts(reg)))
			defer srv.Close()

			// The registry path, gathered before any request so that the
			// handler's error counter reads the same in both.
			own := prometheus.NewPedanticRegistry()
			own.MustRegister(c)
			want, err := prometheus.Gatherers{reg, own}.Gather()
			if err != nil {
				t.Fatalf("registry path: %v", err)
			}
			// The families the handler writes itself come last: the
			// parameter values, then the catalog's families by name.
			var others, param []*dto.MetricFamily
			direct := map[string]*dto.MetricFamily{}
			for _, mf := range want {
				switch mf.GetName() {
				case paramValueName:
					param = append(param, mf)
				case paramDisplayName, paramInfoName, paramStateName:
					direct[mf.GetName()] = mf
				default:
					others = append(others, mf)
				}
			}
			for _, name := range []string{paramDisplayName, paramInfoName, paramStateName} {
				if mf := direct[name]; mf != nil {
					param = append(param, mf)
				}
			}
			if (tc.name == "catalog" || tc.name == "catalog_hostile") && len(direct) != 3 {
				t.Fatalf("catalog case with %d of the 3 catalog families", len(direct))
			}
			wantBody := append(encodeText(t, others), encodeText(t, param)...)

			text := get(t, srv.URL, acceptText, "")
			if text.code != http.StatusOK || !bytes.Equal(text.body, wantBody) {
				t.Fatalf("text answer (%d) differs from the registry's families:\n--- got\n%s\n--- want\n%s", text.code, text.body, wantBody)
			}
			if ct := text.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
				t.Errorf("Content-Type %q", ct)
			}
			if tc.name != "no_param_source" && tc.name != "no_numeric" && tc.name != "no_modules" && len(param) == 0 {
				t.Fatal("case without parameter series")
			}

			zipped := get(t, srv.URL, acceptText, "gzip")
			if zipped.header.Get("Content-Encoding") != "gzip" || !bytes.Equal(zipped.body, wantBody) {
				t.Errorf("gzip answer (%q) differs from the registry's families", zipped.header.Get("Content-Encoding"))
			}

			proto := get(t, srv.URL, acceptProto, "")
			if got, want := byName(t, parseText(t, text.body)), byName(t, parseProto(t, proto.body)); !mapsEqual(got, want) {
				t.Errorf("parsed text answer differs from the protobuf answer:\n%v\n%v", got, want)
			}
			om := get(t, srv.URL, acceptOpenMetr, "")
			if !strings.HasPrefix(om.header.Get("Content-Type"), "application/openmetrics-text") || !bytes.HasSuffix(om.body, []byte("# EOF\n")) {
				t.Errorf("OpenMetrics answer: %q", om.header.Get("Content-Type"))
			}
			if len(param) > 0 && !bytes.Contains(om.body, []byte(paramValueName+"{")) {
				t.Error("OpenMetrics answer lacks the parameter series")
			}

			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = bytes.NewReader(text.body)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
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
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestCollector(t, tc.snap(), tc.params(), tc.opts)
			srv := httptest.NewServer(NewHandler(prometheus.NewRegistry(), c, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
			defer srv.Close()
			body := get(t, srv.URL, acceptText, "gzip").body
			compareGoldenGatherer(t, prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
				return parseText(t, body), nil
			}), tc.name)
		})
	}
}

// TestHandlerAnswersLikePromhttp: headers and the chosen encoding are those
// of promhttp for the same request, whichever path answers.
func TestHandlerAnswersLikePromhttp(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newTestCollector(t, healthySnapshot(), healthyParams(), Options{})
	fast := httptest.NewServer(NewHandler(reg, c, serveOpts(reg)))
	defer fast.Close()
	refReg := prometheus.NewRegistry()
	refReg.MustRegister(newTestCollector(t, healthySnapshot(), healthyParams(), Options{}))
	ref := httptest.NewServer(promhttp.HandlerFor(refReg, serveOpts(refReg)))
	defer ref.Close()

	for _, accept := range []string{acceptText, "text/plain;version=1.0.0", "text/plain", "*/*", "", acceptProto, acceptOpenMetr, "application/json"} {
		for _, ae := range []string{"", "gzip", "gzip;q=0", "identity;q=0, gzip;q=0.5", "*", "br", "GZIP", "deflate, gzip;q=1.0, *;q=0.5", "gzip;q=0.5, identity"} {
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
	srv := httptest.NewServer(NewHandler(reg, c, serveOpts(reg)))
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
	srv := httptest.NewServer(NewHandler(failing, c, opts))
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
	srv := httptest.NewServer(NewHandler(failing, c, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
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

func TestAppendEscapedAndFloat(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b`, `a\b`, "a\nb", "\"\\\n\"", "zażółć"} {
		mf := &dto.MetricFamily{Name: new(paramValueName), Help: new(s), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{{Name: new("devid"), Value: new(s)}}, Gauge: &dto.Gauge{Value: new(1.0)}}}}
		var want bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
		got := "# HELP " + paramValueName + " " + string(appendEscaped(nil, s, false)) + "\n# TYPE " + paramValueName + " gauge\n" +
			paramValueName + `{devid="` + string(appendEscaped(nil, s, true)) + `"} 1` + "\n"
		if got != want.String() {
			t.Errorf("%q: %q, expfmt %q", s, got, want.String())
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 2, 0.5, 1e21, 1e-7, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, 123.456} {
		mf := &dto.MetricFamily{Name: new("x"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: new(f)}}}}
		var want bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
		if got := "# TYPE x gauge\nx " + string(appendFloat(nil, f)) + "\n"; got != want.String() {
			t.Errorf("%v: %q, expfmt %q", f, got, want.String())
		}
	}
}
