package jsval

import (
	"bytes"
	"math"
	"strings"

	"github.com/tdewolff/parse/v2/js"
)

// Func is an object-building function (docs/spec.md ): calling it binds its
// parameters, destructuring and defaults included, and evaluates what it
// returns. Functions that do not build an object stay Source text (row 34).
type Func struct {
	params js.Params
	body   js.BlockStmt
	sc     *scope // the locals it closes over; nil at top level
}

// String is the function's source text.
func (f *Func) String() string {
	var b bytes.Buffer
	f.params.JS(&b)
	b.WriteString(" => ")
	f.body.JS(&b)
	return b.String()
}

type scope struct {
	vars   map[string]Value
	parent *scope
}

func (s *scope) get(name string) (Value, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

type env struct {
	limit int    // top-level bindings visible: ordinal < limit
	sc    *scope // locals of the calls in progress
	calls int    // call depth
}

// undecided marks a function body whose result cannot be known without
// running code; the call then stays Source text.
type undecided struct{}

func (p *Program) spend(depth int) bool {
	p.steps++
	if p.steps > p.lim.MaxSteps {
		p.Exhausted = true
		return false
	}
	if depth > p.lim.MaxDepth {
		p.TooDeep = true
		return false
	}
	return true
}

// charge spends n steps of work that is not one expression (copying the
// keys of a spread, the items of a list).
func (p *Program) charge(n int) bool {
	p.steps += n
	if p.steps > p.lim.MaxSteps {
		p.Exhausted = true
		return false
	}
	return true
}

func (p *Program) eval(e js.IExpr, en env, depth int) Value {
	if e == nil || !p.spend(depth) {
		return nil
	}
	switch n := e.(type) {
	case *js.LiteralExpr:
		return p.literal(n)
	case *js.Var:
		return p.ident(string(n.Data), en, depth)
	case *js.GroupExpr:
		return p.eval(n.X, en, depth+1)
	case *js.ObjectExpr:
		return p.object(n, en, depth)
	case *js.ArrayExpr:
		return p.array(n, en, depth)
	case *js.TemplateExpr:
		return p.template(n, en, depth)
	case *js.UnaryExpr:
		return p.unary(n, en, depth)
	case *js.BinaryExpr:
		return p.binary(n, en, depth)
	case *js.CondExpr:
		t, known := Truthy(p.eval(n.Cond, en, depth+1))
		if !known {
			return p.source(n)
		}
		if t {
			return p.eval(n.X, en, depth+1)
		}
		return p.eval(n.Y, en, depth+1)
	case *js.IndexExpr:
		return p.member(n, n.X, n.Y, true, en, depth)
	case *js.DotExpr:
		return p.member(n, n.X, n.Y, false, en, depth)
	case *js.CallExpr:
		return p.callExpr(n, en, depth)
	case *js.ArrowFunc:
		return p.funcOrSource(n, n.Params, n.Body, en, depth)
	case *js.FuncDecl:
		return p.funcOrSource(n, n.Params, n.Body, en, depth)
	}
	return p.source(e)
}

// literal converts a literal node (docs/spec.md ).
func (p *Program) literal(n *js.LiteralExpr) Value {
	switch n.TokenType {
	case js.TrueToken:
		return true
	case js.FalseToken:
		return false
	case js.NullToken:
		return nil
	case js.StringToken:
		return DecodeString(string(n.Data))
	case js.DecimalToken, js.IntegerToken, js.HexadecimalToken, js.OctalToken, js.BinaryToken:
		if f, ok := ParseNumber(string(n.Data)); ok {
			return f
		}
	}
	return Source(n.Data)
}

// ident resolves an identifier (row 21): a local of a call in progress, a
// top-level binding declared before the site, or else its name as Source.
func (p *Program) ident(name string, en env, depth int) Value {
	if v, ok := en.sc.get(name); ok {
		return v
	}
	switch name {
	case "undefined":
		return nil
	case "NaN":
		return math.NaN()
	case "Infinity":
		return math.Inf(1)
	}
	if d := p.lookup(name, en.limit); d != nil {
		return p.declValue(d, depth+1)
	}
	return Source(name)
}

// declValue evaluates a top-level binding once. A binding met again while it
// is being evaluated (a cycle) is its name.
func (p *Program) declValue(d *Decl, depth int) Value {
	switch d.state {
	case 2:
		return d.val
	case 1:
		return Source(d.Name)
	}
	d.state = 1
	var v Value
	if d.Func != nil {
		v = p.funcValue(d.Func.Params, d.Func.Body, nil)
	} else if d.Init != nil {
		v = p.eval(d.Init, env{limit: d.ord}, depth)
	}
	d.val, d.state = v, 2
	return v
}

func (p *Program) object(n *js.ObjectExpr, en env, depth int) Value {
	o := NewObject()
	for i := range n.List {
		pr := &n.List[i]
		if pr.Spread { // row 27: merged; spreading a non-object adds nothing
			if src, ok := p.eval(pr.Value, en, depth+1).(*Object); ok && p.charge(len(src.keys)) {
				for _, k := range src.keys {
					o.Set(k, src.vals[k])
				}
			}
			continue
		}
		if pr.Name == nil {
			if m, ok := pr.Value.(*js.MethodDecl); ok {
				o.Set(p.propName(&m.Name.PropertyName, en, depth), p.source(m))
			}
			continue
		}
		key := p.propName(pr.Name, en, depth)
		if pr.Init != nil { // {k = v}: only valid as a pattern; keep the default
			o.Set(key, p.eval(pr.Init, en, depth+1))
			continue
		}
		o.Set(key, p.eval(pr.Value, en, depth+1))
	}
	return o
}

// propName gives a property key (rows 1-3). A computed key is evaluated: a
// string or number is its text, anything unresolved is its source text. An
// identifier bound to a string is its value, as in JavaScript (the reference
// client keeps the name); an unbound one is its name.
func (p *Program) propName(pn *js.PropertyName, en env, depth int) string {
	if !pn.IsComputed() {
		return literalKey(pn.Literal)
	}
	switch v := p.eval(pn.Computed, en, depth+1).(type) {
	case string:
		return v
	case float64:
		return FormatNumber(v)
	case bool:
		if v {
			return "true"
		}
		return "false"
	case Source:
		return string(v)
	}
	return string(p.source(pn.Computed))
}

func (p *Program) array(n *js.ArrayExpr, en env, depth int) Value {
	out := make([]Value, 0, len(n.List))
	for _, el := range n.List {
		v := p.eval(el.Value, en, depth+1)
		if el.Spread {
			if a, ok := v.([]Value); ok && p.charge(len(a)) {
				out = append(out, a...)
			}
			continue
		}
		out = append(out, v)
	}
	return out
}

// template substitutes ${identifier} parts whose value is known (row 16);
// any other part is left as written.
func (p *Program) template(n *js.TemplateExpr, en env, depth int) Value {
	if n.Tag != nil {
		return p.source(n)
	}
	var b strings.Builder
	for _, part := range n.List {
		b.WriteString(cookTemplate(part.Value))
		if v, ok := part.Expr.(*js.Var); ok {
			if s, ok := scalarText(p.ident(string(v.Data), en, depth+1)); ok && b.Len()+len(s) <= p.lim.MaxString {
				b.WriteString(s)
				continue
			}
		}
		b.WriteString("${")
		b.WriteString(string(p.source(part.Expr)))
		b.WriteString("}")
	}
	b.WriteString(cookTemplate(n.Tail))
	if b.Len() > p.lim.MaxString {
		return p.source(n)
	}
	return b.String()
}

// cookTemplate strips a template chunk's delimiters (` or } before, ${ or `
// after) and decodes its escapes.
func cookTemplate(raw []byte) string {
	s := string(raw)
	if strings.HasPrefix(s, "`") || strings.HasPrefix(s, "}") {
		s = s[1:]
	}
	if strings.HasSuffix(s, "${") {
		s = s[:len(s)-2]
	} else if strings.HasSuffix(s, "`") {
		s = s[:len(s)-1]
	}
	return decodeEscapes(s)
}

// scalarText is JavaScript's ToString for the scalars concatenation knows.
func scalarText(v Value) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case float64:
		return FormatNumber(v), true
	case bool:
		if v {
			return "true", true
		}
		return "false", true
	}
	return "", false
}

