package cli

import (
	"strings"
	"testing"
)

// TestUnknownEnvironmentVariableIsWarnedAbout: a misspelt BRAGERONE_
// variable gets one warning naming it with the variable meant; the ones
// Kubernetes injects for a Service named bragerone-exporter, and the known
// ones no flag reads, are not warned about; the command still runs.
func TestUnknownEnvironmentVariableIsWarnedAbout(t *testing.T) {
	t.Setenv("BRAGERONE_CLOUD_TIMOUT", "3s")
	t.Setenv("BRAGERONE_EXPORTER_SERVICE_HOST", "10.0.0.1")
	t.Setenv("BRAGERONE_EXPORTER_PORT_9826_TCP", "tcp://10.0.0.1:9826")
	t.Setenv("BRAGERONE_EXPORTER_PORT", "tcp://10.0.0.1:9826")
	t.Setenv("BRAGERONE_ENV_FILE", "bragerone.env")
	code, out, errOut := runArgs(t, "check", "--simulate")
	if code != exitOK || !strings.Contains(out, "OK:") {
		t.Fatalf("code %d: a warning must not stop the command\n%s\n%s", code, out, errOut)
	}
	if strings.Count(errOut, "environment variables that no setting reads") != 1 ||
		!strings.Contains(errOut, "BRAGERONE_CLOUD_TIMOUT (did you mean BRAGERONE_CLOUD_TIMEOUT?)") {
		t.Errorf("stderr %q, want one warning naming BRAGERONE_CLOUD_TIMOUT and BRAGERONE_CLOUD_TIMEOUT", errOut)
	}
	for _, quiet := range []string{"SERVICE_HOST", "PORT_9826", "EXPORTER_PORT", "ENV_FILE"} {
		if strings.Contains(errOut, quiet) {
			t.Errorf("warned about %s: %q", quiet, errOut)
		}
	}
}
