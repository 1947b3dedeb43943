// Package deploy holds what runs the exporter outside a developer's shell: a
// Docker Compose stack (exporter, Prometheus with the alert rules, Alertmanager,
// Grafana with the dashboards), a Prometheus configuration, a hardened systemd
// unit and Kubernetes manifests (Deployment, Service, example Secret,
// ServiceMonitor and a PrometheusRule generated from alerts/bragerone.rules.yml).
//
// Its Go code generates the PrometheusRule (go generate ./deploy); its tests
// check every file here against the real tools and the real binary: YAML
// syntax, promtool, systemd-analyze, the flags and environment variables the
// binary accepts, the Dockerfile and scripts/build.sh, and the flag reference
// of the README.
package deploy

//go:generate go run gen_prometheusrule.go
