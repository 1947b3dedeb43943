package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func parseForTest(t *testing.T, args ...string) (*CLI, error) {
	t.Helper()
	var cli CLI
	var out, errb bytes.Buffer
	_, _, err := parseCLI(&cli, args, &out, &errb)
	return &cli, err
}

// Precedence, highest first: flag, environment, file, default.
func TestConfigPrecedence(t *testing.T) {
	nested := writeConfig(t, "log:\n  level: warn\n  format: json\n")
	flat := writeConfig(t, "log.level: warn\n")

	t.Run("default", func(t *testing.T) {
		cli, err := parseForTest(t)
		if err != nil || cli.LogLevel != "info" {
			t.Fatalf("level=%q err=%v", cli.LogLevel, err)
		}
	})
	t.Run("file beats default (nested keys)", func(t *testing.T) {
		cli, err := parseForTest(t, "--config.file", nested)
		if err != nil || cli.LogLevel != "warn" || cli.LogFormat != "json" {
			t.Fatalf("level=%q format=%q err=%v", cli.LogLevel, cli.LogFormat, err)
		}
	})
	t.Run("file beats default (flat keys)", func(t *testing.T) {
		cli, err := parseForTest(t, "--config.file="+flat)
		if err != nil || cli.LogLevel != "warn" {
			t.Fatalf("level=%q err=%v", cli.LogLevel, err)
		}
	})
	t.Run("environment beats file", func(t *testing.T) {
		t.Setenv("BRAGERONE_LOG_LEVEL", "error")
		cli, err := parseForTest(t, "--config.file", nested)
		if err != nil || cli.LogLevel != "error" || cli.LogFormat != "json" {
			t.Fatalf("level=%q format=%q err=%v", cli.LogLevel, cli.LogFormat, err)
		}
	})
	t.Run("flag beats environment and file", func(t *testing.T) {
		t.Setenv("BRAGERONE_LOG_LEVEL", "error")
		cli, err := parseForTest(t, "--config.file", nested, "--log.level=debug")
		if err != nil || cli.LogLevel != "debug" {
			t.Fatalf("level=%q err=%v", cli.LogLevel, err)
		}
	})
	t.Run("file named by environment", func(t *testing.T) {
		t.Setenv(configFileEnv, nested)
		cli, err := parseForTest(t)
		if err != nil || cli.LogLevel != "warn" {
			t.Fatalf("level=%q err=%v", cli.LogLevel, err)
		}
	})
}

func TestConfigFileErrors(t *testing.T) {
	cases := map[string]string{
		"unknown key":  "log:\n  levle: warn\n",
		"invalid yaml": "log: [\n",
		"bad value":    "log.level: loud\n",
		"cli-only key": "force: true\n",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runArgs(t, "--config.file", writeConfig(t, body))
			if code != exitUsage || strings.TrimSpace(errOut) == "" {
				t.Fatalf("code=%d stderr=%q", code, errOut)
			}
		})
	}
	code, _, errOut := runArgs(t, "--config.file", filepath.Join(t.TempDir(), "missing.yml"))
	if code != exitUsage || !strings.Contains(errOut, "missing.yml") {
		t.Fatalf("missing file: code=%d stderr=%q", code, errOut)
	}
}

