package serving

import (
	"io"
	"sync"
	"sync/atomic"
)

// pipeChunk is how much text a piped writer collects before handing it to
// its compressing goroutine; pipeChunks buffers go round between the two.
const (
	pipeChunk  = 64 << 10
	pipeChunks = 3
)

// pipedWriter compresses on a goroutine of its own what is written to it,
// so that on a machine of two cores or more writing a large answer's text
// and compressing it overlap: Prometheus reads the whole body before it
// parses any of it, so the answer's time adds to every scrape's duration.
// Writes are copied into the current chunk; a full chunk goes to the
// goroutine, which writes it to dst. A pipedWriter is used by one goroutine
// (the handler's) and reused through pipes.
type pipedWriter struct {
	dst  io.Writer
	cur  []byte
	full chan []byte
	free chan []byte
	done chan struct{}
	err  atomic.Pointer[error] // dst's first error
}

var pipes = sync.Pool{New: func() any {
	p := &pipedWriter{full: make(chan []byte, pipeChunks), free: make(chan []byte, pipeChunks)}
	for range pipeChunks - 1 {
		p.free <- make([]byte, 0, pipeChunk)
	}
	p.cur = make([]byte, 0, pipeChunk)
	return p
}}

// newPipe starts a pipe into dst.
func newPipe(dst io.Writer) *pipedWriter {
	p := pipes.Get().(*pipedWriter)
	p.dst, p.done = dst, make(chan struct{})
	p.err.Store(nil)
	go p.drain()
	return p
}

// drain writes every full chunk to dst and hands it back. After an error it
// keeps handing chunks back unwritten, so that Write never waits forever.
func (p *pipedWriter) drain() {
	defer close(p.done)
	for b := range p.full {
		if p.err.Load() == nil {
			if _, err := p.dst.Write(b); err != nil {
				p.err.Store(&err)
			}
		}
		p.free <- b[:0]
	}
}

// Write copies b into the pipe. It returns dst's error once one occurred.
func (p *pipedWriter) Write(b []byte) (int, error) {
	if e := p.err.Load(); e != nil {
		return 0, *e
	}
	n := len(b)
	for len(b) > 0 {
		k := min(len(b), cap(p.cur)-len(p.cur))
		p.cur = append(p.cur, b[:k]...)
		b = b[k:]
		if len(p.cur) == cap(p.cur) {
			p.full <- p.cur
			p.cur = <-p.free
		}
	}
	return n, nil
}

// Close hands over what is left, waits until dst has all of it and returns
// the pipe to its pool. It returns dst's first error.
func (p *pipedWriter) Close() error {
	if len(p.cur) > 0 {
		p.full <- p.cur
		p.cur = <-p.free
	}
	close(p.full)
	<-p.done
	var err error
	if e := p.err.Load(); e != nil {
		err = *e
	}
	p.dst = nil
	p.full = make(chan []byte, pipeChunks) // a closed channel cannot be reopened
	pipes.Put(p)
	return err
}
