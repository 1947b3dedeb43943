// Package exporter assembles the exporter that `serve` runs: it owns the
// wiring, and nothing of the command line.
//
// A [Config] holds every setting (each field is a flag of serve, and every
// error names that flag); [Config.Validate] checks all of it in one place.
// [New] builds the parts in the order they depend on each other: the REST
// client (cloudclient), the parameter store (realtime/store), the realtime
// gateway (realtime), the catalog loader (catalogload), the collector and
// the exporter's own metrics (collector), and the pages (serving,
// serving/status). [Exporter.Run] runs them until its context ends and
// shuts them down in order: the gateway first (the session goes down with
// reason stop), then the logout, then the web server.
//
// It also holds the adapters between those parts, which none of them
// should know: the gateway's published status and the store's counts as a
// collector.Snapshot ([GatewaySource], [FromStatus]), the catalog loader's
// state as a collector.CatalogState ([CatalogLoaderSource]), the gateway's
// listing and the store as the catalog's module specs ([ModuleSpecs],
// [StoreReader]). The watch command reuses its gateway half
// ([GatewayConfig]) and the tools its REST client ([Cloud.NewClient]).
package exporter
