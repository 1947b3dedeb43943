package deploy

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// projectHome reads the project's home from the README, where it is named
// once, on its "Project home:" line.
func projectHome(t *testing.T) string {
	t.Helper()
	readme := string(readFile(t, filepath.Join(repoRoot, "README.md")))
	m := regexp.MustCompile(`(?m)^Project home: <(https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)>`).FindAllStringSubmatch(readme, -1)
	if len(m) != 1 {
		t.Fatalf("README: %d \"Project home: <https://github.com/owner/name>\" lines, want 1", len(m))
	}
	home := m[0][1]
	if n := strings.Count(readme, home); n != 1 {
		t.Errorf("README names %s %d times, want once (on the Project home line)", home, n)
	}
	return home
}

// TestEverythingPointsAtTheProjectHome: every runbook link of the rules,
// the systemd unit's Documentation=, the image labels, the chart's home and
// the image the manifests and the chart pull agree with the README's home.
func TestEverythingPointsAtTheProjectHome(t *testing.T) {
	home := projectHome(t)
	ownerRepo := strings.TrimPrefix(home, "https://github.com/")
	image := "ghcr.io/" + strings.ToLower(ownerRepo)

	// Runbook links: the rule file and the PrometheusRules generated from it.
	runbooks := home + "/blob/main/alerts/runbooks.md#"
	for _, f := range []string{RuleFile, PrometheusRuleFile, ChartRuleFile} {
		n := 0
		for _, m := range regexp.MustCompile(`runbook_url:\s*(\S+)`).FindAllStringSubmatch(string(readFile(t, f)), -1) {
			n++
			if !strings.HasPrefix(m[1], runbooks) {
				t.Errorf("%s: runbook_url %s is not under %s", f, m[1], runbooks)
			}
		}
		if n == 0 {
			t.Errorf("%s: no runbook_url found", f)
		}
	}

	// systemd.
	var doc string
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, "systemd/bragerone_exporter.service")))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Documentation="); ok {
			doc = v
		}
	}
	if doc != home {
		t.Errorf("systemd unit Documentation=%q, want %s", doc, home)
	}

	// Image labels.
	dockerfile := string(readFile(t, filepath.Join(repoRoot, "Dockerfile")))
	for label, want := range map[string]string{
		"org.opencontainers.image.url":           home,
		"org.opencontainers.image.source":        home,
		"org.opencontainers.image.documentation": home + "/blob/main/README.md",
	} {
		m := regexp.MustCompile(regexp.QuoteMeta(label) + `="([^"]*)"`).FindStringSubmatch(dockerfile)
		if m == nil || m[1] != want {
			t.Errorf("Dockerfile label %s = %v, want %s", label, m, want)
		}
	}

	// The chart.
	var chart struct {
		Home    string   `yaml:"home"`
		Sources []string `yaml:"sources"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(ChartDir, "Chart.yaml")), &chart); err != nil {
		t.Fatal(err)
	}
	if chart.Home != home || len(chart.Sources) != 1 || chart.Sources[0] != home {
		t.Errorf("Chart.yaml home %q sources %v, want %s", chart.Home, chart.Sources, home)
	}
	var values struct {
		Image struct {
			Repository string `yaml:"repository"`
		} `yaml:"image"`
	}
	if err := yaml.Unmarshal(readFile(t, filepath.Join(ChartDir, "values.yaml")), &values); err != nil {
		t.Fatal(err)
	}
	if values.Image.Repository != image {
		t.Errorf("chart image.repository %q, want %s", values.Image.Repository, image)
	}
	objs, _ := loadK8s(t)
	var dep deploymentSpec
	decodeSpec(t, objs["Deployment"], &dep)
	if img := dep.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, image+":") {
		t.Errorf("deploy/kubernetes image %q, want %s:<tag>", img, image)
	}
	var kust struct {
		Images []struct {
			Name string `yaml:"name"`
		} `yaml:"images"`
	}
	if err := yaml.Unmarshal(readFile(t, "kubernetes/kustomization.yaml"), &kust); err != nil {
		t.Fatal(err)
	}
	if len(kust.Images) != 1 || kust.Images[0].Name != image {
		t.Errorf("kustomization images %+v, want the one image %s as a value", kust.Images, image)
	}
}

// TestSystemdInstallStepsFromTheRoot runs nothing as root, but checks that
// every file the unit's install steps copy exists relative to the
// repository root, where `make build` leaves the binary (and where a
// release archive unpacks them).
func TestSystemdInstallStepsFromTheRoot(t *testing.T) {
	var steps int
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, "systemd/bragerone_exporter.service")))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "#   install ")
		if !ok {
			continue
		}
		line, _, _ = strings.Cut(line, "#")
		var operands []string
		fields := strings.Fields(line)
		for i := 0; i < len(fields); i++ {
			switch f := fields[i]; {
			case f == "-m":
				i++
			case strings.HasPrefix(f, "-"):
				if f == "-d" {
					operands = nil
				}
			default:
				operands = append(operands, f)
			}
		}
		if strings.Contains(line, "-d ") || len(operands) < 2 {
			continue
		}
		steps++
		for _, src := range operands[:len(operands)-1] {
			if src == "bragerone_exporter" {
				// make build (scripts/build.sh) writes it at the root.
				if !strings.Contains(string(readFile(t, filepath.Join(repoRoot, "scripts", "build.sh"))), `out="${out:-$PWD/bragerone_exporter}"`) {
					t.Errorf("scripts/build.sh no longer writes bragerone_exporter at the root")
				}
				continue
			}
			if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
				t.Errorf("install step copies %s, which is not there from the repository root: %v", src, err)
			}
		}
	}
	if steps < 3 {
		t.Errorf("%d install steps found in the unit's comment", steps)
	}
}
