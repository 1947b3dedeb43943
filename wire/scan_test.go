package wire_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/wire"
)

// scanAll checks that data is exactly one JSON value with optional
// surrounding space.
func scanAll(data []byte, numbers wire.Numbers) error {
	s := wire.NewScanner(data, numbers)
	s.SkipSpace()
	if err := s.SkipValue(0); err != nil {
		return err
	}
	s.SkipSpace()
	if _, more := s.Peek(); more {
		return errors.New("data after the value")
	}
	return nil
}

var scannerCorpus = []string{
	`{}`, `[]`, ` {"a" : [1, -2.5e+3, "x\u00e9\n", true, false, null, {}]} `, `"\ud800"`, "\"\xff\"",
	`1e400`, `-1e999`, `1` + strings.Repeat("0", 400), `0.1e-400`, `{"a":}`, `{"a" 1}`, `{1:2}`, `[1,]`, `[1 2]`,
	`tru`, `nul`, `01`, `1.`, `1e`, `-`, `+1`, `.5`, `"\x"`, `"\u12"`, "\"a\x01b\"", `"open`, ``, ` `, `{"a":1}x`,
}

// The scanner accepts exactly what encoding/json accepts: json.Valid with
// AnyNumber, and a decode into an interface with Float64Numbers.
func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range scannerCorpus {
		compareScanner(t, []byte(in))
	}
}

func compareScanner(t *testing.T, data []byte) {
	t.Helper()
	if err, valid := scanAll(data, wire.AnyNumber), json.Valid(data); (err == nil) != valid {
		t.Fatalf("%.80q: AnyNumber scan error %v, json.Valid %v", data, err, valid)
	}
	var v any
	uerr := json.Unmarshal(data, &v)
	if err := scanAll(data, wire.Float64Numbers); (err == nil) != (uerr == nil) {
		t.Fatalf("%.80q: Float64Numbers scan error %v, json.Unmarshal error %v", data, err, uerr)
	}
}

func TestScannerNestingLimit(t *testing.T) {
	ok := strings.Repeat("[", wire.MaxDepth) + strings.Repeat("]", wire.MaxDepth)
	if err := scanAll([]byte(ok), wire.AnyNumber); err != nil {
		t.Errorf("nesting of %d: %v", wire.MaxDepth, err)
	}
	deep := `{"a":` + strings.Repeat("[", wire.MaxDepth) + strings.Repeat("]", wire.MaxDepth) + `}`
	err := scanAll([]byte(deep), wire.AnyNumber)
	var se *wire.SyntaxError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "nesting") {
		t.Errorf("nesting of %d: %v, want a nesting error", wire.MaxDepth+1, err)
	}
	if json.Valid([]byte(deep)) {
		t.Error("encoding/json accepts the deeper nesting too; the limit is not its limit")
	}
}

func TestScannerErrorOffset(t *testing.T) {
	err := scanAll([]byte(`{"a":[1,2,}`), wire.AnyNumber)
	var se *wire.SyntaxError
	if !errors.As(err, &se) || se.Offset != 10 || err.Error() != "invalid character at offset 10" {
		t.Errorf("error = %v, want invalid character at offset 10", err)
	}
}

// Array framing as the transport uses it: each element's raw text.
func TestScannerArrayElements(t *testing.T) {
	data := []byte(`[ "x" , {"a":[1]},2e3 ,null]tail`)
	s := wire.NewScanner(data, wire.Float64Numbers)
	empty, err := s.OpenArray(0)
	if err != nil || empty {
		t.Fatalf("OpenArray = %v, %v", empty, err)
	}
	var got []string
	for {
		start := s.Pos()
		if err := s.SkipValue(1); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(data[start:s.Pos()]))
		more, err := s.NextElement()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
	}
	if strings.Join(got, "|") != `"x"|{"a":[1]}|2e3|null` || string(data[s.Pos():]) != "tail" {
		t.Errorf("elements %q, rest %q", got, data[s.Pos():])
	}
}

func FuzzScanner(f *testing.F) {
	for _, s := range scannerCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		compareScanner(t, data)
	})
}
