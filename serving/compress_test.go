package serving

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestCompressorGzipBySize checks that a small answer is compressed by the
// stateless writer (no tables kept between scrapes) and a large one by the
// pooled BestSpeed writer, each producing a body that reads back whole. The
// two writers' bodies for the same text differ, so comparing with each
// writer's own output says which one served.
func TestCompressorGzipBySize(t *testing.T) {
	text := []byte(strings.Repeat("bragerone_parameter_value{devid=\"RDXEQRXNOP\",param=\"v12\",pool=\"P4\"} 52.8\n", 3000))
	chunks := func(w io.Writer) {
		for rest := text; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			if _, err := w.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
	}
	reference := func(level int) []byte {
		var b bytes.Buffer
		zw, err := gzip.NewWriterLevel(&b, level)
		if err != nil {
			t.Fatal(err)
		}
		chunks(zw)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	stateless, stateful := reference(gzip.StatelessCompression), reference(gzipLevel)
	if bytes.Equal(stateless, stateful) {
		t.Fatal("the two writers' bodies are the same; the test cannot tell them apart")
	}
	for _, tc := range []struct {
		series int
		want   []byte
		name   string
	}{
		{0, stateless, "stateless"},
		{statefulGzipSeries - 1, stateless, "stateless"},
		{statefulGzipSeries, stateful, "BestSpeed"},
		{100_000, stateful, "BestSpeed"},
	} {
		for round := 0; round < 2; round++ { // a writer back from the pool as well as a new one
			rec := httptest.NewRecorder()
			out, done := compressor("gzip", tc.series, rec)
			chunks(out)
			done()
			body := rec.Body.Bytes()
			if !bytes.Equal(body, tc.want) {
				t.Errorf("%d series, round %d: the body is not the %s writer's (%d bytes, want %d)", tc.series, round, tc.name, len(body), len(tc.want))
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%d series: %v", tc.series, err)
			}
			got, err := io.ReadAll(zr)
			if err != nil || !bytes.Equal(got, text) {
				t.Errorf("%d series, round %d: the body reads back as %d bytes (err %v), want the %d written", tc.series, round, len(got), err, len(text))
			}
		}
	}
}
