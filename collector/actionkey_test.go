package collector

import (
	"encoding/json"
	"testing"
)

// A ladder action's key is text in JSON ("hard_restart/ok"), so the
// recovery counts marshal as they are (the diagnostics bundle's status.json).
func TestActionKeyMarshalsAsText(t *testing.T) {
	b, err := json.Marshal(RecoveryState{Actions: map[ActionKey]uint64{{StepHardRestart, ResultOK}: 2, {StepZombiePrime, ResultFailed}: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Actions map[string]uint64 }
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{StepHardRestart + "/" + ResultOK: 2, StepZombiePrime + "/" + ResultFailed: 1}
	if len(got.Actions) != len(want) {
		t.Fatalf("actions %v, want %v", got.Actions, want)
	}
	for k, n := range want {
		if got.Actions[k] != n {
			t.Errorf("actions %v, want %v", got.Actions, want)
		}
	}
}
