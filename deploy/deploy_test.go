package deploy

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the README's generated flag reference from the binary's --help")

// repoRoot is the repository, seen from this package's directory.
const repoRoot = ".."

// The binary under test, built once by scripts/build.sh (the same build as
// the Dockerfile's) with recognisable build facts.
const (
	testVersion   = "0.0.0-deploytest"
	testRevision  = "deadbeefcafe"
	testBranch    = "release-0.0"
	testBuildUser = "builder@ci"
	testBuildDate = "20260102-03:04:05"
)

var (
	binOnce   sync.Once
	binPath   string
	binOutput string
	binErr    error
	tmpDir    string
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "bragerone-deploy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// exporter returns the path of the binary built by scripts/build.sh.
func exporter(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(tmpDir, "bragerone_exporter")
		cmd := exec.Command("bash", filepath.Join(repoRoot, "scripts", "build.sh"), binPath)
		cmd.Env = append(os.Environ(), "VERSION="+testVersion, "REVISION="+testRevision,
			"BRANCH="+testBranch, "BUILD_USER="+testBuildUser, "BUILD_DATE="+testBuildDate)
		out, err := cmd.CombinedOutput()
		binOutput = string(out)
		if err != nil {
			binErr = fmt.Errorf("scripts/build.sh: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// runExporter runs the built binary and returns its stdout, stderr and exit code.
func runExporter(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(exporter(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + tmpDir}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ---- kong --help parsing -------------------------------------------------------

type helpFlag struct {
	Name        string // without the leading --
	Default     string // "" when none
	Placeholder string // STRING, INT, ... when the flag takes a value without a default
	Bool        bool
	Env         string
	Help        string
	Group       string // "Flags" for the top section, else the group heading, "" for an ungrouped block
}

type helpPage struct {
	Flags    []helpFlag
	Commands []string // sub-commands listed by the page
}

var (
	flagLine        = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9][a-z0-9.\-]*)(?:=(\S+))?(?:\s{2,}(.*))?$`)
	envSuffix       = regexp.MustCompile(`\s*\(\$([A-Z0-9_]+)\)\.?$`)
	placeholderLike = regexp.MustCompile(`^[A-Z][A-Z0-9._\-]*(,\.\.\.)?$`)
	commandLine     = regexp.MustCompile(`^  ([a-z][a-z0-9\-]*)(\s|$)`)
)

// parseHelp reads kong's help output. It is strict: a line it cannot place
// fails the test, so a change of help layout cannot silently drop flags.
func parseHelp(t *testing.T, out string) helpPage {
	t.Helper()
	var page helpPage
	section := "" // "", "flags", "commands"
	group := ""
	var cur *helpFlag
	finish := func() {
		if cur == nil {
			return
		}
		text := strings.Join(strings.Fields(cur.Help), " ")
		if m := envSuffix.FindStringSubmatch(text); m != nil {
			cur.Env = m[1]
			text = strings.TrimSpace(text[:len(text)-len(m[0])])
		}
		cur.Help = strings.TrimSuffix(text, ".")
		page.Flags = append(page.Flags, *cur)
		cur = nil
	}
	for _, line := range strings.Split(out, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
			finish()
			if section == "flags" && group == "Flags" {
				group = "" // kong separates a command's own ungrouped flags by a blank line
			}
			continue
		case line == "Flags:":
			finish()
			section, group = "flags", "Flags"
			continue
		case line == "Commands:":
			finish()
			section = "commands"
			continue
		case strings.HasPrefix(line, "Usage:") || strings.HasPrefix(line, "Run \""):
			finish()
			continue
		}
		switch section {
		case "":
			continue // the description
		case "commands":
			if m := commandLine.FindStringSubmatch(line); m != nil {
				page.Commands = append(page.Commands, m[1])
			}
			continue
		}
		if !strings.HasPrefix(line, " ") {
			finish()
			group = strings.TrimSuffix(trimmed, ":")
			continue
		}
		if m := flagLine.FindStringSubmatch(line); m != nil && strings.HasPrefix(trimmed, "-") {
			finish()
			f := helpFlag{Name: m[1], Group: group, Help: m[3]}
			switch v := m[2]; {
			case v == "":
				f.Bool = true
			case strings.HasPrefix(v, `"`):
				s, err := strconv.Unquote(v)
				if err != nil {
					t.Fatalf("help line %q: default %s: %v", line, v, err)
				}
				f.Default = s
			case placeholderLike.MatchString(v):
				f.Placeholder = v
			default:
				f.Default = v
			}
			cur = &f
			continue
		}
		if cur == nil {
			t.Fatalf("help line not understood: %q", line)
		}
		cur.Help += " " + trimmed
	}
	finish()
	return page
}

func helpOf(t *testing.T, args ...string) helpPage {
	t.Helper()
	out, stderr, code := runExporter(t, append(args, "--help")...)
	if code != 0 || stderr != "" {
		t.Fatalf("%v --help: exit %d, stderr %q", args, code, stderr)
	}
	return parseHelp(t, out)
}

// knownEnv returns every environment variable the exporter reads for serve,
// plus the password variable, which is no flag.
func knownEnv(t *testing.T) map[string]bool {
	env := map[string]bool{"BRAGERONE_PASSWORD": true}
	for _, f := range helpOf(t, "serve").Flags {
		if f.Env != "" {
			env[f.Env] = true
		}
	}
	return env
}

func serveFlagNames(t *testing.T) map[string]helpFlag {
	names := map[string]helpFlag{}
	for _, f := range helpOf(t, "serve").Flags {
		names[f.Name] = f
	}
	return names
}

func TestParseHelpUnderstandsKongLayout(t *testing.T) {
	out := `Usage: x serve [flags]

Run it.

Flags:
  -h, --help                  Show context-sensitive help.
      --log.level="info"      Log level: debug, info
                              ($X_LOG_LEVEL).

      --listen="127.0.0.1:1"    Address ($X_LISTEN).

Cloud
  --cloud.modules=CLOUD.MODULES,...
                                  Devids to watch (default: every module of the
                                  object) ($X_CLOUD_MODULES).
  --cloud.timeout=8s              Timeout of one REST request ($X_CLOUD_TIMEOUT).
  --simulate                      Run simulated ($X_SIMULATE).

Commands:
  serve [flags]
    Run.

  set <devid> <assignment> [flags]
    Write.
`
	got := parseHelp(t, out)
	want := []helpFlag{
		{Name: "help", Bool: true, Help: "Show context-sensitive help", Group: "Flags"},
		{Name: "log.level", Default: "info", Env: "X_LOG_LEVEL", Help: "Log level: debug, info", Group: "Flags"},
		{Name: "listen", Default: "127.0.0.1:1", Env: "X_LISTEN", Help: "Address", Group: ""},
		{Name: "cloud.modules", Placeholder: "CLOUD.MODULES,...", Env: "X_CLOUD_MODULES", Help: "Devids to watch (default: every module of the object)", Group: "Cloud"},
		{Name: "cloud.timeout", Default: "8s", Env: "X_CLOUD_TIMEOUT", Help: "Timeout of one REST request", Group: "Cloud"},
		{Name: "simulate", Bool: true, Env: "X_SIMULATE", Help: "Run simulated", Group: "Cloud"},
	}
	if !reflect.DeepEqual(got.Flags, want) {
		t.Errorf("flags:\n got %+v\nwant %+v", got.Flags, want)
	}
	if !reflect.DeepEqual(got.Commands, []string{"serve", "set"}) {
		t.Errorf("commands: %v", got.Commands)
	}
}

// ---- build script and Dockerfile -------------------------------------------------

func TestBuildScriptMakesAStaticStampedBinary(t *testing.T) {
	bin := exporter(t)
	want := fmt.Sprintf("bragerone_exporter, version %s (branch: %s, revision: %s)", testVersion, testBranch, testRevision)
	if !strings.Contains(binOutput, want) {
		t.Errorf("scripts/build.sh printed %q, want it to print %q", binOutput, want)
	}
	out, _, code := runExporter(t, "--version")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || lines[0] != want {
		t.Errorf("--version: exit %d, %q; want it to begin with %q", code, out, want)
	}
	for _, line := range []string{"build user:       " + testBuildUser, "build date:       " + testBuildDate} {
		if !strings.Contains(out, "\n  "+line+"\n") {
			t.Errorf("--version lacks %q: %q", line, out)
		}
	}
	info, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, info)
	}
	for _, setting := range []string{"CGO_ENABLED=0", "-trimpath=true"} {
		if !regexp.MustCompile(`(?m)^\s+build\s+` + regexp.QuoteMeta(setting) + `$`).Match(info) {
			t.Errorf("go version -m does not show build %s:\n%s", setting, info)
		}
	}
	if bytes.Contains(info, []byte("\tdep\t")) && bytes.Contains(info, []byte("cgo")) && !bytes.Contains(info, []byte("CGO_ENABLED=0")) {
		t.Errorf("binary links cgo")
	}
}

