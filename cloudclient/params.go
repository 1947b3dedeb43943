package cloudclient

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParamUpdate is one parameter entry of a prime snapshot or a live delta.
type ParamUpdate struct {
	Devid, Pool string // Pool like "P4"
	Chan        byte   // 'v' value, 's' status bits, 'u' unit, 'n' min, 'x' max, 't' type, or any other letter
	Idx         int
	Value       any  // decoded JSON (float64, string, bool, map, slice) or nil
	HasValue    bool // false = meta-only entry (an object body without "value")
	Meta        map[string]any
}

// Key returns the store key, e.g. "P4.v1".
func (p ParamUpdate) Key() string {
	var buf [32]byte
	b := append(buf[:0], p.Pool...)
	b = append(b, '.', p.Chan)
	b = strconv.AppendInt(b, int64(p.Idx), 10)
	return string(b)
}

// maxParamDepth bounds nesting like encoding/json does.
const maxParamDepth = 10000

var errParamSyntax = errors.New("cloudclient: malformed parameter payload")

// DecodeParameters decodes the payload shared by prime answers and live
// deltas: {"<devid>":{"<pool>":{"<chan><idx>": body}}}.
//
// Module and pool values that are not objects are skipped, and so are keys
// shorter than two characters or whose rest is not an integer, and entries
// holding a number outside the float64 range. An object body gives Value =
// body["value"] (HasValue) and the other members as Meta; any other body is
// the value itself. The result is sorted by devid, pool, channel and index,
// keeping payload order among duplicates. The error is non-nil only when the
// input is not a well-formed JSON object.
//
// It is a single-pass decoder: it is on the hot path of live ingest.
func DecodeParameters(data []byte) ([]ParamUpdate, error) {
	d := paramDecoder{data: data}
	d.skipSpace()
	if d.i >= len(d.data) || d.data[d.i] != '{' {
		if d.i < len(d.data) {
			if err := d.skipValue(0); err == nil && d.atEnd() {
				return nil, fmt.Errorf("cloudclient: parameter payload: top level is not a JSON object")
			}
		}
		return nil, d.fail("expected a JSON object")
	}
	var out []ParamUpdate
	var segs []segment
	err := d.members(0, func(key []byte, esc bool) error {
		if d.data[d.i] != '{' {
			return d.skipValue(1)
		}
		devid := d.str(key, esc)
		return d.members(1, func(key []byte, esc bool) error {
			if d.data[d.i] != '{' {
				return d.skipValue(2)
			}
			pool := d.str(key, esc)
			start := len(out)
			defer func() {
				if len(out) > start {
					segs = append(segs, segment{devid, pool, start, len(out)})
				}
			}()
			return d.members(2, func(key []byte, esc bool) error {
				ch, idx, ok := splitParamKey(key, esc)
				if !ok {
					return d.skipValue(3)
				}
				d.rangeErr = false
				u := ParamUpdate{Devid: devid, Pool: pool, Chan: ch, Idx: idx}
				var err error
				if d.data[d.i] == '{' {
					err = d.body(&u)
				} else {
					u.Value, err = d.value(3)
					u.HasValue = true
				}
				if err == nil && !d.rangeErr {
					out = append(out, u)
				}
				return err
			})
		})
	})
	if err != nil {
		return nil, err
	}
	if !d.atEnd() {
		return nil, d.fail("data after the top-level value")
	}
	return orderUpdates(out, segs), nil
}

// segment is the run of updates decoded from one pool object.
type segment struct {
	devid, pool string
	start, end  int
}

func compareUpdates(a, b ParamUpdate) int {
	if c := strings.Compare(a.Devid, b.Devid); c != 0 {
		return c
	}
	if c := strings.Compare(a.Pool, b.Pool); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Chan, b.Chan); c != 0 {
		return c
	}
	return cmp.Compare(a.Idx, b.Idx)
}

