package catalog

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

const testUnitTable = `{0x31:{'text':'units.31','value':_0x4f=>Number(_0x4f*0.1)['toFixed'](0x1),'valuePrepare':_0x4f=>_0x4f/0.1},
	0x2f:{'text':'units.5','value':k=>k-0x7f},0x1:{'text':'units.1'},0xd:{'text':'units.1','value':k=>Math.sqrt(k)},
	0x270a:{'options':{'[kn.ON]':'app.one.diodeState.on','[kn.OFF]':'app.one.diodeState.off'}},
	0x270e:{'options':{"BoilerState['STOP']":'app.one.burnerState.0',"BoilerState['WORK']":'app.one.burnerState.1'}},
	0x9:{'options':{0x0:'units.17.0',0x1:'units.17.1'}}}`

func testParam(t testing.TB, symbol, defJS string, load store.Reader) *Param {
	t.Helper()
	units := testUnits(t, testUnitTable, enUnits(t))
	rs := &resolver{defs: map[string]*definition{symbol: def(t, symbol, defJS)}, tr: enUnits(t), units: units}
	p := rs.newParam(rs.defs[symbol], visibleToken{symbol: symbol}, newRuleContext("D1", 1757000000), load)
	if p == nil {
		t.Fatalf("%s: no parameter", symbol)
	}
	return p
}

type display struct {
	v     float64
	label string
	ok    bool
}

func displayOf(p *Param, r store.Reader) display {
	v, l, ok := p.Display(r)
	if math.IsNaN(v) {
		v = -999 // NaN compares unequal; the tests spell "not a number" as -999
	}
	return display{v, l, ok}
}

