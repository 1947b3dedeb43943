package transport

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/bragerone/bragerone_exporter/outage"
)

func TestClassifyWireFactVectors(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{"HTTP 503 during handshake", outage.ReasonHandshake503},
		{map[string]any{"error": 503}, outage.ReasonHandshake503},
		{[]byte("queue is empty"), outage.ReasonEmptyQueue},
		{"Engine.IO close packet 257", outage.ReasonEIOClose},
		{"Connection error to io.brager.pl", outage.ReasonConnectError},
		{[]any{"Connection refused"}, outage.ReasonConnectError},
		{[]string{"reconnect", "error"}, outage.ReasonReconnectError},
		{nil, outage.ReasonDisconnect},
		{"", outage.ReasonDisconnect},
	}
	for _, tc := range cases {
		if got := Classify(tc.in, outage.ReasonDisconnect); got != tc.want {
			t.Errorf("Classify(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClassifyRules(t *testing.T) {
	cases := []struct {
		in   any
		def  string
		want string
	}{
		// Every rule, in order.
		{"   ", "connect_error", "connect_error"},
		{"packet queue is empty", "x", outage.ReasonEmptyQueue},
		{"Server has stopped communicating", "x", outage.ReasonServerStop},
		{"peer stopped communicating", "x", outage.ReasonServerStop},
		{"aiohttp WSMsgType.CLOSED", "x", outage.ReasonEIOClose},
		{"msgtype.closed", "x", outage.ReasonEIOClose},
		{"code 257", "x", outage.ReasonEIOClose},
		{"eio transport close", "x", outage.ReasonEIOClose},
		{"engine io closed", "x", outage.ReasonEIOClose},
		{"reconnect failed with error", "x", outage.ReasonReconnectError},
		{"connect error", "x", outage.ReasonConnectError},
		{"Connection Error", "x", outage.ReasonConnectError},
		{"dial tcp 127.0.0.1:1: connect: connection refused", "x", outage.ReasonConnectError},
		{"something else entirely", "fallback", "fallback"},
		// Addresses are not statuses or close codes.
		{"dial tcp 127.0.0.1:43503: connect: connection refused", "x", outage.ReasonConnectError},
		{"read tcp 127.0.0.1:50312->10.0.0.1:42570: read: connection reset by peer", "x", "x"},
		{"dial tcp [2001:db8::503]:443: i/o timeout", "x", "x"},
		{"Get \"ws://127.0.0.1:15030/socket.io/?EIO=4\": EOF", "x", "x"},
		{"dial tcp: lookup cloud503.example.com:443: no such host", "x", "x"},
		{"127.0.0.1:5030", "fallback", "fallback"},
		{"WebSocket upgrade rejected: HTTP 503 Service Unavailable", "x", outage.ReasonHandshake503},
		{"status:503", "x", outage.ReasonHandshake503},
		// First match wins: 503 beats everything after it.
		{"reconnect error 503", "x", outage.ReasonHandshake503},
		{"queue is empty; connection refused", "x", outage.ReasonEmptyQueue},
		// The spec's rule and the Engine.IO reason strings.
		{"transport error", outage.ReasonDisconnect, outage.ReasonEIOClose},
		{"ping timeout", outage.ReasonDisconnect, outage.ReasonServerStop},
		{"transport close", outage.ReasonDisconnect, outage.ReasonDisconnect},
		{"io server disconnect", outage.ReasonDisconnect, outage.ReasonDisconnect},
		{"io client disconnect", outage.ReasonDisconnect, outage.ReasonDisconnect},
		{"parse error", outage.ReasonDisconnect, outage.ReasonDisconnect},
		// Payload shapes.
		{errors.New("Connection refused"), "x", outage.ReasonConnectError},
		{json.RawMessage(`{"message":"not authorized","data":{"status":503}}`), "x", outage.ReasonHandshake503},
		{map[string]any{"msg": "queue is empty"}, "x", outage.ReasonEmptyQueue},
		{map[string]any{"description": "engine", "reason": "io close"}, "x", outage.ReasonEIOClose},
		{map[string]any{"status": 503}, "dflt", "dflt"}, // only the classified members count
		{map[string]any{"data": map[string]any{"code": 503}}, "x", outage.ReasonHandshake503},
		{[]any{"reconnect", map[string]any{"k": "error"}}, "x", outage.ReasonReconnectError},
		{float64(503), "x", outage.ReasonHandshake503},
		{json.RawMessage(`not json 257`), "x", outage.ReasonEIOClose},
	}
	for _, tc := range cases {
		if got := Classify(tc.in, tc.def); got != tc.want {
			t.Errorf("Classify(%#v, %q) = %q, want %q", tc.in, tc.def, got, tc.want)
		}
	}
}

// TestClassifierAnswersSessionReasons ties the classifier to the session
// outage vocabulary package outage owns: every rule answers one of its
// tokens, never a spelling of its own, so the outage record and the
// pre-created reason series know every answer.
func TestClassifierAnswersSessionReasons(t *testing.T) {
	answered := map[string]bool{}
	for _, text := range []string{
		"HTTP 503 during handshake", "packet queue is empty", "queue is empty", "Server has stopped communicating",
		"ping timeout", "aiohttp WSMsgType.CLOSED", "code 257", "eio transport close", "engine io closed",
		"transport error", "reconnect failed with error", "connect error", "Connection Error", "connection refused",
	} {
		got := Classify(text, "")
		if got == "" {
			t.Errorf("Classify(%q) matched no rule", text)
			continue
		}
		if !slices.Contains(outage.SessionReasons(), got) {
			t.Errorf("Classify(%q) = %q, not a session outage reason", text, got)
		}
		answered[got] = true
	}
	for _, want := range []string{outage.ReasonHandshake503, outage.ReasonEmptyQueue, outage.ReasonServerStop,
		outage.ReasonEIOClose, outage.ReasonReconnectError, outage.ReasonConnectError} {
		if !answered[want] {
			t.Errorf("no rule example answers %q", want)
		}
	}
}
