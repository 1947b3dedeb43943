package main

import (
	"os"
	"testing"
)

// BRAGERONE_CLOUD_EMAIL, which the flag-to-variable rule gives
// --cloud.email, is refused with a pointer to BRAGERONE_EMAIL, the variable
// the email is read from, by every command that takes the email; before, it
// was ignored without a word. Variables that follow the rule, a command's
// own prefix included, are read as before.
func TestMisnamedVariableIsRefusedWithAPointer(t *testing.T) {
	t.Setenv("BRAGERONE_CLOUD_EMAIL", "owner@example.com")
	for _, args := range [][]string{{"check"}, {"serve", "--simulate"}, {"params"}, {"set", "DEVID", "P4.v8=1"}} {
		code, out, errOut := runArgs(t, args...)
		want := "bragerone_exporter: BRAGERONE_CLOUD_EMAIL is set, but --cloud.email is read from BRAGERONE_EMAIL: rename the variable\n"
		if code != exitUsage || errOut != want || out != "" {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", args, code, errOut, exitUsage, want)
		}
	}

	t.Setenv("BRAGERONE_CLOUD_EMAIL", "")
	t.Setenv("BRAGERONE_EMAIL", "owner@example.com")
	t.Setenv("BRAGERONE_SIMULATE_SEED", "7")
	if _, err := parseForTest(t, "check"); err == nil {
		t.Error("BRAGERONE_CLOUD_EMAIL set to the empty string is still set: it must be refused")
	}
	os.Unsetenv("BRAGERONE_CLOUD_EMAIL") // t.Setenv restores it after the test
	cli, err := parseForTest(t, "check")
	if err != nil || cli.Check.Email != "owner@example.com" {
		t.Errorf("BRAGERONE_EMAIL: email %q, err %v", cli.Check.Email, err)
	}
	if cli, err = parseForTest(t, "simulate"); err != nil || cli.Simulate.Seed != 7 {
		t.Errorf("BRAGERONE_SIMULATE_SEED: seed %d, err %v", cli.Simulate.Seed, err)
	}
}
