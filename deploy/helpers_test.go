package deploy

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

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

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install the Debian package prometheus (bash .ci/run does)")
	}
	return p
}

func commandFlag(cmd []string, name string) string {
	for _, a := range cmd {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
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
