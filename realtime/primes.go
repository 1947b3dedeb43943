package realtime

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/bragerone/bragerone_exporter/realtime/lifecycle"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// Prime triggers: why a REST prime was made. They label the failed-prime
// counts of Status.PrimeFailures.
const (
	// PrimeConnect: the prime that follows a (re)connect and its bind, or
	// one made because the session cannot connect at start.
	PrimeConnect = "connect"
	// PrimeMemoryUpdated: event 22 said a module's memory changed, or such
	// a prime is being paid after it failed.
	PrimeMemoryUpdated = "memory_updated"
	// PrimeOverflow: realtime events were dropped on a full buffer.
	PrimeOverflow = "overflow"
	// PrimeTick: the poll tick's prime (session down, zombie, or the
	// connect prime owed).
	PrimeTick = "tick"
)

// PrimeTriggers lists every trigger.
func PrimeTriggers() []string {
	return []string{PrimeConnect, PrimeMemoryUpdated, PrimeOverflow, PrimeTick}
}

// primeFinished runs on the loop when a prime of modules requested at mark
// ended. A failure is counted and logged, and a failed event-22 prime leaves
// its modules owed. A success pays what was owed before it was requested: a
// prime requested earlier may predate the change the debt is about.
func (g *Gateway) primeFinished(trigger string, modules []string, mark store.PrimeMark, err error) {
	if err != nil {
		if g.life.Stopping {
			return // cancelled by the shutdown, not failed by the cloud
		}
		g.primeFailures[trigger]++
		// The first failure of a streak is a WARN; the rest of it (a
		// cloud outage fails a prime every tick) go to DEBUG, and the
		// counter keeps the count.
		level := slog.LevelWarn
		if g.primeStreak > 0 {
			level = slog.LevelDebug
		}
		g.primeStreak++
		g.log.Log(context.Background(), level, "prime failed", "trigger", trigger, "modules", len(modules), "failed_in_a_row", g.primeStreak, "err", compactErr(err))
		if trigger == PrimeMemoryUpdated {
			for _, d := range modules {
				if g.isSubscribed(d) {
					g.owedModules[d] = max(g.owedModules[d], mark)
				}
			}
		}
		return
	}
	if g.primeStreak > 0 {
		g.log.Info("primes succeed again", "trigger", trigger, "failed_in_a_row", g.primeStreak)
		g.primeStreak = 0
	}
	for _, d := range modules {
		if owed, ok := g.owedModules[d]; ok && mark > owed {
			delete(g.owedModules, d)
		}
	}
	g.feed(g.runCtx, lifecycle.PrimeFinished{Mark: lifecycle.Mark(mark), OK: true, CoversAll: coversAll(modules, g.subscribed)})
}

// coversAll reports whether every devid of want is in have.
func coversAll(have, want []string) bool {
	for _, d := range want {
		if !slices.Contains(have, d) {
			return false
		}
	}
	return true
}

// primeModule primes one module after event 22. When the prime fails even
// after its retries, the module is owed a prime (see primeFinished): the
// next tick pays it, so a silent change the event announced is never lost
// to one bad answer.
func (g *Gateway) primeModule(ctx context.Context, devid string) {
	g.startPrime(ctx, []string{devid}, PrimeMemoryUpdated, nil)
}

// payOwedPrimes primes what earlier primes failed to deliver: the whole
// account when the connect prime is owed, else the modules whose event-22
// prime failed. One such prime runs at a time.
func (g *Gateway) payOwedPrimes(ctx context.Context) {
	if g.owedInFlight || g.life.Stopping {
		return
	}
	trigger, modules := PrimeTick, g.subscribed
	if !g.life.PrimeOwed {
		modules = nil
		for _, d := range g.subscribed {
			if _, owed := g.owedModules[d]; owed {
				modules = append(modules, d)
			}
		}
		trigger = PrimeMemoryUpdated
	}
	if len(modules) == 0 {
		return
	}
	g.owedInFlight = true
	g.startPrime(ctx, modules, trigger, func(error) { g.owedInFlight = false })
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
		pushes := g.alarmPushes.Load()
		q, err := g.client.AlarmQuantity(ctx, modules)
		if err != nil {
			g.log.Debug("alarm quantity failed", "err", compactErr(err))
			return
		}
		g.post(func() {
			// A count pushed while the question was out is newer than
			// its answer.
			for d := range q {
				if g.alarmPushedAt[d] > pushes {
					delete(q, d)
				}
			}
			// A count that moved since the last one known (the push that
			// said so was lost: a dropped session, a zombie) reads the
			// alarm lists now, as the push would have.
			if moved, _ := g.setAlarms(q); moved {
				g.alarmsChanged(ctx)
			}
		})
	}()
	// The answer is stored module by module as it is decoded (each is its
	// module's whole truth), so a prime of a large account is never held
	// decoded whole.
	var now time.Time
	n := 0
	err := g.client.PrimeEachWithRetry(ctx, modules, func(ups []wire.ParamUpdate) {
		if now.IsZero() {
			now = g.cfg.Now()
		}
		n += g.store.ApplyPrime(mark, onlyModules(ups, modules), now)
	})
	<-alarmsDone
	if err != nil {
		return 0, err
	}
	if n > 0 {
		g.lastAny.Store(now.UnixNano())
	}
	g.readyMu.Do(func() { close(g.ready) })
	g.settle()
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
// moved from the count last known, and whether one was not known before.
func (g *Gateway) setAlarms(q map[string]int) (moved, learned bool) {
	for d, n := range q {
		if g.isSubscribed(d) {
			prev, ok := g.alarms[d]
			moved = moved || ok && prev != n
			learned = learned || !ok
			g.alarms[d] = n
		}
	}
	return moved, learned
}

// onlyModules keeps the updates of the given (sorted) devids: the cloud must
// not be able to grow the store with modules we do not watch.
func onlyModules(ups []wire.ParamUpdate, modules []string) []wire.ParamUpdate {
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
