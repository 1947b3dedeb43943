package realtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/lifecycle"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
	"github.com/bragerone/bragerone_exporter/wire"
)

// handleEvent processes one realtime event on the loop. It reports whether
// the published status may have changed. A bad payload is logged and counted;
// it never stops the events after it.
func (g *Gateway) handleEvent(ctx context.Context, ev transport.Event, ok bool) (dirty bool) {
	defer func() {
		// A handler that fails (a hook, a decoder bug) costs this event
		// only; the loop and every event after it go on.
		if r := recover(); r != nil {
			g.log.Error("realtime event handler failed; event skipped", "event", ev.Name, "kind", ev.Kind.String(), "panic", r)
			dirty = true
		}
	}()
	if !ok {
		// The stream closed without a disconnect event (teardown raced it).
		reason, detail := "", ""
		if g.sess != nil {
			reason, detail = g.sess.Reason()
		}
		g.sessionEnded(ctx, reason, detail)
		return true
	}
	if g.life.Stopping {
		return false
	}
	g.countEvent(ev.Kind)
	now := g.cfg.Now()
	g.recordEvent(ev, now)
	switch ev.Kind {
	case cloudapi.EventParamsChange, cloudapi.EventSnapshot:
		src := store.SourceLive
		if ev.Kind == cloudapi.EventSnapshot {
			src = store.SourceSnapshot
		}
		return g.applyLive(ev, src, now)
	case cloudapi.EventConnectionStatus:
		g.connectionStatus(ctx, ev, now)
	case cloudapi.EventMemoryUpdated:
		devid, err := wire.DecodeDevid(ev.Payload)
		if err != nil || !g.isSubscribed(devid) {
			g.log.Debug("event 22 ignored", "devid", devid, "err", err)
			return false
		}
		g.log.Debug("module memory updated; priming it", "devid", devid)
		g.primeModule(ctx, devid)
		return false
	case cloudapi.EventAlarmsQuantity:
		if g.alarmsQuantity(ev.Payload) {
			// A count moved: read which alarms now rather than at the next
			// poll, and the history, where one that came and went shows.
			g.alarmsChanged(ctx)
		}
	case cloudapi.EventOverflow:
		g.overflowed += int64(ev.Dropped)
		g.log.Warn("realtime events were dropped on a full buffer; re-priming", "dropped", ev.Dropped)
		g.startPrime(ctx, g.subscribed, PrimeOverflow, nil)
	case cloudapi.EventDisconnect:
		g.sessionEnded(ctx, ev.Reason, ev.Detail)
	case cloudapi.EventConnect, cloudapi.EventOther, cloudapi.EventConnectError:
		// A connect_error is counted; the disconnect that follows ends the session.
		return false
	}
	return true
}

// applyLive stores a parameter delta or snapshot and, when it carried at
// least one value, marks live traffic: push health and the recovery ladder
// both see it.
func (g *Gateway) applyLive(ev transport.Event, src store.Source, now time.Time) bool {
	ups, err := wire.DecodeParameters(ev.Payload)
	if err != nil {
		g.decodeErrors++
		g.log.Warn("undecodable parameter event", "event", ev.Name, "err", err)
		return false
	}
	ups = onlyModules(ups, g.subscribed)
	if len(ups) == 0 {
		return false
	}
	ups = g.capEvent(ev.Name, ups)
	g.client.ScrubParameters(ups)
	n := g.store.ApplyLive(ups, src, now)
	if g.cfg.OnLive != nil {
		g.cfg.OnLive(ups)
	}
	if n == 0 {
		return false
	}
	g.lastAny.Store(now.UnixNano())
	if src.IsLive() {
		g.lastLive = now
	}
	wasQuarantined := g.ladder.Quarantined(now)
	g.ladder = ladder.OnLiveUpdate(g.ladder)
	if wasQuarantined {
		g.log.Info("live updates are back; recovery quarantine cleared")
	}
	res := g.push.LiveUpdate(now, g.session.Link())
	if res.Resumed {
		g.log.Info("live parameter updates resumed", "after", res.ResumedAfter.Round(100*time.Millisecond))
	}
	return res.Changed || res.Resumed || wasQuarantined
}

// capEvent keeps at most the store's bound of keys per module of one event
// (the first ones, in the decoder's key order) before the event reaches the
// store: a real event carries a few keys, a snapshot under a thousand, so an
// event with more is a runaway push, and what it carries beyond the bound
// is counted as refused rather than allocated.
func (g *Gateway) capEvent(name string, ups []wire.ParamUpdate) []wire.ParamUpdate {
	limit := g.store.MaxKeysPerModule()
	if limit <= 0 || len(ups) <= limit {
		return ups
	}
	out := ups[:0]
	kept := map[string]int{}
	cut := map[string]int{}
	for _, u := range ups {
		if kept[u.Devid] >= limit {
			cut[u.Devid]++
			continue
		}
		kept[u.Devid]++
		out = append(out, u)
	}
	for d, n := range cut {
		g.store.CountRefused(d, n)
		g.log.Warn("realtime event carried more parameters than a module may hold; the rest were refused",
			"event", name, "devid", d, "kept", limit, "refused", n)
	}
	return out
}

