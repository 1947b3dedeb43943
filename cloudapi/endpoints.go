package cloudapi

// REST endpoint templates: the method and the path under the API base with
// its variable segments in braces. Every request names one of them, and it is
// what errors (APIError.Endpoint, DecodeError.Endpoint), logs and
// Config.Observer report, so the exporter's endpoint label stays a fixed set.
const (
	EndpointLogin             = "POST /v1/auth/user"
	EndpointRevoke            = "POST /v1/auth/revoke"
	EndpointUser              = "GET /v1/user"
	EndpointUserPermissions   = "GET /v1/user/permissions"
	EndpointObjects           = "GET /v1/objects"
	EndpointObject            = "GET /v1/objects/{id}"
	EndpointObjectPermissions = "GET /v1/objects/{id}/permissions"
	EndpointModules           = "GET /v1/modules"
	EndpointModuleCard        = "GET /v1/modules/{code}/card"
	EndpointModulesConnect    = "POST /v1/modules/connect"
	EndpointParameters        = "POST /v1/modules/parameters"
	EndpointAlarmsQuantity    = "POST /v1/modules/alarms/quantity"
	EndpointActivityQuantity  = "POST /v1/modules/activity/quantity"
	EndpointActivity          = "POST /v1/modules/activity"
	EndpointAlarms            = "POST /v1/modules/alarms"
	EndpointAlarmHistory      = "POST /v1/modules/alarms/history"
	EndpointCommand           = "POST /v1/module/command"
	EndpointCommandRaw        = "POST /v1/module/command/raw"
	EndpointSystemVersion     = "GET /v1/system/version"
	// EndpointAsset is every read of a web-app asset (the asset host is the
	// platform's, not the API's).
	EndpointAsset = "GET {assets}"
)

// Handshake names the realtime channel's handshake (Engine.IO over HTTP) in
// errors and logs, such as a handshake held back by the account's throttle
// pause. It is no REST endpoint: the request counters do not count it.
const Handshake = "GET /socket.io/"

// Endpoints lists every endpoint template the client requests, in a fixed
// order; the slice is the caller's own.
func Endpoints() []string {
	return []string{
		EndpointLogin, EndpointRevoke, EndpointUser, EndpointUserPermissions, EndpointObjects, EndpointObject,
		EndpointObjectPermissions, EndpointModules, EndpointModuleCard, EndpointModulesConnect, EndpointParameters,
		EndpointAlarmsQuantity, EndpointActivityQuantity, EndpointActivity, EndpointAlarms, EndpointAlarmHistory,
		EndpointCommand, EndpointCommandRaw, EndpointSystemVersion, EndpointAsset,
	}
}