type dockerInstruction struct {
	Cmd  string // upper case
	Args string // continuation lines joined
}

func parseDockerfile(t *testing.T, data []byte) []dockerInstruction {
	t.Helper()
	var out []dockerInstruction
	var pending strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if pending.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			pending.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		pending.WriteString(trimmed)
		full := pending.String()
		pending.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		out = append(out, dockerInstruction{Cmd: strings.ToUpper(cmd), Args: strings.Join(strings.Fields(args), " ")})
	}
	if pending.Len() > 0 {
		t.Fatalf("Dockerfile ends inside a continued line")
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, readFile(t, filepath.Join(repoRoot, "Dockerfile")))
	args := map[string]string{}
	var froms []string
	var final []dockerInstruction // instructions of the last stage
	for _, in := range ins {
		switch in.Cmd {
		case "ARG":
			if k, v, ok := strings.Cut(in.Args, "="); ok && len(froms) == 0 {
				args[k] = v
			}
		case "FROM":
			image := in.Args
			fields := strings.Fields(image)
			for _, f := range fields {
				if !strings.HasPrefix(f, "--") {
					image = f
					break
				}
			}
			image = os.Expand(image, func(k string) string { return args[k] })
			froms = append(froms, image)
			final = nil
		}
		final = append(final, in)
	}
	if len(froms) != 2 || froms[0] != "golang:1.26" || froms[1] != "gcr.io/distroless/static-debian12:nonroot" {
		t.Fatalf("stages %v, want golang:1.26 then gcr.io/distroless/static-debian12:nonroot", froms)
	}

	var build string
	for _, in := range ins {
		if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
			build = in.Args
		}
	}
	script := string(readFile(t, filepath.Join(repoRoot, "scripts", "build.sh")))
	// Both stamp github.com/prometheus/common/version, which --version and
	// bragerone_exporter_build_info read.
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "v=github.com/prometheus/common/version", `-ldflags "-s -w -X ${v}.Version=${`,
		` -X ${v}.Revision=${`, ` -X ${v}.Branch=${`, ` -X ${v}.BuildUser=${`, ` -X ${v}.BuildDate=${`, "-o "} {
		if !strings.Contains(build, want) {
			t.Errorf("Dockerfile go build lacks %q: %s", want, build)
		}
		if !strings.Contains(script, want) {
			t.Errorf("scripts/build.sh lacks %q", want)
		}
	}
	for _, stamp := range []string{"Version=${VERSION}", "Revision=${REVISION}", "Branch=${BRANCH}", "BuildUser=${BUILD_USER}", "BuildDate=${BUILD_DATE}"} {
		if !strings.Contains(build, "${v}."+stamp) {
			t.Errorf("the Dockerfile must stamp its build args: %s lacks ${v}.%s", build, stamp)
		}
	}

	labels := map[string]bool{}
	var user, expose, entrypoint, copied string
	for _, in := range final {
		switch in.Cmd {
		case "LABEL":
			for _, m := range regexp.MustCompile(`([a-z.]+)=`).FindAllStringSubmatch(in.Args, -1) {
				labels[m[1]] = true
			}
		case "USER":
			user = in.Args
		case "EXPOSE":
			expose = in.Args
		case "ENTRYPOINT":
			entrypoint = in.Args
		case "COPY":
			if strings.HasPrefix(in.Args, "--from=build ") {
				f := strings.Fields(in.Args)
				copied = f[len(f)-1]
			}
		}
	}
	for _, l := range []string{"title", "description", "source", "url", "documentation", "version", "revision"} {
		if !labels["org.opencontainers.image."+l] {
			t.Errorf("missing label org.opencontainers.image.%s", l)
		}
	}
	if user == "" || strings.HasPrefix(user, "root") || strings.HasPrefix(user, "0") {
		t.Errorf("USER %q: want a non-root user", user)
	}
	if expose != "9826" {
		t.Errorf("EXPOSE %q, want 9826", expose)
	}
	if entrypoint != fmt.Sprintf(`["%s"]`, copied) {
		t.Errorf("ENTRYPOINT %s does not run the copied binary %s", entrypoint, copied)
	}
}