// docs/spec.md A-4.10a: computed values — the first if/elseif whose conditions all hold,
// a condition holding when any selector satisfies it, bit and mask, every
// operator, storeGetter, the else default, result normalisation, and the
// label from the unit's enum table.
func TestComputedValues(t *testing.T) {
	status := `{'unit':0x270a,'value':[{'if':[{'operation':_0x77['equalTo'],'expected':0x1,'value':[{'group':'P5','number':0x4,'use':'s','bit':0xa}]}],'then':'e.ON'},{'else':!0,'then':'e.OFF'}]}`
	p := testParam(t, "STATUS_P5_10", status, nil)
	cases := []struct {
		vals map[string]float64
		want display
	}{
		{map[string]float64{"P5.s10": 0, "P5.s4": 1 << 10}, display{-999, "On", true}},
		{map[string]float64{"P5.s10": 0, "P5.s4": 1<<10 - 1}, display{-999, "Off", true}}, // else: the default the reference client ignores
		{map[string]float64{"P5.s10": 0}, display{-999, "Off", true}},
		{map[string]float64{"P5.s10": 0, "P5.s4": 1<<10 + 0.7}, display{-999, "On", true}}, // floats truncated
		// The symbol is read at its status register (docs/spec.md A-4.5c):
		// while the module sends none, nothing is shown, whatever the
		// register its rule reads holds.
		{map[string]float64{"P5.s4": 1 << 10}, display{0, "", false}},
	}
	for _, c := range cases {
		if got := displayOf(p, values(c.vals)); got != c.want {
			t.Errorf("%v → %+v, want %+v", c.vals, got, c.want)
		}
	}
	if !p.Computed || p.Address.String() != "P5.s10" || p.ComputedPrimary.String() != "P5.s4" {
		t.Fatalf("computed %v address %v computed primary %v", p.Computed, p.Address, p.ComputedPrimary)
	}

	ops := []struct {
		op       string
		expected string
		v        float64
		holds    bool
	}{
		{"equalTo", "3", 3, true}, {"equalTo", "'3'", 3, true}, {"equalTo", "!0", 1, true}, {"equalTo", "void 0", 3, false},
		{"notEqualTo", "3", 4, true}, {"notEqualTo", "3", 3, false},
		{"greaterThan", "3", 4, true}, {"greaterThan", "3", 3, false},
		{"greaterThanOrEqualTo", "3", 3, true}, {"lessThan", "3", 2, true}, {"lessThan", "3", 3, false},
		{"lessThanOrEqualTo", "3", 3, true}, {"lessThanOrEqualTo", "3", 4, false},
		{"matches", "/^1[0-9]$/", 12, true}, {"matches", "/^1[0-9]$/", 22, false}, {"notMatches", "/^1/", 22, true},
		{"matches", "/^A/i", 0, false}, {"bogusOperator", "3", 3, false},
	}
	for _, o := range ops {
		src := `{'unit':0x9,'any':[{'if':[{'operation':'e.` + o.op + `','expected':` + o.expected + `,'value':[{'group':'P4','number':1}]}],'then':{'value':1}}],'value':[{'group':'P4','number':1}]}`
		p := testParam(t, "PARAM_OP", src, nil)
		res, ok := p.def.computedValue(values(map[string]float64{"P4.v1": o.v}), p.ctx)
		if ok != o.holds || (ok && res != 1.0) {
			t.Errorf("%s %s on %v: %v %v, want holds=%v", o.op, o.expected, o.v, res, ok, o.holds)
		}
	}

	// Any selector satisfies; all conditions must hold; mask; elseif order.
	src := `{'unit':0x270e,'any':[
		{'if':[{'operation':'equalTo','expected':0x1,'value':[{'group':'P4','number':1},{'group':'P4','number':2}]},
		       {'operation':'equalTo','expected':0x2,'value':[{'group':'P4','number':3,'use':'v','mask':0x6}]}],'then':{'value':BoilerState['WORK']}},
		{'elseif':[{'operation':'equalTo','expected':0x0,'value':[{'group':'P4','number':1}]}],'then':{'value':"BoilerState['STOP']"}}]}`
	p = testParam(t, "PARAM_MIX", src, nil)
	for _, c := range []struct {
		vals map[string]float64
		want display
	}{
		{map[string]float64{"P4.v1": 0, "P4.v2": 1, "P4.v3": 3}, display{-999, "Work", true}},
		{map[string]float64{"P4.v1": 0, "P4.v2": 1, "P4.v3": 4}, display{-999, "Stop", true}},
		{map[string]float64{"P4.v1": 5, "P4.v2": 5, "P4.v3": 2}, display{0, "", false}}, // no branch, no plain value
	} {
		if got := displayOf(p, values(c.vals)); got != c.want {
			t.Errorf("%v → %+v, want %+v", c.vals, got, c.want)
		}
	}

	// storeGetter reads the runtime context: {devid, modulesMap.<devid>.connectedAt}.
	src = `{'unit':0x270a,'value':[{'group':'P4','number':1}],'any':[{'if':[{'operation':'greaterThan','expected':0,'value':{'storeGetter':'modulesMap.{devid}.connectedAt'}}],'then':'e.ON'},{'else':'e.OFF'}]}`
	p = testParam(t, "PARAM_CONN", src, nil)
	held := values(map[string]float64{"P4.v1": 0})
	if got := displayOf(p, held); got.label != "On" {
		t.Fatalf("storeGetter: %+v", got)
	}
	p.ctx = newRuleContext("D1", 0)
	if got := displayOf(p, held); got.label != "Off" {
		t.Fatalf("storeGetter without connectedAt: %+v", got)
	}

	// A computed result that is a number is a numeric display value.
	p = testParam(t, "PARAM_NUM", `{'unit':0x9,'any':[{'if':[{'operation':'equalTo','expected':1,'value':[{'group':'P4','number':1}]}],'then':{'value':0x1}}]}`, nil)
	if got := displayOf(p, values(map[string]float64{"P4.v1": 1})); got != (display{1, "On", true}) {
		t.Fatalf("numeric result %+v", got)
	}
}

