package e2e

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/internal/promrequest"
)

// TestPrometheusScrapeRequest runs a real Prometheus server scraping `serve
// --simulate` through a recording proxy, and checks what it asks for
// (Accept, Accept-Encoding) and what the exporter answers: OpenMetrics
// 1.0.0, gzip-compressed, with the parameter series and the closing
// "# EOF" line.
func TestPrometheusScrapeRequest(t *testing.T) {
	t.Parallel()
	tool(t, "prometheus")
	exp := startServeSimulate(t)
	exp.waitFullScrape(t, exp.devids, 30*time.Second)

	type exchange struct {
		accept, acceptEncoding, userAgent string
		contentType, contentEncoding      string
		body                              []byte
	}
	var (
		mu        sync.Mutex
		exchanges []exchange
	)
	target, err := url.Parse(exp.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		req := resp.Request
		mu.Lock()
		exchanges = append(exchanges, exchange{
			accept: req.Header.Get("Accept"), acceptEncoding: req.Header.Get("Accept-Encoding"), userAgent: req.Header.Get("User-Agent"),
			contentType: resp.Header.Get("Content-Type"), contentEncoding: resp.Header.Get("Content-Encoding"), body: body,
		})
		mu.Unlock()
		return nil
	}
	rec := httptest.NewServer(proxy)
	defer rec.Close()

	scrapeEverySecond(t, strings.TrimPrefix(rec.URL, "http://"))

	var x exchange
	waitFor(t, 30*time.Second, "a scrape through the recording proxy", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		if len(exchanges) == 0 {
			return false, "no scrape yet"
		}
		x = exchanges[0]
		return true, ""
	})
	t.Logf("Prometheus (%s) asks for Accept: %s; Accept-Encoding: %s", x.userAgent, x.accept, x.acceptEncoding)
	t.Logf("the exporter answers Content-Type: %s; Content-Encoding: %s", x.contentType, x.contentEncoding)
	// The handler's tests and the benchmarks serve the recorded requests;
	// a server that asks for something else must be recorded there first.
	if !slices.Contains(promrequest.Accepts(), x.accept) || x.acceptEncoding != promrequest.AcceptEncoding {
		t.Errorf("Prometheus asked for Accept %q, Accept-Encoding %q; the handler's tests assume one of %q, and %q",
			x.accept, x.acceptEncoding, promrequest.Accepts(), promrequest.AcceptEncoding)
	}
	if !strings.HasPrefix(x.contentType, "application/openmetrics-text; version=1.0.0") || x.contentEncoding != "gzip" {
		t.Fatalf("answered %q, %q; want OpenMetrics 1.0.0 with gzip", x.contentType, x.contentEncoding)
	}
	zr, err := gzip.NewReader(bytes.NewReader(x.body))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte("\nbragerone_parameter_value{")) || !bytes.HasSuffix(body, []byte("\n# EOF\n")) {
		t.Fatalf("the OpenMetrics answer lacks parameter series or its # EOF line:\n%s", tail(string(body), 2000))
	}
}
