package transport

import (
	"encoding/json"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudapi"
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
		kind    cloudapi.EventKind
		name    string
	}{
		{"22", json.RawMessage(`{"devid":"M1"}`), cloudapi.EventMemoryUpdated, "22"},
		{"app:modules:parameters:change", obj, cloudapi.EventParamsChange, "app:modules:parameters:change"},
		{"modules:parameters:change", obj, cloudapi.EventParamsChange, "modules:parameters:change"},
		{"parameters:change", json.RawMessage(` {"a":1}`), cloudapi.EventParamsChange, "parameters:change"},
		{"app:modules:parameters:change", json.RawMessage(`[1]`), cloudapi.EventOther, "app:modules:parameters:change"},
		{"app:modules:parameters:change", nil, cloudapi.EventOther, "app:modules:parameters:change"},
		{"snapshot", obj, cloudapi.EventSnapshot, "snapshot"},
		{"snapshot", json.RawMessage(`"x"`), cloudapi.EventOther, "snapshot"},
		{"app:module:connection:status:changed", obj, cloudapi.EventConnectionStatus, cloudapi.WireConnectionStatus},
		{"app:modules:alarms:quantity:change", obj, cloudapi.EventAlarmsQuantity, cloudapi.WireAlarmsQuantity},
		{"alarms:quantity:change", obj, cloudapi.EventAlarmsQuantity, "alarms:quantity:change"},
		{"61", obj, cloudapi.EventOther, cloudapi.WireTaskCreated},
		{"60", obj, cloudapi.EventOther, cloudapi.WireTaskStatus},
		{"63", obj, cloudapi.EventOther, cloudapi.WireTaskCompleted},
		{"62", obj, cloudapi.EventOther, "62"},
		{"app:module:task:created", obj, cloudapi.EventOther, "app:module:task:created"},
		{"parameters:changed", obj, cloudapi.EventOther, "parameters:changed"},
	}
	for _, tc := range cases {
		kind, name := Normalize(tc.wire, tc.payload)
		if kind != tc.kind || name != tc.name {
			t.Errorf("Normalize(%q, %s) = %v %q, want %v %q", tc.wire, tc.payload, kind, name, tc.kind, tc.name)
		}
	}
}

func TestEventKindString(t *testing.T) {
	if cloudapi.EventMemoryUpdated.String() != "memory_updated" || cloudapi.EventOverflow.String() != "overflow" || cloudapi.EventKind(99).String() != "EventKind(99)" {
		t.Errorf("kind names: %v %v %v", cloudapi.EventMemoryUpdated, cloudapi.EventOverflow, cloudapi.EventKind(99))
	}
}
