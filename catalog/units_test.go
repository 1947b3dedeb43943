package catalog

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

func testUnits(t testing.TB, tableJS string, tr translations) *unitTable {
	t.Helper()
	p := jsval.Parse([]byte("const U="+tableJS), jsval.Limits{})
	desc := findUnitTable(p)
	return &unitTable{desc: desc, tr: tr, memo: map[string]*unit{}}
}

var enUnits = func(t testing.TB) translations {
	return translations{
		"units": jsObj(t, `{'0':'\x20','1':'\u00b0C','5':'\u00b0C','31':'kW','49':'WRONG','17':{'0':'Off','1':'On'},'202':{'0':'Off'},'7':'','9':'C','12':'wn.12'}`),
		"app":   jsObj(t, `{'one':{'diodeState':{'on':'On','off':'Off'},'burnerState':{'0':'Stop','1':'Work'}}}`),
	}
}

// docs/spec.md A-4.7.3a, A-5.40: the value-transform patterns, in readable and
// obfuscated spelling.
func TestRecogniseTransform(t *testing.T) {
	cases := []struct {
		src  string
		raw  float64
		want float64
		ok   bool
	}{
		{"k=>k*0.1", 53, 5.300000000000001, true},
		{"k=>k/10", 53, 5.3, true},
		{"k=>(k-0x7f)*0.5", 131, 2, true},
		{"k=>(k+-.5)*2", 3, 5, true},
		{"k=>k-0x7f", 185, 58, true},
		{"k=>k+.5", 1, 1.5, true},
		{"k=>Number((k*.1).toFixed(1))", 53, 5.3, true},
		{"e=>Number((e*.1).toFixed(1))", 54, 5.4, true},
		{"_0x4f=>Number(_0x4f*0.1)['toFixed'](0x1)", 53, 5.3, true}, // row 40: _0x4f is a name, not hex
		{"_0x4fdb4d=>_0x4fdb4d*0x6", 7, 42, true},
		{"k=>(k*0.1).toFixed(2)", 123, 12.3, true},
		{"function(k){return k*6}", 7, 42, true},
		{"(k)=>{return k*-.5;}", 4, -2, true},
		{"k=>0.5*k", 4, 2, true}, // the literal first: the same multiplication
		{"k=>(k-1)/2", 5, 2, true},
		{"k=>k", 4, 4, true},
		// Not recognised: left unchanged.
		{"k=>k*k", 4, 0, false},
		{"k=>Math.round(k*0.1)", 4, 0, false},
		{"(k)=>{const z=k*2;return z;}", 4, 0, false},
		{"(a,b)=>a*b", 4, 0, false},
		{"k=>k/0", 4, 0, false},
		{"k=>x*0.1", 4, 0, false},
		{"not js (", 4, 0, false},
		{"", 4, 0, false},
	}
	for _, c := range cases {
		tr, ok := recogniseTransform(c.src)
		if ok != c.ok {
			t.Errorf("%q: recognised %v, want %v", c.src, ok, c.ok)
			continue
		}
		if ok && tr.apply(c.raw) != c.want {
			t.Errorf("%q: Apply(%v) = %v, want %v", c.src, c.raw, tr.apply(c.raw), c.want)
		}
	}
	// The inverse, for writes: rounded to an integer within 1e-9.
	tr, _ := recogniseTransform("_0x4f=>Number(_0x4f*0.1)['toFixed'](0x1)")
	if raw, err := tr.invert(5.3); err != nil || raw != 53 {
		t.Fatalf("Invert(5.3) = %v %v", raw, err)
	}
	tr, _ = recogniseTransform("k=>k-0x7f")
	if raw, _ := tr.invert(58); raw != 185 {
		t.Fatalf("Invert(58) = %v", raw)
	}
}

// docs/spec.md A-4.7.3b: unit 66, the time of day.
func TestTimeOfDay(t *testing.T) {
	src := `k=>{if(k===0x0)return'units.202.0';const _0xm=(k-0x1)*0xa;return String(Math['floor'](_0xm/0x3c))['padStart'](0x2,'0')+':'+String(_0xm%0x3c)['padStart'](0x2,'0')}`
	if !isTimeOfDay(src) {
		t.Fatal("not recognised")
	}
	if isTimeOfDay(`k=>k*10`) || isTimeOfDay(`k=>{return 'units.202.0'}`) {
		t.Fatal("recognised a non-time function")
	}
	units := testUnits(t, `{0x42:{'text':'units.0','value':`+src+`}}`, enUnits(t))
	u := units.get("66")
	for raw, want := range map[float64]string{0: "Off", 1: "00:00", 37: "06:00", 144: "23:50"} {
		v, label := u.present(raw)
		if !math.IsNaN(v) || label != want {
			t.Errorf("raw %v → %v %q, want %q", raw, v, label, want)
		}
	}
	if u.symbol != "" {
		t.Fatalf("units.0 (a blank) shown as %q", u.symbol)
	}
}

