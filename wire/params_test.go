package wire_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/wire"
)

// wireExamplePrime is the prime example of docs/spec.md W-2.1a.
const wireExamplePrime = `{"FTTCTBSLCE":{"P4":{"v1":{"value":21.5,"storable":true,"updatedAt":1757000000},"s1":3,"u1":{"value":1}},
               "P5":{"s40":{"value":10}},
               "P6":{"u13":{"storable":1}}}}`

func TestDecodeParameters(t *testing.T) {
	type want struct {
		key      string
		value    any
		hasValue bool
		meta     map[string]any
	}
	cases := []struct {
		name string
		in   string
		want []want
	}{
		{"wire example", wireExamplePrime, []want{
			{"P4.s1", 3.0, true, nil},
			{"P4.u1", 1.0, true, nil},
			{"P4.v1", 21.5, true, map[string]any{"storable": true, "updatedAt": 1757000000.0}},
			{"P5.s40", 10.0, true, nil},
			{"P6.u13", nil, false, map[string]any{"storable": 1.0}},
		}},
		{"empty object", `{}`, nil},
		{"module value not an object is skipped", `{"A":[1,2],"B":"x","C":{"P4":{"v1":1}}}`, []want{{"P4.v1", 1.0, true, nil}}},
		{"pool value not an object is skipped", `{"A":{"P4":[{"v1":1}],"P5":7,"P6":{"v2":2}}}`, []want{{"P6.v2", 2.0, true, nil}}},
		{"short and non-integer keys are skipped", `{"A":{"P4":{"v":1,"x":2,"vX":3,"":4,"v1a":5,"t2":6}}}`, []want{{"P4.t2", 6.0, true, nil}}},
		{"u channel int, string and null kept as decoded", `{"A":{"P4":{"u1":5,"u2":"CELSIUS","u3":null,"u4":{"value":null}}}}`, []want{
			{"P4.u1", 5.0, true, nil}, {"P4.u2", "CELSIUS", true, nil}, {"P4.u3", nil, true, nil}, {"P4.u4", nil, true, nil},
		}},
		{"any letter is a channel; sort by chan then index", `{"A":{"P4":{"z10":1,"z9":2,"a1":{"value":[1,{"k":"v"}]}}}}`, []want{
			{"P4.a1", []any{1.0, map[string]any{"k": "v"}}, true, nil}, {"P4.z9", 2.0, true, nil}, {"P4.z10", 1.0, true, nil},
		}},
		{"escaped keys and strings", `{"A":{"P4":{"v\u0031":"\u00e9\n","s2":{"val\u0075e":true,"m\u00e9ta":false}}}}`, []want{
			{"P4.s2", true, true, map[string]any{"méta": false}}, {"P4.v1", "é\n", true, nil},
		}},
		{"number out of range drops only its entry", `{"A":{"P4":{"v1":1e999,"v2":2,"v3":{"value":1,"average":-1e400}}}}`, []want{{"P4.v2", 2.0, true, nil}}},
		{"signed index", `{"A":{"P4":{"v+5":1,"v-2":2}}}`, []want{{"P4.v-2", 2.0, true, nil}, {"P4.v5", 1.0, true, nil}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.DecodeParameters([]byte(tc.in))
			if err != nil {
				t.Fatalf("DecodeParameters: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d updates %+v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Key() != w.key || !reflect.DeepEqual(g.Value, w.value) || g.HasValue != w.hasValue || !reflect.DeepEqual(g.Meta, w.meta) {
					t.Errorf("update %d = {%s %#v has=%v meta=%#v}, want {%s %#v has=%v meta=%#v}",
						i, g.Key(), g.Value, g.HasValue, g.Meta, w.key, w.value, w.hasValue, w.meta)
				}
			}
		})
	}
}

