// Package serving serves what the collector builds over HTTP.
//
// It owns:
//   - [NewHandler], the /metrics handler: promhttp's content negotiation,
//     compression, name[] selection and error handling, with the large
//     families (bragerone_parameter_value and the catalog's parameter
//     families) written straight into Prometheus text and OpenMetrics
//     answers (spelled by package exposition) instead of passing every
//     series through the registry, compressed with pooled gzip and zstd
//     writers; any other format takes promhttp's registry path;
//   - the Accept-Encoding negotiation and pooled compressors of that path;
//   - the human status pages, in serving/status.
//
// Package collector builds the metrics and knows nothing of HTTP.
package serving
