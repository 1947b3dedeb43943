package wire

import (
	"cmp"
	"encoding/json"
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
	d := paramDecoder{Scanner: NewScanner(data, AnyNumber)}
	d.SkipSpace()
	if c, ok := d.Peek(); !ok || c != '{' {
		if ok {
			if err := d.SkipValue(0); err == nil && d.atEnd() {
				return nil, fmt.Errorf("wire: parameter payload: top level is not a JSON object")
			}
		}
		return nil, paramSyntax(d.fail("expected a JSON object"))
	}
	var out []ParamUpdate
	var segs []segment
	err := d.members(0, func(key []byte, esc bool) error {
		if d.data[d.pos] != '{' {
			return d.SkipValue(1)
		}
		return d.module(unquote(key, esc), &out, &segs, 1)
	})
	if err != nil {
		return nil, paramSyntax(err)
	}
	if !d.atEnd() {
		return nil, paramSyntax(d.fail("data after the top-level value"))
	}
	return orderUpdates(out, segs), nil
}

// DecodeParametersEach decodes the same payload as DecodeParameters and
// gives the result to fn one module at a time, so that a prime of many
// modules is never held decoded all at once: fn gets each module's updates,
// sorted as DecodeParameters sorts them, in payload order of the modules.
// The updates and their Meta maps are reused for the next module: fn must
// not keep them. The whole payload is checked first, so when the error is
// not nil (the same error DecodeParameters returns) fn was never called. A
// payload that names a module twice is decoded whole, as DecodeParameters
// merges it, and given to fn module by module.
func DecodeParametersEach(data []byte, fn func([]ParamUpdate)) error {
	sc := NewScanner(data, AnyNumber)
	sc.SkipSpace()
	repeated, ok := checkModules(&sc)
	if !ok {
		_, err := DecodeParameters(data) // the error, as DecodeParameters words it
		return err
	}
	if repeated {
		ups, err := DecodeParameters(data)
		if err != nil {
			return err
		}
		for len(ups) > 0 {
			n := 1
			for n < len(ups) && ups[n].Devid == ups[0].Devid {
				n++
			}
			fn(ups[:n:n])
			ups = ups[n:]
		}
		return nil
	}
	d := paramDecoder{Scanner: NewScanner(data, AnyNumber)}
	d.SkipSpace()
	var out, sorted []ParamUpdate
	var segs []segment
	var spare []map[string]any
	err := d.members(0, func(key []byte, esc bool) error {
		if d.data[d.pos] != '{' {
			return d.SkipValue(1)
		}
		for i := range out {
			if m := out[i].Meta; m != nil {
				clear(m)
				spare = append(spare, m)
			}
		}
		clear(out) // drop the previous module's values
		out, segs, d.spare = out[:0], segs[:0], spare
		devid := unquote(key, esc)
		err := d.module(devid, &out, &segs, 1)
		spare = d.spare
		if err != nil || len(out) == 0 {
			return err
		}
		if slices.IsSortedFunc(out, compareUpdates) {
			fn(out)
			return nil
		}
		sorted = orderUpdatesInto(sorted[:0], out, segs)
		fn(sorted)
		clear(sorted)
		return nil
	})
	if err != nil {
		// Not reached: the payload was checked above.
		return paramSyntax(err)
	}
	return nil
}

// checkModules checks that the payload at sc is one JSON object (and
// nothing after it) and reports whether a member name repeats.
func checkModules(sc *Scanner) (repeated, ok bool) {
	if c, ok := sc.Peek(); !ok || c != '{' {
		return false, false
	}
	empty, err := sc.openObject(0)
	if err != nil {
		return false, false
	}
	if !empty {
		seen := map[string]bool{}
		for {
			key, esc, err := sc.key()
			if err != nil || sc.pos >= len(sc.data) {
				return false, false
			}
			if !repeated {
				// Compared as decoded: "D\u0031" names D1.
				name := unquote(key, esc)
				repeated = seen[name]
				seen[name] = true
			}
			if sc.SkipValue(1) != nil {
				return false, false
			}
			more, err := sc.nextMember()
			if err != nil {
				return false, false
			}
			if !more {
				break
			}
		}
	}
	return repeated, sc.atEnd()
}

