package catalog

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// memFetcher serves an asset set from memory; paths are the origin paths
// ("/", "/assets/x.js"). "/" serves index.html.
type memFetcher struct {
	mu    sync.Mutex
	files map[string][]byte
	fails map[string]error
	log   []string
}

type notFound struct{ path string }

func (e notFound) Error() string { return "404 " + e.path }

func (m *memFetcher) Asset(_ context.Context, p string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, p)
	if err := m.fails[p]; err != nil {
		return nil, err
	}
	if p == "/" {
		p = "/index.html"
	}
	b, ok := m.files[p]
	if !ok {
		return nil, notFound{p}
	}
	return b, nil
}

func (m *memFetcher) fetched(p string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, x := range m.log {
		if x == p {
			n++
		}
	}
	return n
}

func (m *memFetcher) set(p, body string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[p] = []byte(body)
}

func (m *memFetcher) fail(p string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fails == nil {
		m.fails = map[string]error{}
	}
	m.fails[p] = err
}

// siteFetcher serves testdata/site.
func siteFetcher(t testing.TB) *memFetcher {
	t.Helper()
	m := &memFetcher{files: map[string][]byte{}}
	root := filepath.Join("testdata", "site")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		m.files["/"+filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// values is a store.Reader over "P4.v7"-keyed values.
func values(kv map[string]float64) store.Reader {
	return func(pool, key string) (float64, bool) {
		v, ok := kv[pool+"."+key]
		return v, ok
	}
}

// The fixture's three modules.
var (
	modA = ModuleSpec{DevID: "MOD-A", DeviceMenu: 7, Permissions: []string{"DISPLAY_MENU_DHW", "DISPLAY_PARAMETER_LEVEL_1"}}
	modB = ModuleSpec{DevID: "MOD-B", DeviceMenu: 153, Permissions: []string{"DISPLAY_PARAMETER_LEVEL_1", "DISPLAY_PARAMETER_LEVEL_MAX", "DISPLAY_MENU_DHW"}}
	modC = ModuleSpec{DevID: "MOD-C", DeviceMenu: 5}
)

func loadSite(t testing.TB, opt Options, mods ...ModuleSpec) (*Catalog, *memFetcher) {
	t.Helper()
	f := siteFetcher(t)
	if len(mods) == 0 {
		mods = []ModuleSpec{modA, modB, modC}
	}
	if opt.Language == "" {
		opt.Language = "en"
	}
	c, err := Load(context.Background(), f, mods, opt)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c, f
}

func describe(m *Module) string {
	var b strings.Builder
	for _, p := range m.Params() {
		fmt.Fprintf(&b, "%s %s %q unit=%q menu=%q enum=%v min=%v max=%v w=%v parts=%v\n", p.Symbol, p.Address, p.Name, p.Unit,
			strings.Join(p.Menu, "/"), p.Enum, floatText(p.Min), floatText(p.Max), p.Writable, p.Parts)
	}
	return b.String()
}
