// Package promrequest records what Prometheus servers send when they scrape
// with a default scrape configuration. The /metrics handler's tests, the
// end-to-end test that watches a real server's request, and the scrape
// benchmarks all serve these requests, so each header is written down once,
// here, as captured.
package promrequest

// Accept headers, captured by e2e.TestPrometheusScrapeRequest through a
// recording proxy.
const (
	// Prometheus2Accept is what Debian's Prometheus 2.42 sends.
	Prometheus2Accept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	// Prometheus3Accept is what Prometheus 3.16 (v0.316.0, built from its
	// module) sends: its default scrape protocols, each asking for UTF-8
	// names (escaping=allow-utf-8) where the format has them.
	Prometheus3Accept = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.7,application/openmetrics-text;version=0.0.1;q=0.6,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.3"
)

// AcceptEncoding is what both send unless the scrape configuration turns
// compression off.
const AcceptEncoding = "gzip"

// Accepts lists the captured Accept headers, oldest server first.
func Accepts() []string { return []string{Prometheus2Accept, Prometheus3Accept} }
