package realtime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// binder serialises resubscribes and de-duplicates them per namespace SID
// (and module set): a connect callback and a recovery step running at once
// bind once. It is the only state shared between workers.
type binder struct {
	mu      sync.Mutex // held for a whole resubscribe
	boundMu sync.Mutex // guards bound alone, so the loop never waits on a bind
	bound   string     // namespace SID + module set currently bound ("" = none)
}

func (b *binder) isBound(key string) bool {
	b.boundMu.Lock()
	defer b.boundMu.Unlock()
	return key != "" && b.bound == key
}

func (b *binder) setBound(key string) {
	b.boundMu.Lock()
	b.bound = key
	b.boundMu.Unlock()
}

// forget is called on every disconnect: the next resubscribe posts again.
func (b *binder) forget() { b.setBound("") }

func bindKey(sid string, modules []string) string {
	return sid + "|" + strings.Join(modules, ",")
}

// connect starts a Socket.IO connect in a worker unless one is running or a
// session is up.
func (g *Gateway) connect(ctx context.Context) {
	if g.connecting || g.sess != nil || g.stopping || ctx.Err() != nil {
		return
	}
	if g.tr == nil {
		tr, err := g.cfg.NewTransport()
		if err != nil {
			g.log.Error("cannot build the realtime transport", "err", err)
			g.scheduleReconnect()
			return
		}
		g.tr = tr
	}
	g.connecting = true
	g.reconnectAt = time.Time{}
	tr := g.tr
	go func() {
		s, err := tr.Connect(ctx)
		g.post(func() { g.connected(ctx, tr, s, err) })
	}()
}

// connected handles the end of a connect attempt on the loop.
func (g *Gateway) connected(ctx context.Context, tr transport.Transport, s transport.Session, err error) {
	g.connecting = false
	if err == nil && (g.stopping || tr != g.tr || ctx.Err() != nil) {
		// The transport was replaced (or we are stopping) while dialling.
		go s.Disconnect(context.Background())
		return
	}
	if err != nil {
		reason := outage.ReasonConnectError
		var ce *transport.ConnectError
		if errors.As(err, &ce) && ce.Reason != "" {
			reason = ce.Reason
		}
		g.reconnectFails++
		g.session.ConnectFailed(reason)
		lvl := g.log.Warn
		if g.reconnectFails > 1 {
			lvl = g.log.Debug
		}
		lvl("realtime connect failed", "reason", reason, "err", compactErr(err), "attempt", g.reconnectFails)
		if g.recoveryConnect {
			g.finishRecovery(ladder.Result{OK: false})
		}
		if errors.Is(err, transport.ErrTooManyAbandoned) {
			// Too many stuck library calls on this client: replace it.
			g.replaceTransport()
		}
		if isHandshakeAuthRejection(err) {
			// The cloud refused our token (revoked server-side, or
			// expired early): the token still looks valid here, so
			// without a fresh login every attempt would be refused.
			g.reloginAfterRefusedConnect(ctx)
		}
		// While the session is down the store is kept current over REST.
		if !g.primedOnce() {
			g.startPrime(ctx, g.subscribed, PrimeConnect, nil)
		}
		g.scheduleReconnect()
		return
	}
	g.reconnectFails = 0
	g.sessSeq++
	g.sess, g.sessEvents = s, s.Events()
	now := g.cfg.Now()
	res := g.session.Connected(now)
	if res.Restored {
		g.log.Warn("cloud session restored", "after", res.RestoredAfter.Round(100*time.Millisecond), "reason", res.RestoredReason)
	} else if res.Blink {
		g.log.Info("cloud session blink absorbed", "namespace_sid", s.NamespaceSID())
	} else {
		g.log.Info("cloud session up", "namespace_sid", s.NamespaceSID())
	}
	g.evaluatePush(now)
	g.resubscribe(ctx, s, false)
}

// resubscribe binds the session (modules/connect with its current namespace
// SID), emits the listen events and REST-primes, in a worker. force drops the
// de-duplication (module-online recovery wants a fresh bind).
func (g *Gateway) resubscribe(ctx context.Context, s transport.Session, force bool) {
	modules := append([]string(nil), g.subscribed...)
	objectID := g.objectID
	seq := g.sessSeq
	mark := g.store.BeginPrime()
	g.binding++
	go func() {
		r := g.bindAndPrime(ctx, s, modules, objectID, force, mark)
		g.post(func() { g.resubscribed(seq, modules, mark, r) })
	}()
}

// rebindIfUnbound retries the bind of a live session the cloud has not bound
// (modules/connect failed, or answered 201 accepted-not-bound): without a
// binding no live update arrives, and waiting for the zombie ladder would
// leave the store fed by REST alone for minutes. Each retry also primes.
func (g *Gateway) rebindIfUnbound(ctx context.Context) {
	s := g.sess
	if s == nil || g.binding > 0 || g.recovery != "" || g.stopping || len(g.subscribed) == 0 {
		return
	}
	if g.bind.isBound(bindKey(s.NamespaceSID(), g.subscribed)) {
		return
	}
	g.log.Info("realtime session not bound to the modules; binding again", "namespace_sid", s.NamespaceSID())
	g.resubscribe(ctx, s, false)
}