func (p *Program) unary(n *js.UnaryExpr, en env, depth int) Value {
	switch n.Op {
	case js.VoidToken: // row 18
		return nil
	case js.NegToken: // row 20: unary minus on a number is evaluated
		if f, ok := p.eval(n.X, en, depth+1).(float64); ok {
			return -f
		}
	case js.PosToken:
		switch v := p.eval(n.X, en, depth+1).(type) {
		case float64:
			return v
		case bool:
			if v {
				return 1.0
			}
			return 0.0
		}
	case js.NotToken:
		// Row 19: !0, !1, ![], !![] are booleans everywhere. The reference
		// client keeps them as text and normalises them only in definition
		// literals, so elsewhere (a menu's isVisibleOnSideMenu:!1) its text
		// "!1" is truthy; evaluating gives the definition-literal result
		// everywhere. Rules that spell them as strings are normalised by the
		// catalog.
		if t, known := Truthy(p.eval(n.X, en, depth+1)); known {
			return !t
		}
	}
	return p.source(n)
}

func (p *Program) binary(n *js.BinaryExpr, en env, depth int) Value {
	switch n.Op {
	case js.NullishToken: // row 29
		l := p.eval(n.X, en, depth+1)
		if Nullish(l) {
			return p.eval(n.Y, en, depth+1)
		}
		return l
	case js.OrToken, js.AndToken:
		l := p.eval(n.X, en, depth+1)
		t, known := Truthy(l)
		if !known {
			return p.source(n)
		}
		if t == (n.Op == js.OrToken) {
			return l
		}
		return p.eval(n.Y, en, depth+1)
	}
	l := p.eval(n.X, en, depth+1)
	r := p.eval(n.Y, en, depth+1)
	switch n.Op {
	case js.AddToken: // row 28
		lf, lnum := l.(float64)
		rf, rnum := r.(float64)
		if lnum && rnum {
			return lf + rf
		}
		_, lstr := l.(string)
		_, rstr := r.(string)
		if lstr || rstr {
			ls, lok := scalarText(l)
			rs, rok := scalarText(r)
			if lok && rok && len(ls)+len(rs) <= p.lim.MaxString {
				return ls + rs
			}
		}
	case js.EqEqEqToken, js.EqEqToken, js.NotEqEqToken, js.NotEqToken: // row 29
		eq, known := equal(l, r, n.Op == js.EqEqEqToken || n.Op == js.NotEqEqToken)
		if known {
			if n.Op == js.NotEqEqToken || n.Op == js.NotEqToken {
				return !eq
			}
			return eq
		}
	case js.SubToken, js.MulToken, js.DivToken, js.ModToken, js.LtToken, js.LtEqToken, js.GtToken, js.GtEqToken:
		// Arithmetic and comparison on two numbers only; anything else (row
		// 30: 'x'-1) stays text.
		lf, lok := l.(float64)
		rf, rok := r.(float64)
		if lok && rok {
			switch n.Op {
			case js.SubToken:
				return lf - rf
			case js.MulToken:
				return lf * rf
			case js.DivToken:
				return lf / rf
			case js.ModToken:
				return math.Mod(lf, rf)
			case js.LtToken:
				return lf < rf
			case js.LtEqToken:
				return lf <= rf
			case js.GtToken:
				return lf > rf
			case js.GtEqToken:
				return lf >= rf
			}
		}
	}
	return p.source(n)
}