// orderUpdates sorts by devid, pool, channel and index, payload order among
// equals. Sorting small keys per pool and copying each update once is much
// cheaper than a stable sort moving the updates themselves.
func orderUpdates(out []ParamUpdate, segs []segment) []ParamUpdate {
	if slices.IsSortedFunc(out, compareUpdates) {
		return out
	}
	slices.SortStableFunc(segs, func(a, b segment) int {
		if c := strings.Compare(a.devid, b.devid); c != 0 {
			return c
		}
		return strings.Compare(a.pool, b.pool)
	})
	type sortKey struct {
		ch  byte
		idx int
		pos int
	}
	res := make([]ParamUpdate, 0, len(out))
	var keys []sortKey
	for i := 0; i < len(segs); {
		// Pools named twice (duplicate JSON keys) are ordered together.
		j := i
		keys = keys[:0]
		for ; j < len(segs) && segs[j].devid == segs[i].devid && segs[j].pool == segs[i].pool; j++ {
			for p := segs[j].start; p < segs[j].end; p++ {
				keys = append(keys, sortKey{out[p].Chan, out[p].Idx, p})
			}
		}
		slices.SortFunc(keys, func(a, b sortKey) int {
			if c := cmp.Compare(a.ch, b.ch); c != 0 {
				return c
			}
			if c := cmp.Compare(a.idx, b.idx); c != 0 {
				return c
			}
			return cmp.Compare(a.pos, b.pos)
		})
		for _, k := range keys {
			res = append(res, out[k.pos])
		}
		i = j
	}
	return res
}

// splitParamKey splits "v12" into 'v' and 12. The rest must be an optionally
// signed decimal integer.
func splitParamKey(key []byte, esc bool) (byte, int, bool) {
	if esc {
		var s string
		if json.Unmarshal(quoteRaw(key), &s) != nil {
			return 0, 0, false
		}
		key = []byte(s)
	}
	if len(key) < 2 {
		return 0, 0, false
	}
	rest := key[1:]
	neg := false
	switch rest[0] {
	case '-':
		neg, rest = true, rest[1:]
	case '+':
		rest = rest[1:]
	}
	if len(rest) == 0 || len(rest) > 18 {
		return 0, 0, false
	}
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return key[0], n, true
}

func quoteRaw(content []byte) []byte {
	q := make([]byte, 0, len(content)+2)
	q = append(q, '"')
	q = append(q, content...)
	return append(q, '"')
}

type paramDecoder struct {
	data     []byte
	i        int
	rangeErr bool // a number in the current entry overflowed float64
}

func (d *paramDecoder) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", errParamSyntax, what, d.i)
}

func (d *paramDecoder) skipSpace() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *paramDecoder) atEnd() bool {
	d.skipSpace()
	return d.i == len(d.data)
}

// members walks the object at d.i, calling fn with each key (raw content
// between the quotes; esc when it needs unescaping) and d.i at the value.
func (d *paramDecoder) members(depth int, fn func(key []byte, esc bool) error) error {
	if depth >= maxParamDepth {
		return d.fail("nesting too deep")
	}
	d.i++ // '{'
	d.skipSpace()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return nil
	}
	for {
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return d.fail("expected a string key")
		}
		key, esc, err := d.scanString()
		if err != nil {
			return err
		}
		d.skipSpace()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return d.fail("expected ':'")
		}
		d.i++
		d.skipSpace()
		if d.i >= len(d.data) {
			return d.fail("unexpected end")
		}
		if err := fn(key, esc); err != nil {
			return err
		}
		d.skipSpace()
		if d.i >= len(d.data) {
			return d.fail("unexpected end")
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.fail("expected ',' or '}'")
		}
	}
}