// Every command refuses a configuration file that any command would refuse
// (exit 2, before it does anything): here a value of the wrong type for a
// flag the command itself does not have. kong alone parses only the chosen
// command's flags, so check, modules, params, set and simulate used to run.
func TestEveryCommandValidatesTheWholeConfigFile(t *testing.T) {
	sim := startToolCloud(t)
	devid := sim.Devids()[0]
	files := map[string]struct{ body, want string }{
		"serve and watch flag": {"poll.interval: soon\n", `config.yml:1: poll.interval: expected duration but got "soon"`},
		"simulate flag":        {"seed: twelve\n", `config.yml:1: seed: expected a valid 64 bit int but got "twelve"`},
		"output choice":        {"output: xml\n", `config.yml:1: output: must be one of table, json but got "xml"`},
		"unknown key":          {"cloud:\n  urll: http://x\n", `config.yml:2: unknown setting "cloud.urll", did you mean "cloud.url"?`},
	}
	commands := map[string][]string{
		"check":    toolArgs(sim, "check"),
		"modules":  toolArgs(sim, "modules"),
		"params":   toolArgs(sim, "params"),
		"watch":    toolArgs(sim, "watch"),
		"set":      toolArgs(sim, "set", devid, "P4.v8=1"),
		"simulate": {"simulate", "--listen=127.0.0.1:0"},
		"serve":    {"serve", "--simulate", "--web.listen-address=127.0.0.1:0"},
	}
	for fname, file := range files {
		path := writeConfig(t, file.body)
		for cmd, args := range commands {
			t.Run(fname+"/"+cmd, func(t *testing.T) {
				before := totalRequests(sim)
				// A command that wrongly runs stops at the deadline.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var out, errb bytes.Buffer
				code := runContext(ctx, append(slices.Clone(args), "--config.file="+path), &out, &errb)
				if code != exitUsage || !strings.Contains(errb.String(), file.want) {
					t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errb.String(), exitUsage, file.want)
				}
				if n := totalRequests(sim) - before; n != 0 || out.Len() != 0 {
					t.Errorf("the command ran: %d cloud requests, stdout %q", n, out.String())
				}
			})
		}
	}
}

// A bad value in the file names the file and the key (not a command-line
// flag the user never typed), for the flags of the chosen command too.
func TestConfigFileValueErrorNamesFileAndKey(t *testing.T) {
	path := writeConfig(t, "poll:\n  interval: soon\n")
	code, _, errOut := runArgs(t, "serve", "--simulate", "--config.file", path)
	want := path + `:2: poll.interval: expected duration but got "soon"`
	if code != exitUsage || !strings.Contains(errOut, want) || strings.Contains(errOut, "--poll.interval") {
		t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut, exitUsage, want)
	}
	oneLine(t, errOut)
}

