package cli

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every link of the landing page that points at the exporter answers 200:
// the metrics, the status page, the health and readiness endpoints, and the
// heap and CPU profiles exporter-toolkit's page links (they answered 404).
// The CPU profile is asked for one second instead of the page's sixty.
func TestLandingPageLinksAnswer(t *testing.T) {
	r := startServeRun(t, append([]string{"--simulate", "--simulate.modules=1", "--simulate.objects=1", "--simulate.params-per-module=20"}, fastServeFlags...)...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _, err := r.get("/-/ready"); err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/-/ready never answered 200; stderr:\n%s", tailLines(r.stderr.String(), 40))
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, page, err := r.get("/")
	if err != nil || code != http.StatusOK {
		t.Fatalf("landing page: %d %v", code, err)
	}
	base, _ := url.Parse(r.base + "/")
	var paths []string
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(string(page), -1) {
		u, err := base.Parse(m[1])
		if err != nil {
			t.Errorf("link %q: %v", m[1], err)
			continue
		}
		if u.Host != base.Host {
			continue // elsewhere on the web (pprof.me)
		}
		if u.Query().Has("seconds") {
			q := u.Query()
			q.Set("seconds", "1")
			u.RawQuery = q.Encode()
		}
		paths = append(paths, u.RequestURI())
	}
	for _, want := range []string{"/metrics", "/status", "/-/healthy", "/-/ready", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		if !slices.Contains(paths, want) {
			t.Errorf("the landing page does not link %s (links: %q)", want, paths)
		}
	}
	for _, p := range paths {
		code, body, err := r.get(p)
		if err != nil || code != http.StatusOK {
			t.Errorf("%s: %d %v %q", p, code, err, tailLines(string(body), 3))
		}
		if strings.HasPrefix(p, "/debug/pprof/") && len(body) == 0 {
			t.Errorf("%s: an empty profile", p)
		}
	}
}
