package realtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/lifecycle"
)

// ladderInput is what the recovery ladder sees now.
func (g *Gateway) ladderInput(now time.Time) ladder.Input {
	anyT, live := g.lastUpdates()
	in := ladder.Input{
		Now:                  now,
		SessionUp:            g.life.SessionUp,
		AllSubscribedOffline: g.modules.AllOffline(),
		InFlight:             g.life.Step != "",
	}
	// Silence while the cloud throttled the account is the throttle's,
	// not a zombie's: it does not count.
	if !live.IsZero() {
		in.AnyLiveSeen, in.LiveAge = true, now.Sub(live)-g.client.PausedDuring(live, now)
	}
	if !anyT.IsZero() {
		in.AnyUpdateSeen, in.OverallAge = true, now.Sub(anyT)-g.client.PausedDuring(anyT, now)
	}
	return in
}

// troubleSince is when the silence the ladder answers began: a recovery
// step's fresh login must be newer than this (for the episode's first
// step) or than the object's previous step.
func (g *Gateway) troubleSince(in ladder.Input) time.Time {
	switch {
	case !g.stepLoginAt.IsZero():
		return g.stepLoginAt
	case in.AnyLiveSeen:
		return in.Now.Add(-in.LiveAge)
	case in.AnyUpdateSeen:
		return in.Now.Add(-in.OverallAge)
	}
	return time.Time{}
}

// ladderTick runs once per poll interval, after the module-list poll: while
// the session is down it REST-primes; while it is up but silent it climbs the
// recovery ladder (docs/spec.md I-3.4a to I-3.4e).
func (g *Gateway) ladderTick(ctx context.Context) {
	if g.life.Stopping {
		return
	}
	now := g.cfg.Now()
	if g.client.Paused(now) {
		// No ladder step and no cooldown spent while the cloud throttles
		// the account; the tick after the pause decides.
		return
	}
	in := g.ladderInput(now)
	if in.AnyLiveSeen && in.LiveAge < g.cfg.Ladder.StaleAfter {
		g.stepLoginAt = time.Time{} // no trouble: the next episode starts afresh
	}
	st, d := g.cfg.Ladder.OnTick(g.ladder, in)
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

// runRecovery asks the lifecycle machine to run one ladder step: a forced
// fresh login first when asked (without credentials the current token is
// kept), then the step's session work (see package lifecycle).
func (g *Gateway) runRecovery(ctx context.Context, step ladder.Action, forceLogin bool) {
	if forceLogin {
		now := g.cfg.Now()
		since := g.troubleSince(g.ladderInput(now))
		if step == ladder.Resubscribe {
			// A module back online asks for a login of its own: the
			// trouble it answers began when the module returned.
			since = now
		}
		g.stepLoginSince, g.stepLoginAt = since, now
	}
	g.feed(ctx, lifecycle.StepChosen{Step: step, ForceLogin: forceLogin})
}

// startStep runs the step's fresh login in a worker and hands the outcome
// back to the machine. The login is the account's (cloudclient.FreshLogin):
// a token issued since this object's previous step, or since its trouble
// began, is fresh whoever asked for it, so objects stepping together share
// one login. A step that meets the account's login backoff is aborted at
// once with the shared failure and arms its cooldown, as any aborted step
// does; one that meets the throttle pause waits for it.
func (g *Gateway) startStep(ctx context.Context, step ladder.Action, forceLogin bool) {
	since := g.stepLoginSince
	go func() {
		aborted := false
		var issued time.Time
		if forceLogin {
			var err error
			issued, err = g.client.FreshToken(ctx, since)
			switch {
			case errors.Is(err, cloudclient.ErrNoCredentials):
				g.log.Info("no credentials for a fresh login; keeping the current token", "step", step)
			case err != nil:
				g.log.Warn("fresh login before recovery failed; step aborted", "step", step, "err", compactErr(err))
				aborted = true
			}
		}
		g.post(func() {
			if !issued.IsZero() {
				// The object's next step needs a token newer than this one.
				g.stepLoginAt = issued.Add(time.Nanosecond)
			}
			g.feed(ctx, lifecycle.StepReady{Step: step, Aborted: aborted, Cancelled: ctx.Err() != nil})
		})
	}()
}

// finishRecovery reports the step's result to the ladder (counters, cooldown,
// quarantine).
func (g *Gateway) finishRecovery(step ladder.Action, r ladder.Result) {
	now := g.cfg.Now()
	st, d := g.cfg.Ladder.OnActionResult(g.ladder, step, r, now)
	g.ladder = st
	g.recordTransition("ladder_result", "step", fmt.Sprint(step), "ok", strconv.FormatBool(r.OK),
		"aborted", strconv.FormatBool(r.Aborted), "cooldown", d.CooldownFor.String(), "quarantine", d.QuarantineFor.String())
	attrs := []any{"step", step, "ok", r.OK, "aborted", r.Aborted}
	if d.CooldownFor > 0 {
		attrs = append(attrs, "cooldown", d.CooldownFor)
	}
	if d.QuarantineFor > 0 {
		g.log.Warn("realtime recovery exhausted; REST-only quarantine (primes continue)", "for", d.QuarantineFor)
	}
	g.log.Info("recovery step finished", attrs...)
}
