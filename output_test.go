package main

import (
	"encoding/json"
	"testing"
)

func TestParseAndFormatValue(t *testing.T) {
	for in, want := range map[string]any{
		"21.5": json.Number("21.5"), "-3": json.Number("-3"), "1e3": json.Number("1e3"), " 7 ": json.Number("7"),
		"true": true, "false": false, `"21"`: "21", "ON": "ON", "01": "01", "0x10": "0x10", "": "",
		"null": "null", "[1]": "[1]", `"unterminated`: `"unterminated`,
	} {
		if got := parseValue(in); got != want {
			t.Errorf("parseValue(%q) = %#v, want %#v", in, got, want)
		}
	}
	for want, in := range map[string]any{
		"21.5": 21.5, "20": 20.0, "-0.25": -0.25, "1e+21": 1e21, "1e-07": 1e-7, "100000": 1e5,
		"true": true, "null": nil, "ON": "ON", `"two words"`: "two words", `""`: "",
		`"21"`: "21", `"true"`: "true", `{"a":1}`: map[string]any{"a": 1.0}, "7": json.Number("7"),
	} {
		if got := formatValue(in); got != want {
			t.Errorf("formatValue(%#v) = %q, want %q", in, got, want)
		}
	}
}
