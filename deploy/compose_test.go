package deploy

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func strictDecode(t *testing.T, file string, v any) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, file)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

type promConfig struct {
	Global    map[string]any `yaml:"global"`
	RuleFiles []string       `yaml:"rule_files"`
	Alerting  struct {
		Alertmanagers []struct {
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"alertmanagers"`
	} `yaml:"alerting"`
	ScrapeConfigs []struct {
		JobName        string `yaml:"job_name"`
		ScrapeInterval string `yaml:"scrape_interval"`
		ScrapeTimeout  string `yaml:"scrape_timeout"`
		StaticConfigs  []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Image       string            `yaml:"image"`
	Restart     string            `yaml:"restart"`
	Command     []string          `yaml:"command"`
	EnvFile     []string          `yaml:"env_file"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	DependsOn   []string          `yaml:"depends_on"`
}

var composeVar = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::-([^}]*))?\}`)

// interpolate resolves ${VAR:-default} as Compose does with VAR unset.
func interpolate(s string) string {
	return composeVar.ReplaceAllString(s, "$2")
}

type bind struct{ Source, Target string }

// binds returns a service's bind mounts (host path relative to deploy/) and
// checks that named volumes are declared.
func (c composeFile) binds(t *testing.T, service string) []bind {
	t.Helper()
	var out []bind
	for _, v := range c.Services[service].Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 {
			t.Errorf("%s: volume %q: want source:target[:mode]", service, v)
			continue
		}
		if !strings.HasPrefix(parts[0], ".") && !strings.HasPrefix(parts[0], "/") {
			if _, ok := c.Volumes[parts[0]]; !ok {
				t.Errorf("%s: named volume %q is not declared", service, parts[0])
			}
			continue
		}
		out = append(out, bind{Source: filepath.Clean(interpolate(parts[0])), Target: parts[1]})
	}
	return out
}

// hostPath maps a path inside a service's container to the host file that
// a bind mount puts there ("" when none does).
func hostPath(binds []bind, inContainer string) string {
	best := bind{}
	for _, b := range binds {
		if (inContainer == b.Target || strings.HasPrefix(inContainer, b.Target+"/")) && len(b.Target) > len(best.Target) {
			best = b
		}
	}
	if best.Target == "" {
		return ""
	}
	return filepath.Join(best.Source, strings.TrimPrefix(inContainer, best.Target))
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

func TestComposeReferencesExist(t *testing.T) {
	var c composeFile
	strictDecode(t, "docker-compose.yml", &c)
	for _, name := range []string{"exporter", "prometheus", "alertmanager", "grafana"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("service %s missing", name)
		}
	}
	for name, s := range c.Services {
		if s.Image == "" && s.Build == nil {
			t.Errorf("%s: neither image nor build", name)
		}
		for _, d := range s.DependsOn {
			if _, ok := c.Services[d]; !ok {
				t.Errorf("%s depends on unknown service %s", name, d)
			}
		}
		for _, b := range c.binds(t, name) {
			if _, err := os.Stat(b.Source); err != nil {
				t.Errorf("%s: bind source: %v", name, err)
			}
		}
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s: port %q is published beyond localhost", name, p)
			}
		}
	}

	// Exporter: built from this repository, environment from the example file.
	exp := c.Services["exporter"]
	if exp.Build == nil {
		t.Fatal("exporter: no build section")
	}
	if _, err := os.Stat(filepath.Join(exp.Build.Context, exp.Build.Dockerfile)); err != nil {
		t.Errorf("exporter build: %v", err)
	}
	if len(exp.EnvFile) != 1 || interpolate(exp.EnvFile[0]) != "bragerone.env.example" {
		t.Errorf("exporter env_file %v: want bragerone.env.example by default", exp.EnvFile)
	}
	checkEnvFile(t, "bragerone.env.example", "BRAGERONE_EMAIL", "BRAGERONE_PASSWORD")

	// Prometheus: the config file and, through it, the rule file resolve in
	// the container to the same files they resolve to on the host.
	prom := c.Services["prometheus"]
	promBinds := c.binds(t, "prometheus")
	cfgIn := commandFlag(prom.Command, "--config.file")
	if cfgIn == "" {
		t.Fatal("prometheus: no --config.file in command")
	}
	if got := hostPath(promBinds, cfgIn); !sameFile(t, got, "prometheus/prometheus.yml") {
		t.Fatalf("prometheus: %s in the container is %q on the host, want prometheus/prometheus.yml", cfgIn, got)
	}
	var pc promConfig
	strictDecode(t, "prometheus/prometheus.yml", &pc)
	if len(pc.RuleFiles) == 0 {
		t.Fatal("prometheus.yml loads no rule files")
	}
	for _, rf := range pc.RuleFiles {
		onHost := filepath.Join("prometheus", rf)
		inContainer := path.Join(path.Dir(cfgIn), rf)
		viaMount := hostPath(promBinds, inContainer)
		if !sameFile(t, onHost, filepath.Join(repoRoot, "alerts", "bragerone.rules.yml")) {
			t.Errorf("rule file %s is %s on the host, not alerts/bragerone.rules.yml", rf, onHost)
		}
		if !sameFile(t, viaMount, onHost) {
			t.Errorf("rule file %s is %s in the container, mounted from %q, not from %s", rf, inContainer, viaMount, onHost)
		}
	}
	checkTargets := func(what string, targets []string, service, port string) {
		t.Helper()
		for _, tg := range targets {
			if tg == service+":"+port {
				return
			}
		}
		t.Errorf("%s targets %v: want %s:%s", what, targets, service, port)
	}
	var scraped bool
	for _, sc := range pc.ScrapeConfigs {
		if strings.Contains(sc.JobName, "bragerone") {
			scraped = true
			checkTargets("scrape job "+sc.JobName, sc.StaticConfigs[0].Targets, "exporter", "9826")
		}
	}
	if !scraped {
		t.Error("no scrape job whose name contains bragerone (the alert rules select on it)")
	}
	if len(pc.Alerting.Alertmanagers) == 0 {
		t.Fatal("prometheus.yml sends alerts nowhere")
	}
	checkTargets("alertmanagers", pc.Alerting.Alertmanagers[0].StaticConfigs[0].Targets, "alertmanager", "9093")

	// Alertmanager: the example configuration of alerts/.
	am := c.Services["alertmanager"]
	amCfg := commandFlag(am.Command, "--config.file")
	if got := hostPath(c.binds(t, "alertmanager"), amCfg); !sameFile(t, got, filepath.Join(repoRoot, "alerts", "alertmanager.example.yml")) {
		t.Errorf("alertmanager: %s comes from %q, want alerts/alertmanager.example.yml", amCfg, got)
	}

	// Grafana: datasource and dashboard providers, and every dashboard of
	// dashboards/ in the provider's directory.
	gBinds := c.binds(t, "grafana")
	for _, dir := range []string{"datasources", "dashboards"} {
		if got := hostPath(gBinds, "/etc/grafana/provisioning/"+dir); !sameFile(t, got, filepath.Join("grafana", "provisioning", dir)) {
			t.Errorf("grafana: provisioning/%s comes from %q", dir, got)
		}
	}
	var providers struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name                  string `yaml:"name"`
			Folder                string `yaml:"folder"`
			Type                  string `yaml:"type"`
			DisableDeletion       bool   `yaml:"disableDeletion"`
			AllowUIUpdates        bool   `yaml:"allowUiUpdates"`
			UpdateIntervalSeconds int    `yaml:"updateIntervalSeconds"`
			Options               struct {
				Path                      string `yaml:"path"`
				FoldersFromFilesStructure bool   `yaml:"foldersFromFilesStructure"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	strictDecode(t, "grafana/provisioning/dashboards/bragerone.yml", &providers)
	if len(providers.Providers) != 1 || providers.Providers[0].Type != "file" {
		t.Fatalf("dashboard providers: %+v", providers.Providers)
	}
	dashDir := providers.Providers[0].Options.Path
	dashboards, err := filepath.Glob(filepath.Join(repoRoot, "dashboards", "*.json"))
	if err != nil || len(dashboards) == 0 {
		t.Fatalf("no dashboards found: %v", err)
	}
	for _, d := range dashboards {
		if got := hostPath(gBinds, path.Join(dashDir, filepath.Base(d))); !sameFile(t, got, d) {
			t.Errorf("grafana: dashboard %s is not mounted into %s", d, dashDir)
		}
	}
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name      string         `yaml:"name"`
			UID       string         `yaml:"uid"`
			Type      string         `yaml:"type"`
			Access    string         `yaml:"access"`
			URL       string         `yaml:"url"`
			IsDefault bool           `yaml:"isDefault"`
			Editable  bool           `yaml:"editable"`
			JSONData  map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	strictDecode(t, "grafana/provisioning/datasources/prometheus.yml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" || !ds.Datasources[0].IsDefault {
		t.Errorf("datasource: %+v; want the default prometheus at http://prometheus:9090", ds.Datasources)
	}
}