// docs/spec.md: the unit through the descriptor table — code 49's descriptor
// says units.31 (kW), not units["49"] (the reference client's simple path);
// a code missing from the table is synthesised as units.<code>; a text that
// does not resolve shows as the token; blanks, digits and wn.N are no unit;
// C is °C; a non-numeric code has no descriptor; enum units show no symbol.
func TestUnitDescriptorPath(t *testing.T) {
	units := testUnits(t, `{0x31:{'text':'units.31','value':k=>Number(k*0.1)['toFixed'](0x1)},0x2f:{'text':'units.5','value':k=>k-0x7f},
		0x8:{'text':'units.nope'},0x9:{'options':{0x0:'units.17.0',0x1:'units.17.1'}},0xa:{'text':'units.9'},0xb:{'text':'units.12'},
		0xc:{'text':'units.7'},0xd:{'text':'units.31','value':k=>Math.sqrt(k)},0x270e:{'options':{"BoilerState['STOP']":'app.one.burnerState.0'}},
		0x270a:{'options':{'[kn.ON]':'app.one.diodeState.on'},'colors':{}},0x3:{'1':'units.17.1','2':'raw option'}}`, enUnits(t))
	cases := []struct {
		code, symbol string
		enum         map[int]string
	}{
		{"49", "kW", nil},
		{"47", "°C", nil},
		{"1", "°C", nil},         // synthesised units.1
		{"31", "kW", nil},        // synthesised units.31
		{"8", "units.nope", nil}, // unresolvable text is the token
		{"9", "", map[int]string{0: "Off", 1: "On"}},
		{"10", "°C", nil}, // "C"
		{"11", "", nil},   // wn.12
		{"12", "", nil},   // blank translation
		{"1000", "units.1000", nil},
		{"3", "", map[int]string{1: "On", 2: "raw option"}}, // the descriptor itself is the table
	}
	for _, c := range cases {
		u := units.get(c.code)
		if u == nil || u.symbol != c.symbol || !reflect.DeepEqual(u.enumCopy(), c.enum) {
			t.Errorf("code %s: %+v, want symbol %q enum %v", c.code, u, c.symbol, c.enum)
		}
	}
	if units.get("C") != nil || units.get("") != nil {
		t.Fatal("a non-numeric code has a descriptor")
	}
	if u := units.get("13"); u.known || u.transform != identity {
		t.Fatalf("an unrecognised value function must leave values unchanged: %+v", u)
	}
	if v, _ := units.get("49").present(53); v != 5.3 {
		t.Fatalf("49: %v", v)
	}
}

// docs/spec.md: enum labels — direct keys, integer forms (true is 1), then the
// normalised forms ([kn.ON] ~ e.ON, BoilerState['STOP'] ~ STOP); an option
// that does not resolve is its raw text.
func TestEnumLabels(t *testing.T) {
	units := testUnits(t, `{0x9:{'options':{0x0:'units.17.0',0x1:'units.17.1',' x ':'units.17.0'}},
		0x270e:{'options':{"BoilerState['STOP']":'app.one.burnerState.0',"BoilerState['WORK']":'app.one.burnerState.1'}},
		0x270a:{'options':{'[kn.ON]':'app.one.diodeState.on','[kn.OFF]':'app.one.diodeState.off','RAW':'untranslated.token'}}}`, enUnits(t))
	cases := []struct {
		code string
		v    jsval.Value
		want string
	}{
		{"9", 1.0, "On"},
		{"9", "0", "Off"},
		{"9", " 1 ", "On"},
		{"9", "1.0", "On"},
		{"9", true, "On"},
		{"9998", "STOP", "Stop"},
		{"9998", "BoilerState['WORK']", "Work"},
		{"9994", "e.ON", "On"},
		{"9994", jsval.Source("o.OFF"), "Off"},
		{"9994", "RAW", "untranslated.token"},
		{"9", 7.0, ""},
	}
	for _, c := range cases {
		got, _ := units.get(c.code).label(c.v)
		if got != c.want {
			t.Errorf("code %s value %#v → %q, want %q", c.code, c.v, got, c.want)
		}
	}
}

// FuzzTransform: the recogniser never panics and stays bounded, on deep
// nesting too.
func FuzzTransform(f *testing.F) {
	for _, s := range []string{
		"_0x4f=>Number(_0x4f*0.1)['toFixed'](0x1)", "k=>(k-0x7f)*.5", "k=>k/0", "k=>" + strings.Repeat("(", 50_000) + "k" + strings.Repeat(")", 50_000),
		"k=>" + strings.Repeat("-", 50_000) + "k", "k=>{if(k===0x0)return'units.202.0';return (k-1)*10+''.padStart(2,'0')}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		if tr, ok := recogniseTransform(src); ok {
			tr.apply(1)
			tr.invert(1)
		}
		isTimeOfDay(src)
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%d bytes took %v", len(src), time.Since(start))
		}
	})
}
