package cloudclient

import (
	"encoding/json"
	"errors"
)

// DecodeAlarmsQuantity decodes the payload of the realtime alarms-quantity
// event, {"alarmsQuantity":{"D1":5}} (or the bare map), with the same
// tolerant per-entry rules as AlarmQuantity: entries that are not a valid
// count are left out.
func DecodeAlarmsQuantity(data []byte) (map[string]int, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, errors.New("cloudclient: alarms quantity payload is not a JSON object")
	}
	return decodeQuantities(m, "alarmsQuantity"), nil
}
