package deploy

import (
	"bytes"
	"errors"
	"io"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec       yaml.Node         `yaml:"spec"`
	StringData map[string]string `yaml:"stringData"`
	Resources  []string          `yaml:"resources"`
}

type container struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	} `yaml:"readinessProbe"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
}

type deploymentSpec struct {
	Replicas int `yaml:"replicas"`
	Strategy struct {
		Type string `yaml:"type"`
	} `yaml:"strategy"`
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			SecurityContext struct {
				RunAsNonRoot bool `yaml:"runAsNonRoot"`
			} `yaml:"securityContext"`
			Containers []container `yaml:"containers"`
			Volumes    []struct {
				Name   string `yaml:"name"`
				Secret struct {
					SecretName string `yaml:"secretName"`
					Items      []struct {
						Key  string `yaml:"key"`
						Path string `yaml:"path"`
					} `yaml:"items"`
				} `yaml:"secret"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

type serviceSpec struct {
	Selector map[string]string `yaml:"selector"`
	Ports    []struct {
		Name       string `yaml:"name"`
		Port       int    `yaml:"port"`
		TargetPort string `yaml:"targetPort"`
	} `yaml:"ports"`
}

type serviceMonitorSpec struct {
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Endpoints []struct {
		Port string `yaml:"port"`
		Path string `yaml:"path"`
	} `yaml:"endpoints"`
}

func loadK8s(t *testing.T) (map[string]k8sObject, map[string]string) {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	objs := map[string]k8sObject{}
	fileOf := map[string]string{}
	for _, f := range files {
		dec := yaml.NewDecoder(bytes.NewReader(readFile(t, f)))
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" || o.APIVersion == "" {
				t.Fatalf("%s: a document without kind or apiVersion", f)
			}
			if _, dup := objs[o.Kind]; dup {
				t.Fatalf("%s: second %s", f, o.Kind)
			}
			objs[o.Kind], fileOf[o.Kind] = o, filepath.Base(f)
		}
	}
	return objs, fileOf
}

