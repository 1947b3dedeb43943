package serving_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/serving"
)

// registryPathSpy is a collector that notes when the handler's registry
// path collects it: the direct path collects through NewDirectScrape.
type registryPathSpy struct {
	*collector.Collector
	used *atomic.Bool
}

func (s registryPathSpy) Collect(ch chan<- prometheus.Metric) {
	s.used.Store(true)
	s.Collector.Collect(ch)
}

// TestHandlerPathByFormat: the text formats, plain or compressed with an
// encoding the handler's own writers produce, are written directly; every
// other request takes promhttp's registry path. (The answers of both paths
// are compared byte for byte over the collector's fixture stores in the
// collector package's served_test.go.)
func TestHandlerPathByFormat(t *testing.T) {
	st, snap := filledStore(2, 10)
	c, err := collector.New(collector.SnapshotFunc(func() collector.Snapshot { return snap }),
		collector.ParamSourceFunc(st.ForEachParamInLabelOrder), collector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var registryPath atomic.Bool
	reg := prometheus.NewRegistry()
	srv := httptest.NewServer(serving.NewHandler(reg, registryPathSpy{c, &registryPath}, serveOpts(reg)))
	defer srv.Close()
	for _, tc := range []struct {
		accept, encoding string
		direct           bool
	}{
		{"text/plain;version=0.0.4", "", true},
		{"text/plain;version=0.0.4", "gzip", true},
		{"application/openmetrics-text;version=1.0.0", "zstd", true},
		{"application/openmetrics-text;version=0.0.1", "", true},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", "", false},
		{"text/plain;version=0.0.4", "identity;q=0", false}, // no encoding acceptable: promhttp decides
	} {
		registryPath.Store(false)
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", tc.accept)
		if tc.encoding != "" {
			req.Header.Set("Accept-Encoding", tc.encoding)
		}
		resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("Accept %q: status %d", tc.accept, resp.StatusCode)
		}
		if got := !registryPath.Load(); got != tc.direct {
			t.Errorf("Accept %q, Accept-Encoding %q: written directly %v, want %v", tc.accept, tc.encoding, got, tc.direct)
		}
	}
}
