package jsval

import (
	"bytes"
	"errors"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// Limits bound the work spent on one file.
type Limits struct {
	// MaxDepth is the deepest nesting the evaluator follows (literals,
	// operators, bindings and calls together); anything deeper is null.
	MaxDepth int
	// MaxSteps is the evaluation budget of one file, in expressions visited;
	// once spent, every further evaluation gives null.
	MaxSteps int
	// MaxCallDepth bounds nested calls of object-building functions.
	MaxCallDepth int
	// MaxSourceText caps the text kept for an unevaluated expression.
	MaxSourceText int
	// MaxString caps a string built by concatenation or a template; a longer
	// result stays source text (doubling through bindings would otherwise
	// grow without bound).
	MaxString int
}

// DefaultLimits are generous for the real bundles (a few megabytes, a few
// thousand definitions) and stop pathological input in well under a second.
var DefaultLimits = Limits{MaxDepth: 200, MaxSteps: 3_000_000, MaxCallDepth: 24, MaxSourceText: 16 << 10, MaxString: 64 << 10}

func (l Limits) withDefaults() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultLimits.MaxSteps
	}
	if l.MaxCallDepth <= 0 {
		l.MaxCallDepth = DefaultLimits.MaxCallDepth
	}
	if l.MaxSourceText <= 0 {
		l.MaxSourceText = DefaultLimits.MaxSourceText
	}
	if l.MaxString <= 0 {
		l.MaxString = DefaultLimits.MaxString
	}
	return l
}

// Decl is one top-level binding: a const/let/var declarator or a function
// declaration, in source order.
type Decl struct {
	Name string
	Init js.IExpr     // nil for a function declaration or a declarator without initialiser
	Func *js.FuncDecl // a function declaration
	ord  int

	state int // 0 not evaluated, 1 in progress, 2 done
	val   Value
}

// Site says which top-level bindings an expression sees: those declared
// before it, as in a module evaluated top to bottom.
type Site struct{ limit int }

// Program is a parsed file with its top-level bindings. It is not safe for
// concurrent use (evaluation caches binding values and spends one budget).
type Program struct {
	stmts  []topStmt
	decls  []*Decl
	byName map[string][]*Decl
	lim    Limits
	steps  int

	// Err is the syntax error of the whole file, nil when it parsed whole.
	Err error
	// Lost counts the pieces (statements or declarators) dropped because
	// they did not parse even on their own.
	Lost int
	// Exhausted is set once the step budget ran out.
	Exhausted bool
	// TooDeep is set when nesting beyond MaxDepth was cut to null.
	TooDeep bool
}

type topStmt struct {
	stmt js.IStmt
	site Site // bindings declared before the statement
	end  Site // bindings declared up to and including the statement
}

// Parse parses src as an ES module. A file that does not parse whole is
// recovered piece by piece (see the package comment); Parse never fails, an
// empty or hopeless file gives an empty Program.
func Parse(src []byte, lim Limits) *Program {
	p := &Program{byName: map[string][]*Decl{}, lim: lim.withDefaults()}
	if len(bytes.TrimSpace(src)) == 0 {
		return p
	}
	if ast, err := parseModule(src); err == nil {
		p.add(ast.List)
		return p
	} else {
		p.Err = err
	}
	for _, piece := range splitPieces(src) {
		ast, err := parseModule(piece)
		if err != nil {
			p.Lost++
			continue
		}
		p.add(ast.List)
	}
	return p
}

// parseModule parses a private copy: the parser writes a NUL past the end of
// its input, and callers' bytes may be shared (the asset cache).
func parseModule(src []byte) (ast *js.AST, err error) {
	buf := make([]byte, len(src), len(src)+1)
	copy(buf, src)
	defer func() {
		// The parser is not expected to panic; a panic on odd input must cost
		// this file only.
		if r := recover(); r != nil {
			ast, err = nil, errors.New("jsval: parser panic")
		}
	}()
	return js.Parse(parse.NewInputBytes(buf), js.Options{})
}

