package jsval

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// obj builds an *Object from alternating keys and values.
func obj(kv ...Value) *Object {
	o := NewObject()
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

func list(v ...Value) []Value { return v }

// show renders a value unambiguously for comparisons and messages.
func show(v Value) string {
	var b strings.Builder
	var rec func(Value, int)
	rec = func(v Value, d int) {
		if d > 64 {
			b.WriteString("…")
			return
		}
		switch v := v.(type) {
		case nil:
			b.WriteString("null")
		case bool:
			fmt.Fprint(&b, v)
		case float64:
			if math.IsNaN(v) {
				b.WriteString("NaN")
			} else {
				fmt.Fprintf(&b, "%v", v)
			}
		case string:
			fmt.Fprintf(&b, "%q", v)
		case Source:
			fmt.Fprintf(&b, "src(%s)", string(v))
		case *Func:
			b.WriteString("func")
		case []Value:
			b.WriteString("[")
			for i, x := range v {
				if i > 0 {
					b.WriteString(",")
				}
				rec(x, d+1)
			}
			b.WriteString("]")
		case *Object:
			b.WriteString("{")
			for i, k := range v.Keys() {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%q:", k)
				rec(v.Value(k), d+1)
			}
			b.WriteString("}")
		default:
			fmt.Fprintf(&b, "%T", v)
		}
	}
	rec(v, 0)
	return b.String()
}

func exportOf(t *testing.T, src string) (Value, *Program) {
	t.Helper()
	p := Parse([]byte(src), Limits{})
	v, _, ok := p.Export()
	if !ok {
		t.Fatalf("no default export in %q (err %v, lost %d)", src, p.Err, p.Lost)
	}
	return v, p
}

// TestSpecForms is the table of docs/spec.md: every JavaScript
// form the assets use, each with the result the spec gives. Rows 38 (config
// placement), 39 (hashes with hyphens) and 40 (obfuscated transforms) are
// properties of the catalog's scans and live in package catalog
// (TestSpecFormsInCatalog).
func TestSpecForms(t *testing.T) {
	cases := []struct {
		row  int
		name string
		src  string // a module; its default export is compared
		want Value
	}{
		{1, "key quoting", `export default {a:1,'b':2,"c":3}`, obj("a", 1.0, "b", 2.0, "c", 3.0)},
		{2, "numeric keys use ToString", `export default {0xa:1, 2.0:2, 1.5:3, 1e21:4}`, obj("10", 1.0, "2", 2.0, "1.5", 3.0, "1e+21", 4.0)},
		{3, "computed keys", `export default {[_0x9f['INVISIBLE']]:1, ['lit']:2, [0x9]:3, [v]:4}`,
			obj("INVISIBLE", 1.0, "lit", 2.0, "9", 3.0, "v", 4.0)},
		{3, "computed key bound to a string is its value", `const w='x';export default {[w]:1}`, obj("x", 1.0)},
		{4, "decimal float exponent", `export default [42, .5, 1e3, 1.25e-2]`, list(42.0, 0.5, 1000.0, 0.0125)},
		{5, "hex octal binary", `export default [0x7f, 0X1F, 0o17, 0b1010]`, list(127.0, 31.0, 15.0, 10.0)},
		{6, "separators and BigInt", `export default [1_000, 10n, 0x1_0]`, list(1000.0, 10.0, 16.0)},
		{8, "quote styles", "export default ['a', \"a\", `a`]", list("a", "a", "a")},
		{9, "hex and unicode escapes", `export default ['Moc\x20kot\u0142a', '\u{1F600}']`, list("Moc kotła", "😀")},
		{10, "surrogate pair", `export default '\ud83d\ude00'`, "😀"},
		{11, "lone surrogate, code point out of range", `export default ['\ud83d', '\u{110000}', 'a\udc00b']`, list("\uFFFD", "\uFFFD", "a\uFFFDb")},
		{12, "simple escapes", `export default ['\n\r\t\b\f\v\0', '\01']`, list("\n\r\t\b\f\v\x00", "01")},
		{13, "quote, backslash, solidus and unknown escapes", `export default ['it\'s', 'a\\b', 'a\/b', '\q']`, list("it's", `a\b`, "a/b", "q")},
		{14, "line continuations", "export default ['a\\\nb', 'c\\\r\nd', 'e\\\u2028f', 'g\\\u2029h']", list("ab", "cd", "ef", "gh")},
		{15, "malformed escapes", `export default ['\x2', '\uZZZZ', '\u{}', '\x']`, list("x2", "uZZZZ", "u{}", "x")},
		{16, "template with bound identifier", "const n=10;export default [`parameters.STATUS_P5_${n}`, `a${u}b`, `x${n+1}`]",
			list("parameters.STATUS_P5_10", "a${u}b", "x${n + 1}")},
		{17, "true false null", `export default [true, false, null]`, list(true, false, nil)},
		{18, "undefined and void", `export default [undefined, void 0, void 0x0]`, list(nil, nil, nil)},
		{19, "minified booleans", `export default [!0, !1, !![], ![]]`, list(true, false, true, false)},
		{20, "unary minus on numbers", `export default [-5, -0x10, -.5, -x]`, list(-5.0, -16.0, -0.5, Source("-x"))},
		{21, "identifiers: earlier bindings, forward references, unknown names",
			`const A='x';export default {k:A, f:B, u:Zed};const B='late'`, obj("k", "x", "f", Source("B"), "u", Source("Zed"))},
		{22, "export through a binding", `const a={v:1};export{a as default}`, obj("v", 1.0)},
		{22, "export default identifier", `const a={v:2};export default a;`, obj("v", 2.0)},
		{23, "obfuscated subscripts", `const _0x5c={'DISPLAY_MENU_DHW':'dhw'};export default [_0x5c['DISPLAY_MENU_DHW'], _0x5c['OTHER'], _0xab['X']]`,
			list("dhw", "OTHER", "X")},
		{24, "enum subscripts", `export default [ParameterStatus['INVISIBLE'], IconsList['INFO'], Permissions['DISPLAY_MENU_DHW'], BoilerState['STOP'], ClauseOperation['equalTo'], Foo['BAR']]`,
			list("INVISIBLE", "INFO", "DISPLAY_MENU_DHW", "STOP", Source("ClauseOperation['equalTo']"), Source("Foo['BAR']"))},
		{25, "method subscripts stay text", `export default [arr['map'], Math['floor'], Object['DEFINE'], PARAMS['P11_1'], arr[0]]`,
			list(Source("arr['map']"), Source("Math['floor']"), Source("Object['DEFINE']"), Source("PARAMS['P11_1']"), Source("arr[0]"))},
		{25, "subscripts of bound objects and arrays", `const o={a:1},l=[7,8];export default [o['a'], l[1], o.a]`, list(1.0, 8.0, 1.0)},
		{26, "member expressions stay text", `export default [A.READ, t.INVISIBLE, e.ON]`, list(Source("A.READ"), Source("t.INVISIBLE"), Source("e.ON"))},
		{27, "spread", `const base={a:1,b:1};export default {...base, b:2, ...'x', ...null, ...u}`, obj("a", 1.0, "b", 2.0)},
		{27, "array spread", `const l=[1,2];export default [0,...l,3]`, list(0.0, 1.0, 2.0, 3.0)},
		{28, "plus", `export default ['p_'+0x2, 1+2, 'v'+1.0, 'v'+true, [1]+2, 'a'+x]`,
			list("p_2", 3.0, "v1", "vtrue", Source("[1] + 2"), Source("'a' + x"))},
		{29, "nullish and equality", `const f=({n:n,i:i})=>({name:n??'parameters.PARAM_'+i});
			export default [f({i:3}), f({n:'x',i:3}), _0xdead??'d', null===void 0, _0xbeef==null, 1===1, 'a'!=='a', x===1]`,
			list(obj("name", "parameters.PARAM_3"), obj("name", "x"), "d", true, true, true, false, Source("x === 1"))},
		{30, "other binary operators on non-numbers stay text", `export default ['x'-1, 6*7]`, list(Source("'x' - 1"), 42.0)},
		{31, "ternary with JS truthiness", `const c=void 0x0;export default [c!==void 0x0?c:'d', 0?'a':'b', ''?'a':'b', 'z'?'a':'b', null?1:2, [] ? 1 : 2, x?1:2]`,
			list("d", "b", "b", "a", 2.0, 1.0, Source("x ? 1 : 2"))},
		{32, "object-building arrows with destructuring and defaults",
			`const Ic={'INFO':'info'},mk=({id:a,icon:i=Ic['INFO'],number:n,k,m=3,...rest})=>({id:a,icon:i,n:n,k:k,m:m}),
			 p=q=>({q:q}),
			 blk=(x)=>{const o={x:x,y:'y'};return o;};
			 export default [mk({id:1,number:2,k:'kk'}), mk({id:1,icon:'warn',m:4}), p(5), blk(6)]`,
			list(obj("id", 1.0, "icon", "info", "n", 2.0, "k", "kk", "m", 3.0),
				obj("id", 1.0, "icon", "warn", "n", nil, "k", nil, "m", 4.0),
				obj("q", 5.0), obj("x", 6.0, "y", "y"))},
		{33, "calls: one argument as is, several positionally", `const mk=(o)=>({o:o}),two=(a,b)=>({a:a,b:b});export default [mk({'id':1,'number':0x2}), two(1,2)]`,
			list(obj("o", obj("id", 1.0, "number", 2.0)), obj("a", 1.0, "b", 2.0))},
		{34, "non-object arrows stay source text", `export default [k=>k*0.1, (k)=>{const z=k*2;return z;}]`,
			list(Source("(k) => k * 0.1"), Source("(k) => {\n    const z = k * 2;\n    return z;\n}"))},
		{35, "['map'] over a literal list", `export default ['PARAM_1','PARAM_2']['map'](x=>({parameter:x}))`,
			list(obj("parameter", "PARAM_1"), obj("parameter", "PARAM_2"))},
		{36, "obfuscated helper calls", `export default [_0xab(_0xcd['WRITE'],'PARAM_45'), _0xab(_0xcd['READ'],'STATUS_P5_1'), f('WRITE','PARAM_45'), _0xab(_0xcd['WRITE'],'OTHER')]`,
			list("PARAM_45", "STATUS_P5_1", Source("f('WRITE', 'PARAM_45')"), Source("_0xab(_0xcd['WRITE'], 'OTHER')"))},
		{37, "export default object", `export default {a:1}`, obj("a", 1.0)},
		{37, "export default array", `export default [1]`, list(1.0)},
		{37, "export default text", `export default 'text'`, "text"},
		{41, "Unicode payloads preserved", `export default ['Zażółć gęślą jaźń','Привет','中文','😀']`, list("Zażółć gęślą jaźń", "Привет", "中文", "😀")},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("row%02d %s", c.row, c.name), func(t *testing.T) {
			got, p := exportOf(t, c.src)
			if show(got) != show(c.want) {
				t.Fatalf("got  %s\nwant %s\n(err %v)", show(got), show(c.want), p.Err)
			}
		})
	}
}

