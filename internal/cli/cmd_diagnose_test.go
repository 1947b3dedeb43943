package cli

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// diagnose --url fetches /debug/diagnostics with the basic auth and the
// TLS CA given, and writes it; a refused fetch leaves no file; a URL with
// credentials in it is refused without echoing them.
func TestDiagnoseFetchesTheBundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "prom" || p != "web-pass-123" || r.URL.Path != "/debug/diagnostics" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write([]byte("BUNDLE"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bundle.tar.gz")
	t.Setenv(diagnosePasswordEnv, "web-pass-123")
	code, stdout, stderr := runArgs(t, "diagnose", "--url="+srv.URL, "--user=prom", "--tls.ca-file="+ca, "-o", out)
	if code != exitOK {
		t.Fatalf("code %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "BUNDLE" || !strings.Contains(stdout, out) {
		t.Errorf("wrote %q, said %q", b, stdout)
	}

	t.Setenv(diagnosePasswordEnv, "wrong-pass")
	bad := filepath.Join(dir, "refused.tar.gz")
	code, _, stderr = runArgs(t, "diagnose", "--url="+srv.URL, "--user=prom", "--tls.ca-file="+ca, "-o", bad)
	if code != exitRuntime || !strings.Contains(stderr, "401") || strings.Contains(stderr, "wrong-pass") {
		t.Errorf("a refused fetch: code %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a refused fetch left a file")
	}

	code, _, stderr = runArgs(t, "diagnose", "--url=https://prom:url-pass-456@localhost:1", "-o", filepath.Join(dir, "x"))
	if code != exitUsage || strings.Contains(stderr, "url-pass-456") {
		t.Errorf("a URL with credentials: code %d, stderr %q", code, stderr)
	}
	// Without the CA the server's certificate is refused, unless told not
	// to verify it.
	code, _, _ = runArgs(t, "diagnose", "--url="+srv.URL, "--user=prom", "-o", filepath.Join(dir, "y"))
	if code != exitRuntime {
		t.Errorf("an unverified certificate: code %d", code)
	}
	t.Setenv(diagnosePasswordEnv, "web-pass-123")
	code, _, stderr = runArgs(t, "diagnose", "--url="+srv.URL, "--user=prom", "--tls.insecure-skip-verify", "-o", filepath.Join(dir, "z"))
	if code != exitOK {
		t.Errorf("--tls.insecure-skip-verify: code %d %s", code, stderr)
	}
}