func (p *Program) add(list []js.IStmt) {
	for _, st := range list {
		ts := topStmt{stmt: st, site: Site{len(p.decls)}}
		switch s := st.(type) {
		case *js.VarDecl:
			p.addVarDecl(s)
		case *js.FuncDecl:
			p.addFunc(s)
		case *js.ExportStmt:
			switch d := s.Decl.(type) {
			case *js.VarDecl:
				p.addVarDecl(d)
			case *js.FuncDecl:
				if !s.Default {
					p.addFunc(d)
				}
			}
		}
		ts.end = Site{len(p.decls)}
		p.stmts = append(p.stmts, ts)
	}
}

func (p *Program) addVarDecl(vd *js.VarDecl) {
	for _, be := range vd.List {
		v, ok := be.Binding.(*js.Var)
		if !ok {
			continue // destructuring at top level: nothing a bundle builds data with
		}
		p.declare(&Decl{Name: string(v.Data), Init: be.Default})
	}
}

func (p *Program) addFunc(fd *js.FuncDecl) {
	if fd.Name == nil {
		return
	}
	p.declare(&Decl{Name: string(fd.Name.Data), Func: fd})
}

func (p *Program) declare(d *Decl) {
	d.ord = len(p.decls)
	p.decls = append(p.decls, d)
	p.byName[d.Name] = append(p.byName[d.Name], d)
}

// Decls returns the top-level bindings in source order.
func (p *Program) Decls() []*Decl { return p.decls }

// DeclSite is the site of a declarator's initialiser.
func (d *Decl) Site() Site { return Site{d.ord} }

// lookup finds the binding of name visible before limit.
func (p *Program) lookup(name string, limit int) *Decl {
	ds := p.byName[name]
	for i := len(ds) - 1; i >= 0; i-- {
		if ds[i].ord < limit {
			return ds[i]
		}
	}
	return nil
}

// Binding returns the value of the last top-level binding called name.
func (p *Program) Binding(name string) (Value, bool) {
	d := p.lookup(name, len(p.decls))
	if d == nil {
		return nil, false
	}
	return p.declValue(d, 0), true
}

// Export resolves the module's default export
// (docs/spec.md, A-3.3a, A-5.22, A-5.37): `export default <expr>`
// evaluated, `export default IDENT` and `export {x as default}` through the
// binding. name is the exported binding's name, "" for an anonymous default.
func (p *Program) Export() (v Value, name string, ok bool) {
	for _, ts := range p.stmts {
		es, isExport := ts.stmt.(*js.ExportStmt)
		if !isExport || es.Module != nil {
			continue
		}
		if es.Default && es.Decl != nil {
			switch d := es.Decl.(type) {
			case *js.Var:
				if b := p.lookup(string(d.Data), len(p.decls)); b != nil {
					return p.declValue(b, 0), b.Name, true
				}
				return Source(d.Data), string(d.Data), true
			case *js.FuncDecl:
				return p.funcValue(d.Params, d.Body, nil), "", true
			case *js.ClassDecl:
				return Source("class"), "", true
			}
			return p.eval(es.Decl, env{limit: ts.end.limit}, 0), "", true
		}
		for _, a := range es.List {
			if string(a.Binding) != "default" || a.Name == nil {
				continue
			}
			n := string(a.Name)
			if b := p.lookup(n, len(p.decls)); b != nil {
				return p.declValue(b, 0), n, true
			}
			return Source(n), n, true
		}
	}
	return nil, "", false
}

// LargestLiteral evaluates the largest object or array literal of the file
// (by number of properties and elements, nested ones included); the first
// wins on ties. ok is false when the file holds no literal.
func (p *Program) LargestLiteral() (Value, bool) {
	var best js.IExpr
	var bestSite Site
	bestSize := -1
	sizes := map[js.IExpr]int{}
	p.WalkLiterals(func(e js.IExpr, s Site) bool {
		if n := literalSize(e, sizes, 0); n > bestSize {
			best, bestSite, bestSize = e, s, n
		}
		return true
	})
	if best == nil {
		return nil, false
	}
	return p.EvalAt(best, bestSite), true
}

