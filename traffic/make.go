package traffic

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/bragerone/bragerone_exporter/redact"
)

// The constructors below are the only way the program makes a Record: each
// redacts as it makes (package redact: secrets by value and by name,
// personal data by field), so what a ring, a capture or a bundle holds was
// never in the clear there. A nil set masks by name and by field only.

// REST makes the record of one HTTP exchange. body is the answer as read;
// hdr the answer's headers (only those redact.RecordHeaders keeps stay).
func REST(s *redact.Set, at time.Time, method, endpoint, path string, status int, d time.Duration,
	request []byte, hdr http.Header, body []byte, err error) Record {
	r := Record{At: at, Kind: KindREST, Method: method, Endpoint: endpoint, Path: s.ScrubRecord(path),
		Status: status, DurationMS: float64(d.Microseconds()) / 1000}
	if len(request) > 0 {
		if b, ok := s.RecordJSON(request); ok {
			r.Request = b
		} else {
			r.Request, _ = json.Marshal(string(b))
		}
	}
	if hdr != nil {
		r.Headers = s.RecordHeaders(hdr)
	}
	if len(body) > 0 {
		if b, ok := s.RecordJSON(body); ok {
			r.Body = b
		} else {
			r.BodyText = string(b)
		}
	}
	if err != nil {
		r.Error = s.ScrubRecord(err.Error())
	}
	return r
}

// Event makes the record of one realtime event; payload is the decoded
// payload, or raw JSON ([]byte / json.RawMessage).
func Event(s *redact.Set, at time.Time, object int, name, sid string, payload any) Record {
	r := Record{At: at, Kind: KindEvent, Object: object, Event: s.ScrubRecord(name), SID: sid}
	switch p := payload.(type) {
	case nil:
	case json.RawMessage:
		r.Payload = eventJSON(s, p)
	case []byte:
		r.Payload = eventJSON(s, p)
	default:
		b, err := json.Marshal(s.RecordValue(roundTrip(p)))
		if err == nil {
			r.Payload = b
		}
	}
	return r
}

func eventJSON(s *redact.Set, raw []byte) json.RawMessage {
	b, ok := s.RecordJSON(raw)
	if !ok {
		b, _ = json.Marshal(string(b))
	}
	return b
}

// roundTrip turns a typed payload (structs) into maps and lists, so the
// redaction sees its members by name.
func roundTrip(v any) any {
	switch v.(type) {
	case map[string]any, []any, string, float64, bool:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// Transition makes the record of a login, token, session or ladder
// transition; detail values are scrubbed, members named as a secret or a
// personal datum masked.
func Transition(s *redact.Set, at time.Time, object int, what string, detail map[string]string) Record {
	r := Record{At: at, Kind: KindTransition, Object: object, What: what}
	if len(detail) > 0 {
		r.Detail = make(map[string]string, len(detail))
		for k, v := range detail {
			if redact.SecretKey(k) || redact.PersonalKey(k) {
				v = redact.Mask
			}
			r.Detail[k] = s.ScrubRecord(v)
		}
	}
	return r
}
