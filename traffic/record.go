// Package traffic owns the record of what passed between the exporter and
// the cloud: REST exchanges, realtime events, and the transitions of the
// login, the tokens and the recovery ladder, as Records; a Ring that keeps
// the most recent of them within a byte bound; and the JSON-lines form in
// which a capture file and a diagnostics bundle carry them. Records are
// redacted before they are made (package redact): the ring never holds a
// secret or a personal datum, so nothing made from it can.
package traffic

import (
	"encoding/json"
	"time"
)

// Kind says what a Record is.
type Kind string

// Record kinds.
const (
	KindREST       Kind = "rest"       // one HTTP exchange with the API host or the assets host
	KindEvent      Kind = "event"      // one realtime event, as the transport delivered it
	KindTransition Kind = "transition" // a login, token, session or ladder transition
)

// Record is one entry of the traffic record. Which fields are set depends on
// Kind; the zero value of a field means "not applicable".
type Record struct {
	Seq    uint64    `json:"seq"`
	At     time.Time `json:"at"`
	Kind   Kind      `json:"kind"`
	Object int       `json:"object,omitempty"` // the object the record belongs to; 0: the account

	// KindREST: the method and endpoint template (package cloudapi), the
	// path with its query as sent, the status (0: no answer), the
	// duration, the request body, the headers that matter and the answer.
	Method     string            `json:"method,omitempty"`
	Endpoint   string            `json:"endpoint,omitempty"`
	Path       string            `json:"path,omitempty"`
	Status     int               `json:"status,omitempty"`
	DurationMS float64           `json:"duration_ms,omitempty"`
	Request    json.RawMessage   `json:"request,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	// Body is the answer: JSON as it came (redacted), or BodyText when it
	// was not JSON. Error is a transport error's text.
	Body     json.RawMessage `json:"body,omitempty"`
	BodyText string          `json:"body_text,omitempty"`
	Error    string          `json:"error,omitempty"`

	// KindEvent: the event name as the cloud sent it, the session's
	// namespace SID and the payload (redacted).
	Event   string          `json:"event,omitempty"`
	SID     string          `json:"sid,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`

	// KindTransition: what changed ("login", "token_revoked", "pause",
	// "session_up", "session_down", "ladder_step", ...) and its details.
	What   string            `json:"what,omitempty"`
	Detail map[string]string `json:"detail,omitempty"`
}

// Size is what the record costs the ring: its variable parts, which
// dominate (a prime's answer is megabytes, a record's fixed fields a few
// hundred bytes).
func (r *Record) Size() int {
	n := recordOverhead + len(r.Method) + len(r.Endpoint) + len(r.Path) + len(r.Request) + len(r.Body) +
		len(r.BodyText) + len(r.Error) + len(r.Event) + len(r.SID) + len(r.Payload) + len(r.What)
	for k, v := range r.Headers {
		n += len(k) + len(v) + mapEntryOverhead
	}
	for k, v := range r.Detail {
		n += len(k) + len(v) + mapEntryOverhead
	}
	return n
}

// recordOverhead and mapEntryOverhead approximate the fixed cost of a
// Record and of a map entry in memory.
const (
	recordOverhead   = 320
	mapEntryOverhead = 48
)
