package traffic

import (
	"bytes"
	"sync"
)

// LogRing keeps the most recent log lines within a byte bound, for a
// diagnostics bundle: an io.Writer for a slog handler (one Write is one
// record), lines kept whole, the oldest leaving first. A line longer than
// the bound is dropped and counted. Safe for concurrent use; a nil
// *LogRing keeps nothing.
type LogRing struct {
	mu      sync.Mutex
	limit   int
	used    int
	lines   [][]byte
	dropped uint64
}

// DefaultLogRingBytes is the log ring's bound: some thousand debug lines.
const DefaultLogRingBytes = 256 << 10

// NewLogRing returns a ring of log lines bounded to limit bytes.
func NewLogRing(limit int) *LogRing { return &LogRing{limit: max(limit, 0)} }

// Write keeps p (a copy) as one line.
func (l *LogRing) Write(p []byte) (int, error) {
	if l == nil {
		return len(p), nil
	}
	line := bytes.TrimRight(p, "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(line) > l.limit {
		l.dropped++
		return len(p), nil
	}
	for l.used+len(line) > l.limit && len(l.lines) > 0 {
		l.used -= len(l.lines[0])
		l.lines[0] = nil
		l.lines = l.lines[1:]
	}
	l.lines = append(l.lines, append([]byte(nil), line...))
	l.used += len(line)
	return len(p), nil
}

// Lines returns the lines kept, oldest first, each ending in a newline.
func (l *LogRing) Lines() []byte {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	b.Grow(l.used + len(l.lines))
	for _, ln := range l.lines {
		b.Write(ln)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Dropped returns how many lines were too long to keep.
func (l *LogRing) Dropped() uint64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}
