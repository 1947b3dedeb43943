package transport

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestClassifyWireFactVectors(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{"HTTP 503 during handshake", ReasonHandshake503},
		{map[string]any{"error": 503}, ReasonHandshake503},
		{[]byte("queue is empty"), ReasonEmptyQueue},
		{"Engine.IO close packet 257", ReasonEIOClose},
		{"Connection error to io.brager.pl", ReasonConnectError},
		{[]any{"Connection refused"}, ReasonConnectError},
		{[]string{"reconnect", "error"}, ReasonReconnectError},
		{nil, ReasonDisconnect},
		{"", ReasonDisconnect},
	}
	for _, tc := range cases {
		if got := Classify(tc.in, ReasonDisconnect); got != tc.want {
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
		{"packet queue is empty", "x", ReasonEmptyQueue},
		{"Server has stopped communicating", "x", ReasonServerStop},
		{"peer stopped communicating", "x", ReasonServerStop},
		{"aiohttp WSMsgType.CLOSED", "x", ReasonEIOClose},
		{"msgtype.closed", "x", ReasonEIOClose},
		{"code 257", "x", ReasonEIOClose},
		{"eio transport close", "x", ReasonEIOClose},
		{"engine io closed", "x", ReasonEIOClose},
		{"reconnect failed with error", "x", ReasonReconnectError},
		{"connect error", "x", ReasonConnectError},
		{"Connection Error", "x", ReasonConnectError},
		{"dial tcp 127.0.0.1:1: connect: connection refused", "x", ReasonConnectError},
		{"something else entirely", "fallback", "fallback"},
		// Addresses are not statuses or close codes.
		{"dial tcp 127.0.0.1:43503: connect: connection refused", "x", ReasonConnectError},
		{"read tcp 127.0.0.1:50312->10.0.0.1:42570: read: connection reset by peer", "x", "x"},
		{"dial tcp [2001:db8::503]:443: i/o timeout", "x", "x"},
		{"Get \"ws://127.0.0.1:15030/socket.io/?EIO=4\": EOF", "x", "x"},
		{"dial tcp: lookup cloud503.example.com:443: no such host", "x", "x"},
		{"127.0.0.1:5030", "fallback", "fallback"},
		{"WebSocket upgrade rejected: HTTP 503 Service Unavailable", "x", ReasonHandshake503},
		{"status:503", "x", ReasonHandshake503},
		// First match wins: 503 beats everything after it.
		{"reconnect error 503", "x", ReasonHandshake503},
		{"queue is empty; connection refused", "x", ReasonEmptyQueue},
		// The spec's rule and the Engine.IO reason strings.
		{"transport error", ReasonDisconnect, ReasonEIOClose},
		{"ping timeout", ReasonDisconnect, ReasonServerStop},
		{"transport close", ReasonDisconnect, ReasonDisconnect},
		{"io server disconnect", ReasonDisconnect, ReasonDisconnect},
		{"io client disconnect", ReasonDisconnect, ReasonDisconnect},
		{"parse error", ReasonDisconnect, ReasonDisconnect},
		// Payload shapes.
		{errors.New("Connection refused"), "x", ReasonConnectError},
		{json.RawMessage(`{"message":"not authorized","data":{"status":503}}`), "x", ReasonHandshake503},
		{map[string]any{"msg": "queue is empty"}, "x", ReasonEmptyQueue},
		{map[string]any{"description": "engine", "reason": "io close"}, "x", ReasonEIOClose},
		{map[string]any{"status": 503}, "dflt", "dflt"}, // only the classified members count
		{map[string]any{"data": map[string]any{"code": 503}}, "x", ReasonHandshake503},
		{[]any{"reconnect", map[string]any{"k": "error"}}, "x", ReasonReconnectError},
		{float64(503), "x", ReasonHandshake503},
		{json.RawMessage(`not json 257`), "x", ReasonEIOClose},
	}
	for _, tc := range cases {
		if got := Classify(tc.in, tc.def); got != tc.want {
			t.Errorf("Classify(%#v, %q) = %q, want %q", tc.in, tc.def, got, tc.want)
		}
	}
}

func TestReasonTokens(t *testing.T) {
	want := []string{"disconnect", "stop", "handshake_503", "connect_error", "empty_queue", "server_stop",
		"eio_close", "reconnect_error", "supervisor_stale", "force_reconnect", "hard_reset"}
	if len(Reasons) != len(want) {
		t.Fatalf("Reasons = %v", Reasons)
	}
	for i := range want {
		if Reasons[i] != want[i] {
			t.Errorf("Reasons[%d] = %q, want %q", i, Reasons[i], want[i])
		}
	}
}
