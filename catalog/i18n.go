package catalog

import (
	"regexp"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

// parseNamespace reads a translation chunk (docs/spec.md A-3.3a): the default export
// (`export default <expr>`, `export {X as default}`), else the largest
// object literal. A string export becomes {<binding name>: text} (or
// {"__default__": text} when anonymous); anything else is empty. ok is false
// when the file yields nothing although it is not empty (a parse failure).
func parseNamespace(src []byte) (ns *jsval.Object, ok bool) {
	p := jsval.Parse(src, jsval.Limits{})
	v, name, found := p.Export()
	if !found {
		v, _ = p.LargestLiteral()
	}
	switch v := v.(type) {
	case *jsval.Object:
		return v, true
	case string:
		if name == "" {
			name = "__default__"
		}
		o := jsval.NewObject()
		o.Set(name, v)
		return o, true
	}
	empty := len(strings.TrimSpace(string(src))) == 0
	return jsval.NewObject(), empty
}

// nsNameRE is the shape of a namespace name (docs/spec.md ).
var nsNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// translations are the loaded namespaces of one language, keyed by lower
// case name.
type translations map[string]*jsval.Object

// maxLabelHops bounds the re-resolution of labels that are tokens again
// (docs/spec.md: at most 4 more hops).
const maxLabelHops = 4

// lookup resolves one i18n token ("parameters.PARAM_66",
// "app.one.boilerStatus.name") to a string, in one hop.
func (t translations) lookup(token string) (string, bool) {
	ns, path, ok := strings.Cut(strings.TrimSpace(token), ".")
	if !ok || !nsNameRE.MatchString(ns) || path == "" {
		return "", false
	}
	obj := t[strings.ToLower(ns)]
	if obj == nil {
		return "", false
	}
	v := walkPath(obj, path, 0)
	s, isStr := v.(string)
	return s, isStr
}

// walkPath follows a dotted path through nested objects. A key that itself
// holds dots ("17.0") is tried whole before the path is split.
func walkPath(v jsval.Value, path string, depth int) jsval.Value {
	o, ok := v.(*jsval.Object)
	if !ok || depth > 16 {
		return nil
	}
	if x, ok := o.Get(path); ok {
		return x
	}
	head, rest, more := strings.Cut(path, ".")
	if !more {
		return nil
	}
	return walkPath(o.Value(head), rest, depth+1)
}

// resolve is docs/spec.md: the token's string, resolved again while it is itself a
// token of a loaded namespace, at most maxLabelHops more times. Only loaded
// namespaces are consulted, so a label such as "ver.2" never costs a fetch.
func (t translations) resolve(token string) (string, bool) {
	s, ok := t.lookup(token)
	if !ok {
		return "", false
	}
	for i := 0; i < maxLabelHops; i++ {
		next, ok := t.lookup(s)
		if !ok {
			break
		}
		s = next
	}
	return s, true
}

// namespaceOf is the namespace a token would be looked up in, lower case;
// "" when the token is not of the i18n shape.
func namespaceOf(token string) string {
	ns, path, ok := strings.Cut(strings.TrimSpace(token), ".")
	if !ok || path == "" || !nsNameRE.MatchString(ns) {
		return ""
	}
	return strings.ToLower(ns)
}

// escapeLeakRE finds escapes left in decoded text (docs/spec.md A-5b: an "escape leak"
// means a string was not decoded, or was escaped twice upstream).
var escapeLeakRE = regexp.MustCompile(`\\x[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\u\{[0-9A-Fa-f]+\}`)

// escapeLeaks counts the strings of a namespace that still hold escapes.
func escapeLeaks(v jsval.Value, depth int, budget *walkBudget) int {
	if depth > 16 || !budget.spend() {
		return 0
	}
	switch v := v.(type) {
	case string:
		if escapeLeakRE.MatchString(v) {
			return 1
		}
	case *jsval.Object:
		n := 0
		for _, k := range v.Keys() {
			n += escapeLeaks(v.Value(k), depth+1, budget)
		}
		return n
	}
	return 0
}
