package catalog

import (
	"math"
	"strings"
	"testing"
)

// The worked example of spec §4.14, end to end over the fixture site:
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
