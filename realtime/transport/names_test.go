package transport

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWireName(t *testing.T) {
	cases := []struct {
		in   any
		want string
		ok   bool
	}{
		{"app:x", "app:x", true},
		{float64(22), "22", true},
		{float64(61), "61", true},
		{float64(2.5), "2.5", true},
		{22, "22", true},
		{int64(63), "63", true},
		{json.Number("60"), "60", true},
		{nil, "", false},
		{[]any{}, "", false},
	}
	for _, tc := range cases {
		got, ok := WireName(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("WireName(%#v) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNormalize(t *testing.T) {
	obj := json.RawMessage(`{"M1":{}}`)
	cases := []struct {
		wire    string
		payload json.RawMessage
		kind    EventKind
		name    string
	}{
		{"22", json.RawMessage(`{"devid":"M1"}`), EventMemoryUpdated, "22"},
		{"app:modules:parameters:change", obj, EventParamsChange, "app:modules:parameters:change"},
		{"modules:parameters:change", obj, EventParamsChange, "modules:parameters:change"},
		{"parameters:change", json.RawMessage(` {"a":1}`), EventParamsChange, "parameters:change"},
		{"app:modules:parameters:change", json.RawMessage(`[1]`), EventOther, "app:modules:parameters:change"},
		{"app:modules:parameters:change", nil, EventOther, "app:modules:parameters:change"},
		{"snapshot", obj, EventSnapshot, "snapshot"},
		{"snapshot", json.RawMessage(`"x"`), EventOther, "snapshot"},
		{"app:module:connection:status:changed", obj, EventConnectionStatus, NameConnectionStatus},
		{"app:modules:alarms:quantity:change", obj, EventAlarmsQuantity, NameAlarmsQuantity},
		{"alarms:quantity:change", obj, EventAlarmsQuantity, "alarms:quantity:change"},
		{"61", obj, EventOther, NameTaskCreated},
		{"60", obj, EventOther, NameTaskStatus},
		{"63", obj, EventOther, NameTaskCompleted},
		{"62", obj, EventOther, "62"},
		{"app:module:task:created", obj, EventOther, "app:module:task:created"},
		{"parameters:changed", obj, EventOther, "parameters:changed"},
	}
	for _, tc := range cases {
		kind, name := Normalize(tc.wire, tc.payload)
		if kind != tc.kind || name != tc.name {
			t.Errorf("Normalize(%q, %s) = %v %q, want %v %q", tc.wire, tc.payload, kind, name, tc.kind, tc.name)
		}
	}
}

func TestEventKindString(t *testing.T) {
	if EventMemoryUpdated.String() != "memory_updated" || EventOverflow.String() != "overflow" || EventKind(99).String() != "EventKind(99)" {
		t.Errorf("kind names: %v %v %v", EventMemoryUpdated, EventOverflow, EventKind(99))
	}
}

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