func TestDecodeParametersSortsModulesAndPools(t *testing.T) {
	got, err := wire.DecodeParameters([]byte(`{"B":{"P5":{"v1":1},"P4":{"v1":2}},"A":{"P4":{"v1":3}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range got {
		keys = append(keys, u.Devid+"/"+u.Key())
	}
	if want := []string{"A/P4.v1", "B/P4.v1", "B/P5.v1"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("order %v, want %v", keys, want)
	}
	if got[0].Devid != "A" || got[0].Pool != "P4" || got[0].Chan != 'v' || got[0].Idx != 1 {
		t.Fatalf("fields: %+v", got[0])
	}
}

func TestDecodeParametersErrors(t *testing.T) {
	for _, in := range []string{``, `[]`, `"x"`, `null`, `12`, `{`, `{"A":}`, `{"A":{"P4":{"v1":01}}}`, `{"A":{"P4":{"v1":1,}}}`,
		`{"A":1} x`, `{"A":"\x01"}`, `{"A":{"P4":{"v1":tru}}}`, `<html>503</html>`, `{"A":{"P4":{"v1":"\q"}}}`, `{"A":{"P4":{"v1":-}}}`} {
		got, err := wire.DecodeParameters([]byte(in))
		if err == nil {
			t.Errorf("DecodeParameters(%q) = %v, want an error", in, got)
		}
		if got != nil {
			t.Errorf("DecodeParameters(%q) returned partial results %v", in, got)
		}
	}
}

func TestParamUpdateKey(t *testing.T) {
	u := wire.ParamUpdate{Pool: "P4", Chan: 's', Idx: 40}
	if u.Key() != "P4.s40" {
		t.Fatalf("Key() = %q", u.Key())
	}
}

// referenceDecode is a slow decoder built on encoding/json's streaming
// tokenizer with the same rules as DecodeParameters; the fuzz target checks
// the fast decoder against it.
func referenceDecode(data []byte) ([]wire.ParamUpdate, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var out []wire.ParamUpdate
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		devid := k.(string)
		var mod json.RawMessage
		if err := dec.Decode(&mod); err != nil {
			return nil, err
		}
		pools, ok := orderedObject(mod)
		if !ok {
			continue
		}
		for _, p := range pools {
			entries, ok := orderedObject(p.raw)
			if !ok {
				continue
			}
			for _, e := range entries {
				key := e.key
				if len(key) < 2 {
					continue
				}
				digits := key[1:]
				if digits[0] == '+' || digits[0] == '-' {
					digits = digits[1:]
				}
				idx, err := strconv.ParseInt(key[1:], 10, 64)
				if err != nil || len(digits) == 0 || len(digits) > 18 {
					continue
				}
				if !numbersInRange(e.raw) {
					continue
				}
				var body any
				d := json.NewDecoder(strings.NewReader(string(e.raw)))
				d.UseNumber()
				if err := d.Decode(&body); err != nil {
					return nil, err
				}
				body, ok := numbersToFloat(body)
				if !ok {
					continue
				}
				u := wire.ParamUpdate{Devid: devid, Pool: p.key, Chan: key[0], Idx: int(idx)}
				if m, isObj := body.(map[string]any); isObj {
					if v, has := m["value"]; has {
						u.Value, u.HasValue = v, true
						delete(m, "value")
					}
					if len(m) > 0 {
						u.Meta = m
					}
				} else {
					u.Value, u.HasValue = body, true
				}
				out = append(out, u)
			}
		}
	}
	if _, err := dec.Token(); err != nil { // closing brace
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data")
	}
	return out, nil
}

type member struct {
	key string
	raw json.RawMessage
}

func orderedObject(raw json.RawMessage) ([]member, bool) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		k, _ := dec.Token()
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		out = append(out, member{k.(string), v})
	}
	return out, true
}

// numbersInRange reports whether every number token of raw fits a float64,
// including members a later duplicate key overrides.
func numbersInRange(raw json.RawMessage) bool {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		if n, ok := tok.(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err != nil || math.IsInf(f, 0) {
				return false
			}
		}
	}
}

func sortLikeDecoder(u []wire.ParamUpdate) {
	slices.SortStableFunc(u, func(a, b wire.ParamUpdate) int {
		return cmp.Or(strings.Compare(a.Devid, b.Devid), strings.Compare(a.Pool, b.Pool),
			cmp.Compare(a.Chan, b.Chan), cmp.Compare(a.Idx, b.Idx))
	})
}

func numbersToFloat(v any) (any, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, false
		}
		return f, true
	case map[string]any:
		for k, e := range x {
			c, ok := numbersToFloat(e)
			if !ok {
				return nil, false
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, ok := numbersToFloat(e)
			if !ok {
				return nil, false
			}
			x[i] = c
		}
	}
	return v, true
}

func FuzzDecodeParameters(f *testing.F) {
	for _, s := range []string{
		wireExamplePrime,
		`{"FTTCTBSLCE":{"P4":{"v1":{"value":null,"updatedAt":1}}}}`,
		`{"D1":{"P6":{"u13":"°C","n5":-10,"x5":90.5,"t2":{"value":"enum"}}}}`,
		`{"A":{"P4":{"v1":1e999}}}`,
		`{"A":{"P4":{"v\u0031":"\ud800"}}}`,
		`{"A":[1],"B":{"P4":[]}}`,
		`{"A":{"P4":{"v1":1,"v1":2}},"A":{"P4":{"v1":3}}}`,
		`[]`, `{`, `{"A":{"P4":{"s40":{"value":10,"average":[1,2,{"x":null}]}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := wire.DecodeParameters(data)
		valid := json.Valid(data)
		if err == nil && !valid {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if err != nil {
			if got != nil {
				t.Fatalf("partial result with error")
			}
			if valid && strings.HasPrefix(strings.TrimLeft(string(data), " \t\r\n"), "{") {
				t.Fatalf("rejected a valid JSON object %q: %v", data, err)
			}
			return
		}
		want, rerr := referenceDecode(data)
		if rerr != nil {
			t.Fatalf("reference rejected %q (%v) but DecodeParameters accepted it", data, rerr)
		}
		// The reference keeps payload order; apply the same stable sort.
		sortLikeDecoder(want)
		if len(got) != len(want) {
			t.Fatalf("%q: got %d updates, reference %d\n got %#v\nwant %#v", data, len(got), len(want), got, want)
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%q: update %d = %#v, reference %#v", data, i, got[i], want[i])
			}
		}
	})
}

// decodeEach runs DecodeParametersEach, keeping a deep copy of what fn got
// each time (fn's slice and maps are reused), and the devids in call order.
func decodeEach(data []byte) (all []wire.ParamUpdate, calls []string, err error) {
	err = wire.DecodeParametersEach(data, func(ups []wire.ParamUpdate) {
		calls = append(calls, ups[0].Devid)
		for _, u := range ups {
			if u.Devid != ups[0].Devid {
				panic(fmt.Sprintf("one call carried modules %s and %s", ups[0].Devid, u.Devid))
			}
			if u.Meta != nil {
				m := make(map[string]any, len(u.Meta))
				for k, v := range u.Meta {
					m[k] = v
				}
				u.Meta = m
			}
			all = append(all, u)
		}
	})
	return all, calls, err
}

// checkEachMatches checks that DecodeParametersEach gives what
// DecodeParameters gives: the same updates module by module (modules in
// payload order rather than sorted), the same error, and no call at all
// when there is an error.
func checkEachMatches(t *testing.T, data []byte) {
	t.Helper()
	want, werr := wire.DecodeParameters(data)
	got, calls, err := decodeEach(data)
	if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
		t.Fatalf("%q: error %v, DecodeParameters %v", data, err, werr)
	}
	if err != nil {
		if len(calls) > 0 {
			t.Fatalf("%q: fn called for %v before the error %v", data, calls, err)
		}
		return
	}
	for i := 1; i < len(calls); i++ {
		if slices.Contains(calls[:i], calls[i]) {
			t.Fatalf("%q: module %s given twice: %v", data, calls[i], calls)
		}
	}
	// Modules come in payload order; DecodeParameters sorts them.
	slices.SortStableFunc(got, func(a, b wire.ParamUpdate) int { return strings.Compare(a.Devid, b.Devid) })
	if len(got) != len(want) {
		t.Fatalf("%q: %d updates, DecodeParameters %d\n got %#v\nwant %#v", data, len(got), len(want), got, want)
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%q: update %d = %#v, DecodeParameters %#v", data, i, got[i], want[i])
		}
	}
}

func TestDecodeParametersEachMatchesDecodeParameters(t *testing.T) {
	for _, in := range []string{
		wireExamplePrime, `{}`, ` {"A":{}} `,
		`{"A":[1,2],"B":"x","C":{"P4":{"v1":1}}}`,
		`{"A":{"P4":[{"v1":1}],"P5":7,"P6":{"v2":2}}}`,
		`{"B":{"P5":{"v2":{"value":1,"updatedAt":2},"v1":{"storable":true}},"P4":{"v1":2,"s1":{"value":"x","a":[1]}}},"A":{"P4":{"v1":3,"v3":{"expire":1}}}}`,
		// The same module twice, also spelled with an escape: merged.
		`{"A":{"P4":{"v1":1,"v2":{"value":2,"updatedAt":1}}},"B":{"P4":{"v1":5}},"\u0041":{"P4":{"v1":3,"v0":{"storable":1}}}}`,
		`{"A":{"P4":{"v1":1e999,"v2":{"value":2,"average":1e999},"v3":{"value":3,"updatedAt":4}}}}`,
		``, `[]`, `{"A":1} x`, `{"A":{"P4":{"v1":1,}}}`, `{"A":{"P4":{"v1":1}},"B":{"P4":{"v1":tru}}}`, `null`,
	} {
		checkEachMatches(t, []byte(in))
	}
	// Maps are reused from module to module: a later module's meta must not
	// show an earlier one's keys.
	got, _, err := decodeEach([]byte(`{"A":{"P4":{"v1":{"value":1,"storable":true,"updatedAt":5}}},"B":{"P4":{"v1":{"value":2,"expire":3}}}}`))
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[1].Meta, map[string]any{"expire": 3.0}) {
		t.Fatalf("updates %#v, %v", got, err)
	}
}

func FuzzDecodeParametersEach(f *testing.F) {
	for _, s := range []string{
		wireExamplePrime,
		`{"A":{"P4":{"v1":1,"v1":2}},"A":{"P4":{"v1":3}}}`,
		`{"B":{"P5":{"v1":{"value":1,"x":2}},"P4":{"v1":2}},"A":{"P4":{"v1":{"storable":1}}}}`,
		`{"A":{"P4":{"v1":1e999}}}`, `[]`, `{`, `{"A":{}} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkEachMatches(t, data) })
}
