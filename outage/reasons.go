package outage

import "slices"

// Session outage reason tokens (docs/spec.md W-4.4a to W-4.4d): why the realtime
// session was lost or a connect failed. They are client observations, not
// plant diagnostics: the reason of a session outage record, the `reason`
// label of bragerone_session_outages_total and what the transport's
// classifier returns. `connect` is a session source, never a reason.
const (
	ReasonDisconnect      = "disconnect"       // coarse default: the session ended, cause not finer known
	ReasonStop            = "stop"             // the exporter stopped the session itself
	ReasonHandshake503    = "handshake_503"    // the cloud answered the handshake with 503 (or any text carrying 503)
	ReasonConnectError    = "connect_error"    // the connect or namespace join failed
	ReasonEmptyQueue      = "empty_queue"      // the client's packet queue ran dry
	ReasonServerStop      = "server_stop"      // the server stopped communicating (ping timeout)
	ReasonEIOClose        = "eio_close"        // the Engine.IO transport died (abort, transport error)
	ReasonReconnectError  = "reconnect_error"  // a reconnect attempt failed
	ReasonSupervisorStale = "supervisor_stale" // a supervisor found the session dead without a disconnect
	ReasonForceReconnect  = "force_reconnect"  // recovery forced a reconnect
	ReasonHardReset       = "hard_reset"       // recovery replaced the Socket.IO client
)

// Connect failure reasons: why a connect attempt failed, the reason of
// bragerone_session_reconnect_failure_reason. Every session reason can be
// one (a failed dial is classified as a disconnect is); two more name an
// attempt that never dialled because the login it needs failed, after
// cloudclient's login outcomes (the result label of bragerone_logins_total).
// They are never the reason of an outage: an outage is a session that was up
// and ended, and a login does not end a session.
const (
	ReasonLoginUnreachable = "login_unreachable" // the login got no verdict: transport error, timeout, 5xx
	ReasonLoginRejected    = "login_rejected"    // the cloud refused the credentials
	ReasonLoginBlocked     = "login_blocked"     // something in front of the cloud refused the login (an HTML or empty 4xx)
	ReasonRateLimited      = "rate_limited"      // the cloud throttles the account: the login or handshake waits out its pause
)

// sessionReasons is the vocabulary in its fixed order.
var sessionReasons = []string{
	ReasonDisconnect, ReasonStop, ReasonHandshake503, ReasonConnectError,
	ReasonEmptyQueue, ReasonServerStop, ReasonEIOClose, ReasonReconnectError,
	ReasonSupervisorStale, ReasonForceReconnect, ReasonHardReset,
}

// connectFailureReasons: the session reasons, then the login ones.
var connectFailureReasons = append(slices.Clone(sessionReasons), ReasonLoginUnreachable, ReasonLoginRejected, ReasonLoginBlocked, ReasonRateLimited)

// ConnectFailureReasons lists every reason a failed connect attempt can
// carry, in a fixed order: SessionReasons, then ReasonLoginUnreachable,
// ReasonLoginRejected, ReasonLoginBlocked and ReasonRateLimited. The slice
// is the caller's own.
func ConnectFailureReasons() []string {
	return slices.Clone(connectFailureReasons)
}

// IsConnectFailureReason reports whether reason is one of ConnectFailureReasons.
func IsConnectFailureReason(reason string) bool {
	return slices.Contains(connectFailureReasons, reason)
}

// SessionReasons lists every reason token a session outage can carry, in a
// fixed order. The slice is the caller's own.
func SessionReasons() []string {
	return slices.Clone(sessionReasons)
}

// IsSessionReason reports whether reason is one of SessionReasons.
func IsSessionReason(reason string) bool {
	return slices.Contains(sessionReasons, reason)
}

// NormalizeReason maps anything that is not a known reason token (including
// "" and "connect") to "disconnect", so the outage reason stays one of a
// fixed set.
func NormalizeReason(reason string) string {
	if IsSessionReason(reason) {
		return reason
	}
	return ReasonDisconnect
}
