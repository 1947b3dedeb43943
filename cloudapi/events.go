package cloudapi

import "fmt"

// EventKind says what a realtime event is, after the transport normalised
// its name (realtime/transport.Normalize).
type EventKind int

// Event kinds.
const (
	EventOther            EventKind = iota // any other pushed event (task events 60/61/63 included)
	EventConnect                           // the namespace was joined; always the first event
	EventDisconnect                        // the session ended; always the last event; see Reason
	EventParamsChange                      // a name ending in "parameters:change" with an object payload
	EventSnapshot                          // "snapshot" with an object payload
	EventConnectionStatus                  // "app:module:connection:status:changed"
	EventMemoryUpdated                     // numeric event 22 (module memory updated)
	EventAlarmsQuantity                    // a name ending in "alarms:quantity:change"
	EventOverflow                          // Dropped events were lost: re-prime
	// EventConnectError is the library's connect_error on a joined session
	// (the server's CONNECT_ERROR, or the engine failing under it); the
	// EventDisconnect that ends the session follows it. One before the join
	// fails Connect instead, with ConnectError.ConnectErrorEvent set.
	EventConnectError
)

var kindNames = [...]string{
	EventOther:            "other",
	EventConnect:          "connect",
	EventDisconnect:       "disconnect",
	EventParamsChange:     "params_change",
	EventSnapshot:         "snapshot",
	EventConnectionStatus: "connection_status",
	EventMemoryUpdated:    "memory_updated",
	EventAlarmsQuantity:   "alarms_quantity",
	EventOverflow:         "overflow",
	EventConnectError:     "connect_error",
}

func (k EventKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// EventKinds lists every event kind in declaration order; their String
// values are the event label values of the exporter's event counter.
func EventKinds() []EventKind {
	out := make([]EventKind, len(kindNames))
	for i := range kindNames {
		out[i] = EventKind(i)
	}
	return out
}
