package deploy

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

func TestBuildScriptMakesAStaticStampedBinary(t *testing.T) {
	bin := exporter(t)
	want := fmt.Sprintf("bragerone_exporter %s (revision %s)", testVersion, testRevision)
	if !strings.Contains(binOutput, want) {
		t.Errorf("scripts/build.sh printed %q, want it to print %q", binOutput, want)
	}
	out, _, code := runExporter(t, "--version")
	if code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("--version: exit %d, %q; want %q", code, out, want)
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