// docs/spec.md A-4.10b pitfall: rules whose then carries a command are write actions, not
// computed values; the register is read directly.
func TestCommandRulesAreNotComputed(t *testing.T) {
	src := `{'unit':0x1,'value':[{'group':'P4','number':0x1e,'use':'v'}],'any':[{'if':[{'operation':t.equalTo,'expected':!0,'value':[{'group':'P4','number':0x1e,'use':'v'}]}],'then':{'command':'e.WRITE','value':!1}},{'else':null}]}`
	p := testParam(t, "PARAM_P4_30", src, nil)
	if p.Computed || !p.Writable {
		t.Fatalf("computed %v writable %v", p.Computed, p.Writable)
	}
	if got := displayOf(p, values(map[string]float64{"P4.v30": 1})); got != (display{1, "", true}) {
		t.Fatalf("display %+v", got)
	}
}

// docs/spec.md A-4.10c: when no rule applies and the definition has a plain value
// selector, the register is read directly.
func TestComputedFallsBackToDirectRead(t *testing.T) {
	src := `{'unit':0x2f,'value':[{'group':'P4','number':1}],'any':[{'if':[{'operation':'equalTo','expected':0,'value':[{'group':'P4','number':2}]}],'then':{'value':'e.OFF'}}]}`
	p := testParam(t, "PARAM_F", src, nil)
	if got := displayOf(p, values(map[string]float64{"P4.v1": 185, "P4.v2": 1})); got != (display{58, "", true}) {
		t.Fatalf("display %+v", got)
	}
}

// docs/spec.md: multi-register values.
func TestMultiRegister(t *testing.T) {
	src := `{'value':[{'group':'P4','number':0x3b,'use':'v','convert':_0x35dce1},{'group':'P4','number':0x3c,'use':'v','convert':_0x35dce1,'times':0x10000}]}`
	p := testParam(t, "PARAM_P4_59", src, nil)
	if len(p.Parts) != 2 || p.Parts[1].String() != "P4.v60" {
		t.Fatalf("parts %v", p.Parts)
	}
	if got := displayOf(p, values(map[string]float64{"P4.v59": -27473, "P4.v60": 0})); got != (display{38063, "", true}) {
		t.Fatalf("spec example: %+v", got)
	}
	if got := displayOf(p, values(map[string]float64{"P4.v59": 1, "P4.v60": 2})); got.v != 1+2*65536 {
		t.Fatalf("two words: %+v", got)
	}
	// A missing word: no value rather than a wrong one.
	if got := displayOf(p, values(map[string]float64{"P4.v59": 1})); got.ok {
		t.Fatalf("missing high word: %+v", got)
	}
	// Without convert the words are used as they are.
	p = testParam(t, "PARAM_NC", `{'value':[{'group':'P4','number':1},{'group':'P4','number':2,'times':10}]}`, nil)
	if got := displayOf(p, values(map[string]float64{"P4.v1": -1, "P4.v2": 2})); got.v != 19 {
		t.Fatalf("no convert: %+v", got)
	}
	// One convert selector composes (masked); a single plain selector keeps floats.
	p = testParam(t, "PARAM_ONE", `{'value':[{'group':'P4','number':1,'convert':'f'}]}`, nil)
	if got := displayOf(p, values(map[string]float64{"P4.v1": -1})); got.v != 65535 || len(p.Parts) != 1 {
		t.Fatalf("one converted word: %+v", got)
	}
	p = testParam(t, "PARAM_PLAIN", `{'value':[{'group':'P4','number':1}]}`, nil)
	if got := displayOf(p, values(map[string]float64{"P4.v1": 40.5})); got.v != 40.5 || len(p.Parts) != 0 {
		t.Fatalf("plain: %+v parts %v", got, p.Parts)
	}
}

