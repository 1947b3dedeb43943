// Package collector turns the exporter's health state and parameter store into
// Prometheus metrics at scrape time.
//
// It owns four things, and nothing of HTTP (package serving serves them):
//   - the plain data types it renders ([Snapshot] and its parts, which
//     package exporter fills in from the gateway's status and, through
//     [AccountSource], from the REST client's account gate: its login,
//     tokens and throttling), read through [SnapshotSource] and
//     [ParamSource];
//   - [Collector], a prometheus.Collector that builds const metrics from one
//     snapshot per scrape (every watched object of the account, its session
//     series labelled with the object's id), so nothing stale survives an
//     object, module or parameter that went away and no sample carries a
//     client-side timestamp;
//   - [Instrumentation], the exporter's own request and login metrics (the
//     realtime event counters are per object, in the snapshot);
//   - [DirectScrape], one scrape that keeps the large families
//     (bragerone_parameter_value and the catalog's parameter families) back
//     from the registry and writes them itself in the text formats (spelled
//     by package exposition), for the /metrics handler that places them
//     among the registry's families.
//
// The metric names, types and labels are the contract in METRICS.md.
package collector
