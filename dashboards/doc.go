// Package dashboards holds the Grafana dashboards of bragerone_exporter
// (classic dashboard JSON: bragerone-overview.json and bragerone-module.json)
// and reads them, so that the metrics their queries use can be checked
// against the metric contract and against a real scrape. The tests lint the
// dashboards against the house conventions, validate them against a JSON
// schema generated from Grafana's own dashboard types (testdata/), and run
// every query on promtool over synthetic series of two objects, to check
// that the object picker narrows each panel to the picked objects.
package dashboards
