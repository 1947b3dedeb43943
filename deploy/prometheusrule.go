package deploy

import (
	"bytes"
	"fmt"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Paths, relative to this directory, of the rule file and of the
// PrometheusRule generated from it.
const (
	RuleFile           = "../alerts/bragerone.rules.yml"
	PrometheusRuleFile = "kubernetes/prometheusrule.yaml"
)

// RuleObject names the PrometheusRule object generated from the rule file.
type RuleObject struct {
	Name, Namespace string
	Labels          map[string]string
	Source          string // the rule file as the header comment names it
}

// DefaultRuleObject is the object written to PrometheusRuleFile.
var DefaultRuleObject = RuleObject{
	Name:      "bragerone-exporter",
	Namespace: "monitoring",
	Labels:    map[string]string{"app.kubernetes.io/name": "bragerone-exporter"},
	Source:    "alerts/bragerone.rules.yml",
}

// PrometheusRule wraps the groups of a Prometheus rule file in a Prometheus
// Operator PrometheusRule object. The groups are carried over node for node,
// comments and block scalars included, so the object and the rule file hold
// the same rules.
func PrometheusRule(rulesYAML []byte, obj RuleObject) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(rulesYAML, &doc); err != nil {
		return nil, fmt.Errorf("rule file: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("rule file: want a mapping at the top level")
	}
	var groups *yaml.Node
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value != "groups" {
			return nil, fmt.Errorf("rule file: unexpected top-level key %q", top.Content[i].Value)
		}
		groups = top.Content[i+1]
	}
	if groups == nil || groups.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("rule file: want a groups list")
	}
	// The rule file's own header comment describes the file, not the object.
	top.Content[0].HeadComment = ""

	labels := &yaml.Node{Kind: yaml.MappingNode}
	keys := make([]string, 0, len(obj.Labels))
	for k := range obj.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		labels.Content = append(labels.Content, str(k), str(obj.Labels[k]))
	}
	root := mapping(
		"apiVersion", str("monitoring.coreos.com/v1"),
		"kind", str("PrometheusRule"),
		"metadata", mapping("name", str(obj.Name), "namespace", str(obj.Namespace), "labels", labels),
		"spec", mapping("groups", groups),
	)
	root.HeadComment = fmt.Sprintf("Generated from %s by `go generate ./deploy`; edit the rule file, not this one.", obj.Source)
	out := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// mapping builds a mapping node from alternating keys and value nodes.
func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Content = append(m.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return m
}
