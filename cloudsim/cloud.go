package cloudsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	sio "github.com/zishang520/socket.io/servers/socket/v3"
	"github.com/zishang520/socket.io/v3/pkg/utils"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// Defaults of Options.
const (
	DefaultEmail           = "demo@example.com"
	DefaultPassword        = "demo-password"
	DefaultModules         = 3
	DefaultObjects         = 1
	DefaultParamsPerModule = 800
	DefaultTokenTTL        = time.Hour
	DefaultDriftInterval   = 2 * time.Second
	// DefaultSeed is the seed of the simulate command and serve --simulate
	// (Options.Seed 0 is a seed like any other, not "default").
	DefaultSeed = 1
	// DemoObjects is the object count of the simulate command and serve
	// --simulate: "Home" with two of the three default modules and
	// "Cottage" with the third.
	DemoObjects = 2
)

// Options configure a simulated cloud. Zero values take the defaults above.
type Options struct {
	Email, Password string // default "demo@example.com" / "demo-password"
	Modules         int    // default 3, in all objects together
	// Objects is how many objects (installations) the account has, default
	// 1 and at most Modules (more is taken as Modules). The modules are
	// split over them in devid order, in contiguous runs, the first objects
	// taking the remainder: 3 modules over 2 objects are "Home" (the first
	// two) and "Cottage". The first object's id is the one a one-object
	// world has (ObjectID); the names after "Cottage" and the other ids
	// follow from Seed.
	Objects         int
	ParamsPerModule int   // default 800 (pools P4-P6, v/s/u/n/x channels)
	Seed            int64 // same seed, same devids, names and parameters
	// TokenTTL is the access-token lifetime; default 1h. A negative value
	// issues tokens without expiresAt (never expiring).
	TokenTTL time.Duration
	// DriftInterval is the period of automatic parameter drift; 0 means
	// none (tests call Drift). The simulate command uses
	// DefaultDriftInterval.
	DriftInterval time.Duration
	Latency       time.Duration // added to every REST answer; default 0
	// RevokeAllSessions makes POST /v1/auth/revoke end every token of the
	// user, not only the one it is called with, as some clouds do; the
	// fault revoke_all_sessions does it for some revokes only.
	RevokeAllSessions bool
	// AllowRemoteControl lets non-loopback clients use /control/.
	AllowRemoteControl bool
	// PingInterval and PingTimeout of the Engine.IO server; 0 keeps the
	// library defaults (25s, 20s).
	PingInterval, PingTimeout time.Duration
	// ConnectTimeout is how long the server keeps an Engine.IO session that
	// never joins a namespace; 0 keeps the library default (45s).
	ConnectTimeout time.Duration
	Logger         *slog.Logger
	Now            func() time.Time // default time.Now
	// Replay, when set, plays a recorded cloud back (see Replay): the
	// cloud answers from the recording, not from its simulated modules.
	Replay *Replay
	// Record, when set, receives the cloud's own record of its traffic:
	// every API exchange and every event pushed (one record for each
	// session it reached), and each session a transport fault ended, as
	// a capture would hold them; see NewReplay. Called on the serving
	// goroutines, one at a time per request.
	Record func(traffic.Record)
}

// Cloud is one simulated cloud. All methods are safe for concurrent use.
type Cloud struct {
	opts   Options
	log    *slog.Logger
	now    func() time.Time
	router *http.ServeMux

	mu        sync.Mutex
	modules   []*module
	byDevid   map[string]*module
	objects   []*object // in module order; the first is ObjectID's
	byObject  map[int]*object
	user      userRecord
	planted   *Planted // personal data and echoes planted by a test (plant.go)
	tokens    map[string]*token
	faults    []*activeFault
	nextFault int
	count     Counters            // since New or ResetCounters
	sessions  map[string]*session // by namespace SID
	order     []string            // namespace SIDs in connect order
	rng       *rand.Rand
	released  chan struct{}      // closed and replaced whenever faults change (wakes stalled handshakes)
	assets    *webapp.Deployment // the web app deployment served; nil = the first
	replay    *Replay            // Options.Replay

	// holdTimers, when set, receives the library timers of each closed
	// session instead of their release (tests show the leak the release
	// prevents).
	holdTimers atomic.Pointer[func([]*utils.Timer)]

	io      *sio.Server
	nsp     sio.Namespace
	ioH     http.Handler
	conns   *connTracker
	srv     *http.Server
	ln      net.Listener
	url     string
	closing chan struct{}
	closeMu sync.Once
	wg      sync.WaitGroup
}

