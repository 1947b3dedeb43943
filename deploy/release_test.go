package deploy

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const goreleaserFile = "../.goreleaser.yaml"

type goreleaserConfig struct {
	Version int `yaml:"version"`
	Builds  []struct {
		Main    string   `yaml:"main"`
		Binary  string   `yaml:"binary"`
		Env     []string `yaml:"env"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Goarm   []string `yaml:"goarm"`
		Ignore  []struct {
			Goos   string `yaml:"goos"`
			Goarch string `yaml:"goarch"`
		} `yaml:"ignore"`
	} `yaml:"builds"`
	Archives []struct {
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
		Files        []string `yaml:"files"`
	} `yaml:"archives"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
}

func loadGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	var c goreleaserConfig
	if err := yaml.Unmarshal(readFile(t, goreleaserFile), &c); err != nil {
		t.Fatal(err)
	}
	if c.Version != 2 || len(c.Builds) != 1 || len(c.Archives) != 1 {
		t.Fatalf(".goreleaser.yaml: version %d, %d builds, %d archives; want version 2, one of each", c.Version, len(c.Builds), len(c.Archives))
	}
	return c
}

// releaseTarget is one GOOS/GOARCH(/GOARM) of the release.
type releaseTarget struct{ goos, goarch, goarm string }

func (r releaseTarget) String() string {
	s := r.goos + "-" + r.goarch
	if r.goarm != "" {
		s += "v" + r.goarm
	}
	return s
}

// releaseTargets expands the build matrix of .goreleaser.yaml as goreleaser
// does: goos x goarch (x goarm for arm), minus the ignored pairs.
func releaseTargets(t *testing.T) []releaseTarget {
	b := loadGoreleaser(t).Builds[0]
	var out []releaseTarget
	for _, goos := range b.Goos {
		for _, arch := range b.Goarch {
			ignored := false
			for _, ig := range b.Ignore {
				if ig.Goos == goos && ig.Goarch == arch {
					ignored = true
				}
			}
			if ignored {
				continue
			}
			if arch == "arm" {
				for _, v := range b.Goarm {
					out = append(out, releaseTarget{goos, arch, v})
				}
				continue
			}
			out = append(out, releaseTarget{goos, arch, ""})
		}
	}
	return out
}

// TestGoreleaserConfig: the release builds as scripts/build.sh does, for
// the boards people run it on, and packs what running it needs.
func TestGoreleaserConfig(t *testing.T) {
	c := loadGoreleaser(t)
	b := c.Builds[0]
	if b.Main != "." || b.Binary != "bragerone_exporter" {
		t.Errorf("build main %q binary %q", b.Main, b.Binary)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("build env %v flags %v: want CGO_ENABLED=0 and -trimpath as scripts/build.sh", b.Env, b.Flags)
	}
	// The same variables stamped as scripts/build.sh stamps them.
	script := string(readFile(t, filepath.Join(repoRoot, "scripts", "build.sh")))
	ld := strings.Join(b.Ldflags, " ")
	if !strings.HasPrefix(ld, "-s -w ") {
		t.Errorf("ldflags %q: want -s -w first, as scripts/build.sh", ld)
	}
	stamped := regexp.MustCompile(`-X \$\{v\}\.(\w+)=`).FindAllStringSubmatch(script, -1)
	if len(stamped) < 5 {
		t.Fatalf("scripts/build.sh stamps %d variables", len(stamped))
	}
	for _, m := range stamped {
		if !strings.Contains(ld, "-X github.com/prometheus/common/version."+m[1]+"=") {
			t.Errorf(".goreleaser.yaml does not stamp version.%s, which scripts/build.sh does", m[1])
		}
	}
	for _, want := range []string{"Version={{ .Version }}", "Revision={{ .FullCommit }}"} {
		if !strings.Contains(ld, want) {
			t.Errorf("ldflags lack %s", want)
		}
	}
	targets := map[string]bool{}
	for _, r := range releaseTargets(t) {
		targets[r.String()] = true
	}
	for _, want := range []string{"linux-amd64", "linux-arm64", "linux-armv7"} {
		if !targets[want] {
			t.Errorf("no release target %s (have %v)", want, targets)
		}
	}

	a := c.Archives[0]
	if !slices.Contains(a.Formats, "tar.gz") {
		t.Errorf("archive formats %v", a.Formats)
	}
	if c.Checksum.NameTemplate != "sha256sums.txt" || c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum %+v, want sha256 in sha256sums.txt", c.Checksum)
	}
	files := map[string]bool{}
	for _, f := range a.Files {
		files[f] = true
		if _, err := os.Stat(filepath.Join(repoRoot, f)); err != nil {
			t.Errorf("archive file %s: %v", f, err)
		}
	}
	dashboards, _ := filepath.Glob(filepath.Join(DashboardsDir, "*.json"))
	var want []string
	for _, d := range dashboards {
		want = append(want, "dashboards/"+filepath.Base(d))
	}
	want = append(want, "LICENSE", "README.md", "alerts/bragerone.rules.yml", "alerts/runbooks.md",
		"deploy/systemd/bragerone_exporter.service", "deploy/systemd/bragerone_exporter.env.example")
	for _, f := range want {
		if !files[f] {
			t.Errorf("the archives lack %s", f)
		}
	}
}

