package catalog_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// assetSite serves testdata/site over HTTP with ETags, answering 304 to a
// matching If-None-Match, as the web app's origin does.
type assetSite struct {
	mu          sync.Mutex
	files       map[string][]byte
	requests    map[string]int
	conditional map[string]int // requests carrying If-None-Match
	notModified map[string]int
}

func newAssetSite(t *testing.T) *assetSite {
	s := &assetSite{files: map[string][]byte{}, requests: map[string]int{}, conditional: map[string]int{}, notModified: map[string]int{}}
	root := filepath.Join("testdata", "site")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		s.files["/"+filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s.files["/"] = s.files["/index.html"]
	return s
}

func (s *assetSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[r.URL.Path]++
	b, ok := s.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		s.conditional[r.URL.Path]++
		if inm == etag {
			s.notModified[r.URL.Path]++
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", "text/javascript")
	w.Write(b)
}

func (s *assetSite) edit(fn func(files map[string][]byte)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.files)
}

func (s *assetSite) counts() (requests, conditional, notModified map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := func(m map[string]int) map[string]int {
		out := map[string]int{}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return cp(s.requests), cp(s.conditional), cp(s.notModified)
}

// The Fetcher contract with the real asset client: a second load is served
// from revalidated copies (304), and a redeployed web app (new index hash,
// the old index gone) is found again from the HTML root.
func TestCloudClientFetcher(t *testing.T) {
	site := newAssetSite(t)
	srv := httptest.NewServer(site)
	defer srv.Close()
	client, err := cloudclient.New(cloudclient.Config{
		BaseURL: srv.URL, AssetsURL: srv.URL,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	var f catalog.Fetcher = client // cloudclient.(*Client).Asset satisfies the contract
	mods := []catalog.ModuleSpec{
		{DevID: "MOD-A", DeviceMenu: 7, Permissions: []string{"DISPLAY_MENU_DHW", "DISPLAY_PARAMETER_LEVEL_1"}},
		{DevID: "MOD-B", DeviceMenu: 153, Permissions: []string{"DISPLAY_PARAMETER_LEVEL_1", "DISPLAY_PARAMETER_LEVEL_MAX"}},
	}
	ctx := context.Background()
	c1, err := catalog.Load(ctx, f, mods, catalog.Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if p := c1.Module("MOD-A").Lookup("P4", "v7"); p == nil || p.Name != "Boiler power" {
		t.Fatalf("first load: %+v", p)
	}
	req1, _, _ := site.counts()

	c2, err := catalog.Load(ctx, f, mods, catalog.Options{Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Fingerprint() != c1.Fingerprint() {
		t.Fatal("a revalidated load differs")
	}
	_, cond, nm := site.counts()
	for p, n := range req1 {
		if p == "/assets/" { // 404: nothing cached, nothing to revalidate
			continue
		}
		if cond[p] != n || nm[p] != n {
			t.Errorf("%s: %d first fetches, %d conditional, %d answered 304", p, n, cond[p], nm[p])
		}
	}

	// Redeploy: a new index under a new hash with a changed label; the old
	// one is gone.
	site.edit(func(files map[string][]byte) {
		idx := files["/assets/index-Q1w2E3r4.js"]
		delete(files, "/assets/index-Q1w2E3r4.js")
		files["/assets/index-N3wHash9.js"] = idx
		files["/assets/parameters-Pe2.js"] = []byte(strings.Replace(string(files["/assets/parameters-Pe1.js"]), "Boiler\\x20power", "Heat output", 1))
		files["/assets/index-N3wHash9.js"] = []byte(strings.Replace(string(idx), "parameters-Pe1.js", "parameters-Pe2.js", 1))
		files["/"] = []byte(strings.Replace(string(files["/"]), "index-Q1w2E3r4.js", "index-N3wHash9.js", 1))
	})
	c3, err := catalog.Load(ctx, f, mods, catalog.Options{Language: "en", KnownIndex: c1.IndexAsset()})
	if err != nil {
		t.Fatal(err)
	}
	if c3.IndexAsset() != "index-N3wHash9.js" || c3.Module("MOD-A").Lookup("P4", "v7").Name != "Heat output" || c3.Fingerprint() == c1.Fingerprint() {
		t.Fatalf("after redeploy: index %s, name %q", c3.IndexAsset(), c3.Module("MOD-A").Lookup("P4", "v7").Name)
	}
	// The HTML root is unreachable and the known index is stale: the load
	// fails with ErrNoIndex; the caller keeps its last good catalog.
	site.edit(func(files map[string][]byte) { delete(files, "/") })
	if _, err := catalog.Load(ctx, f, mods, catalog.Options{Language: "en", KnownIndex: c1.IndexAsset()}); err == nil {
		t.Fatal("a load without any index succeeded")
	}
}