// docs/spec.md through Display and Range: the unit register of the family
// selects unit and transform (live, and at load time for the static
// fields); limits from the definition's registers, else the n/x channels,
// transformed; else static limits.
func TestUnitAndLimits(t *testing.T) {
	src := `{'name':'x','value':[{'group':'P4','number':1,'use':'v'}]}`
	load := values(map[string]float64{"P4.u1": 47, "P4.n1": 137, "P4.x1": 217})
	p := testParam(t, "PARAM_P4_1", src, load)
	if p.Unit != "°C" || floatText(p.Min) != "10" || floatText(p.Max) != "90" {
		t.Fatalf("static unit %q min %s max %s", p.Unit, floatText(p.Min), floatText(p.Max))
	}
	live := values(map[string]float64{"P4.v1": 185, "P4.u1": 47})
	if got := displayOf(p, live); got != (display{58, "", true}) {
		t.Fatalf("display %+v", got)
	}
	// The unit register changes: the live unit wins.
	live = values(map[string]float64{"P4.v1": 53, "P4.u1": 49})
	if got := displayOf(p, live); got.v != 5.3 || p.UnitFor(live) != "kW" {
		t.Fatalf("live unit: %+v %q", got, p.UnitFor(live))
	}
	// Definition limit registers win over the n/x channels.
	p = testParam(t, "PARAM_L", `{'units':0x2f,'value':[{'group':'P4','number':1}],'minValue':[{'group':'P4','number':9,'use':'v'}],'limits':{'min':1,'max':2}}`, nil)
	lo, hi := p.Range(values(map[string]float64{"P4.v9": 130, "P4.n1": 0, "P4.x1": 300}))
	if floatText(lo) != "3" || floatText(hi) != "173" {
		t.Fatalf("range %s..%s", floatText(lo), floatText(hi))
	}
	lo, hi = p.Range(nil)
	if floatText(lo) != "1" || floatText(hi) != "2" {
		t.Fatalf("static range %s..%s", floatText(lo), floatText(hi))
	}
	// The scalar unit of the definition when the family has no unit register.
	p = testParam(t, "PARAM_S", `{'unit':0x31,'value':[{'group':'P4','number':7}]}`, nil)
	if p.Unit != "kW" {
		t.Fatalf("scalar unit %q", p.Unit)
	}
}

// Writes: the inverse transform, refused outside the limits, for computed
// or composed values, and for value functions that are not recognised.
func TestRawFromDisplay(t *testing.T) {
	p := testParam(t, "PARAM_W", `{'units':0x31,'value':[{'group':'P4','number':7}]}`, nil)
	live := values(map[string]float64{"P4.n7": 0, "P4.x7": 100})
	if raw, err := p.RawFromDisplay(5.3, live); err != nil || raw != 53 {
		t.Fatalf("5.3 → %v %v", raw, err)
	}
	if _, err := p.RawFromDisplay(10.5, live); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("out of range: %v", err)
	}
	if raw, err := p.RawFromDisplay(10.5, nil); err != nil || raw != 105 {
		t.Fatalf("no limits known: %v %v", raw, err)
	}
	p = testParam(t, "PARAM_Q", `{'units':0xd,'value':[{'group':'P4','number':7}]}`, nil)
	if _, err := p.RawFromDisplay(2, nil); !errors.Is(err, ErrNoTransform) {
		t.Fatalf("unrecognised transform: %v", err)
	}
	p = testParam(t, "PARAM_M", `{'value':[{'group':'P4','number':1},{'group':'P4','number':2,'times':65536}]}`, nil)
	if _, err := p.RawFromDisplay(2, nil); !errors.Is(err, ErrNotWritable) {
		t.Fatalf("composed: %v", err)
	}
}

// A write lands on the register's step: a display value whose raw value
// falls between two whole numbers is refused with the neighbours inside the
// limits, never rounded, whatever the register holds now.
func TestWritesLandOnTheRegistersStep(t *testing.T) {
	p := testParam(t, "PARAM_P6_8", `{'units':0x31,'value':[{'group':'P6','number':8}],'maxValue':24.95}`, nil)
	live := values(map[string]float64{"P6.v8": 240, "P6.n8": 50})
	var se *StepError
	if _, err := p.RawFromDisplay(20.05, live); !errors.As(err, &se) || !errors.Is(err, ErrOffStep) ||
		se.Raw != 200.5 || !slices.Equal(se.Nearest, []float64{200, 201}) {
		t.Fatalf("20.05 kW: %v (%+v), want raw 200.5 between 200 and 201", err, se)
	}
	if raw, err := p.RawFromDisplay(20.1, live); err != nil || raw != 201 {
		t.Fatalf("20.1 kW → %v %v, want 201", raw, err)
	}
	// 249.4 shows 24.9; of its neighbours only 249 is inside the limit 24.95.
	if err := p.CheckRaw(249.4, live); !errors.As(err, &se) || !slices.Equal(se.Nearest, []float64{249}) {
		t.Fatalf("raw 249.4: %v (%+v), want only 249 offered", err, se)
	}
	// An off-step value already written does not open the way to more.
	written := values(map[string]float64{"P6.v8": 200.5, "P6.n8": 50})
	if _, err := p.RawFromDisplay(20.05, written); !errors.Is(err, ErrOffStep) {
		t.Fatalf("20.05 kW while the register holds 200.5: %v, want ErrOffStep", err)
	}
	if err := p.CheckRaw(200.5, written); !errors.Is(err, ErrOffStep) {
		t.Fatalf("raw 200.5 while the register holds 200.5: %v, want ErrOffStep", err)
	}
}

