// Package e2e owns the end-to-end tests of bragerone_exporter: the built
// binary run as separate processes on loopback ports. TestMain builds the
// binary once with the go command from PATH; the tests then run `serve`
// against `simulate` (and `serve --simulate`), switch faults on through the
// simulated cloud's HTTP control endpoint and read the effects back from
// /metrics, /status and the health endpoints; check a real scrape with
// `promtool check metrics`; scrape the exporter with a real Prometheus server
// that evaluates the shipped alert rules; run every example query of
// README.md as the README prints it and check that each returns what its
// sentence says (readme_queries_test.go); check that every metric the rules
// and dashboards read exists in a real scrape; serve over TLS with basic auth
// from an exporter-toolkit web configuration; check signal handling and
// exit codes; and load the web pages in a headless chromium, reading what it
// rendered and keeping a screenshot of each page (browser_test.go).
//
// The tests need promtool and prometheus in PATH (Debian package
// `prometheus`) and chromium (Debian package `chromium`); a missing tool
// fails the test and names the package.
//
// Metrics that exist only in certain states (an outage gauge while down, a
// last-outage gauge after a restore, the staleness gauge of a zombie
// session) are brought about with a fault before they are looked for: the
// reference test accumulates the names of every scrape of one scenario
// (idle, module offline, module restored, zombie, session down, session
// restored) and requires every metric the rules and dashboards read, and
// every metric of METRICS.md, to be among them.
package e2e
