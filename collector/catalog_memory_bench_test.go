package collector

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkCatalogRenderMemory measures the heap the collector keeps for
// described modules after a scrape (rendered labels and series, and the
// index through which the catalog's rules read any register), per register
// the store holds: 10 modules × 1000 stored registers, 500 of each
// described. Baseline: the same collector without a catalog.
func BenchmarkCatalogRenderMemory(b *testing.B) {
	const modules, perModule = 10, 1000
	snap, src, cs := catalogBenchSources(modules, perModule)
	retained := func(build func() *Collector) float64 {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		col := build()
		var d directSeries
		col.collect(make(chan prometheus.Metric, 4096), &d)
		d = directSeries{}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		runtime.KeepAlive(col)
		return float64(m1.HeapAlloc) - float64(m0.HeapAlloc)
	}
	for b.Loop() {
		with := retained(func() *Collector {
			return catalogCollector(b, snap, src, func() *CatalogState { return cs }, Options{})
		})
		base := retained(func() *Collector { return newTestCollector(b, snap, src, Options{}) })
		b.ReportMetric((with-base)/(modules*perModule), "B/register")
		b.ReportMetric(base/(modules*perModule), "baseline-B/register")
	}
}

// TestModuleValuesKeepEverySpellingApart checks that registers in the
// store's canonical spelling pack, that any other spelling is kept by its
// strings, that no two spellings share an entry, and that the values are
// emptied for the next module.
func TestModuleValuesKeepEverySpellingApart(t *testing.T) {
	var v moduleValues
	regs := [][2]string{
		{"P4", "v7"}, {"P4", "v07"}, {"P04", "v7"}, {"P4", "s7"}, {"P5", "v7"}, {"P4", "v0"},
		{"P65535", "v1099511627775"}, {"P65536", "v1"}, {"P4", "v1099511627776"}, {"P", "v1"}, {"P4", "v"},
		{"X4", "v7"}, {"P4", "v-7"}, {"P4", "v+7"}, {"P 4", "v7"}, {"P4", "vé"},
	}
	packed := map[string]bool{"P4 v7": true, "P4 s7": true, "P5 v7": true, "P4 v0": true, "P65535 v1099511627775": true}
	for round := range 2 {
		v.reset()
		for i, r := range regs {
			_, ok := packAddr(r[0], r[1])
			if ok != packed[r[0]+" "+r[1]] {
				t.Errorf("packAddr(%q, %q) packs = %v", r[0], r[1], ok)
			}
			v.observe(r[0], r[1], float64(i+round), true)
		}
		if len(v.keys) != len(regs) || len(v.odd) != len(regs)-len(packed) {
			t.Fatalf("%d entries, %d kept by strings, for %d registers (%d canonical)", len(v.keys), len(v.odd), len(regs), len(packed))
		}
		for i, r := range regs {
			if got, ok := v.read(r[0], r[1]); !ok || got != float64(i+round) {
				t.Errorf("read(%q, %q) = %v, %v; want %d", r[0], r[1], got, ok, i+round)
			}
		}
		if _, ok := v.read("P4", "v8"); ok {
			t.Error("a register never observed reads as stored")
		}
	}
	v.reset()
	if _, ok := v.read("P4", "v7"); ok {
		t.Error("a value of the previous module reads as this one's")
	}
	// Many registers: the table grows and keeps every one.
	for i := range 5000 {
		v.observe("P4", fmt.Sprintf("v%d", i), float64(i), i%7 != 0)
	}
	for i := range 5001 {
		got, ok := v.read("P4", fmt.Sprintf("v%d", i))
		if want := i < 5000 && i%7 != 0; ok != want || ok && got != float64(i) {
			t.Fatalf("read(v%d) = %v, %v; want present %v", i, got, ok, want)
		}
	}
}
