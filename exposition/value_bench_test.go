package exposition

import (
	"strconv"
	"testing"
)

// BenchmarkAppendValue writes 1,000 parameter values of the kinds modules
// report (a quarter each whole numbers, halves, tenths and hundredths) in
// the Prometheus text format, as the /metrics handler writes them
// ("handler") and as it wrote them before values with few decimals had a
// path of their own ("before": whole numbers as integers, the rest in
// strconv's shortest form; the same text).
func BenchmarkAppendValue(b *testing.B) {
	values := make([]float64, 1000)
	for i := range values {
		switch v := float64(i); i % 4 {
		case 0:
			values[i] = v
		case 1:
			values[i] = v + 0.5
		case 2:
			values[i] = float64(i*10+3) / 10
		case 3:
			values[i] = float64(i*100+7) / 100
		}
	}
	buf := make([]byte, 0, 64)
	perValue := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(values)), "ns/value")
	}
	b.Run("handler", func(b *testing.B) {
		for b.Loop() {
			for _, v := range values {
				buf = Format{}.AppendValue(buf[:0], v)
			}
		}
		perValue(b)
	})
	b.Run("before", func(b *testing.B) {
		for b.Loop() {
			for _, v := range values {
				if isSmallInteger(v) {
					buf = strconv.AppendInt(buf[:0], int64(v), 10)
				} else {
					buf = strconv.AppendFloat(buf[:0], v, 'g', -1, 64)
				}
			}
		}
		perValue(b)
	})
}
