package redact

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
)

// Personal data, removed by field from what the exporter records of the
// cloud (the traffic ring, a capture file, a diagnostics bundle): a member
// named by PersonalKey is masked whole, whatever it holds. Identities a
// developer needs stay: devids, object and module ids, registers, values,
// names of objects and modules, timestamps.
var personalKeys = map[string]bool{
	// the account's user: its record, names, ids and email
	"user": true, "userid": true, "username": true, "users": true, "email": true, "login": true,
	"owner": true, "ownerid": true, "ownername": true,
	"firstname": true, "lastname": true, "fullname": true, "surname": true, "person": true,
	// the module card's client fields
	"clientfullname": true, "clientphonenumber": true, "clientaddressstreetandnumber": true,
	"clientaddresspostalcode": true, "clientaddresscity": true, "clientemail": true, "clientname": true,
	// the object record's address and location
	"address": true, "addressstreet": true, "addresspostcode": true, "addresshousenumber": true,
	"addresscity": true, "street": true, "postcode": true, "postalcode": true, "zipcode": true, "zip": true,
	"city": true, "housenumber": true,
	"phone": true, "phonenumber": true, "mobile": true, "telephone": true,
	"latitude": true, "longitude": true, "lat": true, "lng": true, "lon": true, "coordinates": true,
	"location": true, "geo": true, "gps": true,
	// IP addresses: gateway.address, the module row's moduleAddress
	"moduleaddress": true, "ip": true, "ipaddress": true, "remoteaddress": true,
}

// PersonalKey reports whether a JSON member named key holds personal data
// (a user's name, id or email, a street address, a post code, a phone
// number, coordinates, an IP address, the module card's client fields).
func PersonalKey(key string) bool {
	k := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' {
			return -1
		}
		return r
	}, strings.ToLower(key))
	return personalKeys[k]
}

// RecordJSON returns raw JSON for a record of the cloud's traffic: every
// member named by SecretKey or PersonalKey masked whole, every remembered
// secret scrubbed from the rest. Text that is not JSON is scrubbed as text
// and returned with ok false (the caller keeps it as text).
func (s *Set) RecordJSON(raw []byte) (out []byte, ok bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	if !json.Valid(raw) {
		return []byte(s.ScrubRecord(string(raw))), false
	}
	return s.rewriteJSON(raw), true
}

// RecordValue is RecordJSON for a decoded value (a realtime payload).
func (s *Set) RecordValue(v any) any { return s.recordValue(v) }

func (s *Set) recordValue(v any) any {
	switch x := v.(type) {
	case string:
		return s.ScrubRecord(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if SecretKey(k) || PersonalKey(k) {
				if val != nil {
					val = Mask
				}
				out[s.ScrubRecord(k)] = val
				continue
			}
			out[s.ScrubRecord(k)] = s.recordValue(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = s.recordValue(val)
		}
		return out
	default:
		return v
	}
}

// keptHeaders are the headers a record keeps: those that tell how the cloud
// answered (type, throttling, caching, the CDN in front), never one that
// authenticates.
var keptHeaders = []string{
	"Content-Type", "Content-Length", "Content-Encoding", "Retry-After", "Date", "Server", "Via",
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "Cf-Ray", "Cf-Cache-Status",
	"X-Cache", "Age", "Cache-Control", "Location", "Www-Authenticate",
}

// RecordHeaders returns the headers a record keeps (keptHeaders), their
// values scrubbed; a header that authenticates never is among them.
func (s *Set) RecordHeaders(h http.Header) map[string]string {
	var out map[string]string
	for _, k := range keptHeaders {
		v := h.Values(k)
		if len(v) == 0 || SecretKey(k) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = s.ScrubRecord(strings.Join(v, ", "))
	}
	return out
}
