package cli

import (
	"strings"
	"testing"
)

// TestFilterMatchesRegistersInAnyCase: --filter=p4.V7 and --filter='p4.*'
// match as P4.v7 and P4.* do; a filter that matches nothing (P9.*) says
// so on stderr instead of printing an empty table silently.
func TestFilterMatchesRegistersInAnyCase(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	for _, f := range []string{"--filter=p4.V7", "--filter=P4.v7"} {
		code, out, errOut := runArgs(t, toolArgs(sim, "params", d, f)...)
		_, rows := table(t, out)
		if code != exitOK || len(rows) != 1 || rows[0]["REGISTER"] != "P4.v7" {
			t.Errorf("%s: code %d rows %v stderr %q", f, code, rows, errOut)
		}
	}
	code, out, _ := runArgs(t, toolArgs(sim, "params", d, "--filter=p4.*")...)
	if _, rows := table(t, out); code != exitOK || len(rows) < 2 {
		t.Errorf("--filter=p4.*: code %d, %d rows", code, len(rows))
	}
	code, out, errOut := runArgs(t, toolArgs(sim, "params", d, "--filter=P9.*")...)
	if _, rows := table(t, out); code != exitOK || len(rows) != 0 || !strings.Contains(errOut, "--filter P9.* matches no register of the modules") {
		t.Errorf("--filter=P9.*: code %d rows %v stderr %q", code, rows, errOut)
	}
}

// TestWatchFilterMatchingNothingSaysSo: watch --filter=P9.* warns once the
// snapshots are stored instead of printing nothing silently.
func TestWatchFilterMatchingNothingSaysSo(t *testing.T) {
	sim := startToolCloud(t)
	w := startWatch(t, toolArgs(sim, "watch", "--filter=P9.*", "--catalog.disable")...)
	w.waitFor("the warning", func() bool {
		return strings.Contains(w.errOut.String(), "--filter P9.* matches no register of the watched modules")
	})
	w.cancel()
	<-w.done
}