func paramSyntax(err error) error {
	return fmt.Errorf("wire: malformed parameter payload: %w", err)
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

// module decodes the module object at Pos (the pools of devid), appending
// its updates to out and the pool runs to segs.
func (d *paramDecoder) module(devid string, out *[]ParamUpdate, segs *[]segment, depth int) error {
	return d.members(depth, func(key []byte, esc bool) error {
		if d.data[d.pos] != '{' {
			return d.SkipValue(depth + 1)
		}
		pool := unquote(key, esc)
		start := len(*out)
		defer func() {
			if len(*out) > start {
				*segs = append(*segs, segment{devid, pool, start, len(*out)})
			}
		}()
		return d.members(depth+1, func(key []byte, esc bool) error {
			ch, idx, ok := splitParamKey(key, esc)
			if !ok {
				return d.SkipValue(depth + 2)
			}
			d.rangeErr = false
			u := ParamUpdate{Devid: devid, Pool: pool, Chan: ch, Idx: idx}
			var err error
			if d.data[d.pos] == '{' {
				err = d.body(&u)
			} else {
				u.Value, err = d.value(depth + 2)
				u.HasValue = true
			}
			if err == nil && !d.rangeErr {
				*out = append(*out, u)
			} else if u.Meta != nil {
				clear(u.Meta)
				d.spare = append(d.spare, u.Meta)
			}
			return err
		})
	})
}

// orderUpdates sorts by devid, pool, channel and index, payload order among
// equals. Sorting small keys per pool and copying each update once is much
// cheaper than a stable sort moving the updates themselves.
func orderUpdates(out []ParamUpdate, segs []segment) []ParamUpdate {
	if slices.IsSortedFunc(out, compareUpdates) {
		return out
	}
	return orderUpdatesInto(make([]ParamUpdate, 0, len(out)), out, segs)
}

// orderUpdatesInto is orderUpdates appending to res.
func orderUpdatesInto(res, out []ParamUpdate, segs []segment) []ParamUpdate {
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

// unquote turns raw string content (checked by the Scanner) into a Go string
// with encoding/json's semantics (invalid UTF-8 and lone surrogates become
// U+FFFD).
func unquote(raw []byte, esc bool) string {
	if !esc || (utf8.Valid(raw) && !containsBackslash(raw)) {
		return string(raw)
	}
	var s string
	_ = json.Unmarshal(quoteRaw(raw), &s) // raw was checked by the Scanner
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

// paramDecoder builds the values of DecodeParameters as its Scanner reads
// them.
type paramDecoder struct {
	Scanner
	rangeErr bool             // a number in the current entry overflowed float64
	spare    []map[string]any // cleared Meta maps to reuse (DecodeParametersEach)
}

// members walks the object at Pos, calling fn with each key (raw content
// between the quotes; esc when it needs unescaping) and Pos at the value.
func (d *paramDecoder) members(depth int, fn func(key []byte, esc bool) error) error {
	empty, err := d.openObject(depth)
	if err != nil || empty {
		return err
	}
	for {
		key, esc, err := d.key()
		if err != nil {
			return err
		}
		if d.pos >= len(d.data) {
			return d.fail("unexpected end")
		}
		if err := fn(key, esc); err != nil {
			return err
		}
		if more, err := d.nextMember(); err != nil || !more {
			return err
		}
	}
}

// elements walks the array at Pos, calling fn with Pos at each element.
func (d *paramDecoder) elements(depth int, fn func() error) error {
	empty, err := d.OpenArray(depth)
	if err != nil || empty {
		return err
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		if more, err := d.NextElement(); err != nil || !more {
			return err
		}
	}
}

// metaKey returns well-known meta keys without allocating.
func metaKey(raw []byte, esc bool) string {
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
	return unquote(raw, esc)
}

// body decodes an object body into value and meta.
func (d *paramDecoder) body(u *ParamUpdate) error {
	return d.members(3, func(key []byte, esc bool) error {
		v, err := d.value(4)
		if err != nil {
			return err
		}
		if !esc && string(key) == "value" || esc && unquote(key, esc) == "value" {
			u.Value, u.HasValue = v, true
			return nil
		}
		if u.Meta == nil {
			if n := len(d.spare); n > 0 {
				u.Meta, d.spare = d.spare[n-1], d.spare[:n-1]
			} else {
				u.Meta = make(map[string]any, 4)
			}
		}
		u.Meta[metaKey(key, esc)] = v
		return nil
	})
}

// value decodes the JSON value at Pos; depth counts its enclosing
// containers.
func (d *paramDecoder) value(depth int) (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.fail("unexpected end")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		m := map[string]any{}
		err := d.members(depth, func(key []byte, esc bool) error {
			v, err := d.value(depth + 1)
			if err == nil {
				m[unquote(key, esc)] = v
			}
			return err
		})
		return m, err
	case c == '[':
		l := []any{}
		err := d.elements(depth, func() error {
			v, err := d.value(depth + 1)
			l = append(l, v)
			return err
		})
		return l, err
	case c == '"':
		raw, esc, err := d.str()
		if err != nil {
			return nil, err
		}
		return unquote(raw, esc), nil
	case c == 't' || c == 'f' || c == 'n':
		return d.literal()
	case c == '-' || (c >= '0' && c <= '9'):
		start := d.pos
		if err := d.number(); err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(d.data[start:d.pos]), 64)
		if err != nil || math.IsInf(f, 0) {
			d.rangeErr = true
		}
		return f, nil
	default:
		return nil, d.fail("invalid character")
	}
}
