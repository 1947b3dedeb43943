package wire_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/wire"
)

// primePayload builds a one-module prime body of about n entries shaped like
// the field's (pools P4-P6, channels v/s/u/n/x, object and scalar bodies).
func primePayload(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"FTTCTBSLCE":{`)
	pools := []string{"P4", "P5", "P6"}
	chans := []string{"v", "s", "u", "n", "x"}
	per := n / len(pools)
	for pi, p := range pools {
		if pi > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:{", p)
		for i := range per {
			if i > 0 {
				b.WriteByte(',')
			}
			ch := chans[i%len(chans)]
			idx := i / len(chans)
			switch ch {
			case "v":
				fmt.Fprintf(&b, `"v%d":{"value":%d.5,"storable":true,"updatedAt":1757000%03d}`, idx, i, i%1000)
			case "s":
				fmt.Fprintf(&b, `"s%d":%d`, idx, i%16)
			case "u":
				fmt.Fprintf(&b, `"u%d":{"value":%d}`, idx, i%40)
			default:
				fmt.Fprintf(&b, `"%s%d":{"value":%d,"createdAt":1757000000}`, ch, idx, i)
			}
		}
		b.WriteByte('}')
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

func BenchmarkDecodeParameters(b *testing.B) {
	data := primePayload(800)
	ups, err := wire.DecodeParameters(data)
	if err != nil || len(ups) < 790 {
		b.Fatalf("%d updates, %v", len(ups), err)
	}
	b.Run("DecodeParameters", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := wire.DecodeParameters(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The generic decode alone, before any flattening: the yardstick.
	b.Run("encoding_json_generic", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var v map[string]any
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestPrimePayloadDecodes(t *testing.T) {
	ups, err := wire.DecodeParameters(primePayload(800))
	if err != nil || len(ups) != 798 {
		t.Fatalf("%d updates, %v", len(ups), err)
	}
}
