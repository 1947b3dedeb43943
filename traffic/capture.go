package traffic

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// CaptureConfig configures a Capture.
type CaptureConfig struct {
	// Path is the file written; rotated files are Path.1 (the newest) to
	// Path.Keep.
	Path string
	// MaxBytes is the size at which the file is rotated (≤ 0: never); Keep
	// is how many rotated files are kept besides Path (0: none).
	MaxBytes int64
	Keep     int
	// Settings go into each file's header.
	Settings map[string]string
	// Snapshot says whether a record belongs to the snapshot each rotated
	// file starts with, and under which key (the latest record of a key
	// is kept): the module lists and the primes, so that a file replays
	// on its own. Nil: no snapshot.
	Snapshot func(Record) (key string, ok bool)
	// Queue bounds the records waiting to be written (default 4096): a
	// record that finds the queue full is dropped and counted, so the
	// caller (the realtime loop) never waits for the disk.
	Queue int
	Now   func() time.Time
}

// Capture writes records to a JSON-lines file (NewWriter's form) in the
// background, rotating it by size; each file after the first starts with a
// snapshot (Header.Snapshot set). Record never blocks.
type Capture struct {
	cfg  CaptureConfig
	in   chan Record
	done chan struct{}

	qmu          sync.RWMutex // guards closed against Record's send
	closed       bool
	queueDropped atomic.Uint64

	mu       sync.Mutex
	f        *os.File
	w        *Writer
	snapKeys []string
	snap     map[string]Record
	dropped  uint64
	written  uint64
	files    uint64
	err      error
	after    int // records written since the file's header and snapshot
}

// OpenCapture opens cfg.Path (an existing file there is rotated away first,
// so an earlier capture is kept) and starts the writer.
func OpenCapture(cfg CaptureConfig) (*Capture, error) {
	if cfg.Path == "" {
		return nil, errors.New("capture: no file")
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 4096
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Capture{cfg: cfg, in: make(chan Record, cfg.Queue), done: make(chan struct{}), snap: map[string]Record{}}
	if st, err := os.Stat(cfg.Path); err == nil && st.Size() > 0 {
		if err := c.shift(); err != nil {
			return nil, err
		}
	}
	if err := c.open(false); err != nil {
		return nil, err
	}
	go c.run()
	return c, nil
}

// Record queues r to be written; it reports false when the queue was full
// (r dropped and counted) or the capture is closed.
func (c *Capture) Record(r Record) bool {
	if c == nil {
		return false
	}
	c.qmu.RLock()
	defer c.qmu.RUnlock()
	if c.closed {
		return false
	}
	select {
	case c.in <- r:
		return true
	default:
		c.queueDropped.Add(1)
		return false
	}
}

// Close writes what is queued and closes the file.
func (c *Capture) Close() error {
	if c == nil {
		return nil
	}
	c.qmu.Lock()
	if !c.closed {
		c.closed = true
		close(c.in)
	}
	c.qmu.Unlock()
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != nil {
		if err := c.f.Close(); err != nil && c.err == nil {
			c.err = err
		}
		c.f = nil
	}
	return c.err
}

// CaptureStats is a capture's account of itself.
type CaptureStats struct {
	Written, Dropped, Files uint64
	Err                     string
}

// Stats returns the capture's figures now.
func (c *Capture) Stats() CaptureStats {
	if c == nil {
		return CaptureStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := CaptureStats{Written: c.written, Dropped: c.dropped + c.queueDropped.Load(), Files: c.files}
	if c.err != nil {
		s.Err = c.err.Error()
	}
	return s
}

func (c *Capture) run() {
	defer close(c.done)
	for r := range c.in {
		c.write(r)
	}
}

func (c *Capture) write(r Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		c.dropped++
		return
	}
	if c.cfg.MaxBytes > 0 && c.w.Written()+int64(r.Size()) > c.cfg.MaxBytes && c.sinceSnapshot() {
		if err := c.rotate(); err != nil {
			c.err = fmt.Errorf("capture: rotating %s: %w", c.cfg.Path, err)
			c.dropped++
			return
		}
	}
	if err := c.w.Write(r); err != nil {
		c.err = fmt.Errorf("capture: writing %s: %w", c.cfg.Path, err)
		c.dropped++
		return
	}
	c.written++
	c.after++
	if c.cfg.Snapshot != nil {
		if key, ok := c.cfg.Snapshot(r); ok {
			if _, seen := c.snap[key]; !seen {
				c.snapKeys = append(c.snapKeys, key)
			}
			c.snap[key] = r
		}
	}
}

// sinceSnapshot: records were written after the file's snapshot (a file
// holding its snapshot only is not rotated, whatever its size).
func (c *Capture) sinceSnapshot() bool { return c.after > 0 }

// rotate closes the file, shifts the rotated ones and opens a new file
// that starts with the snapshot.
func (c *Capture) rotate() error {
	if err := c.f.Close(); err != nil {
		return err
	}
	c.f = nil
	if err := c.shift(); err != nil {
		return err
	}
	return c.open(true)
}

// shift renames Path.(Keep-1) to Path.Keep, ..., Path to Path.1; with Keep
// 0, Path is removed.
func (c *Capture) shift() error {
	if c.cfg.Keep <= 0 {
		return os.Remove(c.cfg.Path)
	}
	_ = os.Remove(fmt.Sprintf("%s.%d", c.cfg.Path, c.cfg.Keep))
	for i := c.cfg.Keep - 1; i >= 1; i-- {
		from := fmt.Sprintf("%s.%d", c.cfg.Path, i)
		if err := os.Rename(from, fmt.Sprintf("%s.%d", c.cfg.Path, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return os.Rename(c.cfg.Path, c.cfg.Path+".1")
}

// open creates Path and writes its header (and, for a rotated file, the
// snapshot).
func (c *Capture) open(snapshot bool) error {
	f, err := os.OpenFile(c.cfg.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	h := NewHeader(c.cfg.Now(), c.cfg.Settings)
	h.Snapshot = snapshot && len(c.snapKeys) > 0
	w, err := NewWriter(f, h)
	if err != nil {
		f.Close()
		return fmt.Errorf("capture: %w", err)
	}
	c.f, c.w, c.after = f, w, 0
	c.files++
	if h.Snapshot {
		for _, k := range c.snapKeys {
			if err := w.Write(c.snap[k]); err != nil {
				return fmt.Errorf("capture: %w", err)
			}
		}
	}
	return nil
}
