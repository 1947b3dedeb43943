package jsval

import (
	"strings"
)

// Value is one converted JavaScript value: nil (null or undefined), bool,
// float64, string, []Value, *Object, Source or *Func.
type Value = any

// Source is the text of an expression that is kept rather than evaluated: an
// unresolved identifier ("A"), a member expression ("t.INVISIBLE"), a call the
// evaluator does not expand, or a function that does not build an object (a
// unit transform). It is text, but distinct from a string literal.
type Source string

// Object is a converted object literal: string keys in source order.
type Object struct {
	keys []string
	vals map[string]Value
}

// NewObject returns an empty object.
func NewObject() *Object { return &Object{vals: map[string]Value{}} }

// Set stores v under k; a key set again keeps its first position, as in
// JavaScript.
func (o *Object) Set(k string, v Value) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// Get returns the value under k.
func (o *Object) Get(k string) (Value, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[k]
	return v, ok
}

// Value returns the value under k, nil when absent.
func (o *Object) Value(k string) Value {
	v, _ := o.Get(k)
	return v
}

// Has says whether k is present.
func (o *Object) Has(k string) bool {
	_, ok := o.Get(k)
	return ok
}

// Keys returns the keys in order; the slice must not be modified.
func (o *Object) Keys() []string {
	if o == nil {
		return nil
	}
	return o.keys
}

// Len is the number of keys.
func (o *Object) Len() int {
	if o == nil {
		return 0
	}
	return len(o.keys)
}

// Text returns the text of a string or a Source.
func Text(v Value) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case Source:
		return string(v), true
	}
	return "", false
}

// IsObfuscatedName says whether s is an obfuscator's identifier (_0x1a2b).
// Such a name that nothing binds stands for an unknown value, and the
// nullish rules treat it as undefined (docs/spec.md ).
func IsObfuscatedName(s string) bool {
	if len(s) < 4 || !strings.HasPrefix(s, "_0x") {
		return false
	}
	for i := 3; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Nullish says whether v is null/undefined or an unresolved obfuscated
// identifier (docs/spec.md ).
func Nullish(v Value) bool {
	switch v := v.(type) {
	case nil:
		return true
	case Source:
		return IsObfuscatedName(string(v))
	}
	return false
}

// Truthy applies JavaScript truthiness; known is false for Source and *Func
// values whose truth cannot be decided without running code.
func Truthy(v Value) (truth, known bool) {
	switch v := v.(type) {
	case nil:
		return false, true
	case bool:
		return v, true
	case float64:
		return v != 0 && v == v, true
	case string:
		return v != "", true
	case []Value, *Object, *Func:
		return true, true
	case Source:
		if IsObfuscatedName(string(v)) {
			return false, true
		}
	}
	return false, false
}
