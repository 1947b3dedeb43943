// Package jsval turns JavaScript source into plain data without running it.
//
// It owns the parsing of the web app's assets (through the ES2020 parser of
// github.com/tdewolff/parse/v2/js) and a small evaluator that converts object
// literals, and the few expressions minified bundles build them with, into
// Go values: nil, bool, float64, string, []Value, *Object, Source (text of an
// expression that is kept, not evaluated) and *Func (an object-building arrow
// function that calls may expand). The conversion rules are the JavaScript
// forms of the asset spec (assets-catalog.md §5); nothing is ever executed,
// and every rule is bounded: a nesting depth, an evaluation step budget and a
// length cap on kept source text.
//
// The parser has no error recovery, so Parse adds one: when the whole file
// does not parse, the file is cut at top-level statement boundaries (and a
// top-level declaration at its declarators) with the lexer, and every piece
// is parsed on its own; a piece that still fails is dropped and counted.
package jsval
