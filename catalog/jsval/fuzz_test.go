package jsval

import (
	"strings"
	"testing"
	"time"
)

// FuzzEvaluate feeds arbitrary text to the parser, its recovery and the
// evaluator: no panic, and every file is done within a bounded time (the
// budget, not the input, decides).
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		`export default {a:1,'b':[!0,void 0x0,-5],[_0x1['X']]:` + "`t${n}`" + `}`,
		`const mk=({id:a,n:n=1})=>({id:a,n:n}),t={'PARAM_P4_1':mk({id:0x1})};export{t as default}`,
		`['PARAM_1']['map'](x=>({parameter:_0xab(_0xcd['READ'],x)}))`,
		`var x = {[}`, "const r=/a;}{/g,t=`x;${'}'};y`;",
		"export default " + strings.Repeat("[", 2000) + strings.Repeat("]", 2000),
		"export default " + strings.Repeat("{a:", 600) + "1" + strings.Repeat("}", 600),
		`const f=x=>f(x);export default f(1)`,
		`const a={...a};export default a`,
		"'\\u{110000}\\ud83d\\x2'",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		start := time.Now()
		p := Parse(src, Limits{MaxSteps: 200_000})
		p.Export()
		p.LargestLiteral()
		for _, d := range p.Decls() {
			p.Binding(d.Name)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("took %v on %d bytes", time.Since(start), len(src))
		}
	})
}
