// Package catalog owns the parameter catalog: what every register of a
// module means, read from the BragerOne web app's own static assets.
//
// It discovers the app's index bundle on the assets origin, reads from it
// the asset table, the device-menu map, the translation import map, the
// language configuration, the unit descriptor table and the parameter
// definitions it carries inline; it fetches the device menu of each module,
// filters it by the module's permissions, fetches the definition chunks and
// translations the visible parameters need, and resolves every visible
// symbol to a Param: its register address, translated name, unit, value
// transform, enum labels, visibility rules, computed value, multi-register
// composition, limits and menu path. Each Module also holds the inverse
// index from a register address (P4.v7) to the parameter that describes it.
// The asset formats and the resolution chain are those of the asset spec
// (docs/spec.md ); the rule each piece implements is
// cited where it is implemented.
//
// JavaScript is parsed, never run. Parsing uses github.com/tdewolff/parse/v2
// (its ES2020 parser): the assets are minified, obfuscated Vite bundles whose
// data sits in object literals built with spreads, builder functions,
// computed keys and ['map'] calls, which regular expressions cannot follow and
// which must never be executed; a real parser is the smallest safe tool, and
// this one is pure Go with no dependencies of its own. Sub-package jsval
// turns its syntax trees into data. Value transforms are recognised patterns
// (×k, ÷k, ±a, rounding, time of day), not evaluated code.
//
// Loading is bounded (Options: a deadline, bytes per asset and in total, and
// the evaluator's own depth and step budget), and one bad asset costs only
// what it describes: failures are counted by Stage and the rest is built.
// A Catalog is immutable and safe for concurrent readers; the exporter swaps
// a new one in when a refresh succeeds.
//
// The package imports nothing of the exporter: assets come through the
// Fetcher interface, live values through store.Reader functions.
package catalog
