// Package wire owns the decoding of the cloud's payloads, REST and realtime
// alike, as the interface documents describe them (docs/spec.md I-2.3,
// W-2.1a, W-2.5b, W-3.3b to W-3.3d): the parameter payload shared by prime
// answers, live deltas and snapshots (DecodeParameters), the alarm and
// activity quantities (DecodeAlarmsQuantity, Quantities), the module
// connection-status push (DecodeConnectionStatus), the event-22
// memory-updated push (DecodeDevid), and the tolerant readers of single JSON
// values (String, Int, Members …) that cloudclient's REST record decoders
// are built from.
//
// It also owns the one hand-written JSON scanner (Scanner): the parameter
// decoder reads with it, and the realtime transport frames Socket.IO event
// packets with it, so both accept exactly the JSON grammar encoding/json
// accepts, with its nesting limit.
//
// Decoders are tolerant the way the field requires: one bad entry is
// skipped (and, where the caller logs it, reported) and never hides the
// others; only a payload that is not the expected JSON shape at all is an
// error. Nothing here does I/O or knows the event names: callers pick the
// decoder for what arrived.
package wire