// A register write's raw value is checked as the app would show it: inside
// the limits after the transform, on the step, and only for a parameter
// whose value is the register's whole word.
func TestCheckRaw(t *testing.T) {
	p := testParam(t, "PARAM_P6_8", `{'units':0x31,'value':[{'group':'P6','number':8}]}`, nil)
	live := values(map[string]float64{"P6.v8": 240, "P6.n8": 50, "P6.x8": 250})
	for _, raw := range []float64{50, 200, 250} {
		if err := p.CheckRaw(raw, live); err != nil {
			t.Errorf("raw %v: %v", raw, err)
		}
	}
	for _, raw := range []float64{49, 251, 99999, -1} {
		if err := p.CheckRaw(raw, live); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("raw %v: %v, want ErrOutOfRange", raw, err)
		}
	}
	if err := p.CheckRaw(math.NaN(), live); err == nil {
		t.Error("NaN passed")
	}
	if v, label, ok := p.DisplayRaw(200, live); !ok || v != 20 || label != "" {
		t.Errorf("raw 200 shows %v %q %v, want 20", v, label, ok)
	}
	// An enum shows its label for the raw value written.
	sw := testParam(t, "PARAM_SW", `{'units':0x9,'value':[{'group':'P6','number':4}]}`, nil)
	if _, label, ok := sw.DisplayRaw(1, values(map[string]float64{"P6.v4": 0})); !ok || label != "On" {
		t.Errorf("switch raw 1 shows %q %v, want On", label, ok)
	}
	// A value function that is not recognised: the limits cannot be checked.
	q := testParam(t, "PARAM_Q", `{'units':0xd,'value':[{'group':'P4','number':7}]}`, nil)
	if err := q.CheckRaw(4, values(map[string]float64{"P4.n7": 0, "P4.x7": 9})); !errors.Is(err, ErrNoTransform) {
		t.Errorf("unrecognised transform: %v", err)
	}
	// Not the register's whole value: composed, a bit of a word, computed.
	for name, src := range map[string]string{
		"composed": `{'value':[{'group':'P4','number':1},{'group':'P4','number':2,'times':65536}]}`,
		"a bit":    `{'value':[{'group':'P6','number':3,'use':'s','bit':2}]}`,
		"a mask":   `{'value':[{'group':'P6','number':3,'use':'s','mask':6}]}`,
	} {
		p := testParam(t, "PARAM_X", src, nil)
		if err := p.CheckRaw(1, nil); !errors.Is(err, ErrNotWritable) {
			t.Errorf("%s: CheckRaw %v, want ErrNotWritable", name, err)
		}
		if _, err := p.RawFromDisplay(1, nil); !errors.Is(err, ErrNotWritable) {
			t.Errorf("%s: RawFromDisplay %v, want ErrNotWritable", name, err)
		}
	}
}

