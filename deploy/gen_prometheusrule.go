//go:build ignore

// gen_prometheusrule writes kubernetes/prometheusrule.yaml from the rules of
// alerts/bragerone.rules.yml, and the Helm chart's generated files (its
// PrometheusRule and the dashboards). Run it with `go generate ./deploy`.
package main

import (
	"log"
	"os"
	"path/filepath"

	"github.com/bragerone/bragerone_exporter/deploy"
)

func main() {
	rules, err := os.ReadFile(deploy.RuleFile)
	if err != nil {
		log.Fatal(err)
	}
	out, err := deploy.PrometheusRule(rules, deploy.DefaultRuleObject)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(deploy.PrometheusRuleFile, out, 0o644); err != nil {
		log.Fatal(err)
	}
	files, err := deploy.ChartFiles()
	if err != nil {
		log.Fatal(err)
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
