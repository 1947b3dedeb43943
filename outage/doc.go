// Package outage owns the exporter's connectivity bookkeeping as pure state
// machines: module online/offline per devid (Modules), the exporter↔cloud
// session with its down-hysteresis (Session), live push health (Push), the
// outage records each of them keeps, and the ring of finished connectivity
// episodes (Episodes).
//
// Nothing here starts a goroutine, reads a clock or does I/O. Every method
// takes the current time explicitly and returns what changed, so the caller
// (the gateway loop) decides what to log and whom to notify. The types are
// not safe for concurrent use: one owner mutates them and hands out the
// snapshot copies to readers.
//
// The three signals are deliberately separate (docs/spec.md I-1d, I-3.3d, "two
// separate connectivity signals" and "Live push health must not be merged
// into the session or module online bits").
package outage