// bindResult is what one bind + prime achieved.
type bindResult struct {
	bound, primed bool
	err           error // the bind's error, else the prime's
	primeErr      error // the prime's error when one was attempted
}

// bindAndPrime runs on a worker. Serialised by the binder: a second caller for
// the same SID finds it bound and returns without posting or priming.
func (g *Gateway) bindAndPrime(ctx context.Context, s transport.Session, modules []string, objectID int, force bool, mark store.PrimeMark) bindResult {
	g.bind.mu.Lock()
	defer g.bind.mu.Unlock()
	sid := s.NamespaceSID()
	key := bindKey(sid, modules)
	if !force && g.bind.isBound(key) {
		return bindResult{bound: true}
	}
	select {
	case <-s.Done():
		return bindResult{err: errSessionGone}
	default:
	}
	bound, err := g.client.ModulesConnect(ctx, cloudclient.BindRequest{
		NamespaceSID: sid, EngineSID: s.EngineSID(), Modules: modules, GroupID: objectID,
	})
	if err != nil {
		g.log.Warn("modules/connect failed", "err", compactErr(err))
	} else if !bound {
		g.log.Warn("modules/connect accepted no binding; retrying on the next supervisor tick", "namespace_sid", sid)
	} else {
		g.listen(s, modules, objectID)
		g.bind.setBound(key)
		g.log.Debug("session bound", "namespace_sid", sid, "modules", modules)
	}
	// Prime in both cases: there is no snapshot on connect. A failure is
	// logged and counted on the loop.
	n, perr := g.primeNow(ctx, modules, mark)
	if perr == nil {
		g.log.Debug("primed", "values", n)
	}
	if err == nil && perr != nil {
		err = perr
	}
	return bindResult{bound: bound, primed: perr == nil, err: err, primeErr: perr}
}

var errSessionGone = errors.New("session ended before it was bound")

// listen emits the subscription events of cloud-wire-facts §3.2: each event
// with {"modules":…} and with {"devids":…}, group_id an int. A failed emit is
// logged and the others still go out.
func (g *Gateway) listen(s transport.Session, modules []string, objectID int) {
	for _, ev := range []string{
		"app:modules:parameters:listen",
		"app:modules:activity:quantity:listen",
		"app:modules:alarms:quantity:listen",
	} {
		for _, key := range []string{"modules", "devids"} {
			body := map[string]any{key: modules, "group_id": objectID}
			if err := s.Emit(ev, body); err != nil {
				g.log.Debug("listen emit failed", "event", ev, "err", err)
			}
		}
	}
}

// resubscribed runs on the loop after a bind + prime.
func (g *Gateway) resubscribed(seq uint64, modules []string, mark store.PrimeMark, r bindResult) {
	g.binding--
	bound, primed, err := r.bound, r.primed, r.err
	if primed || r.primeErr != nil {
		g.primeFinished(PrimeConnect, modules, mark, r.primeErr)
	}
	if primed {
		g.primeOwed = false
	} else if seq == g.sessSeq && err != nil {
		// No snapshot after this connect: the next tick primes, whatever
		// the ladder says (live traffic alone would never fill the store).
		g.primeOwed, g.primeOwedMark = true, mark
	}
	if g.recoveryConnect && seq == g.sessSeq {
		g.finishRecovery(ladder.Result{OK: bound})
	}
}

// startPrime REST-primes modules in a worker, with the prime backoff. Its
// outcome is counted under trigger on the loop (see primeFinished); done,
// when set, receives it there too.
func (g *Gateway) startPrime(ctx context.Context, modules []string, trigger string, done func(error)) {
	if len(modules) == 0 {
		if done != nil {
			done(nil)
		}
		return
	}
	modules = append([]string(nil), modules...)
	mark := g.store.BeginPrime()
	go func() {
		_, err := g.primeNow(ctx, modules, mark)
		g.post(func() {
			g.primeFinished(trigger, modules, mark, err)
			if done != nil {
				done(err)
			}
		})
	}()
}

// primeNow fetches and stores a snapshot (and the alarm counts, best effort),
// retrying with the prime backoff. Safe on any goroutine: the store is, and
// the alarm counts are posted.
func (g *Gateway) primeNow(ctx context.Context, modules []string, mark store.PrimeMark) (int, error) {
	alarmsDone := make(chan struct{})
	go func() {
		defer close(alarmsDone)
		q, err := g.client.AlarmQuantity(ctx, modules)
		if err != nil {
			g.log.Debug("alarm quantity failed", "err", compactErr(err))
			return
		}
		g.post(func() { g.setAlarms(q) })
	}()
	ups, err := g.client.PrimeWithRetry(ctx, modules)
	<-alarmsDone
	if err != nil {
		return 0, err
	}
	ups = onlyModules(ups, modules)
	n := g.store.ApplyPrime(mark, ups, g.cfg.Now())
	g.readyMu.Do(func() { close(g.ready) })
	return n, nil
}

