package transport

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkEventData frames the JSON of a live parameter delta as the cloud
// pushes it (one module, a few dozen values with their meta): the syntax
// check every event pays before its arguments reach the payload decoders.
func BenchmarkEventData(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`["app:modules:parameters:change",{"FTTCTBSLCE":{"P4":{`)
	for i := range 40 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"v%d":{"value":%d.5,"storable":true,"updatedAt":1757000%03d,"name":"caf\u00e9 %d"}`, i, i, i, i)
	}
	sb.WriteString(`}}}]`)
	data := []byte(sb.String())
	if _, err := eventData(data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eventData(data); err != nil {
			b.Fatal(err)
		}
	}
}
