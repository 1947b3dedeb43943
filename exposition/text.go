// Package exposition spells gauge families in the Prometheus text format
// (0.0.4) and OpenMetrics 1.0 exactly as expfmt spells them, for the
// families the exporter writes without building a dto.Metric per series.
//
// It owns the spelling only: escaping, float formatting, HELP and TYPE
// lines, and which negotiated formats it can write. The collector builds
// the series and writes its large families with it; the /metrics handler
// (package serving) picks the format and places those families among the
// registry's. It sits apart from both because the collector writes with it
// and the handler, which imports the collector, chooses the format.
package exposition

import (
	"io"
	"math"
	"mime"
	"strconv"
	"sync"

	"github.com/prometheus/common/expfmt"
)

// Format is how a directly written family is spelled: the Prometheus text
// format or OpenMetrics 1.0 (0.0.1 is spelled the same), as expfmt's
// MetricFamilyToText and MetricFamilyToOpenMetrics write gauges.
type Format struct{ OpenMetrics bool }

// FormatOf reports whether format is one this package writes, and how.
// expfmt encodes every TypeOpenMetrics format but version 2.0.0 with its
// OpenMetrics 1.0 encoder; names are never changed by the format's escaping
// scheme because every name written directly is a legacy-valid name.
func FormatOf(format expfmt.Format) (Format, bool) {
	switch format.FormatType() {
	case expfmt.TypeTextPlain:
		return Format{}, true
	case expfmt.TypeOpenMetrics:
		if _, params, err := mime.ParseMediaType(string(format)); err == nil && params["version"] == expfmt.OpenMetricsVersion_2_0_0 {
			return Format{}, false
		}
		return Format{OpenMetrics: true}, true
	}
	return Format{}, false
}

// AppendGaugeHeader appends the HELP and TYPE lines of a gauge family.
// OpenMetrics escapes double quotes in HELP text, the text format does not.
func (f Format) AppendGaugeHeader(b []byte, name, help string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = AppendEscaped(b, help, f.OpenMetrics)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	return append(b, " gauge\n"...)
}

// AppendValue appends a sample value.
func (f Format) AppendValue(b []byte, v float64) []byte {
	if f.OpenMetrics {
		return appendOpenMetricsFloat(b, v)
	}
	return appendFloat(b, v)
}

// Family is one family written directly.
type Family struct {
	Name   string
	Series int // how many series Write writes
	// Write writes HELP, TYPE and every series.
	Write func(io.Writer, Format) error
}

// FlushSize is how much text a family writer hands to the response at once.
const FlushSize = 32 << 10

// Flush hands b to w and returns it emptied for reuse. On a write error b is
// returned unchanged (to go back to the pool) with the error. Family writers
// call it once their buffer holds FlushSize bytes, checking the size inline
// (a call per series would cost more than the check).
func Flush(w io.Writer, b []byte) ([]byte, error) {
	if _, err := w.Write(b); err != nil {
		return b, err
	}
	return b[:0], nil
}

var textBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, FlushSize+1024)
	return &b
}}

// GetBuffer returns a pooled buffer of at least FlushSize bytes' capacity,
// to be given back with PutBuffer.
func GetBuffer() *[]byte { return textBuffers.Get().(*[]byte) }

// PutBuffer returns a buffer from GetBuffer to the pool.
func PutBuffer(b *[]byte) { textBuffers.Put(b) }

// AppendEscaped is expfmt's escaping: backslash and newline always, the
// double quote when quoted (label values; OpenMetrics HELP text).
func AppendEscaped(b []byte, s string, quoted bool) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '"':
			if !quoted {
				continue
			}
			esc = `\"`
		default:
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, esc...)
		start = i + 1
	}
	return append(b, s[start:]...)
}

// appendFloat is expfmt's writeFloat.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case isSmallInteger(f):
		return strconv.AppendInt(b, int64(f), 10)
	}
	if m, decimals, ok := fewDecimals(f); ok {
		return appendDecimal(b, m, decimals)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// decimalScales are 10^d for the decimals fewDecimals tries.
var decimalScales = [...]float64{10, 100, 1000}

// fewDecimals reports a number below 10^6 in magnitude whose shortest
// decimal form has one to three decimals (a temperature of 52.8, a
// setting of 0.25), as the whole number m and its decimals: m / 10^d is
// f. Most parameters that are not whole numbers are such numbers, and
// writing them from m costs a fraction of strconv's shortest search.
//
// m / 10^d, both exact in a float64 and divided with one rounding, is the
// float64 nearest to the decimal m·10^-d, which is what parsing the decimal
// gives: so the decimal reads back as f. No shorter one does, since the
// loop tries fewer decimals first (and whole numbers are isSmallInteger's),
// and no other with d decimals does either, since floats below 10^6 lie
// far closer together than 10^-3. For the same reasons strconv's shortest
// 'g' form writes the same digits, in plain notation because the exponent
// is between -4 and 6.
func fewDecimals(f float64) (m int64, decimals int, ok bool) {
	if !(f > -1e6 && f < 1e6) {
		return 0, 0, false
	}
	for i, scale := range decimalScales {
		r := math.Round(f * scale)
		if r/scale == f {
			return int64(r), i + 1, true
		}
	}
	return 0, 0, false
}

// appendDecimal writes m / 10^decimals in plain notation: the sign, the
// whole part (0 when there is none) and exactly decimals digits.
func appendDecimal(b []byte, m int64, decimals int) []byte {
	if m < 0 {
		b = append(b, '-')
		m = -m
	}
	var digits [24]byte
	d := strconv.AppendInt(digits[:0], m, 10)
	for len(d) <= decimals { // 0.05 is "5" with two decimals
		d = append(d, 0)
		copy(d[1:], d)
		d[0] = '0'
	}
	whole := len(d) - decimals
	b = append(b, d[:whole]...)
	b = append(b, '.')
	return append(b, d[whole:]...)
}

// isSmallInteger reports a whole number that strconv's shortest 'g' format
// writes as plain digits (exponent below 6), so that formatting it as an
// integer gives the same text at a fraction of the cost. Most parameters
// are such numbers.
func isSmallInteger(f float64) bool {
	return f > -1e6 && f < 1e6 && f == math.Trunc(f)
}

// appendOpenMetricsFloat is expfmt's writeOpenMetricsFloat: a float always
// looks like one (".0" added to integral values).
func appendOpenMetricsFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, "1.0"...)
	case f == 0:
		return append(b, "0.0"...)
	case f == -1:
		return append(b, "-1.0"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	case isSmallInteger(f):
		return append(strconv.AppendInt(b, int64(f), 10), '.', '0')
	}
	if m, decimals, ok := fewDecimals(f); ok {
		return appendDecimal(b, m, decimals) // has its point already
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'g', -1, 64)
	for _, c := range b[start:] {
		if c == '.' || c == 'e' {
			return b
		}
	}
	return append(b, '.', '0')
}
