package alerts

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/bragerone/bragerone_exporter/alerts/metricref"
)

// ruleFile is the Prometheus rule file format, strictly: an unknown field is an error.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval"`
	Limit    int    `yaml:"limit"`
	Rules    []rule `yaml:"rules"`
}

type rule struct {
	Record        string            `yaml:"record"`
	Alert         string            `yaml:"alert"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for"`
	KeepFiringFor string            `yaml:"keep_firing_for"`
	Labels        map[string]string `yaml:"labels"`
	Annotations   map[string]string `yaml:"annotations"`
}

func parseRules(data []byte) (*ruleFile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f ruleFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("rule file: %w", err)
	}
	for _, g := range f.Groups {
		for ri, r := range g.Rules {
			if (r.Alert == "") == (r.Record == "") {
				return nil, fmt.Errorf("rule file: group %q rule %d: exactly one of alert and record must be set", g.Name, ri)
			}
			if r.Expr == "" {
				return nil, fmt.Errorf("rule file: group %q rule %d (%s%s): empty expr", g.Name, ri, r.Alert, r.Record)
			}
		}
	}
	return &f, nil
}

// templateAction is one {{ … }} action of an annotation or label template;
// templateMetric finds the metric names inside it, where they appear in
// strings handed to the query function, recorded names (level:metric:ops)
// whole. Text outside actions (URLs, prose) is not searched.
var (
	templateAction = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	templateMetric = regexp.MustCompile(`(?:[A-Za-z_][A-Za-z0-9_]*:)?bragerone_[A-Za-z0-9_]+(?::[A-Za-z0-9_]+)*`)
)

// RuleMetrics returns the names of the exporter's series that a Prometheus
// rule file reads, in rule expressions and in queries inside annotation and
// label templates, sorted and without duplicates. Series Prometheus makes
// itself (up) and names recorded by the file's own recording rules are left
// out, so every name returned must appear in a scrape of the exporter.
func RuleMetrics(ruleFileYAML []byte) ([]string, error) {
	f, err := parseRules(ruleFileYAML)
	if err != nil {
		return nil, err
	}
	recorded := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
		}
	}
	set := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			for _, n := range metricref.InExpr(r.Expr) {
				set[n] = true
			}
			for _, tmpl := range []map[string]string{r.Annotations, r.Labels} {
				for _, v := range tmpl {
					for _, action := range templateAction.FindAllString(v, -1) {
						for _, n := range templateMetric.FindAllString(action, -1) {
							set[n] = true
						}
					}
				}
			}
		}
	}
	var names []string
	for n := range set {
		if n != "up" && !recorded[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, nil
}