// dockerignoreMatch reports whether a slash-separated path relative to the
// build context is excluded by one .dockerignore pattern (a pattern that
// names a directory excludes what is below it).
func dockerignoreMatch(pattern, p string) bool {
	pattern = strings.TrimPrefix(path.Clean(pattern), "/")
	segs := strings.Split(p, "/")
	if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
		for i := range segs {
			if dockerignoreMatch(rest, strings.Join(segs[i:], "/")) {
				return true
			}
		}
		return false
	}
	psegs := strings.Split(pattern, "/")
	if len(psegs) > len(segs) {
		return false
	}
	for i, ps := range psegs {
		if ok, _ := path.Match(ps, segs[i]); !ok {
			return false
		}
	}
	return true
}

func TestDockerignoreKeepsWhatTheBuildNeeds(t *testing.T) {
	var patterns []string
	for _, line := range strings.Split(string(readFile(t, filepath.Join(repoRoot, ".dockerignore"))), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			t.Fatalf(".dockerignore exception %q: the matcher of this test does not model exceptions", line)
		}
		patterns = append(patterns, line)
	}
	excluded := func(p string) string {
		for _, pat := range patterns {
			if dockerignoreMatch(pat, p) {
				return pat
			}
		}
		return ""
	}
	// The matcher itself must exclude what the file says it excludes.
	for _, p := range []string{".git/HEAD", "bragerone_exporter", "realtime/testdata/nodeserver/node_modules/x/index.js", "deploy/docker-compose.yml"} {
		if excluded(p) == "" {
			t.Errorf("%s is not excluded by .dockerignore", p)
		}
	}

	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-C", root, "-deps", "-f", "{{if not .Standard}}{{.Dir}}|{{join .GoFiles \",\"}}|{{join .EmbedFiles \",\"}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	needed := []string{"go.mod", "go.sum"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 3 || !strings.HasPrefix(parts[0], root) {
			continue // modules from the module cache
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(parts[0], root), "/")
		for _, list := range parts[1:] {
			for _, f := range strings.Split(list, ",") {
				if f != "" {
					needed = append(needed, path.Join(rel, f))
				}
			}
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, p := range needed {
		if pat := excluded(p); pat != "" {
			t.Errorf(".dockerignore pattern %q excludes %s, which go build needs", pat, p)
		}
	}
}

// ---- YAML ---------------------------------------------------------------------------

func yamlFiles(t *testing.T) []string {
	var files []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// decodeAll decodes every document of a YAML stream; duplicate keys are errors.
func decodeAll(data []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

func TestEveryYAMLFileParses(t *testing.T) {
	files := yamlFiles(t)
	if len(files) < 10 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		docs, err := decodeAll(readFile(t, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(docs) == 0 {
			t.Errorf("%s: no document", f)
		}
	}
	// The check catches what it is there for.
	if _, err := decodeAll([]byte("a: 1\na: 2\n")); err == nil {
		t.Error("a duplicate key was accepted")
	}
}

func strictDecode(t *testing.T, file string, v any) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, file)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// ---- Prometheus --------------------------------------------------------------------

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install the Debian package prometheus (bash .ci/run does)")
	}
	return p
}

func TestPromtoolCheckConfig(t *testing.T) {
	out, err := exec.Command(promtool(t), "check", "config", "prometheus/prometheus.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "bragerone.rules.yml") {
		t.Errorf("promtool did not load the alert rules:\n%s", out)
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

// ---- Docker Compose ----------------------------------------------------------------

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

func commandFlag(cmd []string, name string) string {
	for _, a := range cmd {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
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

// checkEnvFile checks that every variable of an environment file is one the
// exporter reads, and that the required ones are there.
func checkEnvFile(t *testing.T, file string, required ...string) {
	t.Helper()
	known := knownEnv(t)
	seen := map[string]bool{}
	for i, line := range strings.Split(string(readFile(t, file)), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, _, ok := strings.Cut(line, "=")
		if !ok {
			t.Errorf("%s:%d: not KEY=VALUE: %q", file, i+1, line)
			continue
		}
		if !known[k] {
			t.Errorf("%s:%d: %s is no variable the exporter reads", file, i+1, k)
		}
		seen[k] = true
	}
	for _, k := range required {
		if !seen[k] {
			t.Errorf("%s: %s missing", file, k)
		}
	}
}

// ---- systemd ---------------------------------------------------------------------------

type unitFile map[string]map[string][]string // section -> key -> values in order

func parseUnit(t *testing.T, data []byte) unitFile {
	t.Helper()
	u := unitFile{}
	section := ""
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("unit line %d not understood: %q", i+1, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

const unitPath = "systemd/bragerone_exporter.service"

func TestSystemdUnitStructure(t *testing.T) {
	u := parseUnit(t, readFile(t, unitPath))
	svc := u["Service"]
	want := map[string]string{
		"DynamicUser":              "yes",
		"ProtectSystem":            "strict",
		"ProtectHome":              "yes",
		"PrivateTmp":               "yes",
		"NoNewPrivileges":          "yes",
		"CapabilityBoundingSet":    "",
		"RestrictAddressFamilies":  "AF_INET AF_INET6 AF_UNIX",
		"LoadCredential":           "password:/etc/bragerone_exporter/password",
		"RestartPreventExitStatus": "2",
	}
	for k, v := range want {
		got, ok := svc[k]
		if !ok || got[len(got)-1] != v {
			t.Errorf("[Service] %s=%v, want %q", k, got, v)
		}
	}
	if f := svc["SystemCallFilter"]; len(f) == 0 || f[0] != "@system-service" {
		t.Errorf("SystemCallFilter=%v, want @system-service first", f)
	}
	if len(svc["EnvironmentFile"]) != 1 {
		t.Errorf("EnvironmentFile=%v", svc["EnvironmentFile"])
	}
	if u["Install"]["WantedBy"] == nil || u["Unit"]["After"] == nil {
		t.Errorf("[Unit] After= or [Install] WantedBy= missing")
	}

	// ExecStart takes the password from the credential and only flags serve knows.
	execStart := svc["ExecStart"]
	if len(execStart) != 1 {
		t.Fatalf("ExecStart=%v", execStart)
	}
	fields := strings.Fields(execStart[0])
	if len(fields) < 2 || fields[0] != "/usr/local/bin/bragerone_exporter" || fields[1] != "serve" {
		t.Fatalf("ExecStart=%s", execStart[0])
	}
	if !strings.Contains(execStart[0], "--cloud.password-file=${CREDENTIALS_DIRECTORY}/password") {
		t.Errorf("ExecStart does not read the password from the credential: %s", execStart[0])
	}
	checkServeArgs(t, "ExecStart", fields[1:])
	checkEnvFile(t, "systemd/bragerone_exporter.env.example", "BRAGERONE_EMAIL")
}

// systemdAnalyze finds systemd-analyze; a machine without it fails the test,
// since the README promises a unit that systemd itself has verified.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal("systemd-analyze not found: install the Debian package systemd (bash .ci/run does)")
	}
	return p
}

// TestSystemdAnalyzeVerify runs systemd-analyze on the unit, with ExecStart
// pointing at the binary under test (verify wants an executable there).
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa := systemdAnalyze(t)
	dir := filepath.Join(tmpDir, "unit")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	unit := strings.Replace(string(readFile(t, unitPath)), "/usr/local/bin/bragerone_exporter", exporter(t), 1)
	file := filepath.Join(dir, filepath.Base(unitPath))
	if err := os.WriteFile(file, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", file).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		// verify reports unknown keys as warnings with exit 0: any output fails.
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=true", file).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Errorf("exposure level %.1f, want at most 2.0:\n%s", level, out)
	}
}

// TestSystemdAnalyzeVerifyFailsWithoutTool runs TestSystemdAnalyzeVerify in a
// child test process whose PATH holds no systemd-analyze: it must fail and
// say what to install, not pass without having verified anything.
func TestSystemdAnalyzeVerifyFailsWithoutTool(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSystemdAnalyzeVerify$", "-test.count=1")
	cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + tmpDir}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("without systemd-analyze the test passed (err %v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "systemd-analyze not found: install the Debian package systemd") {
		t.Errorf("the failure does not say what to install:\n%s", out)
	}
}

// checkServeArgs checks command-line arguments for serve against the real
// binary: every --flag must be in serve --help, and kong must parse them
// (flag names, value types) before --help ends the run.
func checkServeArgs(t *testing.T, what string, args []string) {
	t.Helper()
	for _, p := range serveArgProblems(t, args) {
		t.Errorf("%s: %s", what, p)
	}
}

func serveArgProblems(t *testing.T, args []string) []string {
	t.Helper()
	flags := serveFlagNames(t)
	var problems []string
	parse := []string{"serve"}
	for i, a := range args {
		if a == "serve" && i == 0 {
			continue
		}
		if !strings.HasPrefix(a, "--") {
			problems = append(problems, fmt.Sprintf("argument %q is no flag", a))
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if _, ok := flags[name]; !ok {
			problems = append(problems, fmt.Sprintf("--%s is not a flag of serve", name))
		}
		parse = append(parse, strings.ReplaceAll(a, "${CREDENTIALS_DIRECTORY}", "/run/credentials/x"))
	}
	if _, stderr, code := runExporter(t, append(parse, "--help")...); code != 0 {
		problems = append(problems, fmt.Sprintf("the exporter rejects %v: exit %d: %s", parse, code, strings.TrimSpace(stderr)))
	}
	return problems
}

func TestServeArgCheckFindsBadArguments(t *testing.T) {
	if p := serveArgProblems(t, []string{"serve", "--cloud.timeout=8s", "--log.format=json"}); len(p) != 0 {
		t.Errorf("good arguments rejected: %v", p)
	}
	p := serveArgProblems(t, []string{"--cloud.no-such-flag=1"})
	if len(p) != 2 {
		t.Errorf("unknown flag: want a help and a parse problem, got %v", p)
	}
	if p := serveArgProblems(t, []string{"--cloud.timeout=soon"}); len(p) != 1 {
		t.Errorf("bad duration: want one parse problem, got %v", p)
	}
}

// ---- Kubernetes ------------------------------------------------------------------------

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
	for _, kind := range []string{"Deployment", "Service", "Secret", "ServiceMonitor", "PrometheusRule", "Kustomization"} {
		if _, ok := objs[kind]; !ok {
			t.Fatalf("no %s in kubernetes/", kind)
		}
	}
	var res []string
	for kind, f := range fileOf {
		if kind != "Kustomization" {
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
		t.Errorf("Deployment: replicas %d, strategy %q; one session per account wants 1 and Recreate", dep.Replicas, dep.Strategy.Type)
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

// ---- README flag reference ------------------------------------------------------------

const (
	flagsBegin = "<!-- BEGIN FLAGS: generated from the binary's --help by `go test ./deploy -run TestREADMEFlagReference -update`; do not edit -->"
	flagsEnd   = "<!-- END FLAGS -->"
)

// mdEscape keeps help text literal inside a Markdown table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "<", "&lt;").Replace(s)
}

func flagTable(b *strings.Builder, flags []helpFlag) {
	b.WriteString("| flag | default | environment | description |\n|---|---|---|---|\n")
	for _, f := range flags {
		def := "—"
		switch {
		case f.Bool:
			def = "`false`"
		case f.Default != "":
			def = "`" + f.Default + "`"
		}
		env := "—"
		if f.Env != "" {
			env = "`" + f.Env + "`"
		}
		name := "`--" + f.Name + "`"
		if f.Placeholder != "" {
			name = "`--" + f.Name + "=" + f.Placeholder + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, def, env, mdEscape(f.Help))
	}
	b.WriteString("\n")
}

// renderFlagReference builds the README's flag reference from the binary.
func renderFlagReference(t *testing.T) string {
	top := helpOf(t)
	global := map[string]bool{}
	var logging, general []helpFlag
	for _, f := range top.Flags {
		global[f.Name] = true
		switch {
		case f.Name == "help":
		case strings.HasPrefix(f.Name, "log."):
			logging = append(logging, f)
		default:
			general = append(general, f)
		}
	}
	var b strings.Builder
	b.WriteString(flagsBegin + "\n\n")
	b.WriteString("#### General (every command)\n\n")
	flagTable(&b, general)
	b.WriteString("#### Logging (every command)\n\n")
	flagTable(&b, logging)

	serve := helpOf(t, "serve")
	serveGroup := map[string]string{}
	var groups []string
	byGroup := map[string][]helpFlag{}
	for _, f := range serve.Flags {
		if global[f.Name] {
			continue
		}
		g := f.Group
		if g == "" || g == "Flags" {
			g = "Other"
		}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], f)
		serveGroup[f.Name] = g
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "#### %s (serve)\n\n", g)
		flagTable(&b, byGroup[g])
	}
	for _, cmd := range top.Commands {
		if cmd == "serve" {
			continue
		}
		page := helpOf(t, cmd)
		var own []helpFlag
		shared := map[string]bool{}
		for _, f := range page.Flags {
			switch {
			case global[f.Name]:
			case serveGroup[f.Name] != "":
				shared[serveGroup[f.Name]] = true
			default:
				own = append(own, f)
			}
		}
		fmt.Fprintf(&b, "#### %s\n\n", cmd)
		if len(shared) > 0 {
			var gs []string
			for _, g := range groups {
				if shared[g] {
					gs = append(gs, g)
				}
			}
			list := strings.Join(gs, ", ")
			if len(gs) > 1 {
				list = strings.Join(gs[:len(gs)-1], ", ") + " and " + gs[len(gs)-1]
			}
			fmt.Fprintf(&b, "Takes the %s flags of serve", list)
			if len(own) > 0 {
				b.WriteString(", and:")
			} else {
				b.WriteString(".")
			}
			b.WriteString("\n\n")
		}
		if len(own) > 0 {
			flagTable(&b, own)
		} else if len(shared) == 0 {
			b.WriteString("No flags of its own.\n\n")
		}
	}
	b.WriteString(flagsEnd)
	return b.String()
}

func TestREADMEFlagReference(t *testing.T) {
	readmePath := filepath.Join(repoRoot, "README.md")
	readme := string(readFile(t, readmePath))
	begin := strings.Index(readme, flagsBegin)
	end := strings.Index(readme, flagsEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the generated flag reference markers")
	}
	want := renderFlagReference(t)
	got := readme[begin : end+len(flagsEnd)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(readme[:begin]+want+readme[end+len(flagsEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md flag reference rewritten")
		return
	}
	t.Errorf("README.md flag reference is out of date with --help: run go test ./deploy -run TestREADMEFlagReference -update")
}

// TestREADMEPromQLParses hands every line of the README's promql blocks to
// promtool as a recording rule, so an example query that does not parse fails.
func TestREADMEPromQLParses(t *testing.T) {
	readme := string(readFile(t, filepath.Join(repoRoot, "README.md")))
	blocks := regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(readme, -1)
	var rules []map[string]string
	for _, b := range blocks {
		for _, line := range strings.Split(b[1], "\n") {
			if line = strings.TrimSpace(line); line != "" {
				rules = append(rules, map[string]string{"record": fmt.Sprintf("readme:example_%d", len(rules)), "expr": line})
			}
		}
	}
	if len(rules) < 6 {
		t.Fatalf("found %d example queries in README.md", len(rules))
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "readme", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmpDir, "readme-promql.yml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("README.md example queries: %v\n%s", err, out)
	}
}
