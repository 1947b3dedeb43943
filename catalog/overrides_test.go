package catalog

import (
	"strings"
	"testing"
)

func TestParseOverrides(t *testing.T) {
	o, err := ParseOverrides([]byte(`
P4.v7: {name: Boiler power, unit: kW, scale: 0.1}
PARAM_66:
  name: My setpoint
P4.v99: {name: Unlisted register, unit: "%"}
`))
	if err != nil || o.Len() != 3 {
		t.Fatalf("%v %v", o, err)
	}
	for src, want := range map[string]string{
		"P4.v7: {nmae: x}":     `unknown key "nmae"`,
		"P4.v7: {}":            "at least one of name, unit, scale",
		"P4.v7: {scale: 0}":    "finite, non-zero",
		"q4.v7: {name: x}":     "neither a register",
		"'P4.v7 x': {name: x}": "neither a register",
		"[1, 2]":               "cannot unmarshal",
		"P4.v7: {scale: .nan}": "finite",
	} {
		if _, err := ParseOverrides([]byte(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error about %q", src, err, want)
		}
	}
	if o, err := ParseOverrides(nil); err != nil || o.Len() != 0 {
		t.Fatalf("empty file: %v %v", o, err)
	}
}

// Overrides replace name, unit and scale (register over symbol), add
// registers no parameter describes, leave the original catalog alone and
// change the fingerprint.
func TestWithOverrides(t *testing.T) {
	live := values(map[string]float64{"P4.v7": 53, "P4.u7": 49, "P4.v66": 45, "P4.v99": 12})
	c, _ := loadSite(t, Options{}, modA)
	o, err := ParseOverrides([]byte("P4.v7: {unit: W, scale: 100}\nPARAM_P4_7: {name: From symbol, unit: MW}\nPARAM_66: {name: My setpoint}\nP4.v99: {name: Extra, unit: '%'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	oc := c.WithOverrides(o)
	m := oc.Module("MOD-A")
	p := m.Lookup("P4", "v7")
	v, label, ok := p.Display(live)
	if p.Name != "From symbol" || p.Unit != "W" || p.UnitFor(live) != "W" || v != 5300 || label != "" || !ok {
		t.Fatalf("P4.v7: %q %q %v %q %v", p.Name, p.Unit, v, label, ok)
	}
	if raw, err := p.RawFromDisplay(5300, nil); err != nil || raw != 53 {
		t.Fatalf("inverse of the override scale: %v %v", raw, err)
	}
	if got := m.BySymbol("PARAM_66"); got.Name != "My setpoint" || got.Unit != "°C" {
		t.Fatalf("PARAM_66: %q %q", got.Name, got.Unit)
	}
	extra := m.Lookup("P4", "v99")
	if extra == nil || extra.Name != "Extra" || extra.Unit != "%" || extra.Symbol != "" {
		t.Fatalf("added register: %+v", extra)
	}
	if v, _, ok := extra.Display(live); !ok || v != 12 {
		t.Fatalf("added register display %v %v", v, ok)
	}
	if c.Module("MOD-A").Lookup("P4", "v7").Name != "Boiler power" || c.Module("MOD-A").Lookup("P4", "v99") != nil {
		t.Fatal("the original catalog changed")
	}
	if oc.Fingerprint() == c.Fingerprint() {
		t.Fatal("overrides kept the fingerprint")
	}
	if c.WithOverrides(nil) != c {
		t.Fatal("no overrides must give the same catalog")
	}
}
