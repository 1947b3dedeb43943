package realtime

import (
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// The renewal is due at the token's expiry minus the client's refresh
// leeway (when the client itself would log in again); after an attempt the
// next one waits at least the supervisor interval; a token that never
// expires needs none.
func TestRenewalScheduledAheadOfExpiry(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	g := idleGateway(t, store.New(), []string{"D1"}, func(c *Config) {
		c.Now = func() time.Time { return now }
		c.SupervisorInterval = 15 * time.Second
	})
	leeway := g.client.Config().RefreshLeeway
	if leeway <= 0 {
		t.Fatalf("client refresh leeway = %v", leeway)
	}

	g.scheduleRenewal(false)
	if !g.renewAt.IsZero() {
		t.Fatalf("renewal scheduled without a token: %v", g.renewAt)
	}
	g.client.SetToken(cloudclient.Token{AccessToken: "a", ExpiresAt: now.Add(time.Hour)})
	g.scheduleRenewal(false)
	if want := now.Add(time.Hour - leeway); !g.renewAt.Equal(want) {
		t.Fatalf("renewal at %v, want %v (expiry minus the leeway)", g.renewAt, want)
	}

	// A renewal that left a token already inside the leeway (or failed):
	// the next attempt waits the supervisor interval, never a busy loop.
	g.client.SetToken(cloudclient.Token{AccessToken: "b", ExpiresAt: now.Add(leeway / 2)})
	g.scheduleRenewal(true)
	if want := now.Add(15 * time.Second); !g.renewAt.Equal(want) {
		t.Fatalf("renewal after an attempt at %v, want %v", g.renewAt, want)
	}
	g.client.SetToken(cloudclient.Token{})
	g.scheduleRenewal(true)
	if want := now.Add(15 * time.Second); !g.renewAt.Equal(want) {
		t.Fatalf("renewal after an attempt that left no token at %v, want %v", g.renewAt, want)
	}

	g.client.SetToken(cloudclient.Token{AccessToken: "c"})
	g.scheduleRenewal(true)
	if !g.renewAt.IsZero() {
		t.Fatalf("a token that never expires scheduled a renewal at %v", g.renewAt)
	}
}
