// Package collector turns the exporter's health state and parameter store into
// Prometheus metrics at scrape time.
//
// It owns four things:
//   - the plain data types the gateway fills in ([Snapshot] and its parts), read
//     through [SnapshotSource] and [ParamSource];
//   - [Collector], a prometheus.Collector that builds const metrics from one
//     snapshot per scrape, so nothing stale survives a module or parameter that
//     went away and no sample carries a client-side timestamp;
//   - [Instrumentation], the exporter's own request, event and login metrics;
//   - [NewHandler], the /metrics handler, which writes the large families
//     (bragerone_parameter_value and the catalog's parameter families)
//     straight into Prometheus text and OpenMetrics answers, compressed with
//     pooled gzip and zstd writers, instead of passing every series through
//     the registry.
//
// The metric names, types and labels are the contract in METRICS.md.
package collector
