package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// selfSignedCert writes a certificate for 127.0.0.1 and its key as PEM files
// into dir and returns their paths and the certificate.
func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "bragerone_exporter e2e"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err = x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// TestWebConfigTLSAndBasicAuth serves /metrics over TLS with basic auth from
// an exporter-toolkit web configuration file.
func TestWebConfigTLSAndBasicAuth(t *testing.T) {
	t.Parallel()
	const user, password = "prometheus", "e2e-scrape-secret"
	dir := t.TempDir()
	certFile, keyFile, cert := selfSignedCert(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web-config.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, `tls_server_config:
  cert_file: %q
  key_file: %q
basic_auth_users:
  %s: %q
`, certFile, keyFile, user, hash), 0o600); err != nil {
		t.Fatal(err)
	}

	exp := startServeSimulate(t, "--web.config.file="+webConfig)
	exp.waitLog(t, 10*time.Second, "TLS is enabled.")
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	trusting := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	httpsURL := "https://" + exp.addr + "/metrics"

	get := func(client *http.Client, u string, auth func(*http.Request)) (*http.Response, string, error) {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != nil {
			auth(req)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp, string(body), err
	}
	withPassword := func(pw string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, pw) }
	}

	t.Run("https with the right password", func(t *testing.T) {
		waitFor(t, 20*time.Second, "an authenticated https scrape with the session up", func() (bool, string) {
			resp, body, err := get(trusting, httpsURL, withPassword(password))
			if err != nil {
				return false, err.Error()
			}
			if resp.StatusCode != http.StatusOK {
				return false, resp.Status
			}
			if resp.TLS == nil {
				t.Fatal("200 without TLS")
			}
			s, err := parseExposition([]byte(body))
			if err != nil {
				t.Fatalf("the https scrape does not parse: %v", err)
			}
			return valueIs("bragerone_session_up", nil, 1)(s)
		})
	})
	t.Run("https with a wrong password or none", func(t *testing.T) {
		for name, auth := range map[string]func(*http.Request){
			"wrong password": withPassword("not-" + password),
			"wrong user":     func(r *http.Request) { r.SetBasicAuth("grafana", password) },
			"no password":    nil,
		} {
			resp, body, err := get(trusting, httpsURL, auth)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s: %s, want 401", name, resp.Status)
			}
			if strings.Contains(body, "bragerone_") {
				t.Errorf("%s: the answer holds metrics", name)
			}
		}
	})
	t.Run("https with an untrusted certificate", func(t *testing.T) {
		untrusting := &http.Client{Timeout: 10 * time.Second}
		_, _, err := get(untrusting, httpsURL, withPassword(password))
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("a client without the test CA: err %v, want a certificate error", err)
		}
	})
	t.Run("plain http", func(t *testing.T) {
		resp, body, err := get(&http.Client{Timeout: 10 * time.Second}, "http://"+exp.addr+"/metrics", withPassword(password))
		if err == nil && (resp.StatusCode == http.StatusOK || strings.Contains(body, "bragerone_")) {
			t.Fatalf("plain http got %s with metrics", resp.Status)
		}
		if err == nil {
			t.Logf("plain http refused with %s: %q", resp.Status, strings.TrimSpace(body))
		} else {
			t.Logf("plain http refused: %v", err)
		}
	})
}
