package cli

import (
	"strings"
	"testing"
)

// TestHistoryNamesEachChangeOnce: the simulator's log changes one setting
// three times, each row naming the parameter it was made through and the
// register it changed: history names all three alike, by that parameter.
// A raw write (--raw-unchecked, no parameter named) shows its register from
// the row's own fields, named by the one parameter the catalog has there; --parameter-name takes a symbol,
// never a dotted register.
func TestHistoryNamesEachChangeOnce(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	code, out, errOut := runArgs(t, toolArgs(sim, "history", d)...)
	if code != exitOK {
		t.Fatalf("code %d: %s", code, errOut)
	}
	ct, _ := historyTables(t, out)
	_, rows := table(t, ct)
	if len(rows) != 3 {
		t.Fatalf("changes %v", rows)
	}
	for _, r := range rows[1:] {
		if r["NAME"] != rows[0]["NAME"] || r["REGISTER"] != rows[0]["REGISTER"] || strings.HasPrefix(r["NAME"], "PARAM_") || r["REGISTER"] == "-" {
			t.Errorf("one setting's changes named %q at %q and %q at %q", rows[0]["NAME"], rows[0]["REGISTER"], r["NAME"], r["REGISTER"])
		}
	}

	if code, _, errOut := runArgs(t, toolArgs(sim, "set", d, "P4.v8=5", "--raw-unchecked")...); code != exitOK {
		t.Fatalf("raw write: %d %s", code, errOut)
	}
	_, out, _ = runArgs(t, toolArgs(sim, "history", d)...)
	ct, _ = historyTables(t, out)
	_, rows = table(t, ct)
	// The row names no parameter: its register, and the one parameter the
	// catalog has there.
	if rows[0]["REGISTER"] != "P4.v8" || rows[0]["NAME"] != "Water pressure" {
		t.Errorf("the raw write is shown as %q %q, want its register P4.v8 (Water pressure)", rows[0]["REGISTER"], rows[0]["NAME"])
	}

	code, _, errOut = runArgs(t, toolArgs(sim, "set", d, "P4.v8=5", "--raw-unchecked", "--parameter-name=P4.v8")...)
	if code != exitUsage || !strings.Contains(errOut, "--parameter-name") {
		t.Errorf("--parameter-name=P4.v8: code %d stderr %q, want a usage error", code, errOut)
	}
}
