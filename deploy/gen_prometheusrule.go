//go:build ignore

// gen_prometheusrule writes kubernetes/prometheusrule.yaml from the rules of
// alerts/bragerone.rules.yml. Run it with `go generate ./deploy`.
package main

import (
	"log"
	"os"

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
}
