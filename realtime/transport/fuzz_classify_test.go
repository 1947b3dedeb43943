package transport

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/outage"
)

// FuzzClassify feeds the classifier arbitrary disconnect and connect-failure
// payloads in every shape it accepts (text, bytes, error, raw JSON and the
// decoded JSON value) and checks that it never panics and always answers one
// of the session outage reasons (package outage) or the caller's default, and that it reads the text the same
// whatever the shape carrying it.
func FuzzClassify(f *testing.F) {
	// The reference test vectors (docs/spec.md W-3.4b) and the Engine.IO reason strings.
	for _, s := range []string{
		"HTTP 503 during handshake", `{"error":503}`, "queue is empty", "packet queue is empty",
		"Server has stopped communicating", "ping timeout", "aiohttp WSMsgType.CLOSED", "code 257",
		"Engine.IO close packet 257", "eio transport close", "transport error", "transport close",
		"reconnect failed with error", "Connection error to io.brager.pl", `["Connection refused"]`,
		`["reconnect","error"]`, "io server disconnect", "io client disconnect", "parse error", "",
		`{"message":"not authorized","data":{"status":503}}`, `{"description":"engine","reason":"io close"}`,
		`{"status":503}`, `{"data":{"code":503}}`, `[[[[[[[[[[["503"]]]]]]]]]]]`, `null`, `503`, `true`,
	} {
		f.Add(s, "custom_default")
	}
	f.Add("anything", "")
	f.Fuzz(func(t *testing.T, text, def string) {
		check := func(shape string, payload any) string {
			t.Helper()
			got := Classify(payload, def)
			if got != def && !outage.IsSessionReason(got) {
				t.Fatalf("Classify(%s %q, %q) = %q: neither a reason token nor the default", shape, text, def, got)
			}
			return got
		}
		fromString := check("string", text)
		if got := check("[]byte", []byte(text)); got != fromString {
			t.Fatalf("bytes %q classified %q, the same string %q", text, got, fromString)
		}
		if got := check("error", errors.New(text)); got != fromString {
			t.Fatalf("error %q classified %q, the same string %q", text, got, fromString)
		}
		if got := check("[]string", []string{text}); got != fromString {
			t.Fatalf("[]string{%q} classified %q, the string %q", text, got, fromString)
		}
		if strings.TrimSpace(text) == "" && fromString != def {
			t.Fatalf("empty text %q classified %q, want the default %q", text, fromString, def)
		}
		// The same bytes as a JSON payload, raw and decoded.
		check("json.RawMessage", json.RawMessage(text))
		var decoded any
		if json.Unmarshal([]byte(text), &decoded) == nil {
			check("decoded JSON", decoded)
			check("wrapped in a list", []any{decoded, text})
			check("wrapped in an object", map[string]any{"message": decoded, "data": map[string]any{"inner": decoded}})
		}
	})
}
