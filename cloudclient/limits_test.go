package cloudclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

func TestMaxInFlight(t *testing.T) {
	for _, limit := range []int{0, 2} {
		want := limit
		if want == 0 {
			want = cloudclient.DefaultMaxInFlight
		}
		fc := newFakeCloud(t)
		var cur, peak atomic.Int32
		gate := make(chan struct{})
		fc.handle("GET /v1/user", func(w http.ResponseWriter, r *http.Request) {
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-gate
			cur.Add(-1)
			io.WriteString(w, `{"id":1}`)
		})
		c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.MaxInFlight = limit })
		ctx := ctxT(t)
		if err := c.EnsureAuth(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := c.User(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		waitFor(t, "requests to fill the limit", func() bool { return cur.Load() == int32(want) })
		close(gate)
		wg.Wait()
		if peak.Load() != int32(want) {
			t.Fatalf("MaxInFlight %d: peak in flight at the server %d, want %d", limit, peak.Load(), want)
		}
	}
}

func TestInFlightWaitHonoursContext(t *testing.T) {
	fc := newFakeCloud(t)
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	fc.handle("GET /v1/user", func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-gate
		io.WriteString(w, `{"id":1}`)
	})
	t.Cleanup(func() { close(gate) })
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.MaxInFlight = 1 })
	if err := c.EnsureAuth(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = c.User(context.Background()) }()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.User(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestBodySizeBound(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/user", 200, `{"user":{"id":1,"name":"`+strings.Repeat("n", 600)+`"}}`)
	fc.handleJSON("GET /v1/user/permissions", 200, `["A"]`)
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.MaxBodyBytes = 512 })
	if _, err := c.User(ctxT(t)); !errors.Is(err, cloudclient.ErrBodyTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if p, err := c.Permissions(ctxT(t)); err != nil || len(p) != 1 {
		t.Fatalf("a small body after a large one: %v %v", p, err)
	}
}

func TestRequestTimeout(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handle("GET /v1/user", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	var mu sync.Mutex
	var codes []int
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
		cfg.Timeout = 50 * time.Millisecond
		cfg.Observer = func(e string, code int, _ time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if e == "GET /v1/user" {
				codes = append(codes, code)
			}
		}
	})
	_, err := c.User(ctxT(t))
	if !cloudclient.IsExpectedUpstream(err) {
		t.Fatalf("timeout not expected-upstream: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(codes, []int{0}) {
		t.Fatalf("observer codes %v, want [0]", codes)
	}
}

func TestObserverTemplates(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("GET /v1/objects/5", 200, `{"object":{"id":5},"status":"OK"}`)
	fc.handleJSON("GET /v1/objects/5/permissions", 200, `[]`)
	fc.handleJSON("GET /v1/modules/ABC/card", 200, `{"id":1}`)
	fc.handleJSON("GET /v1/modules", 503, `{}`)
	fc.handleJSON("POST /v1/modules/parameters", 200, `{}`)
	type obs struct {
		e    string
		code int
	}
	var mu sync.Mutex
	var got []obs
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
		cfg.Observer = func(e string, code int, d time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			if d < 0 {
				t.Errorf("negative duration")
			}
			got = append(got, obs{e, code})
		}
	})
	ctx := ctxT(t)
	_, _ = c.Object(ctx, 5)
	_, _ = c.ObjectPermissions(ctx, 5)
	_, _ = c.ModuleCard(ctx, "ABC")
	_, _ = c.Modules(ctx, 5)
	_, _ = c.Prime(ctx, []string{"ABC"})
	fc.srv.Close()
	_, _ = c.SystemVersion(ctx)
	want := []obs{
		{"POST /v1/auth/user", 200}, {"GET /v1/objects/{id}", 200}, {"GET /v1/objects/{id}/permissions", 200},
		{"GET /v1/modules/{code}/card", 200}, {"GET /v1/modules", 503}, {"POST /v1/modules/parameters", 200},
		{"GET /v1/system/version", 0},
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("observed\n %v\nwant %v", got, want)
	}
}

