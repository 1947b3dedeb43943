package wire_test

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/wire"
)

// TestNumberText pins the one rule for numbers sent as text: decimal, with
// an optional fraction and exponent, finite, surrounding whitespace allowed.
func TestNumberText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"21.5", 21.5, true},
		{"-0", math.Copysign(0, -1), true},
		{"1e5", 100000, true},
		{"2.5E-3", 0.0025, true},
		{"+3", 3, true},
		{"5.", 5, true},
		{".5", 0.5, true},
		{"-.5e1", -5, true},
		{" 42\n", 42, true},
		{"007", 7, true},
		{"1e-400", 0, true}, // underflows to 0: still a number
		{"1e400", 0, false}, // overflows: no finite sample
		{"-1e400", 0, false},
		{"", 0, false},
		{" ", 0, false},
		{".", 0, false},
		{"-", 0, false},
		{"e5", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"1.2.3", 0, false},
		{"--1", 0, false},
		{"NaN", 0, false},
		{"nan", 0, false},
		{"Inf", 0, false},
		{"-infinity", 0, false},
		{"0x10", 0, false},
		{"0x1p-2", 0, false},
		{"1_000", 0, false},
		{"12 3", 0, false},
		{"21,5", 0, false},
		{"ON", 0, false},
		{"\u00a042", 0, false}, // only ASCII whitespace is trimmed
	} {
		got, ok := wire.NumberText(c.in)
		if ok != c.ok || got != c.want || math.Signbit(got) != math.Signbit(c.want) {
			t.Errorf("NumberText(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// The integer readers follow the same rule for text.
func TestIntFromTextFollowsNumberText(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int64
		ok   bool
	}{
		{`"12"`, 12, true},
		{`"1e3"`, 1000, true},
		{`" 4.0 "`, 4, true},
		{`"0x10"`, 0, false},
		{`"0x1p4"`, 0, false},
		{`"1_000"`, 0, false},
		{`"inf"`, 0, false},
		{`"1.5"`, 0, false},
	} {
		got, ok := wire.Int([]byte(c.raw))
		if ok != c.ok || got != c.want {
			t.Errorf("Int(%s) = %v, %v; want %v, %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}

// decimalNumber is the rule of NumberText written as a regular expression:
// the fuzz target's independent oracle.
var decimalNumber = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// FuzzNumberText checks NumberText against the oracle: it accepts exactly
// the trimmed texts the grammar matches whose value is finite, and returns
// what ParseFloat reads from them.
func FuzzNumberText(f *testing.F) {
	for _, s := range []string{"21.5", "-0", "1e5", ".5", "5.", " 7 ", "NaN", "inf", "0x10", "1_0", "1e400", "", "e", "+.e1", "1e-400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := wire.NumberText(s)
		trimmed := strings.Trim(s, " \t\n\r")
		want, err := strconv.ParseFloat(trimmed, 64)
		// A range error comes with ±Inf (refused) or, for a value too small,
		// with the nearest float (accepted): the oracle must not depend on
		// which of the two ParseFloat reports.
		wantOK := decimalNumber.MatchString(trimmed) && (err == nil || isRangeErr(err)) && !math.IsInf(want, 0)
		if ok != wantOK {
			t.Fatalf("NumberText(%q) ok = %v, want %v (ParseFloat: %v, %v)", s, ok, wantOK, want, err)
		}
		if !ok {
			if got != 0 {
				t.Fatalf("NumberText(%q) refused it but returned %v", s, got)
			}
			return
		}
		if got != want || math.IsNaN(got) || math.IsInf(got, 0) {
			t.Fatalf("NumberText(%q) = %v, ParseFloat reads %v", s, got, want)
		}
	})
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