func (g *Gateway) connectionStatus(ctx context.Context, ev transport.Event, now time.Time) {
	entries, err := wire.DecodeConnectionStatus(ev.Payload)
	if err != nil {
		g.decodeErrors++
		g.log.Warn("connection-status event partly undecodable", "err", err)
	}
	for _, e := range entries {
		sev := outage.StatusEvent{Devid: e.Devid}
		if e.ConnectedAt != nil {
			sev.HasConnectedAt, sev.ConnectedAt = true, *e.ConnectedAt
		}
		if e.Gateway != nil {
			// Pushed text, like a REST record, is scrubbed before it can
			// become a label or a page.
			gw := outage.Gateway(g.client.ScrubGateway(*e.Gateway))
			sev.Gateway = &gw
		}
		g.moduleChanges(ctx, g.modules.ObserveWS(sev, now), now)
	}
}

// alarmsQuantity applies {"alarmsQuantity":{"D1":5}} pushed by the cloud and
// reports whether a count changed.
func (g *Gateway) alarmsQuantity(payload json.RawMessage) bool {
	q, err := wire.DecodeAlarmsQuantity(payload)
	if err != nil {
		g.log.Debug("alarms quantity event undecodable", "err", err)
		return false
	}
	n := g.alarmPushes.Add(1)
	for d := range q {
		if g.isSubscribed(d) {
			g.alarmPushedAt[d] = n
		}
	}
	moved, learned := g.setAlarms(q)
	return moved || learned
}

// poll starts a module-list poll unless one is in flight (polls are
// serialised); its completion runs the ladder tick.
func (g *Gateway) poll(ctx context.Context) {
	if g.pollInFlight || g.life.Stopping {
		return
	}
	if g.client.Paused(g.cfg.Now()) {
		// The cloud throttles the account: no poll, no history read, no
		// ladder step until the pause ends (what is owed then, the
		// primes and binds, waits in the client and goes first).
		return
	}
	g.pollInFlight = true
	g.readListsDue(ctx)
	gen := g.modules.BeginPoll()
	objectID := g.objectID
	go func() {
		l, err := g.client.Modules(ctx, objectID)
		g.post(func() {
			g.pollInFlight = false
			g.applyListing(ctx, gen, l, err)
			g.ladderTick(ctx)
		})
	}()
}

// applyListing feeds a module-list result to the module machine and follows
// modules joining or leaving the account.
func (g *Gateway) applyListing(ctx context.Context, gen uint64, l *cloudclient.ModuleListing, err error) {
	now := g.cfg.Now()
	listing := outage.Listing{Err: err}
	if err == nil && l != nil {
		// A degraded row keeps the module's last known name and versions.
		merged := *l
		merged.Modules = make([]cloudclient.Module, len(l.Modules))
		for i, m := range l.Modules {
			merged.Modules[i] = m
			if last, ok := g.meta[m.Devid]; ok {
				merged.Modules[i] = keepKnown(last, m)
			}
		}
		l = &merged
		listing.Recognised = l.Recognised
		for _, m := range l.Modules {
			listing.Rows = append(listing.Rows, outage.Row{Devid: m.Devid, ConnectedAt: m.ConnectedAt, Gateway: outage.Gateway(m.Gateway)})
		}
	}
	if _, throttled := cloudclient.RateLimited(err, now); throttled {
		// A throttled poll observed nothing: no failure streak, no module
		// state, no ladder step.
		g.modules.AbandonPoll(gen)
		g.log.Debug("module poll throttled by the cloud; not counted", "err", compactErr(err))
		return
	}
	res, cerr := g.modules.CompletePoll(gen, listing, now)
	if cerr != nil {
		g.log.Debug("module poll completion ignored", "err", cerr)
		return
	}
	if res.Failure {
		msg := "module list unusable; keeping the last known module states"
		attrs := []any{"streak", res.FailureStreak}
		switch {
		case err != nil:
			attrs = append(attrs, "err", compactErr(err))
		case l == nil || !l.Recognised:
			attrs = append(attrs, "why", "unrecognised shape")
		case len(l.Modules) == 0:
			attrs = append(attrs, "why", "no modules")
		default:
			attrs = append(attrs, "why", "no watched module listed")
		}
		g.log.Log(ctx, res.LogLevel, msg, attrs...)
		return
	}
	if !res.Usable {
		return
	}
	g.listedAlarms(ctx, l)
	present := map[string]bool{}
	for _, m := range l.Modules {
		present[m.Devid] = true
		if g.isSubscribed(m.Devid) {
			g.meta[m.Devid] = m
		}
	}
	g.moduleChanges(ctx, res, now)
	if len(g.cfg.Modules) > 0 {
		return
	}
	// Follow the account: new modules are subscribed (and bound), modules
	// missing for ForgetMissingAfter are dropped.
	next := make([]string, 0, len(present))
	changed := false
	for d := range present {
		next = append(next, d)
		if !g.isSubscribed(d) {
			changed = true
			g.log.Info("module joined the account", "devid", d)
		}
		delete(g.missing, d)
	}
	for _, d := range g.subscribed {
		if present[d] {
			continue
		}
		since, ok := g.missing[d]
		if !ok {
			g.missing[d] = now
			since = now
		}
		if g.cfg.ForgetMissingAfter > 0 && now.Sub(since) >= g.cfg.ForgetMissingAfter {
			changed = true
			delete(g.missing, d)
			g.log.Info("module left the account; no longer exported", "devid", d, "missing_for", now.Sub(since).Round(time.Second))
			continue
		}
		next = append(next, d)
	}
	if !changed {
		return
	}
	g.setSubscribed(sortedUnique(next))
	g.feed(ctx, lifecycle.ModulesChanged{})
}

