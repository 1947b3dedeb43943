package dashboards

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// schema is a JSON Schema (draft-07) node, limited to the keywords that the
// schema in testdata uses. Any other keyword is an error, so a regenerated
// schema that needs more cannot be half-checked in silence.
type schema map[string]any

var schemaKeywords = map[string]bool{
	"$ref": true, "$schema": true, "definitions": true, "description": true, "type": true,
	"required": true, "properties": true, "additionalProperties": true, "items": true,
	"anyOf": true, "enum": true, "const": true,
}

type validator struct {
	root schema
}

func newValidator(schemaJSON []byte) (*validator, error) {
	var root schema
	if err := json.Unmarshal(schemaJSON, &root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &validator{root: root}, nil
}

// validate returns every violation of v's schema by doc (decoded with UseNumber).
func (v *validator) validate(doc any) []string {
	var errs []string
	v.check(v.root, doc, "$", &errs)
	return errs
}

func (v *validator) resolve(ref string) (schema, error) {
	name, ok := strings.CutPrefix(ref, "#/definitions/")
	if !ok {
		return nil, fmt.Errorf("unsupported $ref %q", ref)
	}
	defs, _ := v.root["definitions"].(map[string]any)
	def, ok := defs[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q: no such definition", ref)
	}
	return def, nil
}

func (v *validator) check(s schema, doc any, path string, errs *[]string) {
	fail := func(format string, a ...any) { *errs = append(*errs, path+": "+fmt.Sprintf(format, a...)) }
	for k := range s {
		if !schemaKeywords[k] {
			fail("schema keyword %q is not supported by this validator", k)
			return
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		def, err := v.resolve(ref)
		if err != nil {
			fail("%v", err)
			return
		}
		v.check(def, doc, path, errs)
	}
	if t, ok := s["type"]; ok && !typeMatches(t, doc) {
		fail("is %s, want type %v", jsonType(doc), t)
		return
	}
	if enum, ok := s["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || jsonEqual(e, doc)
		}
		if !found {
			fail("value %v is not one of %v", doc, enum)
		}
	}
	if c, ok := s["const"]; ok && !jsonEqual(c, doc) {
		fail("value %v, want %v", doc, c)
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		var all []string
		matched := false
		for _, alt := range anyOf {
			var sub []string
			v.check(alt.(map[string]any), doc, path, &sub)
			if len(sub) == 0 {
				matched = true
				break
			}
			all = append(all, sub...)
		}
		if !matched {
			fail("matches no alternative of anyOf: %s", strings.Join(all, "; "))
		}
	}
	if obj, ok := doc.(map[string]any); ok {
		for _, r := range asSlice(s["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				fail("required property %q is missing", r)
			}
		}
		props, _ := s["properties"].(map[string]any)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, ok := props[k].(map[string]any); ok {
				v.check(ps, obj[k], path+"."+k, errs)
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("property %q is not allowed", k)
				}
			case map[string]any:
				v.check(ap, obj[k], path+"."+k, errs)
			}
		}
	}
	if arr, ok := doc.([]any); ok {
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range arr {
				v.check(items, e, fmt.Sprintf("%s[%d]", path, i), errs)
			}
		}
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

func jsonType(doc any) string {
	switch d := doc.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := d.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", doc)
}

func typeMatches(t any, doc any) bool {
	got := jsonType(doc)
	match := func(want string) bool {
		return want == got || (want == "number" && got == "integer")
	}
	switch t := t.(type) {
	case string:
		return match(t)
	case []any:
		for _, w := range t {
			if s, ok := w.(string); ok && match(s) {
				return true
			}
		}
	}
	return false
}

// jsonEqual compares a schema value (float64 numbers) with a document value
// (json.Number numbers).
func jsonEqual(schemaValue, doc any) bool {
	if n, ok := doc.(json.Number); ok {
		f, err := n.Float64()
		sv, ok := schemaValue.(float64)
		return err == nil && ok && f == sv
	}
	return reflect.DeepEqual(schemaValue, doc)
}