// equal compares two values; every nullish value (an unresolved _0x…
// identifier included) equals every other (row 29). known is false when a
// side is text that stands for an unknown value.
func equal(l, r Value, strict bool) (eq, known bool) {
	ln, rn := Nullish(l), Nullish(r)
	if ln || rn {
		if ln && rn {
			return true, true
		}
		if _, src := l.(Source); src {
			return false, false
		}
		if _, src := r.(Source); src {
			return false, false
		}
		return false, true
	}
	switch lv := l.(type) {
	case float64:
		switch rv := r.(type) {
		case float64:
			return lv == rv, true
		case string:
			if strict {
				return false, true
			}
			f, ok := ParseNumber(rv)
			return ok && f == lv, true
		case bool, *Object, []Value:
			return false, strict
		}
	case string:
		switch rv := r.(type) {
		case string:
			return lv == rv, true
		case float64:
			if strict {
				return false, true
			}
			f, ok := ParseNumber(lv)
			return ok && f == rv, true
		case bool, *Object, []Value:
			return false, strict
		}
	case bool:
		switch rv := r.(type) {
		case bool:
			return lv == rv, true
		case float64, string, *Object, []Value:
			return false, strict
		}
	case *Object:
		switch rv := r.(type) {
		case *Object:
			return lv == rv, true
		case float64, string, bool:
			return false, strict
		}
	}
	return false, false
}