func literalSize(e js.IExpr, memo map[js.IExpr]int, depth int) int {
	if n, ok := memo[e]; ok {
		return n
	}
	n := 1
	if depth < 1000 {
		switch e := e.(type) {
		case *js.ObjectExpr:
			for _, pr := range e.List {
				n++
				n += literalSize(pr.Value, memo, depth+1)
			}
		case *js.ArrayExpr:
			for _, el := range e.List {
				n++
				n += literalSize(el.Value, memo, depth+1)
			}
		default:
			n = 0
		}
	}
	memo[e] = n
	return n
}

// WalkLiterals calls fn for every object and array literal, outer ones
// first, with the site of the top-level statement holding it; fn returns
// false to stop the walk.
func (p *Program) WalkLiterals(fn func(e js.IExpr, s Site) bool) {
	p.walk(func(n js.INode, s Site) bool {
		switch n.(type) {
		case *js.ObjectExpr, *js.ArrayExpr:
			return fn(n.(js.IExpr), s)
		}
		return true
	})
}

// WalkProperties calls fn for every property of every object literal, in
// source order, with the site of the statement (or declarator) holding it.
func (p *Program) WalkProperties(fn func(pr *js.Property, s Site) bool) {
	p.walk(func(n js.INode, s Site) bool {
		if pr, ok := n.(*js.Property); ok {
			return fn(pr, s)
		}
		return true
	})
}

type walker struct {
	fn      func(js.INode, Site) bool
	site    Site
	stopped *bool
}

func (w walker) Enter(n js.INode) js.IVisitor {
	if *w.stopped {
		return nil
	}
	if !w.fn(n, w.site) {
		*w.stopped = true
		return nil
	}
	return w
}

func (walker) Exit(js.INode) {}

func (p *Program) walk(fn func(js.INode, Site) bool) {
	stopped := false
	for _, ts := range p.stmts {
		if stopped {
			return
		}
		// A declarator's initialiser sees the bindings before it; any other
		// statement sees everything declared up to its end.
		var vd *js.VarDecl
		switch s := ts.stmt.(type) {
		case *js.VarDecl:
			vd = s
		case *js.ExportStmt:
			vd, _ = s.Decl.(*js.VarDecl)
		}
		if vd == nil {
			js.Walk(walker{fn: fn, site: ts.end, stopped: &stopped}, ts.stmt)
			continue
		}
		for _, be := range vd.List {
			if stopped {
				return
			}
			site := ts.end
			if v, ok := be.Binding.(*js.Var); ok {
				if d := p.lookupExact(string(v.Data), ts); d != nil {
					site = Site{d.ord}
				}
			}
			if be.Default != nil {
				js.Walk(walker{fn: fn, site: site, stopped: &stopped}, be.Default)
			}
		}
	}
}

// lookupExact finds the declarator of name made by statement ts.
func (p *Program) lookupExact(name string, ts topStmt) *Decl {
	for _, d := range p.byName[name] {
		if d.ord >= ts.site.limit && d.ord < ts.end.limit {
			return d
		}
	}
	return nil
}

// EvalAt evaluates e with the bindings visible at s.
func (p *Program) EvalAt(e js.IExpr, s Site) Value {
	return p.eval(e, env{limit: s.limit}, 0)
}

// PropertyKey returns the key of a property written as a bare name, a
// string or a number (docs/spec.md ); static is false for computed and
// spread properties and methods.
func PropertyKey(pr *js.Property) (key string, static bool) {
	if pr.Spread || pr.Name == nil || pr.Name.IsComputed() {
		return "", false
	}
	return literalKey(pr.Name.Literal), true
}