// New builds a cloud with its modules. It serves nothing until Start, or
// until Handler is mounted on a server of the caller's.
func New(opts Options) *Cloud {
	if opts.Email == "" {
		opts.Email = DefaultEmail
	}
	if opts.Password == "" {
		opts.Password = DefaultPassword
	}
	if opts.Modules <= 0 {
		opts.Modules = DefaultModules
	}
	if opts.Objects <= 0 {
		opts.Objects = DefaultObjects
	}
	opts.Objects = min(opts.Objects, opts.Modules)
	if opts.ParamsPerModule <= 0 {
		opts.ParamsPerModule = DefaultParamsPerModule
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = DefaultTokenTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Cloud{
		opts:     opts,
		log:      opts.Logger,
		now:      opts.Now,
		byDevid:  map[string]*module{},
		byObject: map[int]*object{},
		tokens:   map[string]*token{},
		sessions: map[string]*session{},
		rng:      rand.New(rand.NewPCG(uint64(opts.Seed), uint64(opts.Seed)^0x9e3779b97f4a7c15)),
		released: make(chan struct{}),
		closing:  make(chan struct{}),
		conns:    newConnTracker(),
		replay:   opts.Replay,
	}
	c.count = newCounters(c.now())
	c.buildWorld()
	c.setupRealtime()
	c.router = c.routes()
	return c
}

// Handler serves the whole cloud: /v1/..., /socket.io/, /control/..., /assets/.
// Faults that drop raw TCP connections (abort_transport) need Start, which
// owns the listener.
func (c *Cloud) Handler() http.Handler { return c.router }

// Start listens on addr (e.g. "127.0.0.1:0") and serves in the background.
func (c *Cloud) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cloudsim: listen %s: %w", addr, err)
	}
	c.mu.Lock()
	if c.srv != nil {
		c.mu.Unlock()
		_ = ln.Close()
		return errors.New("cloudsim: already started")
	}
	c.ln = c.conns.wrap(ln)
	c.url = "http://" + ln.Addr().String()
	c.srv = &http.Server{Handler: c.router, ReadHeaderTimeout: 10 * time.Second}
	srv, tl := c.srv, c.ln
	c.mu.Unlock()

	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := srv.Serve(tl); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Error("cloudsim: serve", "err", err)
		}
	}()
	if c.opts.DriftInterval > 0 {
		c.wg.Add(1)
		go c.driftLoop(c.opts.DriftInterval)
	}
	if c.replay != nil {
		if c.replay.startNow {
			c.mu.Lock()
			c.replay.startLocked(c.now())
			c.mu.Unlock()
		}
		c.wg.Add(1)
		go c.replayLoop()
	}
	return nil
}

// URL is the base of REST, Socket.IO and assets, e.g. "http://127.0.0.1:PORT".
// Empty before Start.
func (c *Cloud) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.url
}

// Close stops serving, drops every connection (websockets included) and
// releases stalled requests. It is safe to call more than once.
func (c *Cloud) Close() error {
	c.closeMu.Do(func() {
		close(c.closing) // wakes stalled handshakes and delayed answers
		c.io.Close(nil)
		c.mu.Lock()
		srv := c.srv
		c.mu.Unlock()
		if srv != nil {
			// Shutdown does not wait for hijacked (websocket) connections;
			// those, and anything still busy after the grace period, are
			// dropped by closeAll.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = srv.Shutdown(ctx)
			cancel()
			c.conns.closeAll()
		}
		c.wg.Wait()
	})
	return nil
}

func (c *Cloud) driftLoop(every time.Duration) {
	defer c.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.closing:
			return
		case <-t.C:
			c.Drift()
		}
	}
}

// sleep waits d, or less if the request or the cloud ends first.
func (c *Cloud) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-c.closing:
		return false
	}
}