// member evaluates x[y] and x.y (rows 23-26): a member of a bound object or
// array is its value; otherwise an obfuscated receiver's subscript and an
// enum-like receiver's SCREAMING_SNAKE subscript are the member name, and
// anything else stays source text.
func (p *Program) member(n, x, y js.IExpr, index bool, en env, depth int) Value {
	var key string
	if index {
		switch k := p.eval(y, en, depth+1).(type) {
		case string:
			key = k
		case float64:
			key = FormatNumber(k)
		default:
			return p.source(n)
		}
	} else {
		switch yy := y.(type) {
		case *js.Var:
			key = string(yy.Data)
		case js.LiteralExpr:
			key = string(yy.Data)
		case *js.LiteralExpr:
			key = string(yy.Data)
		default:
			return p.source(n)
		}
	}
	recvName := ""
	if v, ok := x.(*js.Var); ok {
		recvName = string(v.Data)
		if _, local := en.sc.get(recvName); !local {
			if d := p.lookup(recvName, en.limit); d != nil {
				if v, found := p.staticMember(d, key, depth); found {
					return v
				}
			}
		}
	}
	switch r := p.eval(x, en, depth+1).(type) {
	case *Object:
		if v, ok := r.Get(key); ok {
			return v
		}
	case []Value:
		if f, ok := ParseNumber(key); ok && f >= 0 && f == math.Trunc(f) && int(f) < len(r) && FormatNumber(f) == key {
			return r[int(f)]
		}
	case Source:
		if recvName == "" {
			recvName = string(r)
		}
	}
	if index {
		if IsObfuscatedName(recvName) {
			return key
		}
		if enumReceiver(recvName) && screamingSnake(key) {
			return key
		}
	}
	return p.source(n)
}

// staticMember reads one property of a binding initialised with an object
// literal without evaluating the whole object (a bundle's icon or status
// enum is read once per definition). found is false when the literal has a
// spread or computed key that could hide the property.
func (p *Program) staticMember(d *Decl, key string, depth int) (Value, bool) {
	if d.state == 2 || d.Init == nil {
		return nil, false
	}
	obj, ok := unwrapGroup(d.Init).(*js.ObjectExpr)
	if !ok {
		return nil, false
	}
	for i := len(obj.List) - 1; i >= 0; i-- {
		pr := &obj.List[i]
		k, static := PropertyKey(pr)
		if !static {
			return nil, false
		}
		if k == key && pr.Init == nil {
			return p.eval(pr.Value, env{limit: d.ord}, depth+1), true
		}
	}
	return nil, false
}

func unwrapGroup(e js.IExpr) js.IExpr {
	for i := 0; i < 64; i++ {
		g, ok := e.(*js.GroupExpr)
		if !ok {
			return e
		}
		e = g.X
	}
	return e
}

