package collector

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/exposition"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// directScrape runs one scrape as the /metrics handler does and writes the
// parameter family as text.
func directScrape(t testing.TB, c *Collector) (*DirectScrape, string, error) {
	t.Helper()
	var b bytes.Buffer
	s, err := directScrapeTo(t, c, &b)
	return s, b.String(), err
}

// directScrapeTo is directScrape writing to w.
func directScrapeTo(t testing.TB, c *Collector, w io.Writer) (*DirectScrape, error) {
	t.Helper()
	s := c.NewDirectScrape()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	fams, ferr := s.Families()
	for _, f := range fams {
		if f.Name == paramValueName {
			if err := f.Write(w, exposition.Format{}); err != nil {
				return s, err
			}
		}
	}
	return s, ferr
}

// fleetStore is a real store with modules × perModule numeric parameters,
// and the snapshot that exports its modules.
func fleetStore(modules, perModule int) (*store.Store, Snapshot) {
	st := store.New()
	snap := Snapshot{Now: t0}
	for m := range modules {
		devid := fmt.Sprintf("D%03d", m)
		ups := make([]wire.ParamUpdate, perModule)
		for i := range ups {
			ups[i] = wire.ParamUpdate{Devid: devid, Pool: fmt.Sprintf("P%d", 4+i%3), Chan: 'v', Idx: i, Value: float64(i), HasValue: true}
		}
		st.ApplyPrime(st.BeginPrime(), ups, t0)
		snap.Modules = append(snap.Modules, onlineModule(devid, devid))
	}
	return st, snap
}

// TestParamStream: a source in exposition order (the store) is written from
// a walk of its own, and the scrape keeps no series for it; the answer is
// the one the series slab gives. A source that is not (or repeats a series)
// gets the slab. A source that changes its order between the two walks
// loses the series out of order, with an error, and never repeats one.
func TestParamStream(t *testing.T) {
	st, snap := fleetStore(20, 500)
	streamed := newTestCollector(t, snap, ParamSourceFunc(st.ForEachParamInLabelOrder), Options{})
	s, got, err := directScrape(t, streamed)
	if err != nil || s.direct.stream == nil || s.direct.params != nil {
		t.Fatalf("stream %v, series kept %d, err %v: a store walk in exposition order must be streamed", s.direct.stream != nil, len(s.direct.params), err)
	}
	// The same series from a source that hands them out in key order: the slab.
	slab := newTestCollector(t, snap, ParamSourceFunc(st.ForEachParam), Options{})
	s, want, err := directScrape(t, slab)
	if err != nil || s.direct.stream != nil || len(s.direct.params) != 20*500 {
		t.Fatalf("stream %v, series kept %d, err %v: a source out of order must use the slab", s.direct.stream != nil, len(s.direct.params), err)
	}
	if got != want {
		t.Fatalf("streamed answer differs from the slab's:\n%.300s\n%.300s", got, want)
	}

	// A streamed scrape does not allocate the slab: at least 48 of its 64
	// bytes per series less than the same scrape with the slab.
	allocated := func(c *Collector) float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range 5 {
			directScrapeTo(t, c, io.Discard)
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / 5 / (20 * 500)
	}
	if withStream, withSlab := allocated(streamed), allocated(slab); withSlab-withStream < 48 {
		t.Errorf("a streamed scrape allocates %.1f B per series, one with the series slab %.1f", withStream, withSlab)
	}

	// In order, but one series twice: the slab, which keeps the first.
	repeat := paramList{num("MOD1", "P4.v1", 1), num("MOD1", "P4.v1", 2), num("MOD1", "P4.v2", 3)}
	s, out, err := directScrape(t, newTestCollector(t, healthySnapshot(), repeat, Options{}))
	if s.direct.stream != nil || err == nil || strings.Count(out, `param="v1"`) != 1 || !strings.Contains(out, `param="v1",pool="P4"} 1`) {
		t.Fatalf("a repeated series: stream %v, err %v, answer\n%s", s.direct.stream != nil, err, out)
	}

	// A source in order at the scrape's walk and out of order at the writer's.
	walks := 0
	inOrder := paramList{num("MOD1", "P4.v1", 1), num("MOD1", "P4.v2", 2), num("MOD2", "P4.v1", 3)}
	changing := ParamSourceFunc(func(fn func(devid, pool, param string, value float64, numeric bool)) {
		walks++
		l := inOrder
		if walks%2 == 0 {
			l = slices.Clone(inOrder)
			slices.Reverse(l)
			l = append(l, num("MOD2", "P4.v1", 4))
		}
		l.ForEachParam(fn)
	})
	_, out, err = directScrape(t, newTestCollector(t, healthySnapshot(), changing, Options{}))
	if err == nil || !strings.Contains(err.Error(), "left out") {
		t.Fatalf("err = %v, want the series left out counted", err)
	}
	if strings.Count(out, `devid="MOD2",param="v1"`) != 1 || strings.Count(out, "\n") != 3 {
		t.Fatalf("answer of a source that changed order:\n%s", out)
	}
}

// BenchmarkStreamedScrape is TestParamStream's allocation check as a
// benchmark: B/op per scrape of 100 × 1000 series from a real store.
func BenchmarkStreamedScrape(b *testing.B) {
	st, snap := fleetStore(100, 1000)
	c := newTestCollector(b, snap, ParamSourceFunc(st.ForEachParamInLabelOrder), Options{})
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		directScrapeTo(b, c, io.Discard)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/1e5, "ns/series")
}

// shortLabel is LabelValue, faster for short ASCII.
func TestShortLabelIsLabelValue(t *testing.T) {
	for _, s := range []string{"", "P4", "v123", "0123456789abcdef", "0123456789abcdefg", "é", "v\xff", "P\x00", strings.Repeat("x", 200), strings.Repeat("é", 70)} {
		if got, want := shortLabel(s), LabelValue(s); got != want {
			t.Errorf("shortLabel(%q) = %q, LabelValue %q", s, got, want)
		}
	}
}