// docs/spec.md: visibility, in the app's order.
func TestVisibility(t *testing.T) {
	cases := []struct {
		name, src string
		vals      map[string]float64
		visible   bool
		reason    string
	}{
		{"composite", `{'value':[{'group':'P4','number':8}],'value2':[{'group':'P4','number':9}]}`, nil, false, hiddenComposite},
		{"no status", `{'value':[{'group':'P4','number':8}]}`, nil, true, visibleNoPaths},
		{"invisible bit set", `{'value':[{'group':'P4','number':1}],'status':{[_0x1['INVISIBLE']]:[{'group':'P4','number':1,'use':'s','bit':7}]}}`, map[string]float64{"P4.s1": 128}, false, hiddenInvisible},
		{"invisible bit clear", `{'value':[{'group':'P4','number':1}],'status':{[_0x1['INVISIBLE']]:[{'group':'P4','number':1,'use':'s','bit':7}]}}`, map[string]float64{"P4.s1": 127}, true, visibleDefault},
		{"invisible unknown", `{'value':[{'group':'P4','number':1}],'status':{'t.INVISIBLE':[{'group':'P4','number':1,'use':'s','bit':7}]}}`, nil, true, visibleDefault},
		{"lower-case flag", `{'value':[{'group':'P4','number':1}],'status':{'invisible':[{'group':'P4','number':1,'use':'s','mask':6}]}}`, map[string]float64{"P4.s1": 2}, false, hiddenInvisible},
		{"second entry", `{'value':[{'group':'P4','number':1}],'status':{'INVISIBLE':[{'group':'P4','number':1,'use':'s','bit':0},{'group':'P4','number':2,'use':'s','bit':3}]}}`, map[string]float64{"P4.s1": 0, "P4.s2": 8}, false, hiddenInvisible},
		{"rule then", `{'status':{'INVISIBLE':[{'if':[{'operation':'e.equalTo','expected':1,'value':[{'group':'P4','number':1,'use':'s','bit':1}]}],'then':'!0','else':'!1'}]},'value':[{'group':'P4','number':1}]}`, map[string]float64{"P4.s1": 2}, false, hiddenInvisible},
		{"rule else", `{'status':{'INVISIBLE':[{'if':[{'operation':'e.equalTo','expected':1,'value':[{'group':'P4','number':1,'use':'s','bit':1}]}],'then':!0,'else':!1}]},'value':[{'group':'P4','number':1}]}`, map[string]float64{"P4.s1": 0}, true, visibleDefault},
		{"device unavailable", `{'value':[{'group':'P6','number':5}],'status':{[o.DEVICE_AVAILABLE]:[{'if':[{'operation':ClauseOperation['equalTo'],'expected':0x0,'value':[{'group':'P6','number':0x5,'use':'s','bit':0x1}]}],'then':!1,'else':!0}]}}`, map[string]float64{"P6.s5": 0}, false, hiddenUnavailable},
		{"device available", `{'value':[{'group':'P6','number':5}],'status':{[o.DEVICE_AVAILABLE]:[{'if':[{'operation':ClauseOperation['equalTo'],'expected':0x0,'value':[{'group':'P6','number':0x5,'use':'s','bit':0x1}]}],'then':!1,'else':!0}]}}`, map[string]float64{"P6.s5": 2}, true, visibleDefault},
		{"status in an any branch", `{'value':[{'group':'P4','number':1}],'any':[{'if':[{'operation':'equalTo','expected':1,'value':[{'group':'P4','number':2}]}],'then':{'status':{'INVISIBLE':[{'group':'P4','number':3,'use':'s','bit':0}]}}}]}`, map[string]float64{"P4.v2": 1, "P4.s3": 1}, false, hiddenInvisible},
		{"status in an any branch not taken", `{'value':[{'group':'P4','number':1}],'any':[{'if':[{'operation':'equalTo','expected':1,'value':[{'group':'P4','number':2}]}],'then':{'status':{'INVISIBLE':[{'group':'P4','number':3,'use':'s','bit':0}]}}}]}`, map[string]float64{"P4.v2": 0, "P4.s3": 1}, true, visibleNoPaths},
	}
	for _, c := range cases {
		p := testParam(t, "PARAM_V", c.src, nil)
		v, reason := p.def.visibility(values(c.vals), p.ctx)
		if v != c.visible || reason != c.reason || p.Visible(values(c.vals)) != c.visible {
			t.Errorf("%s: %v %s, want %v %s", c.name, v, reason, c.visible, c.reason)
		}
	}
	var none *definition
	if v, reason := none.visibility(nil, nil); !v || reason != visibleNoMapping {
		t.Fatal("no definition must be visible")
	}
}