func literalKey(l js.LiteralExpr) string {
	switch l.TokenType {
	case js.StringToken:
		return DecodeString(string(l.Data))
	case js.DecimalToken, js.IntegerToken, js.HexadecimalToken, js.OctalToken, js.BinaryToken:
		if f, ok := ParseNumber(string(l.Data)); ok {
			return FormatNumber(f)
		}
	}
	return string(l.Data)
}

// splitPieces cuts a file that does not parse into pieces that may: the
// top-level statements (split after ";" and before a declaration keyword
// that follows "}" at depth 0), and each declarator of a top-level
// const/let/var, re-prefixed with its keyword. It runs a small scanner of its
// own (the library's lexer stops at the first bad token), so it never fails,
// its cost is linear and nesting depth does not matter.
func splitPieces(src []byte) [][]byte {
	toks := scanTokens(src)
	if len(toks) == 0 {
		return nil
	}
	var pieces [][]byte
	emit := func(from, to int) { // token indices, to exclusive
		if from >= to {
			return
		}
		i := from
		kw := ""
		if toks[i].kind == tkExport && i+1 < to {
			kw = "export "
			i++
		}
		if k := toks[i].kind; k != tkConst && k != tkLet && k != tkVar {
			pieces = append(pieces, src[toks[from].start:toks[to-1].end])
			return
		}
		kw += string(src[toks[i].start:toks[i].end])
		s := i + 1
		for j := s; j <= to; j++ {
			if j == to || toks[j].kind == tkComma && toks[j].depth == 0 {
				if s < j {
					piece := append([]byte(kw+" "), src[toks[s].start:toks[j-1].end]...)
					pieces = append(pieces, piece)
				}
				s = j + 1
			}
		}
	}
	start := 0
	for i, t := range toks {
		if t.depth != 0 {
			continue
		}
		switch {
		case t.kind == tkSemicolon:
			emit(start, i)
			start = i + 1
		case i > start && t.kind.startsDeclaration() && (toks[i-1].kind == tkClose && src[toks[i-1].start] == '}'):
			emit(start, i)
			start = i
		}
	}
	emit(start, len(toks))
	return pieces
}

type tokKind uint8

const (
	tkOther tokKind = iota
	tkIdent
	tkLiteral // string, number, template, regular expression
	tkOpen
	tkClose
	tkSemicolon
	tkComma
	tkConst
	tkLet
	tkVar
	tkExport
	tkImport
	tkFunction
	tkClass
	tkKeyword // other keywords, after which "/" starts a regular expression
)

func (k tokKind) startsDeclaration() bool {
	switch k {
	case tkConst, tkLet, tkVar, tkExport, tkImport, tkFunction, tkClass:
		return true
	}
	return false
}

type scanTok struct {
	kind       tokKind
	start, end int
	depth      int // bracket depth outside the token
}

var keywordKinds = map[string]tokKind{
	"const": tkConst, "let": tkLet, "var": tkVar, "export": tkExport, "import": tkImport,
	"function": tkFunction, "class": tkClass,
	"return": tkKeyword, "typeof": tkKeyword, "case": tkKeyword, "do": tkKeyword, "else": tkKeyword,
	"in": tkKeyword, "instanceof": tkKeyword, "new": tkKeyword, "delete": tkKeyword, "void": tkKeyword,
	"throw": tkKeyword, "yield": tkKeyword, "await": tkKeyword,
}

// scanTokens is a forgiving JavaScript tokenizer: strings, templates (with
// nested ${…}), comments and regular expressions are skipped as wholes, so
// that brackets and separators inside them are not counted.
func scanTokens(src []byte) []scanTok {
	var toks []scanTok
	// stack holds the open brackets; 't' marks an open ${ of a template.
	// Its length is the depth.
	var stack []byte
	prevCloses := false // previous token ends an operand: ) ] } or a name/literal
	n := len(src)
	add := func(k tokKind, s, e int) {
		toks = append(toks, scanTok{k, s, e, len(stack)})
	}
	// scanTemplate scans template text from i (just after ` or the } that
	// closes a substitution) to the closing ` or the next ${.
	scanTemplate := func(i int) (end int, opensSubst bool) {
		for i < n {
			switch src[i] {
			case '\\':
				i += 2
				continue
			case '`':
				return i + 1, false
			case '$':
				if i+1 < n && src[i+1] == '{' {
					return i + 2, true
				}
			}
			i++
		}
		return n, false
	}
	// templateText adds the template text that starts at s (a ` or the }
	// closing a substitution) as one token: opens when it ends in ${, which
	// is then open like a bracket, else whole. It returns the end.
	templateText := func(s int, opens, whole tokKind) int {
		e, subst := scanTemplate(s + 1)
		if subst {
			add(opens, s, e)
			stack = append(stack, 't')
			prevCloses = false
		} else {
			add(whole, s, e)
			prevCloses = true
		}
		return e
	}
	// closeBracket pops up to the bracket that c closes; a stray closer
	// (nothing matching is open) is ignored, so that one unbalanced bracket
	// does not shift the depth of the rest of the file.
	closeBracket := func(c byte) (template bool) {
		var open byte
		switch c {
		case ')':
			open = '('
		case ']':
			open = '['
		case '}':
			open = '{'
		}
		for j := len(stack) - 1; j >= 0; j-- {
			if stack[j] == open || c == '}' && stack[j] == 't' {
				template = stack[j] == 't'
				stack = stack[:j]
				return template
			}
		}
		return false
	}
	for i := 0; i < n; {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			i++
		case c == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && src[i+1] == '*':
			e := bytes.Index(src[i+2:], []byte("*/"))
			if e < 0 {
				i = n
			} else {
				i += e + 4
			}
		case c == '\'' || c == '"':
			s := i
			i++
			for i < n && src[i] != c && src[i] != '\n' {
				if src[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i+1, n)
			add(tkLiteral, s, i)
			prevCloses = true
		case c == '`':
			i = templateText(i, tkOpen, tkLiteral)
		case c == '/' && !prevCloses:
			s := i
			i++
			inClass := false
		regex:
			for i < n && src[i] != '\n' {
				switch src[i] {
				case '\\':
					i++
				case '[':
					inClass = true
				case ']':
					inClass = false
				case '/':
					if !inClass {
						break regex
					}
				}
				i++
			}
			i = min(i+1, n)
			for i < n && isIdentByte(src[i]) { // flags
				i++
			}
			add(tkLiteral, s, i)
			prevCloses = true
		case c == '(' || c == '[' || c == '{':
			add(tkOpen, i, i+1)
			stack = append(stack, c)
			i++
			prevCloses = false
		case c == ')' || c == ']' || c == '}':
			if closeBracket(c) {
				i = templateText(i, tkOther, tkClose)
				continue
			}
			add(tkClose, i, i+1)
			i++
			prevCloses = true
		case c == ';':
			add(tkSemicolon, i, i+1)
			i++
			prevCloses = false
		case c == ',':
			add(tkComma, i, i+1)
			i++
			prevCloses = false
		case c >= '0' && c <= '9' || c == '.' && i+1 < n && src[i+1] >= '0' && src[i+1] <= '9':
			s := i
			for i < n && (isIdentByte(src[i]) || src[i] == '.' ||
				(src[i] == '+' || src[i] == '-') && (src[i-1] == 'e' || src[i-1] == 'E') && !bytes.ContainsAny(src[s:i], "xXbBoO")) {
				i++
			}
			add(tkLiteral, s, i)
			prevCloses = true
		case isIdentByte(c) || c >= 0x80:
			s := i
			for i < n && (isIdentByte(src[i]) || src[i] >= 0x80) {
				i++
			}
			k, isKw := keywordKinds[string(src[s:i])]
			// A dotted name (x.return) is a property, not a keyword.
			if !isKw || s > 0 && src[s-1] == '.' {
				k = tkIdent
			}
			add(k, s, i)
			prevCloses = k == tkIdent
		default:
			add(tkOther, i, i+1)
			i++
			prevCloses = false
		}
	}
	return toks
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$'
}
