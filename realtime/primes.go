package realtime

import (
	"context"
	"slices"

	"github.com/bragerone/bragerone_exporter/realtime/store"
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
		if g.stopping {
			return // cancelled by the shutdown, not failed by the cloud
		}
		g.primeFailures[trigger]++
		g.log.Warn("prime failed", "trigger", trigger, "modules", len(modules), "err", compactErr(err))
		if trigger == PrimeMemoryUpdated {
			for _, d := range modules {
				if g.isSubscribed(d) {
					g.owedModules[d] = max(g.owedModules[d], mark)
				}
			}
		}
		return
	}
	for _, d := range modules {
		if owed, ok := g.owedModules[d]; ok && mark > owed {
			delete(g.owedModules, d)
		}
	}
	if g.primeOwed && mark > g.primeOwedMark && coversAll(modules, g.subscribed) {
		g.primeOwed = false
	}
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
	if g.owedInFlight || g.stopping {
		return
	}
	trigger, modules := PrimeTick, g.subscribed
	if !g.primeOwed {
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
