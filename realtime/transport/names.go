package transport

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/wire"
)

// memoryUpdated is the memory-updated event's name as WireName reports it.
var memoryUpdated = strconv.Itoa(cloudapi.WireMemoryUpdated)

// taskAliases maps the numeric task event names to their string names.
var taskAliases = map[string]string{
	"61": cloudapi.WireTaskCreated,
	"60": cloudapi.WireTaskStatus,
	"63": cloudapi.WireTaskCompleted,
}

// WireName turns an event name as the Socket.IO library reports it into a
// string. The library passes numeric names (22 on the wire) as float64, and
// they never reach name-based listeners, only the catch-all one.
func WireName(name any) (string, bool) {
	switch n := name.(type) {
	case string:
		return n, true
	case float64:
		if n != math.Trunc(n) || math.IsInf(n, 0) || math.IsNaN(n) {
			return strconv.FormatFloat(n, 'f', -1, 64), true
		}
		return strconv.FormatInt(int64(n), 10), true
	case int:
		return strconv.Itoa(n), true
	case int64:
		return strconv.FormatInt(n, 10), true
	case json.Number:
		return n.String(), true
	default:
		return "", false
	}
}

// Normalize classifies a pushed event by its wire name and first argument and
// returns its kind and normalised name:
//
//   - "22" → cloudapi.EventMemoryUpdated
//   - a name ending in "parameters:change" with an object payload → cloudapi.EventParamsChange
//   - "snapshot" with an object payload → cloudapi.EventSnapshot
//   - "app:module:connection:status:changed" → cloudapi.EventConnectionStatus
//   - a name ending in "alarms:quantity:change" → cloudapi.EventAlarmsQuantity
//   - "60", "61", "63" → cloudapi.EventOther named after the task event they alias
//   - anything else → cloudapi.EventOther with the name unchanged
func Normalize(wireName string, payload json.RawMessage) (cloudapi.EventKind, string) {
	name := strings.TrimSpace(wireName)
	switch {
	case name == memoryUpdated:
		return cloudapi.EventMemoryUpdated, memoryUpdated
	case strings.HasSuffix(name, "parameters:change"):
		if wire.FirstByte(payload) == '{' {
			return cloudapi.EventParamsChange, name
		}
		return cloudapi.EventOther, name
	case name == cloudapi.WireSnapshot:
		if wire.FirstByte(payload) == '{' {
			return cloudapi.EventSnapshot, name
		}
		return cloudapi.EventOther, name
	case name == cloudapi.WireConnectionStatus:
		return cloudapi.EventConnectionStatus, name
	case strings.HasSuffix(name, "alarms:quantity:change"):
		return cloudapi.EventAlarmsQuantity, name
	}
	if alias, ok := taskAliases[name]; ok {
		return cloudapi.EventOther, alias
	}
	return cloudapi.EventOther, name
}
