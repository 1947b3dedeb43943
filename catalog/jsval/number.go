package jsval

import (
	"math"
	"math/big"
	"strconv"
	"strings"
)

// ParseNumber converts the text of a numeric literal: decimal, float,
// exponent, hexadecimal, octal and binary, with "_" separators and a BigInt
// "n" suffix (docs/spec.md ). Text that is not a valid literal, such as
// 0xZZ or 0b12, is rejected so that the caller keeps it as text (row 7).
func ParseNumber(text string) (float64, bool) {
	s := strings.TrimSpace(text)
	if s == "" {
		return 0, false
	}
	if strings.Contains(s, "_") {
		if strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") || strings.Contains(s, "__") {
			return 0, false
		}
		s = strings.ReplaceAll(s, "_", "")
	}
	bigint := strings.HasSuffix(s, "n")
	if bigint {
		s = s[:len(s)-1]
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			return parseRadix(s[2:], base)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, false
		}
	}
	if bigint && strings.ContainsAny(s, ".eE") {
		return 0, false
	}
	if len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '9' {
		// A legacy octal literal (017) when every digit is octal, else decimal.
		if !strings.ContainsAny(s, "89.eE") {
			return parseRadix(s[1:], 8)
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func parseRadix(digits string, base int) (float64, bool) {
	if digits == "" {
		return 0, false
	}
	if u, err := strconv.ParseUint(digits, base, 64); err == nil {
		return float64(u), true
	}
	var b big.Int
	if _, ok := b.SetString(digits, base); !ok {
		return 0, false
	}
	f, _ := new(big.Float).SetInt(&b).Float64()
	return f, true
}

// FormatNumber is JavaScript's Number::toString, used wherever a number
// becomes text: numeric keys (docs/spec.md) and string concatenation
// (docs/spec.md ).
func FormatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±xx
	mant, expPart, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expPart)
	k, n := len(digits), exp+1
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	return sign + m + "e" + es + strconv.Itoa(abs(n-1))
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
