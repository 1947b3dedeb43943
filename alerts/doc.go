// Package alerts holds the Prometheus alerting and recording rules for
// bragerone_exporter (bragerone.rules.yml), their promtool unit tests
// (tests/), the runbooks the alerts link to (runbooks.md) and an example
// Alertmanager configuration (alertmanager.example.yml). The Go code reads the
// rule file so that its metric references can be checked against the metric
// contract and against a real scrape.
package alerts
