package catalog

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkLoad3Modules is a full load of the fixture site for three
// modules (discovery, parsing of every asset, resolution), from memory.
func BenchmarkLoad3Modules(b *testing.B) {
	f := siteFetcher(b)
	mods := []ModuleSpec{modA, modB, modC}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(context.Background(), f, mods, Options{Language: "en"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDisplay is the per-series cost of a display value at scrape time.
func BenchmarkDisplay(b *testing.B) {
	c, _ := loadSite(b, Options{})
	live := values(map[string]float64{"P4.v7": 53, "P4.u7": 49})
	p := c.Module("MOD-A").Lookup("P4", "v7")
	b.ReportAllocs()
	for b.Loop() {
		p.Display(live)
	}
}

// BenchmarkDisplayComputed is Display of a computed state (a rule over a
// bit of another status register, labelled from the unit's options).
func BenchmarkDisplayComputed(b *testing.B) {
	c, _ := loadSite(b, Options{})
	live := values(map[string]float64{"P5.s10": 0, "P5.s4": 1 << 10})
	p := c.Module("MOD-A").Lookup("P5", "s10")
	b.ReportAllocs()
	for b.Loop() {
		p.Display(live)
	}
}

// largeSite is the fixture site grown to the live bundle's recorded size:
// 1 500 inline definitions built by a builder, a 466-symbol menu and 1 500
// labels.
func largeSite(b *testing.B) *memFetcher {
	f := siteFetcher(b)
	var defs, menu, labels strings.Builder
	for i := 100; i < 1600; i++ {
		fmt.Fprintf(&defs, ",'PARAM_P7_%d':mkP4({'id':0x%x,'number':0x%x,'name':'parameters.PARAM_P7_%d'})", i, 0x3000+i, i, i)
		fmt.Fprintf(&labels, ",'PARAM_P7_%d':'Parameter\\x20%d'", i, i)
		if i < 566 {
			fmt.Fprintf(&menu, ",{'permissionModule':_0x521864['DISPLAY_PARAMETER_LEVEL_1'],'parameter':_0x3e8c51(_0x1cc358['READ'],'PARAM_P7_%d')}", i)
		}
	}
	idx := strings.Replace(string(f.files["/assets/index-Q1w2E3r4.js"]), "'PARAM_P4_9':mkP4({'id':0x1a09,'number':0x9})", "'PARAM_P4_9':mkP4({'id':0x1a09,'number':0x9})"+defs.String(), 1)
	f.set("/assets/index-Q1w2E3r4.js", idx)
	m := strings.Replace(string(f.files["/assets/module.menu-BNvCCsxi.js"]), "_0x3e8c51(_0x1cc358['READ'],'PARAM_UNKNOWN_1')}", "_0x3e8c51(_0x1cc358['READ'],'PARAM_UNKNOWN_1')}"+menu.String(), 1)
	f.set("/assets/module.menu-BNvCCsxi.js", m)
	p := strings.Replace(string(f.files["/assets/parameters-Pe1.js"]), "'PARAM_P4_1':'Boiler temperature'", "'PARAM_P4_1':'Boiler temperature'"+labels.String(), 1)
	f.set("/assets/parameters-Pe1.js", p)
	return f
}

// BenchmarkLoadLarge is a full load of the grown site for three modules;
// it also reports the heap a loaded catalog keeps (retained-B).
func BenchmarkLoadLarge(b *testing.B) {
	f := largeSite(b)
	mods := []ModuleSpec{modA, modB, modC}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := Load(context.Background(), f, mods, Options{Language: "en"})
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err != nil || len(c.Module("MOD-C").Params()) < 466 {
		b.Fatalf("large site: %v", err)
	}
	retained := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	runtime.KeepAlive(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(context.Background(), f, mods, Options{Language: "en"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(retained, "retained-B")
}
