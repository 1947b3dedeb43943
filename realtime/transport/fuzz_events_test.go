package transport

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/wire"
)

// FuzzNormalize feeds event names and first arguments as the Socket.IO
// library reports them to the name normalisation: it never panics, every kind
// has a label, the decoders the kind selects get an object, and a numeric
// name reads the same whether it arrives as a string or a number.
func FuzzNormalize(f *testing.F) {
	for _, s := range [][2]string{
		{cloudapi.WireParamsChange, `{"D1":{"P4":{"v1":1}}}`}, {cloudapi.WireParamsChange, `[1]`}, {"x:parameters:change", `{}`},
		{cloudapi.WireSnapshot, `{"D1":{}}`}, {cloudapi.WireSnapshot, `"no"`}, {cloudapi.WireConnectionStatus, `{"D1":{"connectedAt":1}}`},
		{memoryUpdated, `{"devid":"D1"}`}, {" 22 ", `{}`}, {cloudapi.WireAlarmsQuantity, `{"alarmsQuantity":{"D1":2}}`},
		{"61", `{}`}, {"60", ``}, {"63", `null`}, {"", ``}, {"unknown", `{`},
	} {
		f.Add(s[0], []byte(s[1]), 22.0)
	}
	f.Add("", []byte(nil), math.NaN())
	f.Add("", []byte(nil), math.Inf(1))
	f.Add("", []byte(nil), 61.5)
	f.Fuzz(func(t *testing.T, name string, payload []byte, number float64) {
		kind, norm := Normalize(name, json.RawMessage(payload))
		if strings.HasPrefix(kind.String(), "EventKind(") {
			t.Fatalf("Normalize(%q) = kind %d without a label", name, kind)
		}
		switch kind {
		case cloudapi.EventParamsChange, cloudapi.EventSnapshot:
			if wire.FirstByte(payload) != '{' {
				t.Fatalf("Normalize(%q, %q) = %v for a payload that is not an object", name, payload, kind)
			}
		case cloudapi.EventMemoryUpdated:
			if norm != memoryUpdated {
				t.Fatalf("memory-updated event named %q", norm)
			}
		case cloudapi.EventOther, cloudapi.EventConnectionStatus, cloudapi.EventAlarmsQuantity:
		default:
			t.Fatalf("Normalize(%q) = %v: a kind only the session itself produces", name, kind)
		}
		if norm != strings.TrimSpace(norm) {
			t.Fatalf("normalised name %q keeps surrounding space", norm)
		}

		// Numeric names as the library hands them over.
		wire, ok := WireName(number)
		if !ok || wire == "" {
			t.Fatalf("WireName(%v) = %q, %v", number, wire, ok)
		}
		if s, _ := WireName(wire); s != wire {
			t.Fatalf("WireName of the string %q = %q", wire, s)
		}
		k1, n1 := Normalize(wire, json.RawMessage(payload))
		if number == 22 && (k1 != cloudapi.EventMemoryUpdated || n1 != memoryUpdated) {
			t.Fatalf("the number 22 normalised to %v %q", k1, n1)
		}
		if _, ok := WireName(struct{}{}); ok {
			t.Fatal("WireName accepted a struct")
		}
	})
}
