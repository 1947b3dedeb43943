package realtime

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/lifecycle"
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

// resubscribe binds session seq (modules/connect with its current namespace
// SID), emits the listen events and REST-primes, in a worker. force drops the
// de-duplication (module-online recovery wants a fresh bind). The machine
// counted it in Binding; resubscribed reports its end.
func (g *Gateway) resubscribe(ctx context.Context, s transport.Session, seq uint64, force bool) {
	modules := append([]string(nil), g.subscribed...)
	objectID := g.objectID
	mark := g.store.BeginPrime()
	go func() {
		r := g.bindAndPrime(ctx, s, modules, objectID, force, mark)
		g.post(func() { g.resubscribed(seq, modules, mark, r) })
	}()
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

// listen emits the subscription events of docs/spec.md W-3.2, W-8c: each event
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

// resubscribed runs on the loop after a bind + prime of session seq: the
// prime is counted, and the machine learns whether the session is bound
// and primed (a failure leaves the connect prime owed).
func (g *Gateway) resubscribed(seq uint64, modules []string, mark store.PrimeMark, r bindResult) {
	if r.primed || r.primeErr != nil {
		g.primeFinished(PrimeConnect, modules, mark, r.primeErr)
	}
	g.feed(g.runCtx, lifecycle.BindFinished{
		Session: seq, Mark: lifecycle.Mark(mark),
		Bound: r.bound, Primed: r.primed, Failed: r.err != nil,
	})
}
