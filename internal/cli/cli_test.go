package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runContext(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadFlagIsUsageErrorOnOneLine(t *testing.T) {
	code, _, errOut := runArgs(t, "--no-such-flag")
	if code != exitUsage {
		t.Fatalf("code = %d, want %d", code, exitUsage)
	}
	if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines != 0 || !strings.Contains(errOut, "--no-such-flag") {
		t.Fatalf("stderr should be one line naming the flag, got %q", errOut)
	}
}

func TestBadEnumValueIsUsageError(t *testing.T) {
	code, _, errOut := runArgs(t, "--log.level=loud")
	if code != exitUsage || !strings.Contains(errOut, "log.level") {
		t.Fatalf("code=%d stderr=%q", code, errOut)
	}
}

// A mistyped command is named as an unknown command with the closest ones
// suggested (exit 2), instead of reading as an argument of serve, the
// default command; an extra argument of a named command stays one.
func TestMistypedCommandSuggestsTheCommand(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"chekc"}, `unknown command "chekc", did you mean "check"?`},
		{[]string{"--log.level=debug", "paramz", "--output=json"}, `unknown command "paramz", did you mean "params"?`},
		{[]string{"sim"}, `unknown command "sim", did you mean one of "simulate", "set"?`},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (commands: serve, simulate, check, modules, params, watch, set, catalog, history, diagnose)`},
		{[]string{"check", "extra"}, "unexpected argument extra"},
		{[]string{"serve", "chekc"}, "unexpected argument chekc"},
	}
	for _, tc := range cases {
		code, out, errOut := runArgs(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want exit %d and %q", tc.args, code, errOut, out, exitUsage, tc.want)
		}
		oneLine(t, errOut)
	}
}