func TestAssets(t *testing.T) {
	fc := newFakeCloud(t)
	var mu sync.Mutex
	script := []func(w http.ResponseWriter, r *http.Request){}
	fc.handle("GET /one/assets/index-abc.js", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		step := script[0]
		script = script[1:]
		mu.Unlock()
		step(w, r)
	})
	full := func(body string) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Last-Modified", "Wed, 01 Jan 2026 00:00:00 GMT")
			io.WriteString(w, body)
		}
	}
	status := func(st int) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(st) }
	}
	setScript := func(s ...func(w http.ResponseWriter, r *http.Request)) {
		mu.Lock()
		script = s
		mu.Unlock()
	}
	c, sl := newClient(t, fc)
	ctx := ctxT(t)

	setScript(full("A1"))
	if b, err := c.Asset(ctx, "/assets/index-abc.js"); err != nil || string(b) != "A1" {
		t.Fatalf("first fetch %q %v", b, err)
	}
	first := fc.seenFor("GET /one/assets/index-abc.js")[0].Header
	if first.Get("If-None-Match") != "" || first.Get("Authorization") != "" {
		t.Fatalf("first fetch headers %v", first)
	}

	setScript(status(304))
	if b, err := c.Asset(ctx, "assets/index-abc.js"); err != nil || string(b) != "A1" {
		t.Fatalf("304 with cache %q %v", b, err)
	}
	h := fc.seenFor("GET /one/assets/index-abc.js")[1].Header
	if h.Get("If-None-Match") != `"v1"` || h.Get("If-Modified-Since") != "Wed, 01 Jan 2026 00:00:00 GMT" {
		t.Fatalf("conditional headers %v", h)
	}

	setScript(status(503), status(502), full("A2"))
	if b, err := c.Asset(ctx, "/assets/index-abc.js"); err != nil || string(b) != "A2" {
		t.Fatalf("retry %q %v", b, err)
	}
	if got := sl.got(); !reflect.DeepEqual(got, []time.Duration{200 * time.Millisecond, 600 * time.Millisecond}) {
		t.Fatalf("asset retry sleeps %v", got)
	}

	setScript(status(429), status(500), status(504))
	var ae *cloudclient.APIError
	if _, err := c.Asset(ctx, "/assets/index-abc.js"); !errors.As(err, &ae) || ae.Status != 504 {
		t.Fatalf("three failures: %v", err)
	}
	before := len(fc.seenFor("GET /one/assets/index-abc.js"))
	setScript(status(404))
	if _, err := c.Asset(ctx, "/assets/index-abc.js"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Fatalf("404: %v", err)
	}
	if n := len(fc.seenFor("GET /one/assets/index-abc.js")) - before; n != 1 {
		t.Fatalf("404 was retried (%d requests)", n)
	}
}

func TestAsset304WithoutCachedBodyRefetches(t *testing.T) {
	fc := newFakeCloud(t)
	var n atomic.Int32
	fc.handle("GET /one/x.js", func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.WriteHeader(304) // a proxy answering 304 to a request we never made conditional
		default:
			if r.Header.Get("If-None-Match") != "" || r.Header.Get("If-Modified-Since") != "" {
				w.WriteHeader(400)
				return
			}
			io.WriteString(w, "fresh")
		}
	})
	c, _ := newClient(t, fc)
	b, err := c.Asset(ctxT(t), "/x.js")
	if err != nil || string(b) != "fresh" || n.Load() != 2 {
		t.Fatalf("%q %v after %d requests", b, err, n.Load())
	}
}

func TestAssetTransportErrorRetried(t *testing.T) {
	fc := newFakeCloud(t)
	var n atomic.Int32
	fc.handle("GET /one/y.js", func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) < 3 {
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, "ok")
	})
	c, sl := newClient(t, fc)
	b, err := c.Asset(ctxT(t), "/y.js")
	if err != nil || string(b) != "ok" || len(sl.got()) != 2 {
		t.Fatalf("%q %v sleeps %v", b, err, sl.got())
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := cloudclient.New(cloudclient.Config{BaseURL: "https://io.brager.pl/"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config()
	checks := []struct {
		name      string
		got, want any
	}{
		{"BaseURL", cfg.BaseURL, "https://io.brager.pl"},
		{"AssetsURL", cfg.AssetsURL, "https://io.brager.pl"},
		{"Container", cfg.Container, "BragerOne"},
		{"Timeout", cfg.Timeout, 8 * time.Second},
		{"MaxInFlight", cfg.MaxInFlight, 4},
		{"RefreshLeeway", cfg.RefreshLeeway, 90 * time.Second},
		{"PrimeBackoff", cfg.PrimeBackoff, []time.Duration{200 * time.Millisecond, 500 * time.Millisecond, 800 * time.Millisecond}},
		{"WriteRate", cfg.WriteRate, 1.0},
		{"WriteBurst", cfg.WriteBurst, 3},
		{"MaxBodyBytes", cfg.MaxBodyBytes, int64(32 << 20)},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}
