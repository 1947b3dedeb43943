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
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// manifestProbe is what a probe of deploy/kubernetes/deployment.yaml asks:
// an HTTP GET of a path on a container port, without credentials.
type manifestProbe struct {
	Kind string // readinessProbe, livenessProbe
	Path string
	Port int
}

// manifestProbes reads the probes of the Kubernetes Deployment and the port
// the container's --web.health-listen-address opens; each probe must name a
// container port, and that port must be the health listener's.
func manifestProbes(t *testing.T) []manifestProbe {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "kubernetes", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		HTTPGet *struct {
			Path   string `yaml:"path"`
			Port   string `yaml:"port"`
			Scheme string `yaml:"scheme"`
		} `yaml:"httpGet"`
	}
	var dep struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args  []string `yaml:"args"`
						Ports []struct {
							Name          string `yaml:"name"`
							ContainerPort int    `yaml:"containerPort"`
						} `yaml:"ports"`
						ReadinessProbe probe `yaml:"readinessProbe"`
						LivenessProbe  probe `yaml:"livenessProbe"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(raw, &dep); err != nil {
		t.Fatal(err)
	}
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("deployment.yaml: %d containers, want 1", len(dep.Spec.Template.Spec.Containers))
	}
	c := dep.Spec.Template.Spec.Containers[0]
	healthPort := -1
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--web.health-listen-address="); ok {
			_, p, err := net.SplitHostPort(v)
			if err != nil {
				t.Fatalf("deployment.yaml: %s: %v", a, err)
			}
			if healthPort, err = strconv.Atoi(p); err != nil {
				t.Fatalf("deployment.yaml: %s: %v", a, err)
			}
		}
	}
	if healthPort < 0 {
		t.Fatal("deployment.yaml: the container has no --web.health-listen-address; its probes would meet the web configuration's auth")
	}
	var out []manifestProbe
	for kind, p := range map[string]probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
		if p.HTTPGet == nil {
			t.Fatalf("deployment.yaml: %s is no httpGet probe", kind)
		}
		if p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != "HTTP" {
			t.Errorf("deployment.yaml: %s scheme %s: the health listener speaks plain HTTP", kind, p.HTTPGet.Scheme)
		}
		port := -1
		for _, cp := range c.Ports {
			if cp.Name == p.HTTPGet.Port || strconv.Itoa(cp.ContainerPort) == p.HTTPGet.Port {
				port = cp.ContainerPort
			}
		}
		if port != healthPort {
			t.Errorf("deployment.yaml: %s asks port %q (%d), not the health listener's %d", kind, p.HTTPGet.Port, port, healthPort)
		}
		out = append(out, manifestProbe{Kind: kind, Path: p.HTTPGet.Path, Port: port})
	}
	return out
}

// clientCA writes a CA certificate into dir and returns its file and a
// client certificate it signed.
func clientCA(t *testing.T, dir string) (caFile string, client tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bragerone e2e client CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "prometheus"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "client-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestProbesWithBasicAuthAndClientCerts starts the exporter the way the
// Kubernetes manifests and the Helm chart run it, with basic auth and with
// TLS client certificates required, and asks exactly what the Deployment's
// probes ask (path, port of --web.health-listen-address, no credentials):
// they answer, while /metrics, /status and /debug/pprof/ stay behind the
// web configuration on the main port and are not served on the probes' port.
func TestProbesWithBasicAuthAndClientCerts(t *testing.T) {
	t.Parallel()
	probes := manifestProbes(t)
	dir := t.TempDir()
	certFile, keyFile, serverCert := selfSignedCert(t, dir)
	caFile, clientCert := clientCA(t, dir)
	const user, password = "prometheus", "e2e-probe-secret"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(serverCert)

	for _, tc := range []struct {
		name      string
		webConfig string
		// authorised and anonymous clients of the main listener
		authorised, anonymous *http.Client
		authorise             func(*http.Request)
		scheme                string
	}{{
		name:       "basic auth",
		webConfig:  fmt.Sprintf("basic_auth_users:\n  %s: %q\n", user, hash),
		authorised: &http.Client{Timeout: 10 * time.Second}, anonymous: &http.Client{Timeout: 10 * time.Second},
		authorise: func(r *http.Request) { r.SetBasicAuth(user, password) },
		scheme:    "http",
	}, {
		name: "client certificates",
		webConfig: fmt.Sprintf("tls_server_config:\n  cert_file: %q\n  key_file: %q\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: %q\n",
			certFile, keyFile, caFile),
		authorised: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{clientCert}}}},
		anonymous:  &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}},
		authorise:  func(*http.Request) {},
		scheme:     "https",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			webConfig := filepath.Join(t.TempDir(), "web-config.yml")
			if err := os.WriteFile(webConfig, []byte(tc.webConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			exp := startServeSimulate(t, "--web.config.file="+webConfig, "--web.health-listen-address=127.0.0.1:0")
			healthAddr := exp.waitLog(t, 10*time.Second, "Listening for probes (/-/healthy, /-/ready) without TLS or authentication").str("address")
			if healthAddr == "" || healthAddr == exp.addr {
				t.Fatalf("health listener address %q (main %q)", healthAddr, exp.addr)
			}
			get := func(client *http.Client, u string, auth func(*http.Request)) (int, string, error) {
				req, err := http.NewRequest(http.MethodGet, u, nil)
				if err != nil {
					t.Fatal(err)
				}
				if auth != nil {
					auth(req)
				}
				resp, err := client.Do(req)
				if err != nil {
					return 0, "", err
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body), nil
			}
			plain := &http.Client{Timeout: 10 * time.Second}

			// What the kubelet asks: GET path on the health port, plain
			// HTTP, no credentials. /-/ready turns 200 once the simulated
			// cloud's snapshot is stored.
			for _, p := range probes {
				u := "http://" + healthAddr + p.Path
				waitFor(t, 20*time.Second, p.Kind+" "+p.Path+" answering 200", func() (bool, string) {
					code, body, err := get(plain, u, nil)
					if err != nil {
						return false, err.Error()
					}
					return code == http.StatusOK, fmt.Sprintf("%d %q", code, body)
				})
			}
			waitFor(t, 20*time.Second, "/-/ready on the health listener answering 200", func() (bool, string) {
				code, body, err := get(plain, "http://"+healthAddr+"/-/ready", nil)
				if err != nil {
					return false, err.Error()
				}
				return code == http.StatusOK, fmt.Sprintf("%d %q", code, body)
			})

			// Nothing else on the health listener.
			for _, path := range []string{"/metrics", "/status", "/debug/pprof/", "/", "/-/"} {
				code, body, err := get(plain, "http://"+healthAddr+path, nil)
				if err != nil {
					t.Fatalf("health listener %s: %v", path, err)
				}
				if code != http.StatusNotFound || strings.Contains(body, "bragerone_") {
					t.Errorf("health listener %s: %d, want 404 with nothing of the exporter's", path, code)
				}
			}

			// The main listener keeps every page behind the web configuration.
			main := tc.scheme + "://" + exp.addr
			for _, path := range []string{"/metrics", "/status", "/debug/pprof/", "/-/healthy"} {
				code, _, err := get(tc.anonymous, main+path, nil)
				switch {
				case tc.scheme == "https" && err == nil:
					t.Errorf("main listener %s without a client certificate: %d, want a refused handshake", path, code)
				case tc.scheme == "http" && (err != nil || code != http.StatusUnauthorized):
					t.Errorf("main listener %s without a password: %d %v, want 401", path, code, err)
				}
				code, _, err = get(tc.authorised, main+path, tc.authorise)
				if err != nil || code != http.StatusOK {
					t.Errorf("main listener %s with credentials: %d %v, want 200", path, code, err)
				}
			}
		})
	}
}
