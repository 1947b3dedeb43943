package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"
)

// helm returns the helm binary. A missing helm fails the test: the chart is
// checked by the real tool or not at all.
func helm(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("helm")
	if err != nil {
		t.Fatal("helm not found: run `make helm-install` (bash .ci/run does) and put $(go env GOPATH)/bin in PATH")
	}
	return p
}

// A bcrypt hash of "scrape-secret", as a web configuration holds it.
const testBcrypt = "$2a$10$2CfitBEO8QFVyZpvjOTCL.zpAFaXX0MGjSRzHKH.iua.YudmZ2mgq"

// chartVariants are the values the chart is linted and rendered with.
var chartVariants = []struct {
	name   string
	values string
}{
	{"default", ""},
	{"basic auth", `
credentials:
  email: you@example.com
  password: change-me
webConfig:
  config:
    basic_auth_users:
      prometheus: "` + testBcrypt + `"
serviceMonitor:
  basicAuth:
    username: {name: scrape-auth, key: username}
    password: {name: scrape-auth, key: password}
`},
	{"existing secret", `
credentials:
  existingSecret: my-account
  emailKey: user
  passwordKey: secret
`},
	// Each switch alone: switching one off leaves the others' objects.
	{"servicemonitor off", `
serviceMonitor:
  enabled: false
`},
	{"rules off", `
prometheusRule:
  enabled: false
`},
	{"dashboards off", `
dashboards:
  enabled: false
`},
}

// writeValues writes a variant's values into a file for helm -f.
func writeValues(t *testing.T, name, values string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), strings.ReplaceAll(name, " ", "-")+".yaml")
	if err := os.WriteFile(f, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(tmpDir, "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(tmpDir, "helm-config"), "HELM_DATA_HOME="+filepath.Join(tmpDir, "helm-data"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	if testing.Verbose() {
		t.Logf("helm %s:\n%s", strings.Join(args, " "), firstLines(out.String()+errOut.String(), 12))
	}
	return out.String()
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…\n")
	}
	return strings.Join(lines, "")
}

func TestHelmLint(t *testing.T) {
	for _, v := range chartVariants {
		t.Run(v.name, func(t *testing.T) {
			out := runHelm(t, "lint", "--strict", ChartDir, "-f", writeValues(t, v.name, v.values))
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint:\n%s", out)
			}
		})
	}
}

// chartObject is one rendered object, kept whole for the checks below.
type chartObject struct {
	k8sObject `yaml:",inline"`
	Data      map[string]string `yaml:"data"`
	Raw       map[string]any    `yaml:"-"`
}

// renderChart runs helm template and decodes every object, keyed by kind
// and name.
func renderChart(t *testing.T, values string) map[string]chartObject {
	t.Helper()
	out := runHelm(t, "template", "bragerone-exporter", ChartDir, "--namespace", "monitoring", "-f", writeValues(t, "values", values))
	objs := map[string]chartObject{}
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		if len(n.Content) == 0 {
			continue
		}
		var o chartObject
		if err := n.Decode(&o); err != nil {
			t.Fatal(err)
		}
		if err := n.Decode(&o.Raw); err != nil {
			t.Fatal(err)
		}
		key := o.Kind + "/" + o.Metadata.Name
		if _, dup := objs[key]; dup {
			t.Fatalf("two %s", key)
		}
		if o.Metadata.Namespace != "monitoring" {
			t.Errorf("%s in namespace %q, not the release's", key, o.Metadata.Namespace)
		}
		objs[key] = o
	}
	return objs
}

