package catalog

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

// linearTransform is a recognised unit value transform (docs/spec.md A-4.7.3a): display =
// ((raw + add) × mul) ÷ div, rounded to digits decimals when digits ≥ 0.
type linearTransform struct {
	add    float64
	mul    float64
	div    float64
	digits int
}

// identity is the transform of a unit without a value function.
var identity = linearTransform{mul: 1, div: 1, digits: -1}

// apply turns a raw value into its display value. The operations run in
// the order the app's function runs them, so the result is the number the
// app shows (53 × 0.1 with one decimal is 5.3).
func (t linearTransform) apply(raw float64) float64 {
	v := raw + t.add
	if t.mul != 1 {
		v *= t.mul
	}
	if t.div != 1 {
		v /= t.div
	}
	if t.digits >= 0 {
		p := math.Pow(10, float64(t.digits))
		v = math.Round(v*p) / p
	}
	return v
}

// invert turns a display value back into a raw one (for writes): the
// inverse of apply, rounded to an integer when within 1e-9 of one.
func (t linearTransform) invert(display float64) (float64, error) {
	if t.mul == 0 || t.div == 0 {
		return 0, errors.New("catalog: transform is not invertible")
	}
	raw := display*t.div/t.mul - t.add
	if r := math.Round(raw); math.Abs(raw-r) < 1e-9 {
		raw = r
	}
	return raw, nil
}

// maxTransformSource bounds the text the recogniser parses.
const maxTransformSource = 16 << 10

// recogniseTransform matches a unit's value function against the patterns
// of docs/spec.md A-4.7.3a: x*k, x/k, (x±a)*k, x±a (and x±a divided), each optionally
// wrapped as Number((…).toFixed(n)), Number(…).toFixed(n) or (…).toFixed(n).
// Numbers may be hex, signed or written .5; the register parameter may have
// any name (_0x4f is a name, not a hex literal); a block body that only
// returns counts as an expression body; k*x is x*k. Anything else is not
// recognised and the raw value is shown unchanged.
func recogniseTransform(src string) (linearTransform, bool) {
	body, param, ok := arrowBody(src)
	if !ok {
		return linearTransform{}, false
	}
	t := identity
	e := unwrap(body)
	// Number(E) / Number(E.toFixed(n)) / E.toFixed(n) / Number(E).toFixed(n)
	if x, n, ok := toFixed(e); ok {
		t.digits = n
		e = x
		if inner, ok := numberCall(e); ok {
			e = inner
		}
	} else if inner, ok := numberCall(e); ok {
		e = inner
		if x, n, ok := toFixed(e); ok {
			t.digits, e = n, x
		}
	}
	if !linear(e, param, &t) {
		return linearTransform{}, false
	}
	return t, true
}

// arrowBody parses a function's source and returns the expression it
// returns and its single parameter's name.
func arrowBody(src string) (js.IExpr, string, bool) {
	if len(src) == 0 || len(src) > maxTransformSource {
		return nil, "", false
	}
	buf := make([]byte, 0, len(src)+8)
	buf = append(buf, "x=("...)
	buf = append(buf, src...)
	buf = append(buf, ')')
	ast, err := parseSafely(buf)
	if err != nil || len(ast.List) != 1 {
		return nil, "", false
	}
	es, ok := ast.List[0].(*js.ExprStmt)
	if !ok {
		return nil, "", false
	}
	as, ok := es.Value.(*js.BinaryExpr)
	if !ok || as.Op != js.EqToken {
		return nil, "", false
	}
	var params js.Params
	var body js.BlockStmt
	switch f := unwrap(as.Y).(type) {
	case *js.ArrowFunc:
		params, body = f.Params, f.Body
	case *js.FuncDecl:
		params, body = f.Params, f.Body
	default:
		return nil, "", false
	}
	if len(params.List) != 1 || params.Rest != nil || len(body.List) != 1 {
		return nil, "", false
	}
	v, ok := params.List[0].Binding.(*js.Var)
	if !ok {
		return nil, "", false
	}
	ret, ok := body.List[0].(*js.ReturnStmt)
	if !ok || ret.Value == nil {
		return nil, "", false
	}
	return ret.Value, string(v.Data), true
}

func parseSafely(src []byte) (ast *js.AST, err error) {
	defer func() {
		if r := recover(); r != nil {
			ast, err = nil, fmt.Errorf("parser panic: %v", r)
		}
	}()
	return js.Parse(parse.NewInputBytes(src), js.Options{})
}

func unwrap(e js.IExpr) js.IExpr {
	for i := 0; i < 64; i++ {
		g, ok := e.(*js.GroupExpr)
		if !ok {
			break
		}
		e = g.X
	}
	return e
}

// memberOf returns the receiver of x.name or x['name'].
func memberOf(e js.IExpr, name string) (js.IExpr, bool) {
	switch m := e.(type) {
	case *js.DotExpr:
		switch y := m.Y.(type) {
		case js.LiteralExpr:
			return m.X, string(y.Data) == name
		case *js.LiteralExpr:
			return m.X, string(y.Data) == name
		}
	case *js.IndexExpr:
		if l, ok := m.Y.(*js.LiteralExpr); ok && l.TokenType == js.StringToken {
			return m.X, jsval.DecodeString(string(l.Data)) == name
		}
	}
	return nil, false
}

// toFixed matches X.toFixed(n) with a literal n.
func toFixed(e js.IExpr) (js.IExpr, int, bool) {
	c, ok := e.(*js.CallExpr)
	if !ok || len(c.Args.List) != 1 {
		return nil, 0, false
	}
	x, ok := memberOf(c.X, "toFixed")
	if !ok {
		return nil, 0, false
	}
	n, ok := numberLit(c.Args.List[0].Value)
	if !ok || n < 0 || n > 20 || n != math.Trunc(n) {
		return nil, 0, false
	}
	return unwrap(x), int(n), true
}

