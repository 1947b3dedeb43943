package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// What a PayloadError names as the payload it could not decode.
const (
	PayloadConnectionStatus = "connection-status"
	PayloadMemoryUpdated    = "event 22"
)

// ConnStatus is one module's entry of a connection-status push.
type ConnStatus struct {
	Devid string
	// ConnectedAt is the module's connectedAt (epoch seconds, 0 = offline);
	// nil when the entry carries none (a gateway-only update, or null).
	ConnectedAt *int64
	// Gateway is nil when the entry carries no gateway object.
	Gateway *Gateway
}

// Online reports the module state the entry asserts: known is false for a
// gateway-only entry.
func (c ConnStatus) Online() (online, known bool) {
	if c.ConnectedAt == nil {
		return false, false
	}
	return *c.ConnectedAt != 0, true
}

// Gateway is a module's network gateway, as a module-list row and a
// connection-status push report it; null members read as "".
type Gateway struct {
	Address, Interface, Version string
}

// PayloadError is a realtime payload, or parts of one, that could not be
// decoded.
type PayloadError struct {
	Payload string   // which payload (PayloadConnectionStatus, PayloadMemoryUpdated)
	Reason  string   // what was wrong with the whole payload ("" if only entries failed)
	Skips   []string // per-entry problems, "devid: problem", sorted
}

func (e *PayloadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bad %s payload", e.Payload)
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if len(e.Skips) > 0 {
		b.WriteString(": ")
		b.WriteString(strings.Join(e.Skips, "; "))
	}
	return b.String()
}

// DecodeConnectionStatus decodes the payload of a connection-status push
// (app:module:connection:status:changed):
// {"<devid>":{"connectedAt":<int>,"gateway":{...}}, ...}.
// connected_at is accepted for connectedAt, numeric strings and integral
// numbers are accepted, and an entry with only a gateway (metadata only) is
// kept with ConnectedAt nil. Entries are returned sorted by devid.
//
// When the top level is not an object, it returns nil and a *PayloadError.
// Entries that cannot be used (not an object, unparseable connectedAt) are
// skipped and listed in a *PayloadError returned together with the usable
// entries, so one bad entry never hides the others. A malformed gateway is
// dropped from its entry (and listed) while its connectedAt is kept.
func DecodeConnectionStatus(raw []byte) ([]ConnStatus, error) {
	var top map[string]json.RawMessage
	if err := decodeObject(raw, &top); err != nil {
		return nil, &PayloadError{Payload: PayloadConnectionStatus, Reason: err.Error()}
	}
	devids := make([]string, 0, len(top))
	for d := range top {
		devids = append(devids, d)
	}
	sort.Strings(devids)

	var out []ConnStatus
	var skips []string
	for _, devid := range devids {
		if strings.TrimSpace(devid) == "" {
			skips = append(skips, fmt.Sprintf("%q: empty devid", devid))
			continue
		}
		var body map[string]json.RawMessage
		if err := decodeObject(top[devid], &body); err != nil {
			skips = append(skips, devid+": "+err.Error())
			continue
		}
		st := ConnStatus{Devid: devid}
		rawAt, ok := body["connectedAt"]
		if !ok || IsNull(rawAt) {
			if alt, altOK := body["connected_at"]; altOK {
				rawAt, ok = alt, true
			}
		}
		if ok && !IsNull(rawAt) {
			at, err := parseEpoch(rawAt)
			if err != nil {
				skips = append(skips, devid+": connectedAt: "+err.Error())
				continue
			}
			st.ConnectedAt = &at
		}
		if rawGw, ok := body["gateway"]; ok && !IsNull(rawGw) {
			gw, err := parseGateway(rawGw)
			if err != nil {
				skips = append(skips, devid+": gateway: "+err.Error())
			} else {
				st.Gateway = gw
			}
		}
		if st.ConnectedAt == nil && st.Gateway == nil {
			continue // nothing to apply
		}
		out = append(out, st)
	}
	if len(skips) > 0 {
		return out, &PayloadError{Payload: PayloadConnectionStatus, Skips: skips}
	}
	return out, nil
}

// DecodeDevid decodes the payload of event 22 (module memory updated),
// {"devid":"M1"}; devid must be a non-empty string.
func DecodeDevid(raw []byte) (string, error) {
	var body map[string]json.RawMessage
	if err := decodeObject(raw, &body); err != nil {
		return "", &PayloadError{Payload: PayloadMemoryUpdated, Reason: err.Error()}
	}
	rawID, ok := body["devid"]
	if !ok {
		return "", &PayloadError{Payload: PayloadMemoryUpdated, Reason: "no devid"}
	}
	var devid string
	if err := json.Unmarshal(rawID, &devid); err != nil {
		return "", &PayloadError{Payload: PayloadMemoryUpdated, Reason: "devid is not a string: " + compact(rawID)}
	}
	if strings.TrimSpace(devid) == "" {
		return "", &PayloadError{Payload: PayloadMemoryUpdated, Reason: "devid is empty"}
	}
	return devid, nil
}

func decodeObject(raw []byte, into *map[string]json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("not a JSON object: %s", compact(raw))
	}
	if err := json.Unmarshal(t, into); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	return nil
}

var errBadEpoch = errors.New("not a non-negative integer")

// parseEpoch accepts a JSON number or a numeric string; a fractional number
// is truncated, negatives, booleans and other strings are refused.
func parseEpoch(raw json.RawMessage) (int64, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return 0, fmt.Errorf("%w: %s", errBadEpoch, compact(raw))
	}
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	default:
		return 0, fmt.Errorf("%w: %s", errBadEpoch, compact(raw))
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%w: %s", errBadEpoch, compact(raw))
		}
		return n, nil
	}
	f, ok := NumberText(s)
	if !ok || f < 0 || f > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %s", errBadEpoch, compact(raw))
	}
	return int64(f), nil
}

func parseGateway(raw json.RawMessage) (*Gateway, error) {
	var body map[string]json.RawMessage
	if err := decodeObject(raw, &body); err != nil {
		return nil, err
	}
	gw := &Gateway{}
	for key, dst := range map[string]*string{"address": &gw.Address, "interface": &gw.Interface, "version": &gw.Version} {
		v, ok := body[key]
		if !ok || IsNull(v) {
			continue
		}
		s, err := scalarText(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
		*dst = s
	}
	return gw, nil
}

// scalarText reads a JSON string, number or boolean as text.
func scalarText(raw json.RawMessage) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	default:
		return "", fmt.Errorf("not a scalar: %s", compact(raw))
	}
}

// compact shortens raw JSON for error messages.
func compact(raw []byte) string {
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "(empty)"
	}
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return s
}
