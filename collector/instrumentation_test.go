package collector

import (
	"fmt"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/version"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// instrumentationFixture registers the self-metrics, with the build
// information pinned, and records a fixed history of requests and logins.
func instrumentationFixture(t testing.TB) (*prometheus.Registry, *Instrumentation) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	in, err := NewInstrumentation(reg, InstrumentationOptions{
		Endpoints:       []string{"POST /v1/auth/user", "GET /v1/modules", "POST /v1/modules/parameters"},
		buildInfoLabels: testBuildInfoLabels,
	})
	if err != nil {
		t.Fatalf("NewInstrumentation: %v", err)
	}
	in.ObserveHTTP("POST /v1/auth/user", 200, 180*time.Millisecond)
	in.ObserveHTTP("GET /v1/modules", 200, 60*time.Millisecond)
	in.ObserveHTTP("GET /v1/modules", 503, 2300*time.Millisecond)
	in.ObserveHTTP("POST /v1/modules/parameters", 0, 8*time.Second)
	in.ObserveHTTP("POST /v1/modules/parameters", 408, 9*time.Second)
	in.ObserveLogin(cloudapi.LoginOK)
	in.ObserveLogin(cloudapi.LoginUnreachable)
	in.ObserveLogin(cloudapi.LoginUnreachable)
	in.ObserveLogin(cloudapi.LoginRejected)
	in.ObserveLogin(cloudapi.LoginOK)
	in.ObserveLogin(cloudapi.LoginBlocked)
	in.ObserveLogin(cloudapi.LoginRateLimited)
	in.ObserveLogin(cloudapi.LoginRateLimited)
	return reg, in
}

func TestInstrumentationGolden(t *testing.T) {
	reg, _ := instrumentationFixture(t)
	compareGoldenGatherer(t, reg, "instrumentation")
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// bragerone_exporter_build_info is client_golang's version collector: value
// 1, the standard labels, read from github.com/prometheus/common/version as
// the build stamped it, and the toolchain's from the running binary.
func TestBuildInfoFromCommonVersion(t *testing.T) {
	saved := []string{version.Version, version.Revision, version.Branch}
	t.Cleanup(func() { version.Version, version.Revision, version.Branch = saved[0], saved[1], saved[2] })
	version.Version, version.Revision, version.Branch = "9.8.7", "f00dfeed", "release-9.8"

	reg := prometheus.NewPedanticRegistry()
	if _, err := NewInstrumentation(reg, InstrumentationOptions{}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == "bragerone_exporter_build_info" })
	if i < 0 {
		t.Fatal("bragerone_exporter_build_info is not registered")
	}
	mf := mfs[i]
	if mf.GetType() != dto.MetricType_GAUGE || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Fatalf("want one gauge series of value 1, got %v", mf)
	}
	got := map[string]string{}
	for _, lp := range mf.GetMetric()[0].GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	want := map[string]string{
		"version": "9.8.7", "revision": "f00dfeed", "branch": "release-9.8",
		"goversion": runtime.Version(), "goos": runtime.GOOS, "goarch": runtime.GOARCH, "tags": version.GetTags(),
	}
	if !maps.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

func TestInstrumentationPreinitialises(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewInstrumentation(reg, InstrumentationOptions{Endpoints: []string{"GET /v1/modules"}}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{
		"bragerone_logins_total":                  len(cloudapi.LoginOutcomes()), // ok, rejected, blocked, rate_limited, unreachable
		"bragerone_realtime_events_total":         0,                             // the collector's, per object
		"bragerone_http_request_duration_seconds": 0,                             // a histogram never observed is all zeros, its quantile NaN
		"bragerone_http_requests_total":           0,                             // codes are not known in advance
	} {
		n, err := testutil.GatherAndCount(reg, name)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%s: %d series before any observation, want %d", name, n, want)
		}
	}
}

func TestEndpointLabelIsBounded(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	in, err := NewInstrumentation(reg, InstrumentationOptions{Endpoints: []string{"GET /v1/modules"}, MaxEndpoints: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		in.ObserveHTTP(fmt.Sprintf("GET /v1/objects/%d", i), 200, time.Millisecond)
	}
	in.ObserveHTTP("GET /v1/modules", 200, time.Millisecond)
	in.ObserveHTTP(strings.Repeat("x", 5000), 999, time.Millisecond)
	in.ObserveHTTP("", -1, -time.Second)

	endpoints := map[string]bool{}
	codes := map[string]bool{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "bragerone_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "endpoint":
					endpoints[lp.GetValue()] = true
				case "code":
					codes[lp.GetValue()] = true
				}
			}
		}
	}
	// The known endpoint, the first two others, and "other".
	want := map[string]bool{"GET /v1/modules": true, "GET /v1/objects/0": true, "GET /v1/objects/1": true, EndpointOther: true}
	if fmt.Sprint(endpoints) != fmt.Sprint(want) {
		t.Errorf("endpoint labels %v, want %v", endpoints, want)
	}
	if !codes["other"] || !codes["200"] || len(codes) != 2 {
		t.Errorf("code labels %v, want 200 and other", codes)
	}
	if got := testutil.ToFloat64(in.requests.WithLabelValues(EndpointOther, "200")); got != 98 {
		t.Errorf("requests counted as other = %v, want 98", got)
	}
}

func TestCodeLabel(t *testing.T) {
	for code, want := range map[int]string{0: "0", 200: "200", 408: "408", 599: "599", 99: "other", 600: "other", -1: "other"} {
		if got := codeLabel(code); got != want {
			t.Errorf("codeLabel(%d) = %q, want %q", code, got, want)
		}
	}
}

func TestInstrumentationRegisterConflict(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewInstrumentation(reg, InstrumentationOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewInstrumentation(reg, InstrumentationOptions{}); err == nil {
		t.Fatal("registering the instrumentation twice on one registry succeeded")
	}
}

// TestMetricsDocLoginResults: METRICS.md names exactly the result values of
// bragerone_logins_total that the code exports (the alerts page on one of
// them, so a renamed or missing value must not go unnoticed).
func TestMetricsDocLoginResults(t *testing.T) {
	_, doc := readMetricsDoc(t)
	var row string
	for line := range strings.SplitSeq(doc, "\n") {
		if strings.HasPrefix(line, "| `bragerone_logins_total` |") {
			row = line
		}
	}
	_, values, ok := strings.Cut(row, "result = ")
	if !ok {
		t.Fatalf("METRICS.md: no \"result = \" in the bragerone_logins_total row %q", row)
	}
	var documented []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(values, -1) {
		documented = append(documented, m[1])
	}
	var exported []string
	for _, o := range cloudapi.LoginOutcomes() {
		exported = append(exported, string(o))
	}
	if !slices.Equal(documented, exported) {
		t.Errorf("METRICS.md documents result values %q, the code exports %q", documented, exported)
	}
}
