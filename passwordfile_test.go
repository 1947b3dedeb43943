package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// A password file other users may read gets one warning at start naming
// the file and its mode, never the password; one only the exporter's own
// user, or its own group, may read gets none. The command runs either way.
func TestPasswordFileReadableByOthersIsWarned(t *testing.T) {
	sim := startToolCloud(t)
	t.Setenv(passwordEnv, "")
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{{0o644, true}, {0o604, true}, {0o600, false}, {0o400, false}, {0o640, false}} {
		t.Run(fmt.Sprintf("%04o", tc.mode), func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "password")
			if err := os.WriteFile(file, []byte(cloudsim.DefaultPassword+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(file, tc.mode); err != nil { // past the umask
				t.Fatal(err)
			}
			code, _, errOut := runArgs(t, toolArgs(sim, "check", "--cloud.password-file="+file)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			warning := fmt.Sprintf(`the password file is readable by other users: make it readable by the exporter only (chmod 600) file=%s mode=%04o`, file, tc.mode)
			if n := strings.Count(errOut, warning); tc.warn && n != 1 || !tc.warn && strings.Contains(errOut, "password file") {
				t.Errorf("want the warning %v (once); stderr:\n%s", tc.warn, errOut)
			}
			if strings.Contains(errOut, cloudsim.DefaultPassword) {
				t.Errorf("the password is in the output:\n%s", errOut)
			}
		})
	}
}
