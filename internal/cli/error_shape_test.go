package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// loginAnswers is a cloud whose login answers status with body: a verdict
// on the credentials (401 with JSON) or a block (429, 503).
func loginAnswers(t *testing.T, status int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestEveryDocumentedFailureHasOneShape runs each failure the README's exit
// code table documents and checks its exit code and its shape: on a
// terminal (the text format) one line, the program's name first, what
// failed and why, no log record and no source location; under
// --log.format=json one ERROR record carrying the same text and the exit
// code. A message says each thing once.
func TestEveryDocumentedFailureHasOneShape(t *testing.T) {
	sim := startToolCloud(t)
	d := sim.Devids()[0]
	offline := sim.Devids()[1]
	sim.SetModuleOnline(offline, false)
	unreachable := unreachableURL(t)
	verdict := loginAnswers(t, 401, "application/json", `{"message":"Unauthorized"}`)
	throttled := loginAnswers(t, 429, "application/json", `{"message":"Too many requests"}`)
	unavailable := loginAnswers(t, 503, "text/html", `<html>Service Unavailable</html>`)

	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		says string // in the message, once
	}{
		{"unknown flag", []string{"modules", "--nosuch"}, nil, exitUsage, "unknown flag --nosuch"},
		{"no email", []string{"modules"}, map[string]string{"BRAGERONE_EMAIL": ""}, exitUsage, "no account email"},
		{"no password", []string{"modules", "--cloud.email=a@b", "--cloud.url=" + unreachable}, map[string]string{passwordEnv: ""}, exitUsage, "no account password"},
		{"credentials rejected (401)", []string{"modules", "--cloud.email=a@b", "--cloud.url=" + verdict}, nil, exitUsage, "login rejected by the cloud: check the email and password"},
		{"login throttled (429)", []string{"modules", "--cloud.email=a@b", "--cloud.url=" + throttled}, nil, exitRuntime, "the cloud gave no verdict on the credentials"},
		{"login unanswered (503 HTML)", []string{"modules", "--cloud.email=a@b", "--cloud.url=" + unavailable}, nil, exitRuntime, "the cloud gave no verdict on the credentials"},
		{"cloud unreachable", []string{"modules", "--cloud.email=a@b", "--cloud.url=" + unreachable}, nil, exitRuntime, "login failed"},
		{"unknown object", toolArgs(sim, "modules", "--cloud.object-id=99"), nil, exitUsage, "object 99 is not one of the account's objects"},
		{"unknown module", toolArgs(sim, "params", "NOSUCHDEV"), nil, exitUsage, "module NOSUCHDEV is not in the module list"},
		{"write refused: module offline", toolArgs(sim, "set", offline, "P6.v1=65"), nil, exitUsage, "is offline"},
		{"write refused: outside the limits", toolArgs(sim, "set", d, "Boiler set temperature=999"), nil, exitUsage, "is outside its limits"},
		{"catalog language not offered", toolArgs(sim, "catalog", "--catalog.language=xx"), nil, exitUsage, "is not offered by the web app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, set := tc.env[passwordEnv]; !set {
				t.Setenv(passwordEnv, "demo-password")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, errOut := runArgs(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			// Before it, only the log's warnings (a 5xx answer is logged
			// compactly as it happens); the command's error is the last line.
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			line := lines[len(lines)-1]
			for _, l := range lines[:len(lines)-1] {
				if !strings.Contains(l, " WRN ") {
					t.Errorf("text: a line other than a warning before the error: %q", l)
				}
			}
			if !strings.HasPrefix(line, "bragerone_exporter: ") || strings.Contains(line, ".go:") || strings.Count(line, tc.says) != 1 {
				t.Errorf("text: %q, want one line \"bragerone_exporter: …\" saying %q once, no source location", errOut, tc.says)
			}
			t.Logf("| %s | %d | `%s` |", tc.name, code, line)

			code, _, errOut = runArgs(t, append(tc.args, "--log.format=json")...)
			if code != tc.code {
				t.Fatalf("json: exit %d, want %d", code, tc.code)
			}
			var rec map[string]any
			errors := 0
			for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
				var r map[string]any
				if json.Unmarshal([]byte(l), &r) != nil {
					t.Fatalf("json: a line that is no JSON record: %q", l)
				}
				if r["level"] == "ERROR" {
					rec = r
					errors++
				}
			}
			if errors != 1 || rec["source"] != nil {
				t.Fatalf("json: %q, want one ERROR record, without a source location", errOut)
			}
			if rec["level"] != "ERROR" || rec["exit_code"] != float64(tc.code) || !strings.Contains(fmt.Sprint(rec["err"]), tc.says) {
				t.Errorf("json record %v", rec)
			}
		})
	}
}
