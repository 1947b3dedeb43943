package exposition

import (
	"bytes"
	"math"
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
			mf := &dto.MetricFamily{Name: new(familyName), Help: new(help), Type: dto.MetricType_GAUGE.Enum(),
				Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: new(v)}}}}
			var want bytes.Buffer
			var err error
			if om {
				_, err = expfmt.MetricFamilyToOpenMetrics(&want, mf)
			} else {
				_, err = expfmt.MetricFamilyToText(&want, mf)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := append(f.AppendGaugeHeader(nil, familyName, help), familyName+" "...)
			got = append(f.AppendValue(got, v), '\n')
			if string(got) != want.String() {
				t.Errorf("OpenMetrics %v, help %q, value %v: %q, expfmt %q", om, help, v, got, want.String())
			}
		}
		for _, v := range values {
			mf := &dto.MetricFamily{Name: new("x"), Type: dto.MetricType_GAUGE.Enum(), Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: new(v)}}}}
			var want bytes.Buffer
			if om {
				_, _ = expfmt.MetricFamilyToOpenMetrics(&want, mf)
			} else {
				_, _ = expfmt.MetricFamilyToText(&want, mf)
			}
			if got := "# TYPE x gauge\nx " + string(f.AppendValue(nil, v)) + "\n"; got != want.String() {
				t.Errorf("OpenMetrics %v, value %v: %q, expfmt %q", om, v, got, want.String())
			}
		}
	}
}
