package cli

import (
	"strings"
	"testing"
	"time"
)

// TestEveryToolRunsOnTheEmbeddedSimulator: --simulate, which the README
// lists under the Cloud flags every tool takes, runs check, modules,
// params, catalog, set and history against one in-process simulated cloud
// with its demo account: no credentials, no URL.
func TestEveryToolRunsOnTheEmbeddedSimulator(t *testing.T) {
	t.Setenv("BRAGERONE_EMAIL", "")
	t.Setenv("BRAGERONE_PASSWORD", "")
	for _, tc := range []struct {
		args []string
		want string // in stdout
	}{
		{[]string{"check", "--simulate"}, "OK: login and module listing work"},
		{[]string{"modules", "--simulate"}, "Boiler room 1"},
		{[]string{"params", "--simulate", "--filter=P4.v7"}, "Boiler power"},
		{[]string{"catalog", "--simulate"}, "Boiler temperature"},
		{[]string{"history", "--simulate"}, "Out of fuel"},
		{[]string{"set", "--simulate", "RDXEQRXNOP", "P6.v1=60"}, "P6.v1"},
		{[]string{"check", "--simulate", "--simulate.objects=1", "--simulate.modules=1"}, "1 listed, 1 watched"},
	} {
		code, out, errOut := runArgs(t, tc.args...)
		if code != exitOK || !strings.Contains(out, tc.want) {
			t.Errorf("%q: code %d, stdout lacks %q:\n%s\nstderr:\n%s", tc.args, code, tc.want, out, errOut)
		}
	}
	if code, _, errOut := runArgs(t, "check", "--simulate", "--simulate.objects=9", "--simulate.modules=2"); code != exitUsage || !strings.Contains(errOut, "--simulate.objects 9") {
		t.Errorf("bad --simulate.objects: code %d stderr %q", code, errOut)
	}
}

// TestWatchRunsOnTheEmbeddedSimulator: watch --simulate binds the demo
// account's objects on the in-process simulator and prints their sessions.
func TestWatchRunsOnTheEmbeddedSimulator(t *testing.T) {
	t.Setenv("BRAGERONE_EMAIL", "")
	t.Setenv("BRAGERONE_PASSWORD", "")
	w := startWatch(t, "watch", "--simulate", "--catalog.disable")
	w.waitLine("# object 5747 Home: session up")
	w.cancel()
	select {
	case <-w.done:
		if w.code != exitOK {
			t.Fatalf("exit code after interrupt = %d; stderr:\n%s", w.code, w.errOut.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("watch did not return after its context was cancelled")
	}
}

// TestSimulatedToolKeepsTheObjectFilter: a tool on the simulator still
// takes --cloud.object-id among the demo account's objects.
func TestSimulatedToolKeepsTheObjectFilter(t *testing.T) {
	t.Setenv("BRAGERONE_EMAIL", "")
	t.Setenv("BRAGERONE_PASSWORD", "")
	code, _, errOut := runArgs(t, "modules", "--simulate", "--cloud.object-id=99")
	if code != exitUsage || !strings.Contains(errOut, "object 99 is not one of the account's objects (it lists 5747 Home, 18857 Cottage)") {
		t.Errorf("code %d stderr %q", code, errOut)
	}
	code, out, _ := runArgs(t, "modules", "--simulate", "--cloud.object-id=18857")
	if _, rows := table(t, out); code != exitOK || len(rows) != 1 || rows[0]["DEVID"] != "YSKRFJZEUQ" || rows[0]["OBJECT NAME"] != "Cottage" {
		t.Errorf("code %d stdout %q, want Cottage's one module with the object's name", code, out)
	}
}