// scanString scans the string at d.i and returns its raw content; esc
// reports escapes or non-ASCII bytes (content then needs the slow path).
func (d *paramDecoder) scanString() ([]byte, bool, error) {
	start := d.i + 1
	esc := false
	for i := start; i < len(d.data); {
		c := d.data[i]
		switch {
		case c == '"':
			d.i = i + 1
			return d.data[start:i], esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(d.data) {
				d.i = i
				return nil, false, d.fail("unterminated string")
			}
			switch d.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d.data) || !isHex4(d.data[i+2:i+6]) {
					d.i = i
					return nil, false, d.fail("bad \\u escape")
				}
				i += 6
			default:
				d.i = i
				return nil, false, d.fail("bad escape")
			}
		case c < 0x20:
			d.i = i
			return nil, false, d.fail("control character in string")
		case c >= utf8.RuneSelf:
			esc = true
			i++
		default:
			i++
		}
	}
	d.i = len(d.data)
	return nil, false, d.fail("unterminated string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// str turns raw string content into a Go string with encoding/json's
// semantics (invalid UTF-8 and lone surrogates become U+FFFD).
func (d *paramDecoder) str(raw []byte, esc bool) string {
	if !esc || (utf8.Valid(raw) && !containsBackslash(raw)) {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(quoteRaw(raw), &s) // raw was validated by scanString
	return s
}

func containsBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// metaKey returns well-known meta keys without allocating.
func (d *paramDecoder) metaKey(raw []byte, esc bool) string {
	if !esc {
		switch string(raw) {
		case "storable":
			return "storable"
		case "createdAt":
			return "createdAt"
		case "previousCreatedAt":
			return "previousCreatedAt"
		case "updatedAt":
			return "updatedAt"
		case "updatedAtClient":
			return "updatedAtClient"
		case "expire":
			return "expire"
		case "average":
			return "average"
		}
	}
	return d.str(raw, esc)
}

// body decodes an object body into value and meta.
func (d *paramDecoder) body(u *ParamUpdate) error {
	return d.members(3, func(key []byte, esc bool) error {
		v, err := d.value(4)
		if err != nil {
			return err
		}
		if !esc && string(key) == "value" || esc && d.str(key, esc) == "value" {
			u.Value, u.HasValue = v, true
			return nil
		}
		if u.Meta == nil {
			u.Meta = make(map[string]any, 4)
		}
		u.Meta[d.metaKey(key, esc)] = v
		return nil
	})
}

// value decodes any JSON value at d.i.
func (d *paramDecoder) value(depth int) (any, error) {
	if d.i >= len(d.data) {
		return nil, d.fail("unexpected end")
	}
	switch c := d.data[d.i]; c {
	case '{':
		m := map[string]any{}
		err := d.members(depth, func(key []byte, esc bool) error {
			v, err := d.value(depth + 1)
			if err == nil {
				m[d.str(key, esc)] = v
			}
			return err
		})
		return m, err
	case '[':
		l := []any{}
		err := d.elements(depth, func() error {
			v, err := d.value(depth + 1)
			l = append(l, v)
			return err
		})
		return l, err
	case '"':
		raw, esc, err := d.scanString()
		if err != nil {
			return nil, err
		}
		return d.str(raw, esc), nil
	case 't', 'f', 'n':
		return d.literal()
	default:
		start := d.i
		if err := d.scanNumber(); err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(d.data[start:d.i]), 64)
		if err != nil || math.IsInf(f, 0) {
			d.rangeErr = true
		}
		return f, nil
	}
}

// skipValue validates the value at d.i without building it.
func (d *paramDecoder) skipValue(depth int) error {
	if d.i >= len(d.data) {
		return d.fail("unexpected end")
	}
	switch d.data[d.i] {
	case '{':
		return d.members(depth, func([]byte, bool) error { return d.skipValue(depth + 1) })
	case '[':
		return d.elements(depth, func() error { return d.skipValue(depth + 1) })
	case '"':
		_, _, err := d.scanString()
		return err
	case 't', 'f', 'n':
		_, err := d.literal()
		return err
	default:
		return d.scanNumber()
	}
}

func (d *paramDecoder) elements(depth int, fn func() error) error {
	if depth >= maxParamDepth {
		return d.fail("nesting too deep")
	}
	d.i++ // '['
	d.skipSpace()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return nil
	}
	for {
		d.skipSpace()
		if err := fn(); err != nil {
			return err
		}
		d.skipSpace()
		if d.i >= len(d.data) {
			return d.fail("unexpected end")
		}
		switch d.data[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.fail("expected ',' or ']'")
		}
	}
}

func (d *paramDecoder) literal() (any, error) {
	rest := d.data[d.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.i += 4
		return true, nil
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.i += 5
		return false, nil
	case len(rest) >= 4 && string(rest[:4]) == "null":
		d.i += 4
		return nil, nil
	}
	return nil, d.fail("invalid literal")
}

// scanNumber checks the JSON number grammar at d.i.
func (d *paramDecoder) scanNumber() error {
	b, i := d.data, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return d.fail("invalid value")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			d.i = i
			return d.fail("invalid number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			d.i = i
			return d.fail("invalid number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return nil
}

// ParseUnit interprets a `u` channel value tolerantly: an integral
// non-negative number or numeric string gives a unit code; any other
// non-empty string gives an enum name. nil, booleans, fractional or negative
// numbers and empty strings give ok=false. An object with "value" is
// unwrapped.
func ParseUnit(v any) (code int, name string, ok bool) {
	switch x := v.(type) {
	case float64:
		return unitFromFloat(x)
	case float32:
		return unitFromFloat(float64(x))
	case int:
		return x, "", x >= 0
	case int64:
		return unitFromFloat(float64(x))
	case json.Number:
		return ParseUnit(string(x))
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return 0, "", false
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return unitFromFloat(f)
		}
		return 0, s, true
	case map[string]any:
		if inner, present := x["value"]; present {
			return ParseUnit(inner)
		}
	}
	return 0, "", false
}

func unitFromFloat(f float64) (int, string, bool) {
	if f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, "", false
	}
	return int(f), "", true
}
