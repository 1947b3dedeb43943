package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// The Helm chart, relative to this directory, and the files `go generate
// ./deploy` writes into it: the chart reads them with .Files.Get, which
// cannot reach outside the chart.
const (
	ChartDir           = "helm/bragerone-exporter"
	ChartRuleFile      = ChartDir + "/files/prometheusrule.yaml"
	ChartDashboardsDir = ChartDir + "/files/dashboards"
	DashboardsDir      = "../dashboards"
)

// ChartRuleObject is the object written to ChartRuleFile; the chart takes
// its spec and sets name, namespace and labels from the release.
var ChartRuleObject = RuleObject{
	Name:      "bragerone-exporter",
	Namespace: "monitoring",
	Labels:    map[string]string{"app.kubernetes.io/name": "bragerone-exporter"},
	Source:    "alerts/bragerone.rules.yml",
}

// ChartFiles returns the generated files of the chart, by path relative to
// this directory: the PrometheusRule built from the rule file as
// PrometheusRuleFile is, and each dashboard of ../dashboards as it is.
func ChartFiles() (map[string][]byte, error) {
	rules, err := os.ReadFile(RuleFile)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	if out[ChartRuleFile], err = PrometheusRule(rules, ChartRuleObject); err != nil {
		return nil, err
	}
	dashboards, err := filepath.Glob(filepath.Join(DashboardsDir, "*.json"))
	if err != nil || len(dashboards) == 0 {
		return nil, fmt.Errorf("no dashboards in %s: %v", DashboardsDir, err)
	}
	sort.Strings(dashboards)
	for _, d := range dashboards {
		data, err := os.ReadFile(d)
		if err != nil {
			return nil, err
		}
		out[ChartDashboardsDir+"/"+filepath.Base(d)] = data
	}
	return out, nil
}