// dockerGOARM evaluates the Dockerfile's GOARM= expression with a shell, as
// the build stage's RUN does, for a TARGETVARIANT.
func dockerGOARM(t *testing.T, variant string) string {
	t.Helper()
	var build string
	for _, in := range parseDockerfile(t, readFile(t, filepath.Join(repoRoot, "Dockerfile"))) {
		if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
			build = in.Args
		}
	}
	m := regexp.MustCompile(`\bGOARM=(\S+)`).FindStringSubmatch(build)
	if m == nil {
		t.Fatalf("the Dockerfile's go build sets no GOARM: %s", build)
	}
	out, err := exec.Command("sh", "-c", `TARGETVARIANT="$1"; printf %s `+m[1], "sh", variant).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestDockerfileTargetVariant: the build stage takes buildx's TARGETVARIANT
// and turns linux/arm/v7 into GOARM=7, the release's armv7.
func TestDockerfileTargetVariant(t *testing.T) {
	var buildArgs []string
	froms := 0
	for _, in := range parseDockerfile(t, readFile(t, filepath.Join(repoRoot, "Dockerfile"))) {
		switch in.Cmd {
		case "FROM":
			froms++
		case "ARG":
			if froms == 1 {
				buildArgs = append(buildArgs, in.Args)
			}
		}
	}
	for _, a := range []string{"TARGETOS", "TARGETARCH", "TARGETVARIANT"} {
		if !slices.Contains(buildArgs, a) {
			t.Errorf("the build stage does not declare ARG %s (has %v)", a, buildArgs)
		}
	}
	for variant, want := range map[string]string{"v7": "7", "v6": "6", "": ""} {
		if got := dockerGOARM(t, variant); got != want {
			t.Errorf("TARGETVARIANT=%q: GOARM=%q, want %q", variant, got, want)
		}
	}
	for _, r := range releaseTargets(t) {
		if r.goarm != "" && dockerGOARM(t, "v"+r.goarm) != r.goarm {
			t.Errorf("release target %s: the image's linux/arm/v%s would not build GOARM=%s", r, r.goarm, r.goarm)
		}
	}
}

// TestCrossCompileReleaseTargets builds the binary for every target of
// .goreleaser.yaml with plain go build, so platform-specific breakage fails
// CI without running the release, and checks what came out.
func TestCrossCompileReleaseTargets(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM}
	for _, r := range releaseTargets(t) {
		t.Run(r.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bragerone_exporter")
			cmd := exec.Command(goCmd, "build", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+r.goos, "GOARCH="+r.goarch, "GOARM="+r.goarm)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build for %s: %v\n%s", r, err, b)
			}
			info, err := buildinfo.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			if settings["GOOS"] != r.goos || settings["GOARCH"] != r.goarch || settings["GOARM"] != r.goarm || settings["CGO_ENABLED"] != "0" {
				t.Errorf("build settings %v, want %s", settings, r)
			}
			if r.goos != "linux" {
				return
			}
			f, err := elf.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Machine != machines[r.goarch] {
				t.Errorf("ELF machine %v, want %v", f.Machine, machines[r.goarch])
			}
			if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
				t.Errorf("not static: links %v", libs)
			}
		})
	}
	if testing.Verbose() {
		fmt.Println("cross-compiled:", releaseTargets(t))
	}
}
