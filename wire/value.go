package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// The readers of single JSON values below are tolerant: a value of another
// type than asked, or one that does not decode, reads as the zero value, so a
// record with one odd field still decodes.

// FirstByte returns the first non-space byte of a JSON text, or 0.
func FirstByte(b []byte) byte {
	for _, ch := range b {
		switch ch {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return ch
	}
	return 0
}

// IsNull reports a JSON null, or no value at all.
func IsNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// String returns a JSON string's value; anything else (null, numbers,
// objects) gives "".
func String(raw json.RawMessage) string {
	if FirstByte(raw) != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// Int reads an integral JSON number or a numeric string.
func Int(raw json.RawMessage) (int64, bool) {
	switch FirstByte(raw) {
	case '"':
		return intFromString(String(raw))
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
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		return n, true
	}
	f, ok := NumberText(s)
	if !ok {
		return 0, false
	}
	return intFromFloat(f)
}

// NumberText is the one rule for a number the cloud sends as text (a
// parameter value "21.5", a count "3"): the text, less surrounding spaces,
// tabs and line breaks, is a decimal number: an optional sign, digits with
// an optional fraction or a fraction alone ("5", "-0", "5.", ".5", "21.5"),
// then an optional exponent ("1e5", "2.5E-3"). That is the decimal form of
// Python's float(), the reference client's tolerant parsing, without its
// "nan", "inf" and digit separators: a number has to be finite to be a
// sample. Hexadecimal, an empty text and a value outside the float64 range
// are not numbers either.
func NumberText(s string) (float64, bool) {
	s = strings.Trim(s, " \t\n\r")
	if !isDecimalNumber(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// isDecimalNumber reports whether s is [sign] (digits [. digits*] | . digits)
// [(e|E) [sign] digits], the grammar ParseFloat reads without its special
// names, hexadecimal form and separators.
func isDecimalNumber(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// Bool reads a JSON boolean; anything else is false.
func Bool(raw json.RawMessage) bool {
	var b bool
	return json.Unmarshal(raw, &b) == nil && b
}

// Any decodes any JSON value; undecodable input gives nil.
func Any(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

// Members decodes a JSON object into its members; anything else gives nil.
func Members(raw json.RawMessage) map[string]json.RawMessage {
	if FirstByte(raw) != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// Items decodes a JSON array into its items; anything else gives nil.
func Items(raw json.RawMessage) []json.RawMessage {
	if FirstByte(raw) != '[' {
		return nil
	}
	var l []json.RawMessage
	if json.Unmarshal(raw, &l) != nil {
		return nil
	}
	return l
}

// Object decodes a JSON object into map[string]any; anything else gives nil.
func Object(raw json.RawMessage) map[string]any {
	if FirstByte(raw) != '{' {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}
