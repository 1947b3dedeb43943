package cloudsim

// The Socket.IO server library keeps the queues and timers a session needs
// released in unexported fields; package libglue reaches them. The server
// sets three timers per session that are routinely cleared moments after
// they are set, and so can leave their goroutines waiting forever (see
// libglue.ReleaseTimer):
//
//   - the Socket.IO client's connect timer, set when the Engine.IO session
//     opens and cleared when the namespace CONNECT arrives (or the session
//     closes first);
//   - the Engine.IO socket's ping-interval timer, set when the session opens
//     and cleared when it closes (a session closed right after it opened);
//   - the Engine.IO socket's ping-timeout timer, set when a ping is sent and
//     cleared when the session closes.
//
// Each of their callbacks does nothing on a closed session (the
// ping-interval one besides setting a ping-timeout timer that fires and
// ends), so they are released once the session has closed.

// Where v3.0.0 keeps those timers.
const (
	clientConnectTimer = "connectTimeout"    // *sio.Client
	enginePingInterval = "pingIntervalTimer" // the Engine.IO server socket
	enginePingTimeout  = "pingTimeoutTimer"  // the Engine.IO server socket
)
