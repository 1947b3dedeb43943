package cloudapi

import (
	"strings"
	"testing"
)

// TestEventKindsAreNamed checks that EventKinds lists every declared kind
// (the one past the last has no name) and that each has its own name, the
// label value the exporter counts it under.
func TestEventKindsAreNamed(t *testing.T) {
	kinds := EventKinds()
	if len(kinds) == 0 || kinds[len(kinds)-1] != EventConnectError {
		t.Fatalf("EventKinds = %v, want every kind through EventConnectError", kinds)
	}
	seen := map[string]bool{}
	for i, k := range kinds {
		if int(k) != i {
			t.Errorf("EventKinds()[%d] = %d", i, k)
		}
		name := k.String()
		if name == "" || strings.HasPrefix(name, "EventKind(") || seen[name] {
			t.Errorf("kind %d named %q", k, name)
		}
		seen[name] = true
	}
	if name := EventKind(len(kinds)).String(); !strings.HasPrefix(name, "EventKind(") {
		t.Errorf("a kind past the last is named %q", name)
	}
}
