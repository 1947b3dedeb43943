package realtime

import (
	"context"
	"errors"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// deadline is a timer the loop points at a wall-clock instant after every
// step; pointing it at the instant it already waits for costs nothing.
type deadline struct {
	t        *time.Timer
	armedFor time.Time
}

func newDeadline() *deadline {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &deadline{t: t}
}

func (d *deadline) C() <-chan time.Time { return d.t.C }

// fired is called when C delivered: the timer waits for nothing now.
func (d *deadline) fired() { d.armedFor = time.Time{} }

// arm makes the timer fire at at (zero = never).
func (d *deadline) arm(at time.Time, now func() time.Time) {
	if at.Equal(d.armedFor) {
		return
	}
	d.armedFor = at
	d.t.Stop()
	if !at.IsZero() {
		d.t.Reset(max(0, at.Sub(now())))
	}
}

func (d *deadline) stop() { d.t.Stop() }

// scheduleRenewal sets when the access token is renewed: the client's
// refresh leeway before it expires, the moment the client itself would
// treat it as due. Nothing else may call the cloud for a long time (no
// module-list poll with --poll.interval=0, a healthy session makes no REST
// call), so without this the token would run out while everything looks
// fine. After an attempt the next one waits at least SupervisorInterval: a
// failing login, or a token that lives shorter than the leeway, is retried
// at that pace rather than in a loop.
func (g *Gateway) scheduleRenewal(attempted bool) {
	now := g.cfg.Now()
	tok, ok := g.client.Token()
	var at time.Time
	switch {
	case ok && !tok.ExpiresAt.IsZero():
		at = tok.ExpiresAt.Add(-g.client.Config().RefreshLeeway)
	case !ok && attempted:
		at = now // the renewal left no token: try again at the floor below
	}
	if attempted && !at.IsZero() {
		if floor := now.Add(g.cfg.SupervisorInterval); at.Before(floor) {
			at = floor
		}
	}
	g.renewAt = at
}

// renewToken renews the access token in a worker through the client's
// EnsureAuth: it logs in when the token is within the refresh leeway, and
// does nothing when another path renewed it meanwhile.
func (g *Gateway) renewToken(ctx context.Context) {
	g.renewAt = time.Time{}
	if g.renewing || g.life.Stopping {
		return
	}
	g.renewing = true
	go func() {
		err := g.client.EnsureAuth(ctx)
		g.post(func() {
			g.renewing = false
			switch {
			case err == nil:
				g.renewFails = 0
				if tok, ok := g.client.Token(); ok {
					g.log.Debug("access token current", "expires_at", tok.ExpiresAt)
				}
			case !g.life.Stopping:
				// The first failure of a run is a warning; the retries
				// after it (every SupervisorInterval) are not news.
				g.renewFails++
				lvl := g.log.Warn
				if g.renewFails > 1 || errors.Is(err, cloudclient.ErrNoCredentials) {
					lvl = g.log.Debug
				}
				lvl("access token renewal failed; retrying", "err", compactErr(err), "in", g.cfg.SupervisorInterval, "attempt", g.renewFails)
			}
			g.scheduleRenewal(true)
		})
	}()
}
