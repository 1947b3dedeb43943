// Package deploy holds what runs the exporter outside a developer's shell: a
// Docker Compose stack (exporter, Prometheus with the alert rules, Alertmanager,
// Grafana with the dashboards), a Prometheus configuration, a hardened systemd
// unit, Kubernetes manifests (Namespace, Deployment, Service, example Secret,
// ServiceMonitor and a PrometheusRule generated from alerts/bragerone.rules.yml)
// and a Helm chart (helm/bragerone-exporter).
//
// Its Go code generates the PrometheusRule and the chart's files/ (go generate
// ./deploy); its tests check every file here against the real tools and the
// real binary: YAML syntax, promtool, systemd-analyze, helm lint and helm
// template, the flags and environment variables the binary accepts, the
// Dockerfile, scripts/build.sh and .goreleaser.yaml (every release target
// cross-compiled), the project home everything links to, and the flag
// reference of the README.
package deploy

//go:generate go run gen_prometheusrule.go
