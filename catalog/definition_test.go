package catalog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

// jsObj evaluates a JavaScript object literal (with optional declarations
// before it, separated by "|||").
func jsObj(t testing.TB, src string) *jsval.Object {
	t.Helper()
	decls, expr, found := strings.Cut(src, "|||")
	if !found {
		decls, expr = "", src
	}
	p := jsval.Parse([]byte(decls+";export default ("+expr+")"), jsval.Limits{})
	v, _, _ := p.Export()
	o, ok := v.(*jsval.Object)
	if !ok {
		t.Fatalf("%q is not an object (%v, err %v)", src, v, p.Err)
	}
	return o
}

func def(t testing.TB, symbol, src string) *definition {
	t.Helper()
	return newDefinition(symbol, "test", jsObj(t, src))
}

func selText(s []selector) string {
	var out []string
	for _, x := range s {
		e := x.addr.String()
		if x.bit >= 0 {
			e += fmt.Sprintf("/bit%d", x.bit)
		}
		if x.mask != 0 {
			e += fmt.Sprintf("/mask%d", x.mask)
		}
		if x.convert {
			e += "/convert"
		}
		if x.times != 1 {
			e += fmt.Sprintf("/x%v", x.times)
		}
		out = append(out, e)
	}
	return strings.Join(out, " ")
}

