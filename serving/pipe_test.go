package serving

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestPipeDeliversEveryByteInOrder: writes of every size, larger than a
// chunk too, reach the destination whole and in order, and a pipe back
// from its pool does the same.
func TestPipeDeliversEveryByteInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 3 {
		var want, got bytes.Buffer
		p := newPipe(&got)
		for range 200 {
			b := make([]byte, rng.IntN(3*pipeChunk/2))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			want.Write(b)
			if n, err := p.Write(b); n != len(b) || err != nil {
				t.Fatalf("round %d: Write = %d, %v; want %d, nil", round, n, err, len(b))
			}
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("round %d: %d bytes arrived, want the %d written, in order", round, got.Len(), want.Len())
		}
	}
}

// failingWriter fails every write after the first ok ones.
type failingWriter struct{ ok int }

var errGone = errors.New("client gone")

func (w *failingWriter) Write(b []byte) (int, error) {
	if w.ok == 0 {
		return 0, errGone
	}
	w.ok--
	return len(b), nil
}

// TestPipeReportsTheDestinationsError: once the destination fails, Write
// says so (the family writers stop) and Close returns the error; neither
// waits forever for the goroutine.
func TestPipeReportsTheDestinationsError(t *testing.T) {
	p := newPipe(&failingWriter{ok: 1})
	chunk := make([]byte, pipeChunk)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = p.Write(chunk)
	}
	if !errors.Is(err, errGone) {
		t.Errorf("Write after the destination failed: %v, want %v", err, errGone)
	}
	if err := p.Close(); !errors.Is(err, errGone) {
		t.Errorf("Close: %v, want %v", err, errGone)
	}
}
