package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateSettingsFromEveryPlaceAreAppliedAndNamed: a value from the
// environment is named by its variable in a refusal; "simulate: {modules:
// 2}" in the configuration file is the simulate command's --modules (the
// variable BRAGERONE_SIMULATE_MODULES names both), applied and named by
// its file and line.
func TestSimulateSettingsFromEveryPlaceAreAppliedAndNamed(t *testing.T) {
	t.Setenv("BRAGERONE_SIMULATE_OBJECTS", "6")
	code, _, errOut := runArgs(t, "simulate", "--listen=127.0.0.1:0")
	if code != exitUsage || !strings.Contains(errOut, "BRAGERONE_SIMULATE_OBJECTS (--objects) 6: want 1 to --modules (3)") {
		t.Errorf("code %d stderr %q, want the variable named", code, errOut)
	}

	os.Unsetenv("BRAGERONE_SIMULATE_OBJECTS")
	file := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(file, []byte("simulate:\n  modules: 2\n  objects: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runArgs(t, "simulate", "--listen=127.0.0.1:0", "--config.file="+file)
	if code != exitUsage || !strings.Contains(errOut, file+":3 (--objects) 5: want 1 to "+file+":2 (--modules) (2)") {
		t.Errorf("code %d stderr %q, want the file's modules applied and both named by line", code, errOut)
	}
	// A key that is no setting anywhere is still refused with a suggestion.
	if err := os.WriteFile(file, []byte("simulate:\n  modulez: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runArgs(t, "simulate", "--listen=127.0.0.1:0", "--config.file="+file)
	if code != exitUsage || !strings.Contains(errOut, `unknown setting "simulate.modulez", did you mean "simulate.modules"?`) {
		t.Errorf("code %d stderr %q", code, errOut)
	}
}
