package cli

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/common/version"
)

func TestVersionExitsZero(t *testing.T) {
	code, out, _ := runArgs(t, "--version")
	if code != exitOK || !strings.Contains(out, "bragerone_exporter") {
		t.Fatalf("code=%d out=%q", code, out)
	}
}

// --version prints what the build stamped into
// github.com/prometheus/common/version (the variables
// bragerone_exporter_build_info reads), and the toolchain's facts.
func TestVersionPrintsTheStampedBuild(t *testing.T) {
	saved := []string{version.Version, version.Revision, version.Branch, version.BuildUser, version.BuildDate}
	t.Cleanup(func() {
		version.Version, version.Revision, version.Branch, version.BuildUser, version.BuildDate = saved[0], saved[1], saved[2], saved[3], saved[4]
	})
	version.Version, version.Revision, version.Branch = "1.4.0", "0123abcd", "release-1.4"
	version.BuildUser, version.BuildDate = "builder@ci", "20260102-03:04:05"

	code, out, _ := runArgs(t, "--version")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if want := "bragerone_exporter, version 1.4.0 (branch: release-1.4, revision: 0123abcd)"; lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	for _, want := range []string{
		"build user:       builder@ci",
		"build date:       20260102-03:04:05",
		"go version:       " + runtime.Version(),
		"platform:         " + runtime.GOOS + "/" + runtime.GOARCH,
	} {
		if !strings.Contains(out, "\n  "+want+"\n") {
			t.Errorf("--version lacks %q:\n%s", want, out)
		}
	}
	if want := "(version=1.4.0, branch=release-1.4, revision=0123abcd)"; versionString() != want {
		t.Errorf("landing page version %q, want %q", versionString(), want)
	}
}

// A build that stamps nothing (go build, go run) calls itself dev rather
// than printing an empty version.
func TestUnstampedBuildIsDev(t *testing.T) {
	code, out, _ := runArgs(t, "--version")
	if want := "bragerone_exporter, version dev (branch: , revision: "; code != exitOK || !strings.HasPrefix(out, want) {
		t.Fatalf("exit %d, %q; want it to begin with %q", code, out, want)
	}
}