// An unknown key is named with its line and the flag name closest to it:
// a tail of a flag name, a few typing mistakes, or where the names are
// listed when nothing is close; the password, which is no setting, says
// where it comes from (and its value is never repeated).
func TestConfigFileUnknownKeyNamesTheLineAndTheClosestFlag(t *testing.T) {
	path := writeConfig(t, "log.level: warn\nweb:\n  listen-adress: :1\nemail: a@example.com\ncloud:\n  pasword-file: /p\n  password: hunter2\nfrobnicate: 1\n")
	code, _, errOut := runArgs(t, "check", "--config.file", path)
	for _, want := range []string{
		path + `:3: unknown setting "web.listen-adress", did you mean "web.listen-address"?`,
		path + `:4: unknown setting "email", did you mean "cloud.email"?`,
		path + `:6: unknown setting "cloud.pasword-file", did you mean "cloud.password-file"?`,
		path + `:7: unknown setting "cloud.password": the password is no setting; it comes from BRAGERONE_PASSWORD or cloud.password-file`,
		path + `:8: unknown setting "frobnicate" (keys are flag names: bragerone_exporter <command> --help lists them)`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if code != exitUsage || strings.Contains(errOut, "hunter2") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	oneLine(t, errOut)
}

// One setting written twice, flat and nested, is refused with both
// spellings named: before, map order picked a winner at random.
func TestConfigFileRefusesOneSettingSpelledTwice(t *testing.T) {
	cases := map[string]struct {
		body string
		want []string
	}{
		"flat and nested": {"cloud.url: http://a.example\ncloud:\n  url: http://b.example\n",
			[]string{"cloud.url is set 2 times", `"cloud.url: …" (line 1)`, `"cloud: {url: …}" (line 3)`}},
		"three ways": {"web.config.file: a.yml\nweb:\n  config.file: b.yml\n  config:\n    file: c.yml\n",
			[]string{"web.config.file is set 3 times", `"web.config.file: …"`, `"web: {config.file: …}"`, `"web: {config: {file: …}}"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeConfig(t, tc.body)
			for range 5 { // the answer never depends on map order
				_, err := parseForTest(t, "check", "--config.file", path)
				if err == nil {
					t.Fatal("the file was accepted")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("error %q does not name %q", err, w)
					}
				}
			}
			code, _, errOut := runArgs(t, "check", "--config.file", path)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, errOut)
			}
		})
	}
}

// Scalars reach the flags as written, lists join with commas, and an alias
// resolves.
func TestConfigFileValuesAsWritten(t *testing.T) {
	path := writeConfig(t, "cloud:\n  modules: [A1, B2]\n  object-id: [12, 34]\n  url: http://x.example/2024-01-01\nlog.level: warn\nparameters.include: &p P4.v*\nparameters.exclude: [*p]\n")
	cli, err := parseForTest(t, "check", "--config.file", path)
	if err != nil {
		t.Fatal(err)
	}
	c := cli.Check
	if strings.Join(c.Modules, " ") != "A1 B2" || fmt.Sprint(c.ObjectIDs) != "[12 34]" || c.URL != "http://x.example/2024-01-01" || cli.LogLevel != "warn" {
		t.Errorf("modules %q, objects %v, url %q, level %q", c.Modules, c.ObjectIDs, c.URL, cli.LogLevel)
	}
	cli, err = parseForTest(t, "serve", "--config.file", path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cli.Serve.ParametersInclude, " ") != "P4.v*" || strings.Join(cli.Serve.ParametersExclude, " ") != "P4.v*" {
		t.Errorf("include %q exclude %q (an alias must resolve)", cli.Serve.ParametersInclude, cli.Serve.ParametersExclude)
	}
}

// --help and --version need no configuration: a bad file does not stop them.
func TestHelpAndVersionIgnoreABadConfigFile(t *testing.T) {
	bad := writeConfig(t, "poll.interval: soon\ncloud.url: http://a.example\ncloud:\n  url: http://b.example\n")
	for _, args := range [][]string{{"--version"}, {"check", "--help"}, {"--help"}} {
		code, out, errOut := runArgs(t, append(args, "--config.file="+bad)...)
		if code != exitOK || out == "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// Any file text is either refused with an error naming the file or read
// into named settings, and the check against the command tree names the
// file in its errors; neither panics.
func FuzzParseYAMLConfig(f *testing.F) {
	for _, seed := range []string{
		"log.level: warn\n", "cloud:\n  url: http://x\n  modules: [a, b]\n", "cloud.url: a\ncloud:\n  url: b\n",
		"a: &x {b: 1}\nc: *x\n", "- 1\n", "? [a]\n: b\n", "x: !!binary aGk=\n", "",
	} {
		f.Add(seed)
	}
	var cli CLI
	parser, err := kong.New(&cli, kong.Name("bragerone_exporter"), kong.DefaultEnvars("BRAGERONE"), kong.Vars{"version": "test"}, flagVars(), kong.Exit(func(int) {}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := parseYAMLConfig("fuzz.yml", []byte(text))
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for k := range r.values {
			if k == "" {
				t.Fatalf("key %q", k)
			}
		}
		if err := r.check(parser.Model); err != nil && !strings.Contains(err.Error(), "fuzz.yml") {
			t.Fatalf("check error does not name the file: %v", err)
		}
	})
}

// Aliases cannot make the reader run forever: one that refers to a mapping
// holding it is refused, and so are aliases of aliases expanding past the
// bound, empty mappings included.
func TestConfigFileAliasesAreBounded(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("l0: &l0 {}\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&bomb, "l%d: &l%d {a: *l%d, b: *l%d, c: *l%d, d: *l%d}\n", i, i, i-1, i-1, i-1, i-1)
	}
	cases := map[string]string{
		"self":   "a: &a\n  b: *a\n",
		"nested": "a: &a\n  b:\n    c: *a\n",
		"bomb":   bomb.String(),
	}
	for name, body := range cases {
		done := make(chan error, 1)
		go func() {
			_, err := parseYAMLConfig("x.yml", []byte(body))
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.HasPrefix(err.Error(), "x.yml: ") {
				t.Errorf("%s: err = %v, want a refusal naming the file", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the reader did not finish", name)
		}
	}
}