// docs/spec.md: the definition of a chunk is its default export (through a
// binding), else the largest literal; a table keyed by symbol gives the
// symbol's entry; an array is not a definition.
func TestDefinitionChunkForms(t *testing.T) {
	cases := []struct {
		name, src, want string // want: primary address, "" when no definition
	}{
		{"export default object", `export default {value:[{group:'P4',number:1,use:'v'}]}`, "P4.v1"},
		{"export through binding", `const e={value:[{group:'P4',number:2,use:'v'}]};export{e as default}`, "P4.v2"},
		{"binding built by a call", `const mk=n=>({value:[{group:'P4',number:n,use:'v'}]}),e=mk(3);export{e as default}`, "P4.v3"},
		{"no export: largest literal", `const a={x:1},b={value:[{group:'P4',number:4,use:'v'}],name:'n'}`, "P4.v4"},
		{"table keyed by symbol", `export default {'PARAM_X':{value:[{group:'P4',number:5,use:'v'}]},'PARAM_Y':{value:[{group:'P4',number:6}]}}`, "P4.v5"},
		{"array root", `export default [{value:[{group:'P4',number:7}]}]`, ""},
		{"syntax error", `export default {value:[{group:'P4' number:8}]}`, ""},
	}
	for _, c := range cases {
		o, ok := parseDefinitionChunk([]byte(c.src))
		got := ""
		if ok && looksLikeDefinition(o, "PARAM_X") {
			a, _, _ := newDefinition("PARAM_X", "t", o).primaryAddress()
			got = a.String()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// docs/spec.md: selector key aliases and channel words.
func TestSelectorAliases(t *testing.T) {
	cases := map[string]string{
		`{group:'P4',number:14,use:'v'}`:                               "P4.v14",
		`{pool:'P5',index:4,use:'s',bit:5}`:                            "P5.s4/bit5",
		`{group:'P5',idx:'20',path:'status',mask:7}`:                   "P5.s20/mask7",
		`{pool:5,number:1,chan:'unit'}`:                                "P5.u1",
		`{group:'5',number:1,pathType:'minValue'}`:                     "P5.n1",
		`{group:'P4',number:1,use:'maxvalue'}`:                         "P4.x1",
		`{group:'P4',number:1,use:'command'}`:                          "P4.v1",
		`{group:'P4',number:1,use:'[t.STATUS]'}`:                       "P4.s1",
		`{group:'P4',number:1,use:'temperature'}`:                      "P4.t1",
		`{group:'P4',number:1}`:                                        "P4.v1",
		`{group:'P4',number:0,use:'s'}`:                                "P4.s0", // index 0 preserved (docs/spec.md)
		`{group:'P4',number:60,use:'v',convert:_0x35dce1,times:65536}`: "P4.v60/convert/x65536",
	}
	for src, want := range cases {
		s, ok := parseSelector(jsObj(t, src))
		if got := selText([]selector{s}); !ok || got != want {
			t.Errorf("%s → %q %v, want %q", src, got, ok, want)
		}
	}
	for _, src := range []string{`{group:'P4'}`, `{number:1}`, `{group:'P4',number:-1}`, `{group:'P4',number:1.5}`} {
		if _, ok := parseSelector(jsObj(t, src)); ok {
			t.Errorf("%s accepted", src)
		}
	}
}

// docs/spec.md: the legacy use map fills only what the explicit fields left
// empty; docs/spec.md units from units, else unit_name, else a scalar unit.
func TestLegacyUseMapAndUnits(t *testing.T) {
	d := def(t, "PARAM_66", `{'units':0x1,'use':{'v':{'pool':'P4','chan':'v','idx':1},'u':{'pool':'P4','chan':'u','idx':1},
		's':[{'pool':'P5','chan':'s','idx':40}],'n':{'pool':'P4','chan':'n','idx':1},'x':{'pool':'P4','chan':'x','idx':1}}}`)
	if selText(d.values) != "P4.v1" || selText(d.unitSel) != "P4.u1" || selText(d.minSel) != "P4.n1" || selText(d.maxSel) != "P4.x1" ||
		len(d.status) != 1 || d.unitCode != "1" {
		t.Fatalf("use map: v %q u %q n %q x %q status %v code %q", selText(d.values), selText(d.unitSel), selText(d.minSel), selText(d.maxSel), d.status, d.unitCode)
	}
	d = def(t, "X", `{'value':[{'group':'P4','number':9}],'use':{'v':{'pool':'P4','chan':'v','idx':1}}}`)
	if selText(d.values) != "P4.v9" {
		t.Fatalf("explicit value overridden by the use map: %q", selText(d.values))
	}
	for src, want := range map[string]string{`{units:'C',unit:5}`: "C", `{unit_name:'kW',unit:5}`: "kW", `{unit:0x31}`: "49", `{unit:[{group:'P4',number:1,use:'u'}]}`: ""} {
		if got := def(t, "X", src).unitCode; got != want {
			t.Errorf("%s: unit code %q, want %q", src, got, want)
		}
	}
}

// docs/spec.md: condition names in every spelling normalise to the bare name; a
// list-valued status sits under DEFAULT; rule entries are kept as rules.
func TestStatusConditionNames(t *testing.T) {
	d := def(t, "X", `{'status':{[_0x4d7e32['INVISIBLE']]:[{'group':'P6','number':13,'use':'s','bit':0}],
		"ParameterStatus['ENABLED']":[{'group':'P6','number':35,'use':'s'}],'[t.DEVICE_AVAILABLE]':{'group':'P6','number':1,'use':'s'},
		'u.VISIBLE':[{'if':[{'operation':'equalTo','expected':1,'value':[{'group':'P6','number':2}]}],'then':'!0','else':'!1'}],'available':[]}}`)
	var got []string
	for _, e := range d.status {
		kind := "sel"
		if e.rule != nil {
			kind = "rule"
		}
		got = append(got, e.cond+":"+kind)
	}
	want := []string{"INVISIBLE:sel", "ENABLED:sel", "DEVICE_AVAILABLE:sel", "VISIBLE:rule"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("status %v, want %v", got, want)
	}
	if d.status[3].rule.then != true || d.status[3].els != false {
		t.Fatalf("rule literals not normalised: %v %v", d.status[3].rule.then, d.status[3].els)
	}
	d = def(t, "X", `{'status':[{'group':'P6','number':3,'use':'s'}]}`)
	if len(d.status) != 1 || d.status[0].cond != "DEFAULT" {
		t.Fatalf("list status %+v", d.status)
	}
}

// docs/spec.md: rule literals normalised; command rules (then with a command)
// kept apart from computed ones; operators cleaned of prefixes.
func TestRuleLists(t *testing.T) {
	d := def(t, "X", `{'value':[{'group':'P4','number':2}],'any':[
		{'if':[{'operation':t.equalTo,'expected':'!0','value':[{'group':'P4','number':2}]}],'then':{'command':'e.WRITE','value':!1}},
		{'elseif':[{'operation':ClauseOperation['notEqualTo'],'expected':void 0x0,'value':[{'group':'P4','number':2}]}],'then':{'command':'WRITE','value':'true'}},
		{'else':null}]}`)
	if len(d.commands) != 2 || len(d.rules) != 0 || d.computed() {
		t.Fatalf("commands %d rules %d", len(d.commands), len(d.rules))
	}
	c := d.commands[0].conds[0]
	if c.op != "equalTo" || c.expected != true || d.commands[1].conds[0].op != "notEqualTo" || d.commands[1].conds[0].expected != nil {
		t.Fatalf("conditions %+v %+v", c, d.commands[1].conds[0])
	}
	if v := d.commands[1].then.(*jsval.Object).Value("value"); v != "true" {
		t.Fatalf("a bare 'true' string must stay a string, got %#v", v)
	}
}

// docs/spec.md A-4.4a: a chunk whose base is the symbol first, then the index's inline
// definitions; a symbol with a broken chunk is counted and falls back to the
// index; a symbol found nowhere is not described.
func TestDefinitionLookup(t *testing.T) {
	c, f := loadSite(t, Options{}, modC)
	m := c.Module("MOD-C")
	if p := m.BySymbol("PARAM_P4_7"); p == nil || !strings.HasPrefix(p.def.origin, "asset:/assets/PARAM_P4_7-Hh12.js") {
		t.Fatalf("PARAM_P4_7 not from its chunk: %+v", p)
	}
	if p := m.BySymbol("PARAM_P4_1"); p == nil || p.def.origin != "inline:index" {
		t.Fatalf("PARAM_P4_1 not from the index")
	}
	if p := m.BySymbol("PARAM_P4_9"); p == nil || p.def.origin != "inline:index" {
		t.Fatal("the broken chunk's symbol did not fall back to the index")
	}
	if n := c.Failures()[StageDefinition]; n != 1 {
		t.Fatalf("definition failures %d, want 1 (the broken chunk)", n)
	}
	if m.BySymbol("PARAM_UNKNOWN_1") != nil {
		t.Fatal("a symbol with no definition was described")
	}
	if u := m.Undefined(); !slices.Contains(u, "PARAM_UNKNOWN_1") {
		t.Fatalf("Undefined() = %v, want the symbol with no definition among them", u)
	}
	if f.fetched("/assets/PARAM_P4_9-Br0k.js") != 1 {
		t.Fatal("chunk not fetched once")
	}

	// A chunk that cannot be fetched, for a symbol the index lacks: the
	// symbol alone is lost, the rest is built.
	f = siteFetcher(t)
	f.fail("/assets/PARAM_P4_7-Hh12.js", errors.New("boom"))
	c, err := Load(context.Background(), f, []ModuleSpec{modC}, Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	m = c.Module("MOD-C")
	if m.BySymbol("PARAM_P4_7") != nil || m.BySymbol("PARAM_66") == nil || c.Failures()[StageDefinition] != 2 {
		t.Fatalf("P4_7 %v, PARAM_66 %v, failures %v", m.BySymbol("PARAM_P4_7"), m.BySymbol("PARAM_66"), c.Failures())
	}
}

// docs/spec.md A-4.5a: the primary address.
func TestPrimaryAddress(t *testing.T) {
	cases := []struct{ symbol, src, want, computed string }{
		{"PARAM_A", `{value:[{group:'P4',number:7,use:'v'}],status:{INVISIBLE:[{group:'P4',number:7,use:'s',bit:7}]}}`, "P4.v7", ""},
		// The value's selectors win over the walk (the caveat of
		// docs/spec.md A-4.5a): the walk would meet the status selector first.
		{"PARAM_B", `{status:{INVISIBLE:[{group:'P4',number:3,use:'v'}]},value:[{group:'P4',number:8,use:'v'}]}`, "P4.v8", ""},
		// Walk: v first, then s, u, x, n.
		{"PARAM_C", `{unit:[{group:'P4',number:1,use:'u'}],status:[{group:'P5',number:2,use:'s'}]}`, "P5.s2", ""},
		{"PARAM_D", `{max:[{group:'P4',number:1,use:'x'}],min:[{group:'P4',number:1,use:'n'}]}`, "P4.x1", ""},
		{"PARAM_E", `{any:[{if:[{operation:'equalTo',expected:1,value:[{group:'P4',number:4}]}],then:{command:'WRITE',value:1}}]}`, "P4.v4", ""},
		// No selectors: the pool-encoded name; STATUS_ is always its status
		// register (docs/spec.md A-4.5c), and what its definition points at
		// instead is the computed primary.
		{"PARAM_P11_1", `{name:'parameters.PARAM_P11_1'}`, "P11.v1", ""},
		{"STATUS_P5_10", `{value:[{if:[{operation:'equalTo',expected:1,value:[{group:'P5',number:4,use:'s',bit:10}]}],then:'e.ON'}]}`, "P5.s10", "P5.s4"},
		{"STATUS_P5_7", `{group:'P4',value:[{group:'P4',number:2,use:'v'}]}`, "P5.s7", "P4.v2"},
		{"STATUS_P5_8", `{value:[{group:'P5',number:8,use:'s',bit:3}]}`, "P5.s8", ""},
		{"STATUS_P5_0", `{name:'x'}`, "P5.s0", ""},
		// A classic PARAM_<n> never gets an address from its name.
		{"PARAM_10", `{name:'parameters.PARAM_10'}`, "", ""},
	}
	for _, c := range cases {
		a, computed, ok := def(t, c.symbol, c.src).primaryAddress()
		got, gotComputed := "", ""
		if ok {
			got = a.String()
		}
		if !computed.IsZero() {
			gotComputed = computed.String()
		}
		if got != c.want || gotComputed != c.computed {
			t.Errorf("%s: %q computed %q, want %q computed %q", c.symbol, got, gotComputed, c.want, c.computed)
		}
	}
}

// docs/spec.md A-4.5b: the inverse index — a register → the parameter it primarily
// describes (first in menu order), and every parameter that reads it.
func TestInverseIndex(t *testing.T) {
	c, _ := loadSite(t, Options{}, modA, modB)
	a, b := c.Module("MOD-A"), c.Module("MOD-B")
	if p := a.Lookup("P5", "s10"); p == nil || p.Symbol != "STATUS_P5_10" {
		t.Fatalf("P5.s10 → %v", p)
	}
	// The status register P5.s4 feeds STATUS_P5_10's rule; P4.s1 holds
	// PARAM_P4_1's visibility bit; P4.v60 is the high word of PARAM_P4_59.
	for reg, want := range map[string]string{"P5.s4": "STATUS_P5_10", "P4.s1": "PARAM_P4_1", "P4.v60": "PARAM_P4_59", "P4.u7": "PARAM_P4_7"} {
		ad, _ := ParseAddress(reg)
		var got []string
		for _, p := range a.Readers(ad.Pool, ad.ChanIdx()) {
			got = append(got, p.Symbol)
		}
		if !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("Readers(%s) = %v, want [%s]", reg, got, want)
		}
	}
	if a.Lookup("P4", "v60") != nil || a.Lookup("P5", "s4") != nil {
		t.Fatal("an input register was indexed as a primary register")
	}
	// A register whose symbol A's permissions hide is not described for A,
	// although B describes it.
	if a.Lookup("P4", "v21") != nil || a.BySymbol("PARAM_P4_21") != nil {
		t.Fatal("MOD-A describes PARAM_P4_21, which its permissions hide")
	}
	if p := b.Lookup("P4", "v21"); p == nil || !p.Writable {
		t.Fatalf("MOD-B: %v", p)
	}
	// Modules are keyed by devid: the same register in two modules is two
	// parameters.
	if a.Lookup("P4", "v1") == b.Lookup("P4", "v1") {
		t.Fatal("parameters shared between modules")
	}
	if got := a.ByName("Boiler power"); len(got) != 1 || got[0].Symbol != "PARAM_P4_7" {
		t.Fatalf("ByName %v", got)
	}
	if c.Module("nope") != nil || c.Module("nope").Lookup("P4", "v1") != nil {
		t.Fatal("unknown module")
	}
}

// Values share parts (a binding is evaluated once and used many times):
// walks over them are bounded in nodes, not only in depth, so a bundle
// built as a doubling tower costs little.
func TestSharedValuesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("const a0={'name':'x','group':'P9','number':1,'use':'u'}")
	for i := 1; i <= 28; i++ { // 2^28 paths, 29 levels: within the depth bounds
		fmt.Fprintf(&b, ",a%d=[a%d,a%d]", i, i-1, i-1)
	}
	b.WriteString(",r0={'path':'p','meta':{'parameters':{'read':['PARAM_DAG']}}}")
	for i := 1; i <= 28; i++ {
		fmt.Fprintf(&b, ",r%d={'path':'p%d','children':[r%d,r%d]}", i, i, i-1, i-1)
	}
	b.WriteString(";export default {'PARAM_DAG':{'name':'n','extra':a28},'menu':[r28]}")
	start := time.Now()
	p := jsval.Parse([]byte(b.String()), jsval.Limits{})
	v, _, _ := p.Export()
	o := v.(*jsval.Object)
	d := newDefinition("PARAM_DAG", "t", o)
	if a, _, ok := d.primaryAddress(); !ok || a.String() != "P9.u1" {
		t.Fatalf("address %v %v", a, ok)
	}
	budget := walkBudget(maxWalkNodes)
	list := findRouteList(o.Value("menu"), 0, &budget)
	routes := walkBudget(maxRoutes)
	if r := parseRoutes(list, 0, &routes); len(visibleTokens(r)) != 1 {
		t.Fatalf("tokens %v", tokensOf(r))
	}
	var fp strings.Builder
	writeValue(&fp, o, 0)
	if time.Since(start) > 20*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}
