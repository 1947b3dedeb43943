package catalog

import (
	"strings"
	"testing"
)

// TestOverridesKeysInAnyCaseAndReadableTypos: a register key in any case
// is the register; a misspelt key of an entry is named with its line and
// the key meant, without the decoder's Go type names.
func TestOverridesKeysInAnyCaseAndReadableTypos(t *testing.T) {
	o, err := ParseOverrides([]byte("p4.V7:\n  name: Power\n"))
	if err != nil {
		t.Fatal(err)
	}
	if ov := o.byRegister[Address{Pool: "P4", Chan: 'v', Index: 7}]; ov == nil || *ov.name != "Power" {
		t.Errorf("p4.V7 is not P4.v7: %+v", o.byRegister)
	}
	_, err = ParseOverrides([]byte("P4.v7:\n  name: Power\n  nmae: Power\n"))
	if err == nil {
		t.Fatal("a misspelt key was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, `line 3: unknown key "nmae"`) || !strings.Contains(msg, `did you mean "name"?`) || strings.Contains(msg, "overrideYAML") {
		t.Errorf("error %q, want the line, the key and the key meant, no Go type", msg)
	}
}