// Row 7: invalid radix text is not a number; the parser rejects it as a
// syntax error, and recovery keeps the rest of the file.
func TestSpecFormRow7InvalidRadix(t *testing.T) {
	for _, s := range []string{"0xZZ", "0b12", "0o99", "1__0", "_1", "1n.5"} {
		if f, ok := ParseNumber(s); ok {
			t.Errorf("ParseNumber(%q) = %v, want kept as text", s, f)
		}
	}
	p := Parse([]byte(`const a={x:0xZZ};const b={y:1};export default b`), Limits{})
	v, _, ok := p.Export()
	if !ok || show(v) != `{"y":1}` || p.Err == nil || p.Lost != 1 {
		t.Fatalf("export %s ok %v err %v lost %d", show(v), ok, p.Err, p.Lost)
	}
}

// Row 15 (a trailing backslash stays) cannot be written inside a literal.
func TestDecodeTrailingBackslash(t *testing.T) {
	if got := DecodeString(`ab\`); got != `ab\` {
		t.Fatalf("got %q", got)
	}
}

// Row 42: syntax errors and empty input never abort.
func TestSpecFormRow42SyntaxErrors(t *testing.T) {
	for _, src := range []string{"", "   ", "var x = {[}", "}}}}", "export default {a:", "\x00\xff\xfe"} {
		p := Parse([]byte(src), Limits{})
		if v, _, ok := p.Export(); ok {
			t.Errorf("%q: export %s", src, show(v))
		}
		if _, ok := p.LargestLiteral(); ok && src == "var x = {[}" {
			t.Errorf("%q: a literal was recovered from a broken statement", src)
		}
	}
	// Recovery keeps every statement and declarator that parses on its own.
	p := Parse([]byte(`const a={k:1},bad={[},c={k:3};var x = {[};function f(){return 1}const d=[c];export default d`), Limits{})
	v, _, ok := p.Export()
	if !ok || show(v) != `[{"k":3}]` {
		t.Fatalf("recovered export %s ok %v", show(v), ok)
	}
	if p.Lost != 2 {
		t.Fatalf("lost %d pieces, want 2 (bad declarator, bad statement)", p.Lost)
	}
	if a, ok := p.Binding("a"); !ok || show(a) != `{"k":1}` {
		t.Fatalf("binding a = %s", show(a))
	}
}

// Recovery must not be fooled by a regular expression holding ; or braces.
func TestRecoveryRegexAndTemplates(t *testing.T) {
	src := "const r=/a;}{/g,t=`x;${'}'};y`;const bad={[};export default {r:r,t:t}"
	p := Parse([]byte(src), Limits{})
	v, _, ok := p.Export()
	if !ok || show(v) != `{"r":src(/a;}{/g),"t":"x;${'}'};y"}` {
		t.Fatalf("got %s ok %v lost %d", show(v), ok, p.Lost)
	}
}

// Row 43: pathological nesting degrades to null or nothing, bounded in time
// and memory.
func TestSpecFormRow43DeepNesting(t *testing.T) {
	for _, n := range []int{300, 900, 50_000} {
		for _, shape := range []struct{ open, close string }{{"[", "]"}, {"{a:", "}"}, {"(", ")"}, {"-", ""}, {"!", ""}} {
			inner := "1"
			src := "export default " + strings.Repeat(shape.open, n) + inner + strings.Repeat(shape.close, n) + ";export const ok={k:1}"
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			p := Parse([]byte(src), Limits{})
			v, _, _ := p.Export()
			ok, _ := p.Binding("ok")
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if show(ok) != `{"k":1}` {
				t.Errorf("%d×%q: the statement after the deep one was lost: %s", n, shape.open, show(ok))
			}
			if d := depthOf(v, 0); d > DefaultLimits.MaxDepth+1 {
				t.Errorf("%d×%q: value nested %d deep", n, shape.open, d)
			}
			// Generous bounds: they only catch quadratic or unbounded work.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
				t.Errorf("%d×%q: %d MiB allocated", n, shape.open, alloc>>20)
			}
			if elapsed > 20*time.Second {
				t.Errorf("%d×%q: took %v", n, shape.open, elapsed)
			}
		}
	}
	// Within the parser's nesting limit the evaluator's own cut applies.
	p := Parse([]byte("export default "+strings.Repeat("[", 900)+strings.Repeat("]", 900)), Limits{})
	v, _, ok := p.Export()
	if !ok || !p.TooDeep || depthOf(v, 0) > DefaultLimits.MaxDepth+1 {
		t.Fatalf("900 levels: ok %v tooDeep %v depth %d", ok, p.TooDeep, depthOf(v, 0))
	}
}

func depthOf(v Value, d int) int {
	best := d
	switch v := v.(type) {
	case []Value:
		for _, x := range v {
			best = max(best, depthOf(x, d+1))
		}
	case *Object:
		for _, k := range v.Keys() {
			best = max(best, depthOf(v.Value(k), d+1))
		}
	}
	return best
}

// The step budget stops exponential expansion through shared builders.
func TestStepBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("const f0=x=>({a:x,b:x});")
	for i := 1; i < 60; i++ {
		fmt.Fprintf(&b, "const f%d=x=>({a:f%d(x),b:f%d(x)});", i, i-1, i-1)
	}
	b.WriteString("export default f59(1)")
	start := time.Now()
	p := Parse([]byte(b.String()), Limits{MaxSteps: 100_000})
	p.Export()
	if !p.Exhausted {
		t.Fatal("budget not reported as spent")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("budget did not bound the work")
	}
}

func TestFormatNumber(t *testing.T) {
	cases := map[float64]string{0: "0", 1: "1", -1: "-1", 0.1: "0.1", 1.5: "1.5", 1e21: "1e+21", 1e-7: "1e-7",
		0.000001: "0.000001", 123456789012: "123456789012", 2.5e-8: "2.5e-8", 1.23e25: "1.23e+25", -0.5: "-0.5"}
	keys := make([]float64, 0, len(cases))
	for k := range cases {
		keys = append(keys, k)
	}
	sort.Float64s(keys)
	for _, f := range keys {
		if got := FormatNumber(f); got != cases[f] {
			t.Errorf("FormatNumber(%v) = %q, want %q", f, got, cases[f])
		}
	}
}

// Later top-level declarations of the same name win for later sites only;
// functions see the bindings of the site that calls them.
func TestBindingOrderAndClosures(t *testing.T) {
	src := `var v='one';const a={v:v};var v='two';
		const mk=(n)=>({n:n,icon:Icons['INFO'],s:S});const Icons={'INFO':'info'},S='s';
		const t={x:mk(1)};export default {a:a,v:v,t:t}`
	got, _ := exportOf(t, src)
	want := `{"a":{"v":"one"},"v":"two","t":{"x":{"n":1,"icon":"info","s":"s"}}}`
	if show(got) != want {
		t.Fatalf("got  %s\nwant %s", show(got), want)
	}
}

// Function bodies with ifs are followed when the condition is known, and
// stay text when it is not.
func TestFunctionBodies(t *testing.T) {
	src := `const f=(k)=>{if(k===1){return {one:!0}}const o={other:k};return o;};
		export default [f(1), f(2), f(x)]`
	got, _ := exportOf(t, src)
	// f(x): whether x===1 cannot be known, so the call stays text.
	want := `[{"one":true},{"other":2},src(f(x))]`
	if show(got) != want {
		t.Fatalf("got  %s\nwant %s", show(got), want)
	}
	src = `const f=(k)=>{if(k.a){return {one:1}}return {two:2}};export default f(x)`
	got, _ = exportOf(t, src)
	if _, ok := got.(Source); !ok {
		t.Fatalf("undecidable body gave %s", show(got))
	}
}

// Sharing through bindings cannot grow strings, objects or lists without
// bound: doubling stops at the string cap and the step budget.
func TestDoublingBounded(t *testing.T) {
	for _, seed := range []string{"'ab'", "[1,2]", "{a:1}"} {
		var b strings.Builder
		b.WriteString("const a0=" + seed + ";")
		for i := 1; i < 64; i++ {
			switch seed[0] {
			case '\'':
				fmt.Fprintf(&b, "const a%d=a%d+a%d;", i, i-1, i-1)
			case '[':
				fmt.Fprintf(&b, "const a%d=[...a%d,...a%d];", i, i-1, i-1)
			default:
				fmt.Fprintf(&b, "const a%d={...a%d,['k%d']:a%d};", i, i-1, i, i-1)
			}
		}
		b.WriteString("export default a63")
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p := Parse([]byte(b.String()), Limits{})
		v, _, _ := p.Export()
		runtime.ReadMemStats(&after)
		if s, ok := v.(string); ok && len(s) > DefaultLimits.MaxString {
			t.Fatalf("%s: string of %d bytes", seed, len(s))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 512<<20 {
			t.Fatalf("%s: %d MiB allocated", seed, alloc>>20)
		}
	}
}
