package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParamsMarksAnOfflineModulesValuesStale: params says its values are as
// of the prime, and marks every value of an offline module stale, in the
// table (STALE offline) and in JSON (the module's state, as_of, stale);
// an online module's values are not marked.
func TestParamsMarksAnOfflineModulesValuesStale(t *testing.T) {
	sim := startToolCloud(t)
	on, off := sim.Devids()[0], sim.Devids()[1]
	sim.SetModuleOnline(off, false)

	code, out, errOut := runArgs(t, toolArgs(sim, "params")...)
	if code != exitOK {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
	_, rows := table(t, out)
	for _, r := range rows {
		want := "-"
		if r["DEVID"] == off {
			want = "offline"
		}
		if r["STALE"] != want {
			t.Fatalf("%s %s: STALE %q, want %q", r["DEVID"], r["REGISTER"], r["STALE"], want)
		}
	}
	if !strings.Contains(errOut, "values are as of the prime") || !strings.Contains(errOut, "module offline") || !strings.Contains(errOut, off) {
		t.Errorf("stderr does not say the values are as of the prime and which module is offline:\n%s", errOut)
	}

	code, out, _ = runArgs(t, toolArgs(sim, "params", "-o", "json")...)
	if code != exitOK {
		t.Fatalf("code=%d", code)
	}
	var doc struct {
		Modules []struct {
			Devid  string `json:"devid"`
			State  string `json:"state"`
			AsOf   string `json:"as_of"`
			Params []struct {
				Stale bool `json:"stale"`
			} `json:"params"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range doc.Modules {
		wantState, wantStale := "online", false
		if m.Devid == off {
			wantState, wantStale = "offline", true
		} else if m.Devid != on {
			continue
		}
		if m.State != wantState || m.AsOf == "" || len(m.Params) == 0 {
			t.Errorf("%s: state %q as_of %q params %d", m.Devid, m.State, m.AsOf, len(m.Params))
		}
		for _, p := range m.Params {
			if p.Stale != wantStale {
				t.Fatalf("%s: a value stale=%v, want %v", m.Devid, p.Stale, wantStale)
			}
		}
	}
}
