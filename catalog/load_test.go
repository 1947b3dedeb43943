package catalog

import (
	"context"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The worked example of docs/spec.md, end to end over the fixture site:
// P4.v7 = 53 with unit register P4.u7 = 49 is "Boiler power 5.3 kW", found
// from the register through the inverse index.
func TestWorkedExample(t *testing.T) {
	live := values(map[string]float64{"P4.v7": 53, "P4.u7": 49})
	spec := modA
	spec.Values = live
	c, _ := loadSite(t, Options{}, spec)
	m := c.Module("MOD-A")
	p := m.Lookup("P4", "v7")
	if p == nil {
		t.Fatalf("P4.v7 not in the inverse index:\n%s", describe(m))
	}
	if p.Symbol != "PARAM_P4_7" || p.Name != "Boiler power" || p.Unit != "kW" || strings.Join(p.Menu, "/") != "Boiler settings" {
		t.Fatalf("got %s %q %q %q", p.Symbol, p.Name, p.Unit, p.Menu)
	}
	v, label, ok := p.Display(live)
	if !ok || v != 5.3 || label != "" {
		t.Fatalf("Display = %v %q %v, want 5.3", v, label, ok)
	}
	if c.IndexAsset() != "index-Q1w2E3r4.js" || c.Language() != "en" {
		t.Fatalf("index %q language %q", c.IndexAsset(), c.Language())
	}
	if math.IsNaN(v) {
		t.Fatal("NaN")
	}
}

// The whole fixture with live values: every step of the resolution chain
// on the real-style assets.
func TestFixtureDisplay(t *testing.T) {
	live := values(map[string]float64{
		"P4.v1": 185, "P4.u1": 47, "P4.s1": 0,
		"P4.v7": 53, "P4.u7": 49,
		"P4.v59": -27473, "P4.v60": 0,
		"P5.s4": 1 << 10, "P5.s10": 0,
		"P4.v20": 1,
		"P4.v40": 37,
		"P4.v30": 1,
		"P4.v66": 45, "P4.u66": 1, "P4.n66": 30, "P4.x66": 80,
		"P6.v5": 1, "P6.s5": 0,
		"P4.v2": 1, "P4.s2": 128,
		"P4.v8": 3,
	})
	spec := modA
	spec.Values = live
	c, _ := loadSite(t, Options{}, spec)
	m := c.Module("MOD-A")
	cases := []struct {
		symbol, addr, name, unit string
		v                        float64
		label                    string
		visible                  bool
	}{
		{"PARAM_P4_1", "P4.v1", "Boiler temperature", "°C", 58, "", true},
		{"PARAM_P4_7", "P4.v7", "Boiler power", "kW", 5.3, "", true},
		{"PARAM_P4_59", "P4.v59", "Energy counter", "", 38063, "", true},
		{"STATUS_P5_10", "P5.s10", "Pump – CH", "", -999, "On", true},
		{"PARAM_P4_20", "P4.v20", "Boiler status", "", -999, "Work", true},
		{"PARAM_P4_40", "P4.v40", "Night mode start", "", -999, "06:00", true},
		{"PARAM_P4_30", "P4.v30", "Boiler on", "", 1, "", true},
		{"PARAM_66", "P4.v66", "Boiler setpoint", "°C", 45, "", true},
		{"PARAM_P6_5", "P6.v5", "DHW circulation", "", 1, "", false}, // DEVICE_AVAILABLE rule says no
		{"PARAM_P4_2", "P4.v2", "Thermostat pump", "", 1, "", false}, // INVISIBLE bit 7 set
		{"PARAM_P4_8", "P4.v8", "Composite", "", 3, "", false},       // value2: composite widget
	}
	for _, c := range cases {
		p := m.BySymbol(c.symbol)
		if p == nil {
			t.Errorf("%s not described", c.symbol)
			continue
		}
		got := displayOf(p, live)
		if p.Address.String() != c.addr || p.Name != c.name || p.UnitFor(live) != c.unit || got.v != c.v || got.label != c.label || !got.ok || p.Visible(live) != c.visible {
			t.Errorf("%s: %s %q %q %+v visible %v\nwant %s %q %q %v %q %v", c.symbol, p.Address, p.Name, p.UnitFor(live), got, p.Visible(live),
				c.addr, c.name, c.unit, c.v, c.label, c.visible)
		}
	}
	// PARAM_66's limit registers (the use map's n and x) win over its static
	// limits {min:10,max:90}, which remain when the registers are not read.
	p := m.BySymbol("PARAM_66")
	if floatText(p.Min) != "30" || floatText(p.Max) != "80" {
		t.Fatalf("PARAM_66 limits %s..%s, want 30..80", floatText(p.Min), floatText(p.Max))
	}
	if lo, hi := p.Range(nil); floatText(lo) != "10" || floatText(hi) != "90" {
		t.Fatalf("PARAM_66 static limits %s..%s", floatText(lo), floatText(hi))
	}
	if got := m.Params(); got[0].Symbol != "PARAM_P4_1" || got[len(got)-1].Symbol != "PARAM_P4_2" {
		t.Fatalf("not in menu order:\n%s", describe(m))
	}
}

// docs/spec.md: an index that does not parse whole still gives its text scans and
// what recovery kept (counted under index); a missing unit table is counted
// under units.
func TestIndexStageFailures(t *testing.T) {
	f := siteFetcher(t)
	idx := string(f.files["/assets/index-Q1w2E3r4.js"])
	broken := strings.Replace(idx, "Status={'INVISIBLE'", "Broken={[},Status={'INVISIBLE'", 1)
	start, end := strings.Index(broken, "Ux={"), strings.Index(broken, "Status={")
	noUnits := broken[:start] + regexpReplace(broken[start:end], `0x([0-9a-f]+):\{`, "'u$1':{") + broken[end:]
	f.set("/assets/index-Q1w2E3r4.js", noUnits)
	c, err := Load(context.Background(), f, []ModuleSpec{modA}, Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	fails := c.Failures()
	if fails[StageIndex] != 1 || fails[StageUnits] != 1 {
		t.Fatalf("failures %v", fails)
	}
	m := c.Module("MOD-A")
	if p := m.BySymbol("PARAM_P4_1"); p == nil || p.Name != "Boiler temperature" {
		t.Fatalf("recovery lost the inline definitions:\n%s", describe(m))
	}
}

func regexpReplace(s, re, repl string) string {
	return regexp.MustCompile(re).ReplaceAllString(s, repl)
}

// docs/spec.md A-6.2a: the fingerprint is stable across identical loads and a renamed
// (redeployed) index, and changes with the described content.
func TestFingerprint(t *testing.T) {
	c1, _ := loadSite(t, Options{})
	c2, _ := loadSite(t, Options{})
	if c1.Fingerprint() != c2.Fingerprint() || c1.Fingerprint() == "" {
		t.Fatal("identical loads differ")
	}
	f := siteFetcher(t)
	f.set("/index.html", `<script src="/assets/index-Redeploy9.js"></script>`)
	f.files["/assets/index-Redeploy9.js"] = f.files["/assets/index-Q1w2E3r4.js"]
	c3, err := Load(context.Background(), f, []ModuleSpec{modA, modB, modC}, Options{Language: "en"})
	if err != nil || c3.IndexAsset() != "index-Redeploy9.js" || c3.Fingerprint() != c1.Fingerprint() {
		t.Fatalf("renamed index: %v %v", c3.IndexAsset(), err)
	}
	f = siteFetcher(t)
	f.set("/assets/parameters-Pe1.js", strings.Replace(string(f.files["/assets/parameters-Pe1.js"]), "Boiler temperature", "Flow temperature", 1))
	c4, _ := Load(context.Background(), f, []ModuleSpec{modA, modB, modC}, Options{Language: "en"})
	if c4.Fingerprint() == c1.Fingerprint() {
		t.Fatal("a changed name kept the fingerprint")
	}
	f = siteFetcher(t)
	f.set("/assets/index-Q1w2E3r4.js", strings.Replace(string(f.files["/assets/index-Q1w2E3r4.js"]), "k=>k-0x7f,", "k=>k-0x7e,", 1))
	c5, _ := Load(context.Background(), f, []ModuleSpec{modA, modB, modC}, Options{Language: "en"})
	if c5.Fingerprint() == c1.Fingerprint() {
		t.Fatal("a changed transform kept the fingerprint")
	}
	c6, _ := loadSite(t, Options{Language: "pl"})
	if c6.Fingerprint() == c1.Fingerprint() {
		t.Fatal("another language kept the fingerprint")
	}
	// A web app that only learns an alarm's name is a new catalog: the
	// exporter takes it up at its next refresh.
	f = siteFetcher(t)
	f.set("/assets/alarms-Al1.js", `export default {'38':'No fuel','ERROR_BRAK_PALIWA':'No fuel','91':'Expansion module fault'};`)
	c7, _ := Load(context.Background(), f, []ModuleSpec{modA, modB, modC}, Options{Language: "en"})
	if c7.Fingerprint() == c1.Fingerprint() {
		t.Fatal("a new alarm name kept the fingerprint")
	}
}

// Options bound a load: an asset over the per-asset bound and assets past
// the total bound are failures of their stage; the deadline ends a load
// whose assets never come.
func TestLoadBounds(t *testing.T) {
	f := siteFetcher(t)
	f.set("/assets/m153-Qw-3.js", "export default ["+strings.Repeat(" ", 70<<10)+"]")
	c, err := Load(context.Background(), f, []ModuleSpec{modA, modB}, Options{Language: "en", MaxAssetBytes: 64 << 10})
	if err != nil || c.Failures()[StageMenu] != 1 || len(c.Module("MOD-A").Params()) == 0 {
		t.Fatalf("per-asset bound: %v %v", c.Failures(), err)
	}

	f = siteFetcher(t)
	indexSize := int64(len(f.files["/assets/index-Q1w2E3r4.js"]) + len(f.files["/index.html"]))
	c, err = Load(context.Background(), f, []ModuleSpec{modA}, Options{Language: "en", MaxTotalBytes: indexSize + 100})
	if err != nil {
		t.Fatal(err)
	}
	if c.Failures()[StageMenu] != 1 {
		t.Fatalf("total bound: failures %v", c.Failures())
	}

	b := &blockingFetcher{inner: siteFetcher(t), block: "/assets/module.menu-BNvCCsxi.js", entered: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err = Load(context.Background(), b, []ModuleSpec{modA}, Options{Language: "en", Timeout: 200 * time.Millisecond})
	}()
	<-b.entered
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the deadline did not end the load")
	}
	if err != nil || c.Failures()[StageMenu] != 1 || len(c.Module("MOD-A").Params()) != 0 {
		t.Fatalf("after the deadline: %v %v", c, err)
	}
}

// blockingFetcher never answers one path until the context ends.
type blockingFetcher struct {
	inner   *memFetcher
	block   string
	entered chan struct{}
	once    sync.Once
}

func (b *blockingFetcher) Asset(ctx context.Context, p string) ([]byte, error) {
	if p == b.block {
		b.once.Do(func() { close(b.entered) })
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return b.inner.Asset(ctx, p)
}

// A Catalog is read by many goroutines at once (run with -race).
func TestConcurrentReaders(t *testing.T) {
	c, _ := loadSite(t, Options{})
	live := values(map[string]float64{"P4.v7": 53, "P4.u7": 49, "P4.v1": 185, "P4.u1": 77, "P5.s4": 1024})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, m := range c.Modules() {
				for _, p := range m.Params() {
					p.Display(live)
					p.Visible(live)
					p.UnitFor(live) // P4.u1 = 77 is a code Load never met
					p.Range(live)
					m.Lookup(p.Address.Pool, p.Address.ChanIdx())
				}
			}
			c.Failures()
		}()
	}
	wg.Wait()
}
