package collector

import (
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// benchStore is 100 modules × 1000 numeric parameters, iterated module by
// module as a store keyed by devid would.
type benchStore struct {
	devids []string
	pools  []string
	params []string
	values []float64
}

func newBenchStore(modules, perModule int) (*benchStore, Snapshot) {
	s := &benchStore{}
	snap := healthySnapshot()
	snap.Modules = nil
	for m := range modules {
		d := fmt.Sprintf("MOD%04d", m)
		s.devids = append(s.devids, d)
		snap.Modules = append(snap.Modules, onlineModule(d, d))
	}
	for i := range perModule {
		s.pools = append(s.pools, fmt.Sprintf("P%d", 4+i%3))
		s.params = append(s.params, fmt.Sprintf("%c%d", "vsunx"[i%5], i))
		s.values = append(s.values, float64(i)*0.5)
	}
	return s, snap
}

func (s *benchStore) ForEachParam(fn func(devid, pool, param string, value float64, numeric bool)) {
	for _, d := range s.devids {
		for i := range s.params {
			fn(d, s.pools[i], s.params[i], s.values[i], true)
		}
	}
}

func benchCollect(b *testing.B, opts Options) {
	store, snap := newBenchStore(100, 1000)
	c := newTestCollector(b, snap, store, opts)
	ch := make(chan prometheus.Metric, 1024)
	done := make(chan int)
	go func() {
		n := 0
		for range ch {
			n++
		}
		done <- n
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Collect(ch)
	}
	b.StopTimer()
	close(ch)
	<-done
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/series")
}

// BenchmarkCollectParams measures Collect alone (what the collector itself
// costs per scrape) for 100 modules × 1000 parameters.
func BenchmarkCollectParams(b *testing.B) {
	b.Run("unfiltered", func(b *testing.B) { benchCollect(b, Options{}) })
	b.Run("filtered", func(b *testing.B) { benchCollect(b, Options{Exclude: []string{"*.x*"}}) })
	b.Run("capped", func(b *testing.B) { benchCollect(b, Options{MaxSeries: 50000}) })
}

// BenchmarkScrapeParams measures a whole scrape: registry Gather (which
// checks and sorts every series) plus text encoding, for the same store.
func BenchmarkScrapeParams(b *testing.B) {
	store, snap := newBenchStore(100, 1000)
	c := newTestCollector(b, snap, store, Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100000, "ns/series")
}

// BenchmarkCollectObjects measures the series of the objects themselves
// (session, push, ladder, events: about fifty per object) and of their
// modules, without parameters, for 50 objects of 2 modules each.
func BenchmarkCollectObjects(b *testing.B) {
	snap := healthySnapshot()
	proto := snap.Objects[0]
	snap.Objects, snap.Modules = nil, nil
	for i := range 50 {
		o := proto
		o.ID, o.Name = 1000+i, fmt.Sprintf("Object %d", i)
		snap.Objects = append(snap.Objects, o)
		for j := range 2 {
			m := onlineModule(fmt.Sprintf("MOD%02d%d", i, j), "m")
			m.ObjectID = o.ID
			snap.Modules = append(snap.Modules, m)
		}
	}
	c := newTestCollector(b, snap, nil, Options{})
	ch := make(chan prometheus.Metric, 1024)
	done := make(chan int)
	go func() {
		n := 0
		for range ch {
			n++
		}
		done <- n
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Collect(ch)
	}
	b.StopTimer()
	close(ch)
	series := <-done
	b.ReportMetric(float64(series)/float64(b.N), "series/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(series), "ns/series")
}