func (g *Gateway) primedOnce() bool {
	select {
	case <-g.ready:
		return true
	default:
		return false
	}
}

// setAlarms stores alarm counts of watched modules and reports whether one
// changed.
func (g *Gateway) setAlarms(q map[string]int) bool {
	changed := false
	for d, n := range q {
		if g.isSubscribed(d) {
			if prev, ok := g.alarms[d]; !ok || prev != n {
				changed = true
			}
			g.alarms[d] = n
		}
	}
	return changed
}

// onlyModules keeps the updates of the given (sorted) devids: the cloud must
// not be able to grow the store with modules we do not watch.
func onlyModules(ups []cloudclient.ParamUpdate, modules []string) []cloudclient.ParamUpdate {
	out := ups[:0]
	for _, u := range ups {
		if containsSorted(modules, u.Devid) {
			out = append(out, u)
		}
	}
	return out
}

func containsSorted(sorted []string, s string) bool {
	lo, hi := 0, len(sorted)
	for lo < hi {
		m := (lo + hi) / 2
		if sorted[m] < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(sorted) && sorted[lo] == s
}

// sessionEnded handles the end of the current session (a disconnect event,
// or its event stream closing).
func (g *Gateway) sessionEnded(reason, detail string) {
	if g.sess == nil {
		return
	}
	now := g.cfg.Now()
	g.sess, g.sessEvents = nil, nil
	g.bind.forget()
	if reason == "" {
		reason = outage.ReasonDisconnect
	}
	res := g.session.Disconnected(now, reason)
	if res.WentDown {
		g.log.Warn("cloud session down", "reason", reason, "detail", detail)
	} else if res.Pending {
		g.log.Info("cloud session lost; reconnecting inside the hysteresis", "reason", reason, "detail", detail)
	}
	g.evaluatePush(now)
	if g.recoveryConnect {
		// The step's own teardown; its result comes with the reconnect.
		return
	}
	g.scheduleReconnect()
}

// isHandshakeAuthRejection reports whether a connect failed because the cloud
// refused the token: the namespace join answered "Unauthorized" (the cloud's
// CONNECT_ERROR), or the upgrade was answered 401/403.
func isHandshakeAuthRejection(err error) bool {
	var ce *transport.ConnectError
	if !errors.As(err, &ce) || ce.Phase == transport.PhaseHeaders || ce.Phase == transport.PhaseLimit {
		return false
	}
	text := strings.ToLower(err.Error())
	for _, s := range []string{"unauthorized", "forbidden", "401", "403"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// reloginAfterRefusedConnect forces a fresh login in a worker, at most one at
// a time; the next connect's handshake waits for it through the client.
func (g *Gateway) reloginAfterRefusedConnect(ctx context.Context) {
	if g.relogging {
		return
	}
	g.relogging = true
	g.log.Warn("the cloud refused the session's token; logging in afresh before the next connect")
	go func() {
		err := g.client.ForceRelogin(ctx)
		g.post(func() {
			g.relogging = false
			if err != nil && !errors.Is(err, cloudclient.ErrNoCredentials) {
				g.log.Warn("fresh login after a refused connect failed", "err", compactErr(err))
			}
		})
	}()
}

// scheduleReconnect arms the next connect: at once after a lost session,
// then with a doubling backoff capped at the supervisor interval.
func (g *Gateway) scheduleReconnect() {
	if g.stopping {
		return
	}
	d := time.Duration(0)
	if g.reconnectFails > 0 {
		d = g.cfg.ReconnectBackoff << min(g.reconnectFails-1, 16)
		d = min(d, g.cfg.SupervisorInterval)
	}
	g.reconnectAt = g.cfg.Now().Add(d)
}

// detach takes the current session away from the loop and tears it down in
// the background, bounded; reason is what the session machine records.
func (g *Gateway) detach(reason string, abort bool) {
	s := g.sess
	if s == nil {
		return
	}
	now := g.cfg.Now()
	g.sess, g.sessEvents = nil, nil
	g.bind.forget()
	var res outage.SessionResult
	if abort {
		res = g.session.Abort(now, reason)
	} else {
		res = g.session.Disconnected(now, reason)
	}
	if res.WentDown {
		g.log.Warn("cloud session down", "reason", reason)
	}
	g.evaluatePush(now)
	timeout := g.cfg.TeardownTimeout
	log := g.log
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := s.Disconnect(ctx); err != nil {
			log.Debug("session teardown", "err", err)
		}
	}()
}

// replaceTransport closes the transport in the background and builds a new
// one on the next connect.
func (g *Gateway) replaceTransport() {
	if tr := g.tr; tr != nil {
		g.tr = nil
		go closeBounded(tr, g.cfg.TeardownTimeout, g.log)
	}
}

// compactErr keeps logs short: an API error prints as its type and status,
// never its (possibly HTML) body.
func compactErr(err error) string {
	var apiErr *cloudclient.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Error()
	}
	return err.Error()
}
