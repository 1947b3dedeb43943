package exposition

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// familyName is the name of the families the tests write.
const familyName = "bragerone_parameter_value"

func TestAppendEscapedAndFloat(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b`, `a\b`, "a\nb", "\"\\\n\"", "zażółć"} {
		mf := &dto.MetricFamily{Name: new(familyName), Help: new(s), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{{Name: new("devid"), Value: new(s)}}, Gauge: &dto.Gauge{Value: new(1.0)}}}}
		var want bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
		got := "# HELP " + familyName + " " + string(AppendEscaped(nil, s, false)) + "\n# TYPE " + familyName + " gauge\n" +
			familyName + `{devid="` + string(AppendEscaped(nil, s, true)) + `"} 1` + "\n"
		if got != want.String() {
			t.Errorf("%q: %q, expfmt %q", s, got, want.String())
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 2, 0.5, 1e21, 1e-7, math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, 123.456} {
		mf := &dto.MetricFamily{Name: new("x"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: new(f)}}}}
		var want bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
		if got := "# TYPE x gauge\nx " + string(appendFloat(nil, f)) + "\n"; got != want.String() {
			t.Errorf("%v: %q, expfmt %q", f, got, want.String())
		}
	}
}

// TestTextFormatSpelling: HELP lines and values of a directly written gauge
// family are spelled as expfmt spells them in each text format, for help
// texts and values no fixture carries.
func TestTextFormatSpelling(t *testing.T) {
	helps := []string{"", "plain", `say "hi"`, `a\b`, "two\nlines", "\"\\\n\"", "zażółć"}
	values := []float64{0, math.Copysign(0, -1), 1, -1, 2, -3, 0.5, 100, 1e21, 1e-7, 123456789, math.NaN(), math.Inf(1), math.Inf(-1),
		math.MaxFloat64, math.SmallestNonzeroFloat64, 123.456, float64(1 << 53), 999999, -999999, 1e6, -1e6, 100000, 123456, 0.1, -7.5, 1e5 + 0.5}
	for _, om := range []bool{false, true} {
		f := Format{OpenMetrics: om}
		for i, help := range helps {
			v := values[i%len(values)]
			want := expfmtGauge(t, familyName, &help, v, om)
			got := append(f.AppendGaugeHeader(nil, familyName, help), familyName+" "...)
			got = append(f.AppendValue(got, v), '\n')
			if string(got) != want {
				t.Errorf("OpenMetrics %v, help %q, value %v: %q, expfmt %q", om, help, v, got, want)
			}
		}
		for _, v := range values {
			if got, want := "# TYPE x gauge\nx "+string(f.AppendValue(nil, v))+"\n", expfmtValue(t, v, om); got != want {
				t.Errorf("OpenMetrics %v, value %v: %q, expfmt %q", om, v, got, want)
			}
		}
	}
}

// expfmtGauge is how expfmt writes a gauge family of one series of value v
// (with HELP when help is not nil), in the OpenMetrics or the Prometheus
// text format.
func expfmtGauge(t testing.TB, name string, help *string, v float64, om bool) string {
	mf := &dto.MetricFamily{Name: &name, Help: help, Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: new(v)}}}}
	var b bytes.Buffer
	var err error
	if om {
		_, err = expfmt.MetricFamilyToOpenMetrics(&b, mf)
	} else {
		_, err = expfmt.MetricFamilyToText(&b, mf)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// expfmtValue is how expfmt writes v as the value of a gauge x.
func expfmtValue(t testing.TB, v float64, om bool) string { return expfmtGauge(t, "x", nil, v, om) }

// TestFewDecimalsSpelledAsExpfmt: values with up to three decimals, which
// take the short path, are spelled as expfmt spells them, and so are their
// neighbours, which must not.
func TestFewDecimalsSpelledAsExpfmt(t *testing.T) {
	values := []float64{0.5, -0.5, 52.8, -52.8, 0.1, 0.2, 0.3, 0.1 + 0.2, 0.001, -0.001, 0.0005, 0.0001, 0.999, 1.001,
		999999.9, 999999.99, 999999.999, -999999.999, 999999.9999, 123.456, 123.4567, 0.05, 0.005, 21.25, 1e5 + 0.125,
		math.Nextafter(52.8, 100), math.Nextafter(52.8, 0), math.Nextafter(0.001, 1), 1.0 / 3, 2.0 / 3}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		d := []int64{10, 100, 1000}[rng.IntN(3)]
		values = append(values, float64(rng.Int64N(2e6*d)-1e6*d)/float64(d), (rng.Float64()-0.5)*2e6, rng.Float64())
	}
	short := 0
	for _, om := range []bool{false, true} {
		f := Format{OpenMetrics: om}
		for _, v := range values {
			if _, _, ok := fewDecimals(v); ok {
				short++
			}
			if got, want := "# TYPE x gauge\nx "+string(f.AppendValue(nil, v))+"\n", expfmtValue(t, v, om); got != want {
				t.Errorf("OpenMetrics %v, value %v: %q, expfmt %q", om, v, got, want)
			}
		}
	}
	if short < 2*18000 { // the random ones with decimals, bar the whole numbers among them
		t.Errorf("only %d of %d values took the short path", short, 2*len(values))
	}
}

// FuzzAppendValue: every float64 is spelled as expfmt spells it, in both
// text formats.
func FuzzAppendValue(f *testing.F) {
	for _, v := range []float64{0, 1, -1, 0.5, 52.8, 0.001, 0.0005, 999999.999, 1e6, 1e21, 1e-7, math.Inf(1)} {
		f.Add(math.Float64bits(v))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		v := math.Float64frombits(bits)
		for _, om := range []bool{false, true} {
			if got, want := "# TYPE x gauge\nx "+string(Format{OpenMetrics: om}.AppendValue(nil, v))+"\n", expfmtValue(t, v, om); got != want {
				t.Errorf("OpenMetrics %v, value %v (%#x): %q, expfmt %q", om, v, bits, got, want)
			}
		}
	})
}
