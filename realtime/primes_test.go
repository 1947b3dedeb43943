package realtime

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// A failed event-22 prime leaves its module owed; only a prime requested
// after the failed one pays the debt (one requested earlier may carry the
// module as it was before the change event 22 announced).
func TestOwedPrimePaidOnlyByALaterPrime(t *testing.T) {
	st := store.New()
	g := idleGateway(t, st, []string{"D1", "D2"}, nil)
	early := st.BeginPrime()
	failed := st.BeginPrime()
	later := st.BeginPrime()

	g.primeFinished(PrimeMemoryUpdated, []string{"D1"}, failed, errors.New("HTTP 502"))
	if _, owed := g.owedModules["D1"]; !owed || g.primeFailures[PrimeMemoryUpdated] != 1 {
		t.Fatalf("after the failure: owed %v, failures %v", g.owedModules, g.primeFailures)
	}
	g.primeFinished(PrimeOverflow, []string{"D1", "D2"}, early, nil)
	if _, owed := g.owedModules["D1"]; !owed {
		t.Fatal("a prime requested before the failed one paid the debt")
	}
	g.primeFinished(PrimeTick, []string{"D1", "D2"}, later, nil)
	if _, owed := g.owedModules["D1"]; owed {
		t.Fatal("a prime requested after the failed one did not pay the debt")
	}
	for _, tr := range PrimeTriggers() {
		if want := map[string]uint64{PrimeMemoryUpdated: 1}[tr]; g.primeFailures[tr] != want {
			t.Fatalf("failures = %v", g.primeFailures)
		}
	}
}

// The connect prime owed after a failed bind prime is paid by a full prime
// requested later, not by a prime of some modules or an earlier one.
func TestConnectPrimeOwedPaidByALaterFullPrime(t *testing.T) {
	st := store.New()
	g := idleGateway(t, st, []string{"D1", "D2"}, nil)
	early := st.BeginPrime()
	bind := st.BeginPrime()
	g.life.Binding++
	g.resubscribed(g.life.Session, []string{"D1", "D2"}, bind, bindResult{err: errors.New("HTTP 503"), primeErr: errors.New("HTTP 503")})
	if !g.life.PrimeOwed || g.primeFailures[PrimeConnect] != 1 {
		t.Fatalf("after the failed bind prime: owed %v, failures %v", g.life.PrimeOwed, g.primeFailures)
	}
	g.primeFinished(PrimeOverflow, []string{"D1", "D2"}, early, nil)
	g.primeFinished(PrimeMemoryUpdated, []string{"D1"}, st.BeginPrime(), nil)
	if !g.life.PrimeOwed {
		t.Fatal("paid by an earlier prime or by a prime of one module")
	}
	g.primeFinished(PrimeTick, []string{"D1", "D2"}, st.BeginPrime(), nil)
	if g.life.PrimeOwed {
		t.Fatal("a later full prime did not pay the connect prime")
	}
}

// A cloud outage fails a prime every tick: the first failure of a streak is
// a WARN, the rest DEBUG, and the first success says the streak ended.
func TestFailedPrimeStreakWarnsOnce(t *testing.T) {
	var buf bytes.Buffer
	st := store.New()
	g := idleGateway(t, st, []string{"D1"}, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	for range 3 {
		g.primeFinished(PrimeTick, []string{"D1"}, st.BeginPrime(), errors.New("HTTP 503"))
	}
	g.primeFinished(PrimeTick, []string{"D1"}, st.BeginPrime(), nil)
	g.primeFinished(PrimeTick, []string{"D1"}, st.BeginPrime(), errors.New("HTTP 502"))
	log := buf.String()
	if n := strings.Count(log, `level=WARN msg="prime failed"`); n != 2 {
		t.Errorf("%d WARN lines for two streaks, want 2:\n%s", n, log)
	}
	if n := strings.Count(log, `level=DEBUG msg="prime failed"`); n != 2 {
		t.Errorf("%d DEBUG lines for the two repeats, want 2:\n%s", n, log)
	}
	if !strings.Contains(log, `level=INFO msg="primes succeed again" trigger=tick failed_in_a_row=3`) {
		t.Errorf("the end of the streak is not logged:\n%s", log)
	}
	if g.primeFailures[PrimeTick] != 4 {
		t.Errorf("failures = %v, want every failure counted", g.primeFailures)
	}
}
