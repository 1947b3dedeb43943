package realtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
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
		g.sessionEnded(reason, detail)
		return true
	}
	if g.stopping {
		return false
	}
	if g.cfg.OnEvent != nil {
		g.cfg.OnEvent(ev.Kind)
	}
	now := g.cfg.Now()
	switch ev.Kind {
	case transport.EventParamsChange, transport.EventSnapshot:
		src := store.SourceLive
		if ev.Kind == transport.EventSnapshot {
			src = store.SourceSnapshot
		}
		return g.applyLive(ev, src, now)
	case transport.EventConnectionStatus:
		g.connectionStatus(ctx, ev, now)
	case transport.EventMemoryUpdated:
		devid, err := transport.DecodeDevid(ev.Payload)
		if err != nil || !g.isSubscribed(devid) {
			g.log.Debug("event 22 ignored", "devid", devid, "err", err)
			return false
		}
		g.log.Debug("module memory updated; priming it", "devid", devid)
		g.startPrime(ctx, []string{devid}, false, nil)
		return false
	case transport.EventAlarmsQuantity:
		if g.alarmsQuantity(ev.Payload) {
			// A count moved: read which alarms now rather than at the next poll.
			g.pollAlarms(ctx)
		}
	case transport.EventOverflow:
		g.overflowed += int64(ev.Dropped)
		g.log.Warn("realtime events were dropped on a full buffer; re-priming", "dropped", ev.Dropped)
		g.startPrime(ctx, g.subscribed, true, nil)
	case transport.EventDisconnect:
		g.sessionEnded(ev.Reason, ev.Detail)
	case transport.EventConnect, transport.EventOther:
		return false
	}
	return true
}

// applyLive stores a parameter delta or snapshot and, when it carried at
// least one value, marks live traffic: push health and the recovery ladder
// both see it.
func (g *Gateway) applyLive(ev transport.Event, src store.Source, now time.Time) bool {
	ups, err := cloudclient.DecodeParameters(ev.Payload)
	if err != nil {
		g.decodeErrors++
		g.log.Warn("undecodable parameter event", "event", ev.Name, "err", err)
		return false
	}
	ups = onlyModules(ups, g.subscribed)
	if len(ups) == 0 {
		return false
	}
	n := g.store.ApplyLive(ups, src, now)
	if g.cfg.OnLive != nil {
		g.cfg.OnLive(ups)
	}
	if n == 0 {
		return false
	}
	wasQuarantined := g.ladder.Quarantined(now)
	g.ladder = ladder.OnLiveUpdate(g.ladder)
	if wasQuarantined {
		g.log.Warn("live updates are back; recovery quarantine cleared")
	}
	res := g.push.LiveUpdate(now, g.session.Link())
	if res.Resumed {
		g.log.Warn("live parameter updates resumed", "after", res.ResumedAfter.Round(100*time.Millisecond))
	}
	return res.Changed || res.Resumed || wasQuarantined
}

func (g *Gateway) connectionStatus(ctx context.Context, ev transport.Event, now time.Time) {
	entries, err := transport.DecodeConnectionStatus(ev.Payload)
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
			gw := outage.Gateway(*e.Gateway)
			sev.Gateway = &gw
		}
		g.moduleChanges(ctx, g.modules.ObserveWS(sev, now), now)
	}
}

// alarmsQuantity applies {"alarmsQuantity":{"D1":5}} pushed by the cloud and
// reports whether a count changed.
func (g *Gateway) alarmsQuantity(payload json.RawMessage) bool {
	q, err := cloudclient.DecodeAlarmsQuantity(payload)
	if err != nil {
		g.log.Debug("alarms quantity event undecodable", "err", err)
		return false
	}
	return g.setAlarms(q)
}

// poll starts a module-list poll unless one is in flight (polls are
// serialised); its completion runs the ladder tick.
func (g *Gateway) poll(ctx context.Context) {
	if g.pollInFlight || g.stopping {
		return
	}
	g.pollInFlight = true
	g.pollAlarms(ctx)
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
		listing.Recognised = l.Recognised
		for _, m := range l.Modules {
			listing.Rows = append(listing.Rows, outage.Row{Devid: m.Devid, ConnectedAt: m.ConnectedAt, Gateway: outage.Gateway(m.Gateway)})
		}
	}
	res, cerr := g.modules.CompletePoll(gen, listing, now)
	if cerr != nil {
		g.log.Debug("module poll completion ignored", "err", cerr)
		return
	}
	if res.Failure {
		msg := "module list unusable; keeping the last known module states"
		attrs := []any{"streak", res.FailureStreak}
		if err != nil {
			attrs = append(attrs, "err", compactErr(err))
		}
		g.log.Log(ctx, res.LogLevel, msg, attrs...)
		return
	}
	if !res.Usable {
		return
	}
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
	if g.sess != nil {
		g.resubscribe(ctx, g.sess, false)
	}
}

// moduleChanges logs module flips and runs module-online recovery.
func (g *Gateway) moduleChanges(ctx context.Context, res outage.ModulesResult, now time.Time) {
	for _, c := range res.Changes {
		switch {
		case c.WentOffline:
			g.log.Warn("module offline", "devid", c.Devid, "source", c.Source)
		case c.CameOnline && c.RestoredAfter > 0:
			g.log.Warn("module back online", "devid", c.Devid, "after", c.RestoredAfter.Round(100*time.Millisecond), "reason", c.RestoredReason)
		case c.CameOnline:
			g.log.Info("module online", "devid", c.Devid)
		}
	}
	if len(res.CameOnline()) == 0 || g.stopping {
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
// binds again a live one the cloud did not bind.
func (g *Gateway) supervise(ctx context.Context) {
	if g.stopping {
		return
	}
	if g.sess != nil && !g.sess.Connected() {
		g.log.Warn("realtime session found dead without a disconnect; replacing it", "reason", transport.ReasonSupervisorStale)
		g.detach(transport.ReasonSupervisorStale, true)
		if ab, ok := g.tr.(interface{ Abandoned() int }); ok && ab.Abandoned() > 0 {
			g.replaceTransport()
		}
		g.scheduleReconnect()
		return
	}
	if g.sess == nil && !g.connecting && g.reconnectAt.IsZero() {
		g.connect(ctx)
	}
	g.rebindIfUnbound(ctx)
}

// evaluateHealth publishes a pending session outage once the hysteresis has
// elapsed and re-derives push health.
func (g *Gateway) evaluateHealth() {
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
