package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/wire"
)

// FuzzDecodeAlarmsQuantity feeds the realtime alarms-quantity payload decoder
// arbitrary bytes: it never panics, rejects exactly what is not a JSON
// object, and never returns a negative or out-of-range count or an entry
// absent from the payload.
func FuzzDecodeAlarmsQuantity(f *testing.F) {
	for _, s := range []string{
		`{"alarmsQuantity":{"D1":5,"D2":"3","D3":null}}`, `{"D1":0,"D2":2.0}`, `{"alarmsQuantity":{"D1":-1,"D2":1.5,"D3":true,"D4":""}}`,
		`{"alarmsQuantity":[]}`, `{"alarmsQuantity":null}`, `{"D1":1e300}`, `{"D1":"99999999999999999999"}`, `[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := wire.DecodeAlarmsQuantity(data)
		var top map[string]json.RawMessage
		isObject := json.Unmarshal(data, &top) == nil && top != nil
		if err != nil {
			if isObject {
				t.Fatalf("rejected the JSON object %q: %v", data, err)
			}
			if got != nil {
				t.Fatalf("a result with the error: %v", got)
			}
			return
		}
		if !isObject && strings.TrimSpace(string(data)) != "null" {
			t.Fatalf("accepted %q, which is not a JSON object", data)
		}
		inner := top
		if raw, ok := top["alarmsQuantity"]; ok {
			inner = nil
			_ = json.Unmarshal(raw, &inner)
		}
		for devid, n := range got {
			if n < 0 || n > 1<<31-1 {
				t.Fatalf("%q: count %d for %s out of range", data, n, devid)
			}
			if _, ok := inner[devid]; !ok {
				t.Fatalf("%q: %s invented", data, devid)
			}
		}
	})
}
