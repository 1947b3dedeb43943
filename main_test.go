package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runContext(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVersionExitsZero(t *testing.T) {
	code, out, _ := runArgs(t, "--version")
	if code != exitOK || !strings.Contains(out, "bragerone_exporter") {
		t.Fatalf("code=%d out=%q", code, out)
	}
}

func TestBadFlagIsUsageErrorOnOneLine(t *testing.T) {
	code, _, errOut := runArgs(t, "--no-such-flag")
	if code != exitUsage {
		t.Fatalf("code = %d, want %d", code, exitUsage)
	}
	if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines != 0 || !strings.Contains(errOut, "--no-such-flag") {
		t.Fatalf("stderr should be one line naming the flag, got %q", errOut)
	}
}

func TestBadEnumValueIsUsageError(t *testing.T) {
	code, _, errOut := runArgs(t, "--log.level=loud")
	if code != exitUsage || !strings.Contains(errOut, "log.level") {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
}

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

func TestRedactAttrHidesSecrets(t *testing.T) {
	var buf bytes.Buffer
	g := Globals{LogLevel: "debug", LogFormat: "json"}
	logger, err := g.newLogger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("login", "password", "hunter2", "token", "eyJhbGciOi", "Authorization", "Bearer abc", "email", "demo@example.com")
	out := buf.String()
	for _, secret := range []string{"hunter2", "eyJhbGciOi", "Bearer abc"} {
		if strings.Contains(out, secret) {
			t.Fatalf("secret %q logged: %s", secret, out)
		}
	}
	if !strings.Contains(out, "demo@example.com") {
		t.Fatalf("non-secret attribute lost: %s", out)
	}
}