// A bound is read from the first of its keys present: minValue before min,
// maxValue before max; a number there is a static limit, selectors a limit
// register.
func TestLimitKeys(t *testing.T) {
	p := testParam(t, "PARAM_K", `{'units':0x31,'value':[{'group':'P4','number':7}],'minValue':2,'min':9,'maxValue':[{'group':'P4','number':8,'use':'v'}],'max':1}`, nil)
	lo, hi := p.Range(values(map[string]float64{"P4.v8": 250}))
	if floatText(lo) != "2" || floatText(hi) != "25" {
		t.Fatalf("range %s..%s, want 2..25", floatText(lo), floatText(hi))
	}
	p = testParam(t, "PARAM_K", `{'units':0x31,'value':[{'group':'P4','number':7}],'min':4,'max':[{'group':'P4','number':8,'use':'v'}]}`, nil)
	lo, hi = p.Range(values(map[string]float64{"P4.v8": 120}))
	if floatText(lo) != "4" || floatText(hi) != "12" {
		t.Fatalf("range %s..%s, want 4..12", floatText(lo), floatText(hi))
	}
}

// Writes of a time of day (unit 66): "HH:MM" on the register's 10-minute
// steps is the inverse of the display, checked against the register limits;
// other text and other units are refused.
func TestRawFromClock(t *testing.T) {
	clock := `k=>{if(k===0x0)return'units.202.0';const _0xm=(k-0x1)*0xa;return String(Math['floor'](_0xm/0x3c))['padStart'](0x2,'0')+':'+String(_0xm%0x3c)['padStart'](0x2,'0')}`
	units := testUnits(t, `{0x42:{'text':'units.0','value':`+clock+`},0x31:{'text':'units.31','value':_0x4f=>Number(_0x4f*0.1)['toFixed'](0x1)}}`, enUnits(t))
	build := func(symbol, defJS string) *Param {
		rs := &resolver{defs: map[string]*definition{symbol: def(t, symbol, defJS)}, tr: enUnits(t), units: units}
		p := rs.newParam(rs.defs[symbol], visibleToken{symbol: symbol}, newRuleContext("D1", 1757000000), nil)
		if p == nil {
			t.Fatalf("%s: no parameter", symbol)
		}
		return p
	}
	p := build("PARAM_T", `{'units':0x42,'value':[{'group':'P6','number':7}]}`)
	live := values(map[string]float64{"P6.v7": 133, "P6.n7": 0, "P6.x7": 144})
	if !p.ShowsClock(live) {
		t.Fatal("a unit-66 parameter does not show a clock")
	}
	for _, c := range []struct {
		text, shown string
		raw         float64
	}{{"00:00", "00:00", 1}, {"6:00", "06:00", 37}, {"22:00", "22:00", 133}, {"22:30", "22:30", 136}, {"23:50", "23:50", 144}} {
		raw, err := p.RawFromClock(c.text, live)
		if err != nil || raw != c.raw {
			t.Errorf("%s → %v %v, want %v", c.text, raw, err, c.raw)
			continue
		}
		// The inverse of what the app shows.
		if _, shown, _ := p.Display(values(map[string]float64{"P6.v7": raw})); shown != c.shown {
			t.Errorf("%s → raw %v shows %q, want %q", c.text, raw, shown, c.shown)
		}
	}
	for _, text := range []string{"22:35", "24:00", "7", "07:5", "ab:cd", "", "-1:00", "12:60"} {
		if _, err := p.RawFromClock(text, live); !errors.Is(err, ErrBadClock) {
			t.Errorf("%q: %v, want ErrBadClock", text, err)
		}
	}
	narrow := values(map[string]float64{"P6.v7": 133, "P6.n7": 37, "P6.x7": 73}) // 06:00 to 12:00
	if _, err := p.RawFromClock("22:00", narrow); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("22:00 with limits 06:00..12:00: %v", err)
	}
	if raw, err := p.RawFromClock("12:00", narrow); err != nil || raw != 73 {
		t.Errorf("12:00 with limits 06:00..12:00: %v %v", raw, err)
	}
	kw := build("PARAM_K", `{'units':0x31,'value':[{'group':'P4','number':7}]}`)
	if kw.ShowsClock(nil) {
		t.Fatal("a kW parameter shows a clock")
	}
	if _, err := kw.RawFromClock("12:00", nil); !errors.Is(err, ErrNotClock) {
		t.Errorf("a kW parameter took a time of day: %v", err)
	}
}

