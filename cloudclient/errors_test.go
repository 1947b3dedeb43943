package cloudclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestIsExpectedUpstream(t *testing.T) {
	api := func(st int, data any) error {
		return &cloudclient.APIError{Endpoint: "GET /v1/modules", Status: st, Data: data}
	}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"502", api(502, "<html>"), true},
		{"503", api(503, nil), true},
		{"504", api(504, nil), true},
		{"500", api(500, nil), false},
		{"401", api(401, nil), false},
		{"408 dispatch timeout", api(408, map[string]any{"status": "E_DISPATCH_EVENT_TIMEOUT"}), true},
		{"408 other", api(408, map[string]any{"status": "OTHER"}), false},
		{"wrapped 503", fmt.Errorf("poll: %w", api(503, nil)), true},
		{"joined 504", errors.Join(errors.New("x"), api(504, nil)), true},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"net timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, true},
		{"canceled", context.Canceled, false},
		{"decode", &cloudclient.DecodeError{Endpoint: "GET /v1/user", Status: 200}, false},
	}
	for _, tc := range cases {
		if got := cloudclient.IsExpectedUpstream(tc.err); got != tc.want {
			t.Errorf("%s: IsExpectedUpstream = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAPIErrorFromResponses(t *testing.T) {
	long := strings.Repeat("x", 10000)
	cases := []struct {
		name      string
		status    int
		ctype     string
		body      string
		wantError string
		check     func(*cloudclient.APIError) bool
	}{
		{"HTML 503", 503, "text/html; charset=utf-8", "<html><body>" + long + "</body></html>", "cloudclient: GET /v1/modules: HTTP 503",
			func(e *cloudclient.APIError) bool {
				s, ok := e.Data.(string)
				return ok && len(s) == 2048 && e.Headers["Content-Type"] == "text/html; charset=utf-8"
			}},
		{"JSON message", 500, "application/json", `{"message":"boom"}`, "cloudclient: GET /v1/modules: HTTP 500: boom",
			func(e *cloudclient.APIError) bool { return e.Message() == "boom" }},
		{"JSON dispatch timeout", 408, "application/json", `{"status":"E_DISPATCH_EVENT_TIMEOUT","message":"upstream timeout"}`,
			"cloudclient: GET /v1/modules: HTTP 408 E_DISPATCH_EVENT_TIMEOUT: upstream timeout", func(e *cloudclient.APIError) bool { return true }},
		{"long JSON message left out", 500, "application/json", `{"message":"` + long + `"}`, "cloudclient: GET /v1/modules: HTTP 500",
			func(e *cloudclient.APIError) bool { return e.Message() == long }},
		{"JSON content type but not JSON", 502, "application/json", `<html>bad gateway</html>`, "cloudclient: GET /v1/modules: HTTP 502",
			func(e *cloudclient.APIError) bool { return e.Data == "<html>bad gateway</html>" }},
		{"JSON without JSON content type stays text", 500, "text/plain", `{"message":"x"}`, "cloudclient: GET /v1/modules: HTTP 500",
			func(e *cloudclient.APIError) bool { return e.Data == `{"message":"x"}` }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.handle("GET /v1/modules", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			logs := &logBuffer{}
			c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.Logger = logs.logger() })
			_, err := c.Modules(ctxT(t), 1)
			var ae *cloudclient.APIError
			if !errors.As(err, &ae) || ae.Status != tc.status || ae.Endpoint != "GET /v1/modules" || !tc.check(ae) {
				t.Fatalf("err = %#v", err)
			}
			if err.Error() != tc.wantError {
				t.Fatalf("Error() = %q, want %q", err.Error(), tc.wantError)
			}
			out := logs.String()
			if strings.Contains(out, "<html") || strings.Contains(out, "xxxxxxxxxx") {
				t.Fatalf("log carries the body: %s", out)
			}
			if cloudclient.IsExpectedUpstream(err) && !strings.Contains(out, fmt.Sprintf("level=WARN msg=\"cloud request failed\" endpoint=\"GET /v1/modules\" status=%d err=%q", tc.status, err.Error())) {
				t.Fatalf("expected-upstream failure not logged compactly at WARN: %s", out)
			}
		})
	}
}
