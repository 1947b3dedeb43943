package deploy

import (
	"os/exec"
	"strings"
	"testing"
)

func TestPromtoolCheckConfig(t *testing.T) {
	out, err := exec.Command(promtool(t), "check", "config", "prometheus/prometheus.yml").CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "bragerone.rules.yml") {
		t.Errorf("promtool did not load the alert rules:\n%s", out)
	}
}