// moduleChanges logs module flips and runs module-online recovery.
func (g *Gateway) moduleChanges(ctx context.Context, res outage.ModulesResult, now time.Time) {
	for _, c := range res.Changes {
		switch {
		case c.WentOffline:
			g.log.Warn("module offline", "devid", c.Devid, "reason", c.Source)
		case c.CameOnline && c.RestoredAfter > 0:
			g.log.Info("module back online", "devid", c.Devid, "after", c.RestoredAfter.Round(100*time.Millisecond), "reason", c.RestoredReason)
		case c.CameOnline:
			g.log.Info("module online", "devid", c.Devid)
		}
	}
	if len(res.CameOnline()) == 0 || g.life.Stopping {
		return
	}
	st, d := g.cfg.Ladder.OnModuleOnline(g.ladder, g.ladderInput(now))
	g.ladder = st
	if step := d.Step(); step != "" {
		g.log.Warn("module came back online while live updates are silent; recovering now", "step", step, "age", d.Age.Round(time.Second))
		g.runRecovery(ctx, step, d.ForceLogin)
	}
}

// supervise catches a session whose transport died without a disconnect
// (an Engine.IO abort that skipped the callback), reconnects a lost one and
// binds again a live one the cloud did not bind (the lifecycle machine
// decides which).
func (g *Gateway) supervise(ctx context.Context) {
	if g.life.Stopping {
		return
	}
	if g.cfg.PollInterval == 0 {
		// No poll tick: owed primes are paid here instead.
		g.payOwedPrimes(ctx)
	}
	if g.renewAt.IsZero() && !g.renewing {
		// A token with an expiry may have replaced one without.
		g.scheduleRenewal(false)
	}
	tick := lifecycle.SupervisorTick{HaveModules: len(g.subscribed) > 0, Cancelled: ctx.Err() != nil}
	if g.sess != nil {
		tick.SilentlyDead = g.silentlyDead()
		tick.Bound = g.bind.isBound(bindKey(g.sess.NamespaceSID(), g.subscribed))
	}
	g.feed(ctx, tick)
}

// silentlyDead reports whether the current session is no longer connected
// although its end has not been reported (its Done is still open). A session
// whose end was reported is not silently dead: its disconnect event, with
// the real reason, is on its way through the event stream, and a supervisor
// tick can come before it.
func (g *Gateway) silentlyDead() bool {
	if g.sess.Connected() {
		return false
	}
	select {
	case <-g.sess.Done():
		return false
	default:
		return true
	}
}

// evaluateHealth replaces a session the supervisor found silently dead (if it
// still is, one health tick later: see lifecycle.SupervisorTick), publishes a
// pending session outage once the hysteresis has elapsed and re-derives push
// health.
func (g *Gateway) evaluateHealth(ctx context.Context) {
	if g.life.SilentSession != 0 {
		var tick lifecycle.HealthTick
		if g.sess != nil {
			tick.SilentlyDead = g.silentlyDead()
		}
		if ab, ok := g.tr.(interface{ Abandoned() int }); ok && ab.Abandoned() > 0 {
			tick.Abandoned = true
		}
		g.feed(ctx, tick)
	}
	now := g.cfg.Now()
	res := g.session.Tick(now)
	if res.WentDown {
		g.log.Warn("cloud session down", "reason", res.Reason, "since", res.DownSince)
	}
	g.evaluatePush(now)
}

func (g *Gateway) evaluatePush(now time.Time) {
	res := g.push.Evaluate(now, g.session.Link())
	if res.Changed {
		switch res.Status.State {
		case outage.PushUnhealthy:
			if res.Status.HasStaleFor {
				g.log.Warn("no live parameter update while the session is up", "for", res.Status.LiveStaleFor.Round(time.Second))
			}
		case outage.PushHealthy:
			g.log.Info("live push healthy")
		}
	}
}
