package deploy

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

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
