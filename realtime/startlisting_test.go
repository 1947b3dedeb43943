package realtime

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// startSequence records, in order, the module-list requests a gateway's
// client sends ("list") and the end of the gateway's start ("started", when
// it logs the modules it watches): what came first is causal, not timed.
type startSequence struct {
	next   http.RoundTripper
	mu     sync.Mutex
	events []string
}

func (s *startSequence) add(e string) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *startSequence) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

func (s *startSequence) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/v1/modules") {
		s.add("list")
	}
	return s.next.RoundTrip(r)
}

// startSequence is also the gateway's log handler.
func (s *startSequence) Enabled(context.Context, slog.Level) bool { return true }
func (s *startSequence) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "watching modules" {
		s.add("started")
	}
	return nil
}
func (s *startSequence) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *startSequence) WithGroup(string) slog.Handler      { return s }

// readListing reads the object's module list with a client of its own, as
// the fleet does before it starts a gateway.
func readListing(t *testing.T, sim *cloudsim.Cloud) *cloudclient.ModuleListing {
	t.Helper()
	c, err := cloudclient.New(cloudclient.Config{BaseURL: sim.URL(), AssetsURL: sim.URL(), Logger: testLogger(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword})})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Modules(context.Background(), sim.ObjectID())
	if err != nil || len(l.Modules) < 2 {
		t.Fatalf("reading the module list: %v %+v", err, l)
	}
	return l
}

// startWithListing starts a gateway on a fresh simulator, handed the list
// hand makes of a listing just read, and tuned by tune.
func startWithListing(t *testing.T, hand func(l *cloudclient.ModuleListing) *ListingRead, tune func(*Config)) (*harness, *startSequence) {
	t.Helper()
	sim := cloudsim.New(cloudsim.Options{Modules: 2, ParamsPerModule: 40, Seed: 7, Logger: testLogger()})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	seq := &startSequence{next: http.DefaultTransport}
	handed := hand(readListing(t, sim))
	h := startHarnessOn(t, sim, func(c *Config) {
		c.ObjectID, c.StartListing, c.Logger = sim.ObjectID(), handed, slog.New(seq)
		c.PollInterval = time.Hour // no poll during the test unless it says so
		if tune != nil {
			tune(c)
		}
	}, func(c *cloudclient.Config) { c.HTTPClient = &http.Client{Transport: seq} })
	return h, seq
}

func (h *harness) waitReady() {
	h.t.Helper()
	select {
	case <-h.gw.Ready():
	case err := <-h.runErr:
		h.runErr <- nil
		h.t.Fatalf("Run = %v, want a start", err)
	case <-time.After(10 * time.Second):
		h.t.Fatal("not ready")
	}
}

// h1Devid is the second simulated devid of the harness's seed.
var h1Devid = func() string {
	sim := cloudsim.New(cloudsim.Options{Modules: 2, ParamsPerModule: 40, Seed: 7})
	return sim.Devids()[1]
}()

// A module list handed in (read by the fleet moments before) is the
// start's own first read: the start sends no module-list request. One the
// start would not go on with, or trust no further than a read of its own,
// is set aside and the start reads the list itself.
func TestGatewayStartTakesAHandedListingAsItsFirstRead(t *testing.T) {
	fresh := func(l *cloudclient.ModuleListing) *ListingRead { return &ListingRead{Listing: l, ReadAt: time.Now()} }
	for _, tc := range []struct {
		name     string
		hand     func(l *cloudclient.ModuleListing) *ListingRead
		tune     func(*Config)
		wantRead bool // the start reads the list itself
	}{
		{name: "fresh", hand: fresh},
		{name: "fresh, narrowed", hand: fresh, tune: func(c *Config) { c.Modules = []string{h0Devid} }},
		{name: "the read failed", hand: func(*cloudclient.ModuleListing) *ListingRead { return &ListingRead{ReadAt: time.Now()} }, wantRead: true},
		{name: "read a poll interval ago", hand: func(l *cloudclient.ModuleListing) *ListingRead {
			return &ListingRead{Listing: l, ReadAt: time.Now().Add(-time.Hour)}
		}, wantRead: true},
		{name: "no poll would read it again", hand: fresh, tune: func(c *Config) { c.PollInterval = 0 }, wantRead: true},
		{name: "unrecognised shape", hand: func(l *cloudclient.ModuleListing) *ListingRead {
			l.Recognised = false
			return fresh(l)
		}, wantRead: true},
		{name: "no modules", hand: func(l *cloudclient.ModuleListing) *ListingRead {
			l.Modules = nil
			return fresh(l)
		}, wantRead: true},
		{name: "lacks a requested module", hand: func(l *cloudclient.ModuleListing) *ListingRead {
			l.Modules = slices.DeleteFunc(l.Modules, func(m cloudclient.Module) bool { return m.Devid != h0Devid })
			return fresh(l)
		}, tune: func(c *Config) { c.Modules = []string{h0Devid, h1Devid} }, wantRead: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, seq := startWithListing(t, tc.hand, tc.tune)
			h.waitReady()
			want := []string{"started"}
			if tc.wantRead {
				want = []string{"list", "started"}
			}
			if got := seq.seen(); !slices.Equal(got, want) {
				t.Errorf("module-list requests and start: %v, want %v", got, want)
			}
			// The first request the simulator served was the fleet's read.
			if n := h.sim.Requests(cloudapi.EndpointModules) - 1; n != len(want)-1 {
				t.Errorf("the simulator served %d module-list requests, want %d", n, len(want)-1)
			}
			wantSubscribed := h.sim.Devids()
			if tc.tune != nil {
				c := Config{}
				tc.tune(&c)
				if len(c.Modules) > 0 {
					wantSubscribed = c.Modules
				}
			}
			if got := h.gw.Status().Subscribed; !slices.Equal(got, slices.Sorted(slices.Values(wantSubscribed))) {
				t.Errorf("watching %v, want %v", got, wantSubscribed)
			}
		})
	}
}

// A handed-in list is read again when a read of the start's own would be:
// one poll interval after it was read, not one after the start.
func TestGatewayPollsAHandedListingAPollIntervalAfterItWasRead(t *testing.T) {
	frozen := time.Now()
	h, seq := startWithListing(t, func(l *cloudclient.ModuleListing) *ListingRead {
		return &ListingRead{Listing: l, ReadAt: frozen.Add(-time.Hour + 100*time.Millisecond)}
	}, func(c *Config) {
		// The clock stands still: the list is always 59m59.9s old to
		// the gateway, however long the start takes here.
		c.Now = func() time.Time { return frozen }
	})
	h.waitFor("a poll after the start", func(*Status) bool { return slices.Equal(seq.seen(), []string{"started", "list"}) })
}

// A list is handed in for one object: without the object it was read
// for, the configuration is refused.
func TestGatewayStartListingNeedsItsObject(t *testing.T) {
	_, err := New(Config{StartListing: &ListingRead{}})
	if err == nil || !strings.Contains(err.Error(), "StartListing needs the ObjectID") {
		t.Fatalf("New = %v, want the StartListing refused without an ObjectID", err)
	}
}