// numberCall matches Number(E).
func numberCall(e js.IExpr) (js.IExpr, bool) {
	c, ok := e.(*js.CallExpr)
	if !ok || len(c.Args.List) != 1 {
		return nil, false
	}
	if v, ok := c.X.(*js.Var); !ok || string(v.Data) != "Number" {
		return nil, false
	}
	return unwrap(c.Args.List[0].Value), true
}

// numberLit reads a numeric literal, signed or not.
func numberLit(e js.IExpr) (float64, bool) {
	switch n := unwrap(e).(type) {
	case *js.LiteralExpr:
		switch n.TokenType {
		case js.DecimalToken, js.IntegerToken, js.HexadecimalToken, js.OctalToken, js.BinaryToken:
			return jsval.ParseNumber(string(n.Data))
		}
	case *js.UnaryExpr:
		if n.Op == js.NegToken || n.Op == js.PosToken {
			if f, ok := numberLit(n.X); ok {
				if n.Op == js.NegToken {
					f = -f
				}
				return f, true
			}
		}
	}
	return 0, false
}

func isParam(e js.IExpr, param string) bool {
	v, ok := unwrap(e).(*js.Var)
	return ok && string(v.Data) == param
}

// linear matches x, x*k, k*x, x/k, x±a, (x±a)*k, k*(x±a) and (x±a)/k.
func linear(e js.IExpr, param string, t *linearTransform) bool {
	e = unwrap(e)
	if isParam(e, param) {
		return true
	}
	b, ok := e.(*js.BinaryExpr)
	if !ok {
		return false
	}
	switch b.Op {
	case js.MulToken:
		x, k := b.X, b.Y
		f, ok := numberLit(k)
		if !ok {
			x, k = b.Y, b.X
			if f, ok = numberLit(k); !ok {
				return false
			}
		}
		t.mul = f
		return offset(x, param, t)
	case js.DivToken:
		f, ok := numberLit(b.Y)
		if !ok || f == 0 {
			return false
		}
		t.div = f
		return offset(b.X, param, t)
	case js.AddToken, js.SubToken:
		return offset(e, param, t)
	}
	return false
}

// offset matches x, x+a, x-a and a+x.
func offset(e js.IExpr, param string, t *linearTransform) bool {
	e = unwrap(e)
	if isParam(e, param) {
		return true
	}
	b, ok := e.(*js.BinaryExpr)
	if !ok || (b.Op != js.AddToken && b.Op != js.SubToken) {
		return false
	}
	if isParam(b.X, param) {
		f, ok := numberLit(b.Y)
		if !ok {
			return false
		}
		if b.Op == js.SubToken {
			f = -f
		}
		t.add = f
		return true
	}
	if b.Op == js.AddToken && isParam(b.Y, param) {
		f, ok := numberLit(b.X)
		t.add = f
		return ok
	}
	return false
}

var (
	radixRE     = regexp.MustCompile(`(^|[^\w$.])0[xX][0-9a-fA-F]+|(^|[^\w$.])0[oO][0-7]+|(^|[^\w$.])0[bB][01]+`)
	bracketRE   = regexp.MustCompile(`\[\s*['"]([A-Za-z_$][\w$]*)['"]\s*\]`)
	spaceRE     = regexp.MustCompile(`\s+`)
	minus1x10RE = regexp.MustCompile(`\([A-Za-z_$][\w$]*-1\)\*10\b`)
)

// normalizeJS is the pre-normalisation of docs/spec.md A-4.7.3a for text
// patterns: x['name'] → x.name, radix literals to decimal (an identifier such
// as _0x4fdb4d is left alone), whitespace removed.
func normalizeJS(src string) string {
	s := bracketRE.ReplaceAllString(src, ".$1")
	s = radixRE.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.IndexByte(m, '0')
		f, ok := jsval.ParseNumber(m[i:])
		if !ok {
			return m
		}
		return m[:i] + jsval.FormatNumber(f)
	})
	return spaceRE.ReplaceAllString(s, "")
}

// isTimeOfDay recognises unit 66's formatter (docs/spec.md A-4.7.3b): it names
// units.202.0, pads to two digits and computes (x-1)*10 minutes.
func isTimeOfDay(src string) bool {
	if len(src) > maxTransformSource {
		return false
	}
	s := normalizeJS(src)
	return strings.Contains(s, "units.202.0") && strings.Contains(s, "padStart(2") && minus1x10RE.MatchString(s)
}

// timeOfDay formats raw n as HH:MM of (n−1)×10 minutes.
func timeOfDay(raw float64) string {
	m := (int64(raw) - 1) * 10
	m = ((m % 1440) + 1440) % 1440
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// rawFromClock is the inverse of timeOfDay: "HH:MM" (or "H:MM") on the
// register's 10-minute steps gives (minutes/10)+1.
func rawFromClock(text string) (float64, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(text), ":")
	hours, errH := strconv.Atoi(h)
	minutes, errM := strconv.Atoi(m)
	switch {
	case !ok || errH != nil || errM != nil || len(h) == 0 || len(h) > 2 || len(m) != 2 ||
		hours < 0 || hours > 23 || minutes < 0 || minutes > 59:
		return 0, fmt.Errorf("%w: %q is not HH:MM", ErrBadClock, text)
	case minutes%10 != 0:
		return 0, fmt.Errorf("%w: %q is not on the register's 10-minute steps", ErrBadClock, text)
	}
	return float64((hours*60+minutes)/10 + 1), nil
}
