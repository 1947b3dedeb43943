package cloudsim

import (
	"testing"
	"time"
)

// BenchmarkSetParamPush measures one parameter change pushed as a live
// delta to three bound sessions (encoded once, written three times).
func BenchmarkSetParamPush(b *testing.B) {
	c := New(Options{ParamsPerModule: 100})
	if err := c.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tok := login(b, c)
	d := c.Devids()[0]
	for i := 0; i < 3; i++ {
		w := rawDial(b, c, tok)
		sid := w.join()
		_ = w.nc.SetDeadline(timeZero)
		go func() {
			for {
				if _, err := w.read(); err != nil {
					return
				}
			}
		}()
		c.mu.Lock()
		c.syncSessionsLocked()
		c.sessions[sid].bound[d] = true
		c.mu.Unlock()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.SetParam(d, "P4.v1", float64(i%600)/10)
	}
}

// BenchmarkPrimeBody measures building and encoding one module's prime.
func BenchmarkPrimeBody(b *testing.B) {
	c := New(Options{Modules: 1})
	if err := c.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tok := login(b, c)
	body := map[string]any{"modules": c.Devids()}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := call(b, c, "POST", "/v1/modules/parameters", tok, body); r.status != 200 {
			b.Fatalf("prime = %d", r.status)
		}
	}
}

var timeZero = time.Time{}
