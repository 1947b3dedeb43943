package traffic

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// The JSON-lines form of the traffic record, shared by a capture file
// (serve --capture.file), the traffic.jsonl of a diagnostics bundle and a
// replay (simulate --replay):
//
//	line 1:  {"format":"bragerone-traffic","version":1,"started":"…","settings":{…}}
//	line 2…: one Record per line, oldest first
//
// A reader refuses a file whose first line is not such a header, whose
// format is another, or whose version is newer than it knows; a line that
// is not one whole Record (malformed, or cut short by a crash: a file that
// does not end in a newline) is refused with its line number.
const (
	// Format names the form in the header.
	Format = "bragerone-traffic"
	// Version is the version of the form this package writes and the
	// newest it reads.
	Version = 1
)

// Header is the first line of a JSON-lines traffic file.
type Header struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Started time.Time `json:"started"`
	// Settings are what shaped the traffic (the exporter's version, the
	// objects watched, the API and assets hosts, the poll intervals...),
	// as text; Snapshot is set on a file that starts with a snapshot of
	// the module lists and a prime (a rotated capture).
	Settings map[string]string `json:"settings,omitempty"`
	Snapshot bool              `json:"snapshot,omitempty"`
}

// NewHeader returns a Header of this package's format and version.
func NewHeader(started time.Time, settings map[string]string) Header {
	return Header{Format: Format, Version: Version, Started: started.UTC(), Settings: settings}
}

// Writer writes a header and then Records as JSON lines. Safe for
// concurrent use; each Write is one whole line.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	n   int64
	err error
}

// NewWriter writes h (Format and Version filled in when empty) to w and
// returns a Writer for the records that follow.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if h.Format == "" {
		h.Format = Format
	}
	if h.Version == 0 {
		h.Version = Version
	}
	wr := &Writer{w: w}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if err := wr.line(b); err != nil {
		return nil, err
	}
	return wr, nil
}

// Write writes one record as a line.
func (w *Writer) Write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.line(b)
}

func (w *Writer) line(b []byte) error {
	if w.err != nil {
		return w.err
	}
	b = append(b, '\n')
	n, err := w.w.Write(b)
	w.n += int64(n)
	w.err = err
	return err
}

// Written returns the bytes written so far, header included.
func (w *Writer) Written() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// LineError is a line of a traffic file that could not be read.
type LineError struct {
	Line int // 1-based; line 1 is the header
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("traffic file line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ErrTruncated is a last line without its newline: the file was cut short.
var ErrTruncated = errors.New("truncated: the last line has no newline")

// maxLine bounds one line: a 100-module prime is about 2 MB of JSON.
const maxLine = 64 << 20

// Read reads a whole JSON-lines traffic file: its header and its records,
// oldest first. A malformed or truncated line fails the whole read with a
// *LineError naming the line; nothing read before it is returned.
func Read(r io.Reader) (Header, []Record, error) {
	var h Header
	var recs []Record
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := readLine(br)
		if err == io.EOF && len(b) == 0 {
			if line == 1 {
				return Header{}, nil, &LineError{Line: 1, Err: errors.New("empty file: no header")}
			}
			return h, recs, nil
		}
		if err != nil && err != io.EOF {
			return Header{}, nil, &LineError{Line: line, Err: err}
		}
		if err == io.EOF {
			return Header{}, nil, &LineError{Line: line, Err: ErrTruncated}
		}
		if line == 1 {
			if err := decodeStrict(b, &h); err != nil {
				return Header{}, nil, &LineError{Line: 1, Err: fmt.Errorf("header: %w", err)}
			}
			if h.Format != Format {
				return Header{}, nil, &LineError{Line: 1, Err: fmt.Errorf("header: format %q, want %q", h.Format, Format)}
			}
			if h.Version < 1 || h.Version > Version {
				return Header{}, nil, &LineError{Line: 1, Err: fmt.Errorf("header: version %d, this build reads 1 to %d", h.Version, Version)}
			}
			continue
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return Header{}, nil, &LineError{Line: line, Err: errors.New("empty line")}
		}
		var rec Record
		if err := decodeStrict(b, &rec); err != nil {
			return Header{}, nil, &LineError{Line: line, Err: err}
		}
		switch rec.Kind {
		case KindREST, KindEvent, KindTransition:
		default:
			return Header{}, nil, &LineError{Line: line, Err: fmt.Errorf("unknown record kind %q", rec.Kind)}
		}
		recs = append(recs, rec)
	}
}

// readLine returns one line without its newline; io.EOF with a non-empty
// line means the line had no newline.
func readLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		b, err := br.ReadSlice('\n')
		out = append(out, b...)
		if len(out) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return out[:len(out)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return out, err
		}
	}
}

// decodeStrict decodes exactly one JSON object from b.
func decodeStrict(b []byte, v any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}
