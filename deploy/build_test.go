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
	// Modules only tests use (the chaos proxy, the browser driver) stay
	// out of the binary.
	for _, mod := range []string{"github.com/Shopify/toxiproxy", "github.com/rs/zerolog", "github.com/chromedp/"} {
		if regexp.MustCompile(`(?m)^\s+dep\s+` + regexp.QuoteMeta(mod)).Match(info) {
			t.Errorf("the binary links %s, a test-only module:\n%s", mod, info)
		}
	}
}