func decodeSpec(t *testing.T, o k8sObject, v any) {
	t.Helper()
	if err := o.Spec.Decode(v); err != nil {
		t.Fatalf("%s spec: %v", o.Kind, err)
	}
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKubernetesManifests(t *testing.T) {
	objs, fileOf := loadK8s(t)
	for _, kind := range []string{"Namespace", "Deployment", "Service", "Secret", "ServiceMonitor", "PrometheusRule", "Kustomization"} {
		if _, ok := objs[kind]; !ok {
			t.Fatalf("no %s in kubernetes/", kind)
		}
	}
	// Every manifest but the example Secret, whose placeholders would
	// overwrite the real Secret on every apply.
	var res []string
	for kind, f := range fileOf {
		if kind != "Kustomization" && kind != "Secret" {
			res = append(res, f)
		}
	}
	sort.Strings(res)
	got := append([]string(nil), objs["Kustomization"].Resources...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, res) {
		t.Errorf("kustomization resources %v, want %v", got, res)
	}

	var dep deploymentSpec
	decodeSpec(t, objs["Deployment"], &dep)
	if dep.Replicas != 1 || dep.Strategy.Type != "Recreate" {
		t.Errorf("Deployment: replicas %d, strategy %q; one instance per account wants 1 and Recreate", dep.Replicas, dep.Strategy.Type)
	}
	if !subset(dep.Selector.MatchLabels, dep.Template.Metadata.Labels) {
		t.Errorf("Deployment selector %v does not select its pods %v", dep.Selector.MatchLabels, dep.Template.Metadata.Labels)
	}
	if !dep.Template.Spec.SecurityContext.RunAsNonRoot {
		t.Error("Deployment: runAsNonRoot not set")
	}
	if len(dep.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment: %d containers", len(dep.Template.Spec.Containers))
	}
	c := dep.Template.Spec.Containers[0]
	checkServeArgs(t, "Deployment args", c.Args)
	if c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation || !c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("container: want allowPrivilegeEscalation false and readOnlyRootFilesystem")
	}

	secret := objs["Secret"]
	known := knownEnv(t)
	for _, e := range c.Env {
		if !known[e.Name] {
			t.Errorf("container env %s is no variable the exporter reads", e.Name)
		}
		if ref := e.ValueFrom.SecretKeyRef; ref.Name != "" {
			if ref.Name != secret.Metadata.Name || secret.StringData[ref.Key] == "" {
				t.Errorf("env %s refers to secret %s key %s, which the example Secret lacks", e.Name, ref.Name, ref.Key)
			}
		}
		if e.Name == "BRAGERONE_PASSWORD" && e.Value != "" {
			t.Error("the password is written into the Deployment")
		}
	}
	// The password file: a whole-directory Secret mount, so a rotation arrives.
	pwFile := commandFlag(c.Args, "--cloud.password-file")
	if pwFile == "" {
		t.Fatal("Deployment: no --cloud.password-file")
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if path.Dir(pwFile) != m.MountPath {
			continue
		}
		if m.SubPath != "" {
			t.Error("the password is mounted with subPath: a rotated Secret would never arrive")
		}
		for _, v := range dep.Template.Spec.Volumes {
			if v.Name != m.Name || v.Secret.SecretName != secret.Metadata.Name {
				continue
			}
			for _, it := range v.Secret.Items {
				if it.Path == path.Base(pwFile) && secret.StringData[it.Key] != "" {
					mounted = true
				}
			}
		}
	}
	if !mounted {
		t.Errorf("%s is not a key of the Secret mounted in the container", pwFile)
	}
	for k, v := range secret.StringData {
		if v != "change-me" && v != "you@example.com" {
			t.Errorf("example Secret key %s holds %q, not a placeholder", k, v)
		}
	}

	// Service -> container port; ServiceMonitor -> Service port.
	var svc serviceSpec
	decodeSpec(t, objs["Service"], &svc)
	if !subset(svc.Selector, dep.Template.Metadata.Labels) {
		t.Errorf("Service selector %v does not select the pods", svc.Selector)
	}
	if len(svc.Ports) != 1 || svc.Ports[0].Port != 9826 {
		t.Fatalf("Service ports %+v", svc.Ports)
	}
	var portOK bool
	for _, p := range c.Ports {
		if p.Name == svc.Ports[0].TargetPort && p.ContainerPort == 9826 {
			portOK = true
		}
	}
	if !portOK {
		t.Errorf("Service targetPort %q is not the container's port 9826", svc.Ports[0].TargetPort)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/-/healthy" {
		t.Errorf("readiness probe %q: an exporter that cannot reach the cloud must stay in the Service", c.ReadinessProbe.HTTPGet.Path)
	}
	// The probes ask the health listener, which no web configuration puts
	// behind auth; the Service does not expose it.
	_, healthPort, _ := strings.Cut(commandFlag(c.Args, "--web.health-listen-address"), ":")
	for _, p := range c.Ports {
		if p.Name == c.ReadinessProbe.HTTPGet.Port && strconv.Itoa(p.ContainerPort) != healthPort {
			t.Errorf("readiness probe port %s (%d) is not --web.health-listen-address's port %q", p.Name, p.ContainerPort, healthPort)
		}
		if p.Name == svc.Ports[0].TargetPort && strconv.Itoa(p.ContainerPort) == healthPort {
			t.Error("the Service exposes the health listener")
		}
	}
	if healthPort == "" || c.ReadinessProbe.HTTPGet.Port == svc.Ports[0].TargetPort {
		t.Errorf("readiness probe on port %q, health listener port %q: the probe would meet the web configuration's auth", c.ReadinessProbe.HTTPGet.Port, healthPort)
	}
	for _, o := range objs {
		if o.Kind != "Namespace" && o.Kind != "Kustomization" && o.Metadata.Namespace != objs["Namespace"].Metadata.Name {
			t.Errorf("%s in namespace %q, not the Namespace %q the kustomization creates", o.Kind, o.Metadata.Namespace, objs["Namespace"].Metadata.Name)
		}
	}
	var sm serviceMonitorSpec
	decodeSpec(t, objs["ServiceMonitor"], &sm)
	if !subset(sm.Selector.MatchLabels, objs["Service"].Metadata.Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the Service %v", sm.Selector.MatchLabels, objs["Service"].Metadata.Labels)
	}
	if len(sm.Endpoints) != 1 || sm.Endpoints[0].Port != svc.Ports[0].Name || sm.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want port %s path /metrics", sm.Endpoints, svc.Ports[0].Name)
	}
	if !strings.Contains(objs["Service"].Metadata.Name, "bragerone") {
		t.Errorf("the job label (the Service name %q) must contain bragerone for the alert rules", objs["Service"].Metadata.Name)
	}
}
