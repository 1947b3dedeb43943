// Package cloudsim is a simulated BragerOne device cloud: the REST interface
// under /v1, the Socket.IO realtime channel (namespace /ws) under /socket.io/,
// static assets under /assets/, and a control endpoint under /control/ that
// switches modules online or offline and injects faults seen in the field.
//
// It owns realistic module and parameter state (stable devids, ~800 parameters
// per module across pools P4-P6, periodic drift pushed as live deltas) and
// reproduces the cloud's quirks: a modules/connect with a stale namespace SID
// answers 200 but binds nothing, the module-memory-updated event is the
// numeric event 22, error bodies are HTML for 5xx and JSON otherwise.
//
// It backs the `simulate` command, `serve --simulate`, and the integration
// tests and benchmarks of the other packages.
package cloudsim
