package cloudclient

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// rawString returns a JSON string's value; anything else (null, numbers,
// objects) gives "".
func rawString(raw json.RawMessage) string {
	if firstByte(raw) != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// rawInt reads an integral JSON number or a numeric string.
func rawInt(raw json.RawMessage) (int64, bool) {
	switch firstByte(raw) {
	case '"':
		return intFromString(rawString(raw))
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var f float64
		if json.Unmarshal(raw, &f) != nil {
			return 0, false
		}
		return intFromFloat(f)
	}
	return 0, false
}

func intFromFloat(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

func intFromString(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return intFromFloat(f)
}

// rawBool reads a JSON boolean; anything else is false.
func rawBool(raw json.RawMessage) bool {
	var b bool
	return json.Unmarshal(raw, &b) == nil && b
}

// rawAny decodes any JSON value; undecodable input gives nil.
func rawAny(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// rawMap decodes a JSON object into its members; anything else gives nil.
func rawMap(raw json.RawMessage) map[string]json.RawMessage {
	if firstByte(raw) != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// rawList decodes a JSON array into its items; anything else gives nil.
func rawList(raw json.RawMessage) []json.RawMessage {
	if firstByte(raw) != '[' {
		return nil
	}
	var l []json.RawMessage
	if json.Unmarshal(raw, &l) != nil {
		return nil
	}
	return l
}

// rawObject decodes a JSON object into map[string]any; anything else gives nil.
func rawObject(raw json.RawMessage) map[string]any {
	if firstByte(raw) != '{' {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// sortedUnique returns the module list as the cloud expects it: sorted,
// without duplicates or empty names.
func sortedUnique(in []string) []string {
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	sortStrings(out)
	return out
}
