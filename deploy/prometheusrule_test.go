package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestPrometheusRuleEqualsRuleFile(t *testing.T) {
	rules := readFile(t, RuleFile)
	var ruleFile struct {
		Groups []any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(rules, &ruleFile); err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Spec       struct {
			Groups []any `yaml:"groups"`
		} `yaml:"spec"`
	}
	generated := readFile(t, PrometheusRuleFile)
	if err := yaml.Unmarshal(generated, &pr); err != nil {
		t.Fatal(err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Errorf("%s is %s %s", PrometheusRuleFile, pr.APIVersion, pr.Kind)
	}
	if len(ruleFile.Groups) == 0 || !reflect.DeepEqual(pr.Spec.Groups, ruleFile.Groups) {
		t.Errorf("%s does not carry the groups of %s: run go generate ./deploy", PrometheusRuleFile, RuleFile)
	}
	want, err := PrometheusRule(rules, DefaultRuleObject)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(generated, want) {
		t.Errorf("%s is not the generator's output: run go generate ./deploy", PrometheusRuleFile)
	}
	// promtool accepts the groups as a rule file of their own.
	tmp := filepath.Join(tmpDir, "prometheusrule-groups.yml")
	out, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", tmp).CombinedOutput(); err != nil {
		t.Errorf("promtool check rules on the PrometheusRule's groups: %v\n%s", err, out)
	}
}

func TestPrometheusRuleGeneratorRejectsOtherShapes(t *testing.T) {
	for _, in := range []string{"", "- a\n", "groups: {}\n", "groups: []\nother: 1\n", "groups: [\n"} {
		if _, err := PrometheusRule([]byte(in), DefaultRuleObject); err == nil {
			t.Errorf("input %q accepted", in)
		}
	}
	out, err := PrometheusRule([]byte("# head\ngroups:\n  - name: g\n    rules: []\n"), RuleObject{Name: "n", Namespace: "ns", Source: "s.yml"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "# head") || !strings.HasPrefix(string(out), "# Generated from s.yml") {
		t.Errorf("header comments:\n%s", out)
	}
}