// enumReceiver says whether name looks like an enum object of the web app
// (row 24): PascalCase and Permissions, IconsList, or ending in one of the
// enum suffixes.
func enumReceiver(name string) bool {
	if name == "" || name[0] < 'A' || name[0] > 'Z' || strings.ContainsAny(name, "_$") {
		return false
	}
	if name == "Permissions" || name == "IconsList" {
		return true
	}
	for _, suf := range []string{"Status", "Operation", "Property", "Type", "State", "List", "Commands", "Component"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// screamingSnake says whether s is an upper-case constant name.
func screamingSnake(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// callExpr expands the calls minified data is built with: a bound
// object-building function (row 33), ['map'] over a literal list with one
// callback (row 35), and an obfuscated helper wrapping an action and a
// public token (row 36). Any other call stays text.
func (p *Program) callExpr(n *js.CallExpr, en env, depth int) Value {
	if recv, ok := mapReceiver(n.X); ok && len(n.Args.List) == 1 && !n.Args.List[0].Rest {
		if list, ok := p.eval(recv, en, depth+1).([]Value); ok {
			if cb := p.callable(n.Args.List[0].Value, en, depth); cb != nil {
				out := make([]Value, 0, len(list))
				for i, item := range list {
					v := p.call(cb, []Value{item, float64(i)}, en, depth+1)
					if _, bad := v.(undecided); bad {
						return p.source(n)
					}
					out = append(out, v)
				}
				return out
			}
		}
		return p.source(n)
	}
	callee := p.eval(n.X, en, depth+1)
	if f, ok := callee.(*Func); ok {
		args := make([]Value, 0, len(n.Args.List))
		for _, a := range n.Args.List {
			v := p.eval(a.Value, en, depth+1)
			if a.Rest {
				if list, ok := v.([]Value); ok {
					args = append(args, list...)
				}
				continue
			}
			args = append(args, v)
		}
		v := p.call(f, args, en, depth+1)
		if _, bad := v.(undecided); bad {
			return p.source(n)
		}
		return v
	}
	if name, ok := n.X.(*js.Var); ok && IsObfuscatedName(string(name.Data)) && len(n.Args.List) == 2 {
		action, _ := Text(p.eval(n.Args.List[0].Value, en, depth+1))
		token, _ := p.eval(n.Args.List[1].Value, en, depth+1).(string)
		if (action == "READ" || action == "WRITE" || action == "STATUS") && publicToken(token) {
			return token
		}
	}
	return p.source(n)
}

// publicToken says whether s is a PARAM_… or STATUS_… symbol.
func publicToken(s string) bool {
	return (strings.HasPrefix(s, "PARAM_") || strings.HasPrefix(s, "STATUS_")) && screamingSnake(s)
}

// mapReceiver recognises x['map'] and x.map.
func mapReceiver(callee js.IExpr) (js.IExpr, bool) {
	switch c := callee.(type) {
	case *js.IndexExpr:
		if l, ok := c.Y.(*js.LiteralExpr); ok && l.TokenType == js.StringToken && DecodeString(string(l.Data)) == "map" {
			return c.X, true
		}
	case *js.DotExpr:
		switch y := c.Y.(type) {
		case js.LiteralExpr:
			if string(y.Data) == "map" {
				return c.X, true
			}
		case *js.LiteralExpr:
			if string(y.Data) == "map" {
				return c.X, true
			}
		}
	}
	return nil, false
}

// callable gives the function an argument denotes: an inline arrow or
// function expression, or a value that is a Func.
func (p *Program) callable(e js.IExpr, en env, depth int) *Func {
	switch n := unwrapGroup(e).(type) {
	case *js.ArrowFunc:
		return &Func{params: n.Params, body: n.Body, sc: en.sc}
	case *js.FuncDecl:
		return &Func{params: n.Params, body: n.Body, sc: en.sc}
	}
	f, _ := p.eval(e, en, depth+1).(*Func)
	return f
}

func (p *Program) funcValue(params js.Params, body js.BlockStmt, sc *scope) *Func {
	return &Func{params: params, body: body, sc: sc}
}

// funcOrSource makes an object-building function callable (row 32) and
// keeps any other function as its source text (row 34).
func (p *Program) funcOrSource(n js.IExpr, params js.Params, body js.BlockStmt, en env, depth int) Value {
	if p.buildsObject(body, en) {
		return p.funcValue(params, body, en.sc)
	}
	return p.source(n)
}

// buildsObject says whether a function body returns an object or array
// literal, a local bound to one, or the result of calling a known
// object-building function.
func (p *Program) buildsObject(body js.BlockStmt, en env) bool {
	var ret js.IExpr
	for i := len(body.List) - 1; i >= 0; i-- {
		if r, ok := body.List[i].(*js.ReturnStmt); ok {
			ret = r.Value
			break
		}
	}
	if ret == nil {
		return false
	}
	return p.returnsObject(unwrapGroup(ret), body, en, 0)
}

func (p *Program) returnsObject(e js.IExpr, body js.BlockStmt, en env, depth int) bool {
	if depth > 8 {
		return false
	}
	switch n := e.(type) {
	case *js.ObjectExpr, *js.ArrayExpr:
		return true
	case *js.CondExpr:
		return p.returnsObject(unwrapGroup(n.X), body, en, depth+1) && p.returnsObject(unwrapGroup(n.Y), body, en, depth+1)
	case *js.Var:
		name := string(n.Data)
		for _, st := range body.List {
			if vd, ok := st.(*js.VarDecl); ok {
				for _, be := range vd.List {
					if v, ok := be.Binding.(*js.Var); ok && string(v.Data) == name && be.Default != nil {
						return p.returnsObject(unwrapGroup(be.Default), body, en, depth+1)
					}
				}
			}
		}
	case *js.CallExpr:
		if v, ok := n.X.(*js.Var); ok {
			if d := p.lookup(string(v.Data), en.limit); d != nil {
				if d.Func != nil {
					return p.buildsObject(d.Func.Body, en)
				}
				if d.Init != nil {
					switch f := unwrapGroup(d.Init).(type) {
					case *js.ArrowFunc:
						return p.buildsObject(f.Body, en)
					case *js.FuncDecl:
						return p.buildsObject(f.Body, en)
					}
				}
			}
		}
	}
	return false
}

// call invokes f: parameters are bound positionally, with object and array
// destructuring, defaults evaluated when the argument is undefined, rest
// patterns ignored (row 32); the body's declarations, ifs and return are
// followed.
func (p *Program) call(f *Func, args []Value, en env, depth int) Value {
	if en.calls >= p.lim.MaxCallDepth || !p.spend(depth) {
		return nil
	}
	sc := &scope{vars: map[string]Value{}, parent: f.sc}
	inner := env{limit: en.limit, sc: sc, calls: en.calls + 1}
	for i, be := range f.params.List {
		var arg Value
		if i < len(args) {
			arg = args[i]
		}
		p.bind(be, arg, inner, depth+1)
	}
	v, returned := p.exec(f.body.List, inner, depth+1)
	if !returned {
		return nil
	}
	return v
}

// exec runs the statements an object-building function is made of.
func (p *Program) exec(list []js.IStmt, en env, depth int) (Value, bool) {
	if !p.spend(depth) {
		return nil, true
	}
	for _, st := range list {
		switch s := st.(type) {
		case *js.ReturnStmt:
			return p.eval(s.Value, en, depth+1), true
		case *js.VarDecl:
			for _, be := range s.List {
				p.bind(js.BindingElement{Binding: be.Binding}, p.eval(be.Default, en, depth+1), en, depth+1)
			}
		case *js.BlockStmt:
			if v, ret := p.exec(s.List, en, depth+1); ret {
				return v, true
			}
		case *js.IfStmt:
			t, known := Truthy(p.eval(s.Cond, en, depth+1))
			if !known {
				return undecided{}, true
			}
			branch := s.Body
			if !t {
				branch = s.Else
			}
			if branch != nil {
				if v, ret := p.exec([]js.IStmt{branch}, en, depth+1); ret {
					return v, true
				}
			}
		case *js.ExprStmt, *js.EmptyStmt:
			// Side effects are not followed.
		default:
			return undecided{}, true
		}
	}
	return nil, false
}

// bind assigns v to a binding pattern in the innermost scope of en.
func (p *Program) bind(be js.BindingElement, v Value, en env, depth int) {
	if depth > p.lim.MaxDepth {
		return
	}
	if v == nil && be.Default != nil {
		v = p.eval(be.Default, en, depth+1)
	}
	switch b := be.Binding.(type) {
	case *js.Var:
		en.sc.vars[string(b.Data)] = v
	case *js.BindingObject:
		obj, _ := v.(*Object)
		for _, item := range b.List {
			var key string
			if item.Key != nil {
				key = p.propName(item.Key, en, depth)
			} else if name, ok := item.Value.Binding.(*js.Var); ok {
				key = string(name.Data)
			}
			p.bind(item.Value, obj.Value(key), en, depth+1)
		}
	case *js.BindingArray:
		list, _ := v.([]Value)
		for i, el := range b.List {
			var item Value
			if i < len(list) {
				item = list[i]
			}
			p.bind(el, item, en, depth+1)
		}
	}
}

// source renders an expression back to text (rows 25, 26, 30, 34), capped
// at MaxSourceText. An arrow function whose body is one return is written in
// expression form, as minifiers emit it.
func (p *Program) source(n js.INode) Source {
	var b capWriter
	b.max = p.lim.MaxSourceText
	renderJS(&b, n)
	return Source(b.String())
}

// Render is the source text of a node, as the evaluator keeps it.
func Render(n js.INode) string {
	var b capWriter
	b.max = DefaultLimits.MaxSourceText
	renderJS(&b, n)
	return b.String()
}

func renderJS(b *capWriter, n js.INode) {
	if a, ok := n.(*js.ArrowFunc); ok && len(a.Body.List) == 1 {
		if r, ok := a.Body.List[0].(*js.ReturnStmt); ok && r.Value != nil {
			if a.Async {
				b.WriteString("async ")
			}
			a.Params.JS(b)
			b.WriteString(" => ")
			if _, obj := r.Value.(*js.ObjectExpr); obj {
				b.WriteString("(")
				r.Value.JS(b)
				b.WriteString(")")
				return
			}
			r.Value.JS(b)
			return
		}
	}
	n.JS(b)
}

type capWriter struct {
	bytes.Buffer
	max int
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - w.Len(); room < len(p) {
		if room > 0 {
			w.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return w.Buffer.Write(p)
}

func (w *capWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }
