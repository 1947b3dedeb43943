// Package jsval turns JavaScript source into plain data without running it.
//
// It owns the parsing of the web app's assets (through the ES2020 parser of
// github.com/tdewolff/parse/v2/js) and a small evaluator that converts object
// literals, and the few expressions minified bundles build them with, into
// Go values: nil, bool, float64, string, []Value, *Object, Source (text of an
// expression that is kept, not evaluated) and *Func (an object-building arrow
// function that calls may expand). The conversion rules are the JavaScript
// forms of the asset spec (docs/spec.md ); nothing is ever executed,
// and every rule is bounded: a nesting depth, an evaluation step budget and a
// length cap on kept source text.
//
// The parser has no error recovery, so Parse adds one: when the whole file
// does not parse, the file is cut at top-level statement boundaries (and a
// top-level declaration at its declarators) by a small scanner of its own,
// and every piece is parsed on its own; a piece that still fails is dropped
// and counted (Program.Lost). The text scans of the index (asset table,
// menu map, translation map) never depend on the parse.
//
// Deep nesting: the parser is recursive descent but stops at 1 000 nested
// expressions or statements (its NestedExprLimit and NestedStmtLimit) with a
// syntax error, so a 50 000-level literal costs one failed piece, in linear
// time, and never the stack. Below that limit the evaluator cuts at
// Limits.MaxDepth (the deeper part is null), and every evaluation spends
// from one step budget per file.
package jsval