// docs/spec.md A-4.5c: a STATUS_P… symbol whose definition points at another
// register is described, read and indexed at its status register; the
// register its definition names is only reported, as the computed primary.
func TestStatusSymbolReadsItsStatusRegister(t *testing.T) {
	p := testParam(t, "STATUS_P5_7", `{name:'parameters.STATUS_P5_7',group:'P4',value:[{group:'P4',number:2,use:'v'}]}`, nil)
	if p.Address.String() != "P5.s7" || p.ComputedPrimary.String() != "P4.v2" || len(p.Parts) != 0 || p.Computed {
		t.Fatalf("address %v computed primary %v parts %v computed %v", p.Address, p.ComputedPrimary, p.Parts, p.Computed)
	}
	for _, c := range []struct {
		vals map[string]float64
		want display
	}{
		{map[string]float64{"P5.s7": 3, "P4.v2": 99}, display{3, "", true}},
		// The register the definition names alone shows nothing.
		{map[string]float64{"P4.v2": 99}, display{0, "", false}},
		{map[string]float64{"P5.s7": 0}, display{0, "", true}},
	} {
		if got := displayOf(p, values(c.vals)); got != c.want {
			t.Errorf("%v → %+v, want %+v", c.vals, got, c.want)
		}
	}
	// What a write of raw would show is the status register's raw.
	if v, _, ok := p.DisplayRaw(5, values(map[string]float64{"P4.v2": 99})); !ok || v != 5 {
		t.Errorf("DisplayRaw(5) = %v %v, want 5", v, ok)
	}
	// A change of P4.v2 does not touch the symbol; a change of P5.s7 does.
	m := &Module{params: []*Param{p}}
	m.index()
	if got := m.Readers("P4", "v2"); len(got) != 0 {
		t.Errorf("P4.v2 is read by %v, want nobody", got)
	}
	if got := m.Lookup("P5", "s7"); got != p {
		t.Errorf("P5.s7 → %v, want STATUS_P5_7", got)
	}
	// A status symbol that reads its own register keeps its selector's bit.
	own := testParam(t, "STATUS_P5_8", `{value:[{group:'P5',number:8,use:'s',bit:3}]}`, nil)
	if !own.ComputedPrimary.IsZero() {
		t.Fatalf("own register: computed primary %v", own.ComputedPrimary)
	}
	if got := displayOf(own, values(map[string]float64{"P5.s8": 8})); got != (display{1, "", true}) {
		t.Errorf("bit 3 of 8 → %+v, want 1", got)
	}
}

// Display runs for every described parameter at every scrape: it allocates
// nothing, for a plain and a computed parameter of a loaded catalog.
func TestDisplayAllocatesNothing(t *testing.T) {
	c, _ := loadSite(t, Options{}, modA)
	live := values(map[string]float64{"P4.v7": 53, "P4.u7": 49, "P5.s10": 0, "P5.s4": 1 << 10})
	for _, reg := range []string{"P4.v7", "P5.s10"} {
		a, _ := ParseAddress(reg)
		p := c.Module("MOD-A").Lookup(a.Pool, a.ChanIdx())
		if p == nil {
			t.Fatalf("no parameter at %s", reg)
		}
		if _, _, ok := p.Display(live); !ok {
			t.Fatalf("%s shows nothing", p.Symbol)
		}
		if n := testing.AllocsPerRun(100, func() { p.Display(live) }); n != 0 {
			t.Errorf("%s: Display allocates %v times", p.Symbol, n)
		}
	}
}