func byKind(objs map[string]chartObject, kind string) []chartObject {
	var out []chartObject
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// kustomizeDeployment is the Deployment of deploy/kubernetes as a generic
// map, for the settings the chart must share with it.
func kustomizeDeployment(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(readFile(t, "kubernetes/deployment.yaml"), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// dig walks a generic YAML value by map keys and list indexes.
func dig(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func TestHelmTemplate(t *testing.T) {
	ruleGroups := func(v any) any { return dig(v, "spec", "groups") }
	var ruleFile map[string]any
	if err := yaml.Unmarshal(readFile(t, RuleFile), &ruleFile); err != nil {
		t.Fatal(err)
	}
	kust := kustomizeDeployment(t)

	for _, v := range chartVariants {
		t.Run(v.name, func(t *testing.T) {
			objs := renderChart(t, v.values)
			deps := byKind(objs, "Deployment")
			svcs := byKind(objs, "Service")
			if len(deps) != 1 || len(svcs) != 1 {
				t.Fatalf("%d Deployments, %d Services", len(deps), len(svcs))
			}
			depObj, svcObj := deps[0], svcs[0]
			var dep deploymentSpec
			decodeSpec(t, depObj.k8sObject, &dep)
			if dep.Replicas != 1 || dep.Strategy.Type != "Recreate" {
				t.Errorf("replicas %d, strategy %q; one instance per account wants 1 and Recreate", dep.Replicas, dep.Strategy.Type)
			}
			if !subset(dep.Selector.MatchLabels, dep.Template.Metadata.Labels) {
				t.Errorf("selector %v does not select the pods %v", dep.Selector.MatchLabels, dep.Template.Metadata.Labels)
			}
			pod := dig(depObj.Raw, "spec", "template", "spec")
			if dig(pod, "enableServiceLinks") != false {
				t.Error("enableServiceLinks is not false")
			}
			// Security context and resources as deploy/kubernetes has them.
			kpod := dig(kust, "spec", "template", "spec")
			for _, k := range [][]any{{"securityContext"}, {"automountServiceAccountToken"}, {"containers", 0, "securityContext"}, {"containers", 0, "resources"}} {
				if got, want := dig(pod, k...), dig(kpod, k...); want == nil || !reflect.DeepEqual(got, want) {
					t.Errorf("%v: chart %v, deploy/kubernetes %v", k, got, want)
				}
			}
			if len(dep.Template.Spec.Containers) != 1 {
				t.Fatalf("%d containers", len(dep.Template.Spec.Containers))
			}
			c := dep.Template.Spec.Containers[0]
			if !strings.HasPrefix(c.Image, "ghcr.io/bragerone/bragerone_exporter:") {
				t.Errorf("image %q", c.Image)
			}

			// Credentials: the email from the Secret, the password a file of
			// a whole-directory mount of the same Secret.
			secretName := depObj.Metadata.Name
			emailKey, passwordKey := "email", "password"
			if strings.Contains(v.values, "existingSecret: my-account") {
				secretName, emailKey, passwordKey = "my-account", "user", "secret"
				if len(byKind(objs, "Secret")) != 0 {
					t.Error("a Secret is created although credentials.existingSecret names one")
				}
			} else {
				s, ok := objs["Secret/"+secretName]
				if !ok {
					t.Fatalf("no Secret %s created", secretName)
				}
				if _, ok := s.StringData[emailKey]; !ok {
					t.Errorf("created Secret lacks %s", emailKey)
				}
				if _, ok := s.StringData[passwordKey]; !ok {
					t.Errorf("created Secret lacks %s", passwordKey)
				}
			}
			known := knownEnv(t)
			var emailFrom string
			for _, e := range c.Env {
				if !known[e.Name] {
					t.Errorf("env %s is no variable the exporter reads", e.Name)
				}
				if e.Name == "BRAGERONE_EMAIL" {
					emailFrom = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
				}
			}
			if emailFrom != secretName+"/"+emailKey {
				t.Errorf("BRAGERONE_EMAIL from %q, want %s/%s", emailFrom, secretName, emailKey)
			}
			mounted := func(file, secret, key string) bool {
				for _, m := range c.VolumeMounts {
					if m.MountPath != path.Dir(file) || m.SubPath != "" {
						continue
					}
					for _, vol := range dep.Template.Spec.Volumes {
						if vol.Name != m.Name || vol.Secret.SecretName != secret {
							continue
						}
						for _, it := range vol.Secret.Items {
							if it.Key == key && it.Path == path.Base(file) {
								return true
							}
						}
					}
				}
				return false
			}
			if pw := commandFlag(c.Args, "--cloud.password-file"); !mounted(pw, secretName, passwordKey) {
				t.Errorf("--cloud.password-file=%s is not key %s of Secret %s, mounted whole", pw, passwordKey, secretName)
			}

			// Web configuration: with basic auth a Secret the exporter reads
			// with --web.config.file, valid for exporter-toolkit.
			webFile := commandFlag(c.Args, "--web.config.file")
			if strings.Contains(v.values, "basic_auth_users") {
				ws, ok := objs["Secret/"+secretName+"-web-config"]
				if !ok || webFile == "" || !mounted(webFile, ws.Metadata.Name, path.Base(webFile)) {
					t.Fatalf("basic auth: web config Secret %v, --web.config.file %q not mounted from it", ok, webFile)
				}
				f := filepath.Join(t.TempDir(), "web-config.yml")
				if err := os.WriteFile(f, []byte(ws.StringData[path.Base(webFile)]), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := web.Validate(f); err != nil || !strings.Contains(ws.StringData[path.Base(webFile)], testBcrypt) {
					t.Errorf("the rendered web configuration: %v\n%s", err, ws.StringData[path.Base(webFile)])
				}
				// The binary checks the arguments with the file where the
				// pod would have it.
				args := append([]string(nil), c.Args...)
				for i, a := range args {
					if strings.HasPrefix(a, "--web.config.file=") {
						args[i] = "--web.config.file=" + f
					}
				}
				checkServeArgs(t, "chart Deployment args", args)
			} else {
				if webFile != "" {
					t.Errorf("--web.config.file=%s without a web configuration", webFile)
				}
				checkServeArgs(t, "chart Deployment args", c.Args)
			}

			// Probes: the health listener's port, which the Service leaves out.
			healthPort := strings.TrimPrefix(commandFlag(c.Args, "--web.health-listen-address"), ":")
			portOf := map[string]string{}
			for _, p := range c.Ports {
				portOf[p.Name] = strconv.Itoa(p.ContainerPort)
			}
			for kind, probe := range map[string]any{"readiness": dig(pod, "containers", 0, "readinessProbe"), "liveness": dig(pod, "containers", 0, "livenessProbe")} {
				port, _ := dig(probe, "httpGet", "port").(string)
				if healthPort == "" || portOf[port] != healthPort || dig(probe, "httpGet", "path") != "/-/healthy" {
					t.Errorf("%s probe %v: want /-/healthy on the health listener's port %q", kind, probe, healthPort)
				}
			}
			var svc serviceSpec
			decodeSpec(t, svcObj.k8sObject, &svc)
			if !subset(svc.Selector, dep.Template.Metadata.Labels) {
				t.Errorf("Service selector %v does not select the pods", svc.Selector)
			}
			if len(svc.Ports) != 1 || portOf[svc.Ports[0].TargetPort] != commandFlag(c.Args, "--web.listen-address")[1:] {
				t.Errorf("Service ports %+v: want only the metrics port", svc.Ports)
			}
			if !strings.Contains(svcObj.Metadata.Name, "bragerone") {
				t.Errorf("the job label (Service name %q) must contain bragerone for the alert rules", svcObj.Metadata.Name)
			}

			// ServiceMonitor, PrometheusRule, dashboards.
			sms := byKind(objs, "ServiceMonitor")
			if off := strings.Contains(v.values, "serviceMonitor:\n  enabled: false"); off != (len(sms) == 0) || len(sms) > 1 {
				t.Fatalf("%d ServiceMonitors with values %q", len(sms), v.values)
			}
			for _, sm := range sms {
				var spec serviceMonitorSpec
				decodeSpec(t, sm.k8sObject, &spec)
				if !subset(spec.Selector.MatchLabels, svcObj.Metadata.Labels) {
					t.Errorf("ServiceMonitor selector %v does not select the Service %v", spec.Selector.MatchLabels, svcObj.Metadata.Labels)
				}
				if len(spec.Endpoints) != 1 || spec.Endpoints[0].Port != svc.Ports[0].Name || spec.Endpoints[0].Path != "/metrics" {
					t.Errorf("ServiceMonitor endpoints %+v", spec.Endpoints)
				}
				auth := dig(sm.Raw, "spec", "endpoints", 0, "basicAuth")
				if strings.Contains(v.values, "basic_auth_users") != (auth != nil) {
					t.Errorf("ServiceMonitor basicAuth %v with values %q", auth, v.values)
				}
			}
			rules := byKind(objs, "PrometheusRule")
			cms := byKind(objs, "ConfigMap")
			switch {
			case strings.Contains(v.values, "prometheusRule:\n  enabled: false"):
				if len(rules) != 0 {
					t.Errorf("%d PrometheusRules although switched off", len(rules))
				}
			case len(rules) != 1 || !reflect.DeepEqual(ruleGroups(rules[0].Raw), ruleFile["groups"]):
				t.Errorf("the chart's PrometheusRule does not carry the groups of %s: run go generate ./deploy", RuleFile)
			}
			if strings.Contains(v.values, "dashboards:\n  enabled: false") {
				if len(cms) != 0 {
					t.Errorf("%d dashboard ConfigMaps although switched off", len(cms))
				}
				return
			}
			dashboards, _ := filepath.Glob(filepath.Join(DashboardsDir, "*.json"))
			if len(cms) != len(dashboards) || len(dashboards) == 0 {
				t.Fatalf("%d dashboard ConfigMaps for %d dashboards", len(cms), len(dashboards))
			}
			for _, d := range dashboards {
				var want, got any
				if err := json.Unmarshal(readFile(t, d), &want); err != nil {
					t.Fatal(err)
				}
				found := false
				for _, cm := range cms {
					data, ok := cm.Data[filepath.Base(d)]
					if !ok {
						continue
					}
					found = true
					if cm.Metadata.Labels["grafana_dashboard"] != "1" {
						t.Errorf("ConfigMap %s: labels %v, want grafana_dashboard: \"1\" for the sidecar", cm.Metadata.Name, cm.Metadata.Labels)
					}
					if err := json.Unmarshal([]byte(data), &got); err != nil || !reflect.DeepEqual(got, want) {
						t.Errorf("ConfigMap %s does not hold %s: %v", cm.Metadata.Name, d, err)
					}
				}
				if !found {
					t.Errorf("no ConfigMap holds %s", d)
				}
			}
		})
	}
}

// TestChartFilesGenerated: the chart's files/ are the generator's output
// from alerts/ and dashboards/, never edited by hand.
func TestChartFilesGenerated(t *testing.T) {
	files, err := ChartFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		if got, err := os.ReadFile(name); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not the generator's output (%v): run go generate ./deploy", name, err)
		}
	}
	on, _ := filepath.Glob(filepath.Join(ChartDir, "files", "*", "*"))
	top, _ := filepath.Glob(filepath.Join(ChartDir, "files", "*.*"))
	for _, f := range append(on, top...) {
		if _, ok := files[filepath.ToSlash(f)]; !ok {
			t.Errorf("%s is in the chart's files/ but the generator does not write it", f)
		}
	}
}

// TestChartValuesDocumented: every value of values.yaml carries a comment,
// its own or that of the block it is in, so the file documents the chart.
func TestChartValuesDocumented(t *testing.T) {
	var doc yaml.Node
	if err := yaml.Unmarshal(readFile(t, filepath.Join(ChartDir, "values.yaml")), &doc); err != nil {
		t.Fatal(err)
	}
	var undocumented []string
	var walk func(n *yaml.Node, prefix string, documented bool)
	walk = func(n *yaml.Node, prefix string, documented bool) {
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			name := prefix + k.Value
			has := documented || strings.TrimSpace(k.HeadComment+k.LineComment+v.LineComment) != ""
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 {
				walk(v, name+".", has)
				continue
			}
			if !has {
				undocumented = append(undocumented, name)
			}
		}
	}
	walk(doc.Content[0], "", false)
	if len(undocumented) > 0 {
		t.Errorf("values without a comment: %v", undocumented)
	}
	if len(doc.Content[0].Content) < 20 {
		t.Errorf("values.yaml has only %d top-level keys", len(doc.Content[0].Content)/2)
	}
}
