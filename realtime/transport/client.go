package transport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bragerone/bragerone_exporter/outage"
)

// Client is the Transport implemented on the zishang520 Socket.IO client.
type Client struct {
	cfg     Config
	log     *slog.Logger
	origin  string // scheme://host[:port] handed to the library
	path    string // Socket.IO path including any BaseURL path prefix
	slot    chan struct{}
	closed  chan struct{}
	closeMu sync.Once
	seq     atomic.Uint64

	hookDial bool         // dials go through session.dialNet (tests turn it off)
	probes   *http.Client // the link probes (see linkWatch)

	stuck   atomic.Int64 // library calls given up on that have not returned yet
	dropped atomic.Int64 // events dropped on full buffers, all sessions

	mu   sync.Mutex
	live map[*session]struct{}
}

var _ Transport = (*Client)(nil)

// New validates cfg, applies defaults and returns a Client. It does not dial.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil {
		return nil, fmt.Errorf("realtime transport: bad base URL: %w", err)
	}
	switch u.Scheme {
	case "http", "https":
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return nil, fmt.Errorf("realtime transport: base URL %q: scheme must be http or https", cfg.BaseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("realtime transport: base URL %q has no host", cfg.BaseURL)
	}
	if cfg.Path == "" {
		cfg.Path = DefaultPath
	}
	if !strings.HasPrefix(cfg.Path, "/") {
		cfg.Path = "/" + cfg.Path
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if !strings.HasPrefix(cfg.Namespace, "/") {
		cfg.Namespace = "/" + cfg.Namespace
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = DefaultProbeInterval
	}
	if cfg.TeardownTimeout <= 0 {
		cfg.TeardownTimeout = DefaultTeardownTimeout
	}
	if cfg.MaxAbandoned <= 0 {
		cfg.MaxAbandoned = DefaultMaxAbandoned
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = DefaultEventBuffer
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Redact == nil {
		cfg.Redact = func(s string) string { return s }
	}
	return &Client{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "realtime.transport"),
		origin:   u.Scheme + "://" + u.Host,
		path:     strings.TrimRight(u.Path, "/") + cfg.Path,
		slot:     make(chan struct{}, 1),
		closed:   make(chan struct{}),
		live:     map[*session]struct{}{},
		hookDial: true,
		probes:   newProbeClient(),
	}, nil
}

// Abandoned returns how many library calls (stuck dials, hung teardowns) were
// given up on and are still held inside the library.
func (c *Client) Abandoned() int { return int(c.stuck.Load()) }

// Dropped returns how many events were dropped on full session buffers.
func (c *Client) Dropped() int64 { return c.dropped.Load() }

// Connect implements Transport.
func (c *Client) Connect(ctx context.Context) (Session, error) {
	// One Connect at a time: the library is not safe for concurrent connects.
	select {
	case c.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, &ConnectError{Phase: PhaseDial, Reason: outage.ReasonConnectError, Err: ctx.Err()}
	case <-c.closed:
		return nil, ErrClosed
	}
	defer func() { <-c.slot }()
	select {
	case <-c.closed:
		return nil, ErrClosed
	default:
	}

	if n := c.stuck.Load(); n >= int64(c.cfg.MaxAbandoned) {
		return nil, &ConnectError{Phase: PhaseLimit, Reason: outage.ReasonConnectError,
			Err: fmt.Errorf("%w (%d, limit %d)", ErrTooManyAbandoned, n, c.cfg.MaxAbandoned)}
	}

	cctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
	defer cancel()

	header, err := c.header(cctx)
	if err != nil {
		return nil, &ConnectError{Phase: PhaseHeaders, Reason: outage.ReasonConnectError, Err: err}
	}

	watch := newLinkWatch(cctx, c.probes, c.origin+"/")
	defer watch.stop()
	// A probe must have waited three later round trips and two probe
	// intervals more: a probe held up a while by a busy machine or a
	// jittery link is not a dead link.
	margin := 2 * c.cfg.ProbeInterval
	for {
		s := newSession(c, c.seq.Add(1))
		go s.run(cctx, header)
		joined, stale, err := c.await(ctx, cctx, s, watch, margin)
		if !stale {
			return joined, err
		}
		phase := s.abandon()
		s.log.Info("realtime connect attempt replaced: it waited in a dead link that has come back", "phase", phase,
			"silent_for", time.Since(s.heardAt()).Round(time.Millisecond))
		watch.reset()
		margin *= 2 // should the link only have been jittery, wait longer next time
	}
}

// await waits for one attempt: joined, failed, out of time, or stale (sent
// into a dead link that has come back, see attemptStale), probing the link
// while the attempt hears nothing.
func (c *Client) await(ctx, cctx context.Context, s *session, watch *linkWatch, margin time.Duration) (joined Session, stale bool, err error) {
	every := c.cfg.ProbeInterval
	tick := time.NewTicker(max(every/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case err := <-s.result:
			if err != nil {
				return nil, false, err
			}
			c.mu.Lock()
			c.live[s] = struct{}{}
			c.mu.Unlock()
			s.log.Debug("realtime session joined", "namespace_sid", s.nsSID, "engine_sid", s.engSID)
			return s, false, nil
		case <-cctx.Done():
			phase := s.abandon()
			cause := ctx.Err()
			if cause == nil {
				cause = fmt.Errorf("%w after %s", ErrTimeout, c.cfg.ConnectTimeout)
			}
			s.log.Warn("realtime connect abandoned", "phase", phase, "err", cause, "abandoned", c.Abandoned())
			return nil, false, &ConnectError{Phase: phase, Reason: outage.ReasonConnectError, Err: fmt.Errorf("%s: %w", phaseWaitText(phase, c.cfg.Namespace), cause)}
		case <-c.closed:
			s.abandon()
			return nil, false, ErrClosed
		case <-tick.C:
		case <-watch.wake:
		}
		now := time.Now()
		heard := s.heardAt()
		if attemptStale(heard, watch.records(), margin, now) {
			return nil, true, nil
		}
		if last := watch.lastSent(); now.Sub(heard) >= every && now.Sub(last) >= every {
			watch.send(now)
		}
	}
}

func phaseWaitText(phase, ns string) string {
	switch phase {
	case PhaseDial:
		return "WebSocket upgrade not answered"
	case PhaseHandshake:
		return "Engine.IO OPEN not received"
	case PhaseNamespace:
		return "namespace " + ns + " join not acknowledged"
	default:
		return phase
	}
}

func (c *Client) header(ctx context.Context) (map[string][]string, error) {
	if c.cfg.Header == nil {
		return nil, nil
	}
	h, err := c.cfg.Header(ctx)
	if err != nil {
		return nil, fmt.Errorf("handshake headers: %w", err)
	}
	return h.Clone(), nil
}

// Close implements Transport.
func (c *Client) Close() error {
	c.closeMu.Do(func() { close(c.closed) })
	c.mu.Lock()
	sessions := make([]*session, 0, len(c.live))
	for s := range c.live {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(sessions))
	for i, s := range sessions {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.TeardownTimeout)
			defer cancel()
			errs[i] = s.Disconnect(ctx)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (c *Client) forget(s *session) {
	c.mu.Lock()
	delete(c.live, s)
	c.mu.Unlock()
}

// bounded runs fn (a call into the library) and waits for it at most
// timeout or until ctx ends. A call still running then is abandoned: it is
// counted in Abandoned until it returns.
func (c *Client) bounded(ctx context.Context, timeout time.Duration, what string, fn func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	c.stuck.Add(1)
	c.log.Warn("realtime "+what+" abandoned while still running in the Socket.IO library", "after", timeout, "abandoned", c.Abandoned())
	go func() {
		<-done
		c.stuck.Add(-1)
	}()
	return false
}
