package realtime

import (
	"context"
	"errors"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
)

// ladderInput is what the recovery ladder sees now.
func (g *Gateway) ladderInput(now time.Time) ladder.Input {
	anyT, live := g.store.LastUpdate()
	in := ladder.Input{
		Now:                  now,
		SessionUp:            g.sess != nil,
		AllSubscribedOffline: g.modules.AllOffline(),
		InFlight:             g.recovery != "",
	}
	if !live.IsZero() {
		in.AnyLiveSeen, in.LiveAge = true, now.Sub(live)
	}
	if !anyT.IsZero() {
		in.AnyUpdateSeen, in.OverallAge = true, now.Sub(anyT)
	}
	return in
}

// ladderTick runs once per poll interval, after the module-list poll: while
// the session is down it REST-primes; while it is up but silent it climbs the
// recovery ladder (cloud-interface.md, "Zombie recovery ladder").
func (g *Gateway) ladderTick(ctx context.Context) {
	if g.stopping {
		return
	}
	now := g.cfg.Now()
	st, d := g.cfg.Ladder.OnTick(g.ladder, g.ladderInput(now))
	g.ladder = st
	g.evaluatePush(now)
	if d.Zombie {
		g.log.Warn("no live parameter update while the session is up", "for", d.Age.Round(time.Second),
			"zombie_streak", d.PrimeStreak, "skipped", string(d.Skipped))
	}
	if step := d.Step(); step != "" {
		g.runRecovery(ctx, step, d.ForceLogin)
	}
	switch {
	case d.Has(ladder.ZombiePrime):
		g.startPrime(ctx, g.subscribed, PrimeTick, func(err error) {
			st, _ := g.cfg.Ladder.OnActionResult(g.ladder, ladder.ZombiePrime, ladder.Result{OK: err == nil}, g.cfg.Now())
			g.ladder = st
		})
	case d.ShouldPrime():
		g.startPrime(ctx, g.subscribed, PrimeTick, nil)
	default:
		// A full prime (above) pays whatever is owed when it succeeds.
		g.payOwedPrimes(ctx)
	}
}

// runRecovery runs one ladder step: a forced fresh login first when asked
// (without credentials the current token is kept), then the step on the loop.
func (g *Gateway) runRecovery(ctx context.Context, step ladder.Action, forceLogin bool) {
	if g.recovery != "" || g.stopping {
		return
	}
	g.recovery = step
	go func() {
		aborted := false
		if forceLogin {
			err := g.client.ForceRelogin(ctx)
			switch {
			case errors.Is(err, cloudclient.ErrNoCredentials):
				g.log.Info("no credentials for a fresh login; keeping the current token", "step", step)
			case err != nil:
				g.log.Warn("fresh login before recovery failed; step aborted", "step", step, "err", compactErr(err))
				aborted = true
			}
		}
		g.post(func() { g.executeStep(ctx, step, aborted) })
	}()
}

// executeStep performs the step's session work. Each step ends in
// finishRecovery: at once when it cannot run, otherwise when the new session
// has been bound (or the connect failed).
func (g *Gateway) executeStep(ctx context.Context, step ladder.Action, aborted bool) {
	if aborted {
		g.finishRecovery(ladder.Result{Aborted: true})
		return
	}
	if g.stopping {
		g.recovery = ""
		return
	}
	g.log.Warn("recovery step", "step", step)
	g.recoveryConnect = true
	switch step {
	case ladder.HardRestart:
		// Reconnect on the same client: new Engine.IO and namespace SIDs,
		// then modules/connect with the new SID, listen, prime.
		g.detach(outage.ReasonForceReconnect, false)
	case ladder.Recycle:
		// Replace the Socket.IO client (transport recycle).
		g.detach(outage.ReasonHardReset, false)
		g.replaceTransport()
	case ladder.Rebuild:
		// Rebuild the realtime manager: a new client as for a recycle, and
		// every piece of binding state forgotten.
		g.detach(outage.ReasonHardReset, false)
		g.replaceTransport()
		g.bind.forget()
		g.reconnectFails = 0
	case ladder.Resubscribe:
		// Module-online recovery out of cooldown or quarantine: bind the
		// current session afresh and prime.
		if g.sess == nil {
			g.finishRecovery(ladder.Result{OK: false})
			return
		}
		g.resubscribe(ctx, g.sess, true)
		return
	default:
		g.recoveryConnect = false
		g.recovery = ""
		return
	}
	g.reconnectFails = 0
	g.reconnectAt = time.Time{}
	g.connect(ctx)
}

// finishRecovery reports the step's result to the ladder (counters, cooldown,
// quarantine).
func (g *Gateway) finishRecovery(r ladder.Result) {
	step := g.recovery
	g.recovery, g.recoveryConnect = "", false
	if step == "" {
		return
	}
	now := g.cfg.Now()
	st, d := g.cfg.Ladder.OnActionResult(g.ladder, step, r, now)
	g.ladder = st
	attrs := []any{"step", step, "ok", r.OK, "aborted", r.Aborted}
	if d.CooldownFor > 0 {
		attrs = append(attrs, "cooldown", d.CooldownFor)
	}
	if d.QuarantineFor > 0 {
		g.log.Warn("realtime recovery exhausted; REST-only quarantine (primes continue)", "for", d.QuarantineFor)
	}
	g.log.Info("recovery step finished", attrs...)
}
