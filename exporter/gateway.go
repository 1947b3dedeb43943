package exporter

import (
	"log/slog"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/fleet"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// FleetConfig is the account half of the exporter: the fleet that watches
// cloud's objects, each object's gateway configured by GatewayConfig.
func FleetConfig(cloud Cloud, h Health, client *cloudclient.Client, p cloudclient.Platform, st *store.Store, logger *slog.Logger) fleet.Config {
	cfg := fleet.DefaultConfig()
	cfg.Client, cfg.Store, cfg.Objects, cfg.Modules, cfg.Logger = client, st, cloud.ObjectIDs, cloud.Modules, logger
	cfg.Gateway = func(int) realtime.Config {
		c := GatewayConfig(cloud, h, client, p, st, logger)
		//lint:ignore SA1019 warned about once at start, not once per object
		c.GetModulesFailOfflineAfter = 0
		return c
	}
	if h.ObjectsRefreshInterval > 0 {
		cfg.RefreshInterval = h.ObjectsRefreshInterval
	}
	if h.StartRetryMax > 0 {
		cfg.StartRetryMax = h.StartRetryMax
	}
	return cfg
}

// GatewayConfig is the gateway half of the exporter: the realtime gateway's
// configuration for cloud's object and modules and the health settings h,
// over client (logged in to platform) and st. The watch command builds its
// gateway from it too.
func GatewayConfig(cloud Cloud, h Health, client *cloudclient.Client, p cloudclient.Platform, st *store.Store, logger *slog.Logger) realtime.Config {
	cfg := realtime.DefaultConfig()
	cfg.Client, cfg.Store, cfg.Logger = client, st, logger
	if len(cloud.ObjectIDs) > 0 {
		cfg.ObjectID = cloud.ObjectIDs[0]
	}
	cfg.Modules = cloud.Modules
	cfg.PollInterval = h.PollInterval
	cfg.SupervisorInterval = h.SupervisorInterval
	cfg.SessionHysteresis = h.SessionHysteresis
	cfg.ForgetMissingAfter = h.ForgetMissingAfter
	if h.StartRetryMax > 0 {
		cfg.StartRetryMax = h.StartRetryMax
	}
	cfg.HistorySafetyInterval = h.HistorySafetyInterval
	//lint:ignore SA1019 the deprecated flag is still accepted; the gateway warns that it has no effect
	cfg.GetModulesFailOfflineAfter = h.FailOfflineAfter
	cfg.Ladder = ladder.Config{
		StaleAfter:                h.StaleAfter,
		ZombiePrimes:              h.ZombiePrimes,
		HardRestartsBeforeRecycle: h.HardRestartsBeforeRecycle,
		RecyclesBeforeRebuild:     h.RecyclesBeforeRebuild,
		RebuildsBeforeQuarantine:  h.RebuildsBeforeQuarantine,
		CooldownBase:              h.CooldownBase,
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
