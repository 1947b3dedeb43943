package cloudapi

// The names of the realtime events the cloud pushes on the /ws namespace,
// as they are on the wire (docs/spec.md W-3.3a to W-3.3f). The simulated
// cloud sends them and realtime/transport classifies by them (EventKind).
const (
	WireParamsChange     = "app:modules:parameters:change"
	WireSnapshot         = "snapshot"
	WireConnectionStatus = "app:module:connection:status:changed"
	WireAlarmsQuantity   = "app:modules:alarms:quantity:change"
	// WireMemoryUpdated is SIGMA_NETWORK_EVENT_MODULE_MEMORY_UPDATED (channel
	// 0x16): its name on the wire is the JSON number 22, not a string.
	WireMemoryUpdated = 22
	// The task events; the cloud also names them by number (61, 60, 63).
	WireTaskCreated   = "app:module:task:created"
	WireTaskStatus    = "app:module:task:status:changed"
	WireTaskCompleted = "app:module:task:completed"
)
