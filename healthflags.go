package main

import (
	"log/slog"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// healthFlags are the knobs of the gateway's state machines and recovery
// ladder; every default is the spec's.
type healthFlags struct {
	PollInterval        time.Duration `name:"poll.interval" default:"60s" help:"Module-list poll and recovery tick (0 = no poll)." group:"Health"`
	SessionHysteresis   time.Duration `name:"session.down-hysteresis" default:"15s" help:"A disconnect shorter than this is a blink, not an outage (0 = none)." group:"Health"`
	SupervisorInterval  time.Duration `name:"session.supervisor-interval" default:"15s" help:"How often a dead session is looked for and a lost one reconnected." group:"Health"`
	ConnectTimeout      time.Duration `name:"session.connect-timeout" default:"20s" help:"Bound of one Socket.IO connect (dial, handshake, namespace join)." group:"Health"`
	StaleAfter          time.Duration `name:"push.stale-after" default:"180s" help:"Live silence after which push is unhealthy and the zombie ladder starts (0 = off)." group:"Health"`
	ZombiePrimes        int           `name:"recovery.zombie-primes" default:"2" help:"Consecutive zombie primes before a hard restart (0 = prime only)." group:"Health"`
	HardRestarts        int           `name:"recovery.hard-restarts" default:"3" help:"Hard restarts before a transport recycle (0 = never recycle)." group:"Health"`
	RecyclesBeforeBuild int           `name:"recovery.recycles-before-rebuild" default:"2" help:"The Nth transport recycle in a row becomes a manager rebuild: N-1 recycles run before it (1 = rebuild instead of any recycle, 0 = never rebuild)." group:"Health"`
	RebuildsBeforeQuar  int           `name:"recovery.rebuilds-before-quarantine" default:"3" help:"Rebuilds without live traffic before REST-only quarantine (0 = never)." group:"Health"`
	QuarantineDuration  time.Duration `name:"recovery.quarantine-duration" default:"6h" help:"Length of the REST-only quarantine." group:"Health"`
	Cooldown            time.Duration `name:"recovery.cooldown" default:"300s" help:"Base of the exponential recovery cooldown (0 = none)." group:"Health"`
	CooldownMax         time.Duration `name:"recovery.cooldown-max" default:"30m" help:"Cap of the recovery cooldown." group:"Health"`
	ForgetMissingAfter  time.Duration `name:"modules.forget-after" default:"1h" help:"A module missing from the account's module list this long stops being exported (0 = never)." group:"Health"`
	FailOfflineAfter    int           `name:"modules.fail-offline-after" hidden:"" help:"Deprecated, no effect: failed module-list polls never take a module offline." group:"Health"`
}

func (h *healthFlags) validate() error {
	for name, d := range map[string]time.Duration{
		"--poll.interval": h.PollInterval, "--session.down-hysteresis": h.SessionHysteresis, "--push.stale-after": h.StaleAfter,
		"--recovery.quarantine-duration": h.QuarantineDuration, "--recovery.cooldown": h.Cooldown, "--recovery.cooldown-max": h.CooldownMax,
		"--modules.forget-after": h.ForgetMissingAfter,
	} {
		if d < 0 {
			return usageErrorf("%s must not be negative", name)
		}
	}
	if h.SupervisorInterval <= 0 || h.ConnectTimeout <= 0 {
		return usageErrorf("--session.supervisor-interval and --session.connect-timeout must be positive")
	}
	for name, n := range map[string]int{
		"--recovery.zombie-primes": h.ZombiePrimes, "--recovery.hard-restarts": h.HardRestarts,
		"--recovery.recycles-before-rebuild": h.RecyclesBeforeBuild, "--recovery.rebuilds-before-quarantine": h.RebuildsBeforeQuar,
	} {
		if n < 0 {
			return usageErrorf("%s must not be negative", name)
		}
	}
	return nil
}

// gatewayConfig builds the gateway's configuration from the flags.
func (h *healthFlags) gatewayConfig(cf *cloudFlags, client *cloudclient.Client, p cloudclient.Platform, st *store.Store, logger *slog.Logger) realtime.Config {
	cfg := realtime.DefaultConfig()
	cfg.Client, cfg.Store, cfg.Logger = client, st, logger
	cfg.ObjectID, cfg.Modules = cf.ObjectID, cf.Modules
	cfg.PollInterval = h.PollInterval
	cfg.SupervisorInterval = h.SupervisorInterval
	cfg.SessionHysteresis = h.SessionHysteresis
	cfg.ForgetMissingAfter = h.ForgetMissingAfter
	//lint:ignore SA1019 the deprecated flag is still accepted; the gateway warns that it has no effect
	cfg.GetModulesFailOfflineAfter = h.FailOfflineAfter
	cfg.Ladder = ladder.Config{
		StaleAfter:                h.StaleAfter,
		ZombiePrimes:              h.ZombiePrimes,
		HardRestartsBeforeRecycle: h.HardRestarts,
		RecyclesBeforeRebuild:     h.RecyclesBeforeBuild,
		RebuildsBeforeQuarantine:  h.RebuildsBeforeQuar,
		CooldownBase:              h.Cooldown,
		CooldownMax:               h.CooldownMax,
		QuarantineFor:             h.QuarantineDuration,
		ModuleOnlineDebounce:      ladder.DefaultModuleOnlineDebounce,
	}
	connectTimeout := h.ConnectTimeout
	cfg.NewTransport = func() (transport.Transport, error) {
		return transport.New(transport.Config{
			BaseURL:        p.BaseURL,
			Header:         realtime.HandshakeHeaders(client, p.AssetsURL),
			ConnectTimeout: connectTimeout,
			Redact:         client.Secrets().Scrub,
			Logger:         logger,
		})
	}
	return cfg
}
