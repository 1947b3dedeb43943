package wire

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
)

// The members quantity answers and pushes nest their per-module counts under.
const (
	AlarmsQuantityKey   = "alarmsQuantity"
	ActivityQuantityKey = "activityQuantity"
)

// DecodeAlarmsQuantity decodes the payload of the realtime alarms-quantity
// event, {"alarmsQuantity":{"D1":5}} (or the bare map), with the same
// tolerant per-entry rules as the REST answer (Quantities): entries that are
// not a valid count are left out.
func DecodeAlarmsQuantity(data []byte) (map[string]int, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, errors.New("wire: alarms quantity payload is not a JSON object")
	}
	return Quantities(m, AlarmsQuantityKey), nil
}

// Quantities reads the counts of a quantity object, {"<key>":{devid:n}} or
// the bare map, entry by entry; entries that are not a valid count are left
// out.
func Quantities(m map[string]json.RawMessage, key string) map[string]int {
	if inner, ok := m[key]; ok {
		m = Members(inner)
	}
	out := make(map[string]int, len(m))
	for devid, raw := range m {
		if n, ok := parseQuantity(raw); ok {
			out[devid] = n
		}
	}
	return out
}

// parseQuantity accepts a non-negative integer, an integral float, a numeric
// string or null (0); it rejects booleans, negative or fractional numbers and
// empty strings.
func parseQuantity(raw json.RawMessage) (int, bool) {
	if IsNull(raw) {
		return 0, true
	}
	var f float64
	switch FirstByte(raw) {
	case '"':
		s := strings.TrimSpace(String(raw))
		if s == "" {
			return 0, false
		}
		n, ok := intFromString(s)
		if !ok || n < 0 || n > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if json.Unmarshal(raw, &f) != nil {
			return 0, false
		}
		n, ok := intFromFloat(f)
		if !ok || n < 0 || n > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}
