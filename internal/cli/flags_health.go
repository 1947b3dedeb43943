package cli

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/alecthomas/kong"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/fleet"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// healthFlags are the knobs of the gateway's state machines and recovery
// ladder; every default is the spec's, taken from the package that owns it
// (see healthVars).
type healthFlags struct {
	PollInterval              time.Duration `name:"poll.interval" default:"${poll_interval}" help:"Module-list poll and recovery tick (0 = no poll)." group:"Health"`
	SessionHysteresis         time.Duration `name:"session.down-hysteresis" default:"${session_down_hysteresis}" help:"A disconnect shorter than this is a blink, not an outage (0 = none)." group:"Health"`
	SupervisorInterval        time.Duration `name:"session.supervisor-interval" default:"${session_supervisor_interval}" help:"How often a dead session is looked for and a lost one reconnected." group:"Health"`
	ConnectTimeout            time.Duration `name:"session.connect-timeout" default:"${session_connect_timeout}" help:"Bound of one Socket.IO connect (dial, handshake, namespace join)." group:"Health"`
	StaleAfter                time.Duration `name:"push.stale-after" default:"${push_stale_after}" help:"Live silence after which push is unhealthy and the zombie ladder starts (0 = off)." group:"Health"`
	ZombiePrimes              int           `name:"recovery.zombie-primes" default:"${recovery_zombie_primes}" help:"Consecutive zombie primes before a hard restart (0 = prime only)." group:"Health"`
	HardRestartsBeforeRecycle int           `name:"recovery.hard-restarts" default:"${recovery_hard_restarts}" help:"Hard restarts before a transport recycle (0 = never recycle)." group:"Health"`
	RecyclesBeforeRebuild     int           `name:"recovery.recycles-before-rebuild" default:"${recovery_recycles_before_rebuild}" help:"The Nth transport recycle in a row becomes a manager rebuild: N-1 recycles run before it (1 = rebuild instead of any recycle, 0 = never rebuild)." group:"Health"`
	RebuildsBeforeQuarantine  int           `name:"recovery.rebuilds-before-quarantine" default:"${recovery_rebuilds_before_quarantine}" help:"Rebuilds without live traffic before REST-only quarantine (0 = never)." group:"Health"`
	QuarantineDuration        time.Duration `name:"recovery.quarantine-duration" default:"${recovery_quarantine_duration}" help:"Length of the REST-only quarantine." group:"Health"`
	CooldownBase              time.Duration `name:"recovery.cooldown" default:"${recovery_cooldown}" help:"Base of the exponential recovery cooldown (0 = none)." group:"Health"`
	CooldownMax               time.Duration `name:"recovery.cooldown-max" default:"${recovery_cooldown_max}" help:"Cap of the recovery cooldown." group:"Health"`
	ForgetMissingAfter        time.Duration `name:"modules.forget-after" default:"${modules_forget_after}" help:"A module missing from the account's module list this long stops being exported (0 = never)." group:"Health"`
	HistorySafetyInterval     time.Duration `name:"history.safety-interval" default:"${history_safety_interval}" help:"Longest the active alarm list, the alarm history and the activity log go unread; a module's alarm count moving (module list, alarm-quantity push, a prime's alarm quantity) reads the alarm lists sooner (0 = every list with every poll)." group:"Health"`
	ObjectsRefreshInterval    time.Duration `name:"objects.refresh-interval" default:"${objects_refresh_interval}" help:"How often the account's objects are read again, to watch objects that join and stop those that leave (also after every login)." group:"Health"`
	StartRetryMax             time.Duration `name:"session.start-retry-max" default:"${session_start_retry_max}" help:"Cap of the pause between attempts to log in and read the objects and modules at start (1s, 2s, 4s, ... up to this)." group:"Health"`
	DepartedForgetAfter       time.Duration `name:"objects.departed-forget-after" default:"${objects_departed_forget_after}" help:"A watched object or module that left is remembered this long, on /status and as bragerone_object_departed_timestamp_seconds / bragerone_module_departed_timestamp_seconds (0 = until restart)." group:"Health"`
	FailOfflineAfter          int           `name:"modules.fail-offline-after" hidden:"" help:"Deprecated, no effect: failed module-list polls never take a module offline." group:"Health"`
}

// healthVars are the health flags' defaults, taken from their owners: the
// ladder's, the session machine's (outage), the transport's and the gateway's
// own defaults. Durations keep the unit the spec states them in.
func healthVars() kong.Vars {
	gw := realtime.DefaultConfig()
	return kong.Vars{
		"poll_interval":                       seconds(gw.PollInterval),
		"session_down_hysteresis":             seconds(outage.DefaultHysteresis),
		"session_supervisor_interval":         seconds(gw.SupervisorInterval),
		"session_connect_timeout":             seconds(transport.DefaultConnectTimeout),
		"push_stale_after":                    seconds(ladder.DefaultStaleAfter),
		"recovery_zombie_primes":              strconv.Itoa(ladder.DefaultZombiePrimes),
		"recovery_hard_restarts":              strconv.Itoa(ladder.DefaultHardRestartsBeforeRecycle),
		"recovery_recycles_before_rebuild":    strconv.Itoa(ladder.DefaultRecyclesBeforeRebuild),
		"recovery_rebuilds_before_quarantine": strconv.Itoa(ladder.DefaultRebuildsBeforeQuarantine),
		"recovery_quarantine_duration":        shortDuration(ladder.DefaultQuarantineFor),
		"recovery_cooldown":                   seconds(ladder.DefaultCooldownBase),
		"recovery_cooldown_max":               shortDuration(ladder.DefaultCooldownMax),
		"modules_forget_after":                shortDuration(gw.ForgetMissingAfter),
		"objects_refresh_interval":            shortDuration(fleet.DefaultRefreshInterval),
		"session_start_retry_max":             shortDuration(fleet.DefaultStartRetryMax),
		"objects_departed_forget_after":       shortDuration(collector.DefaultDepartedForgetAfter),
		"history_safety_interval":             shortDuration(gw.HistorySafetyInterval),
	}
}

// health maps the flags to the exporter's health settings.
func (h *healthFlags) health() exporter.Health {
	return exporter.Health{
		PollInterval:              h.PollInterval,
		SessionHysteresis:         h.SessionHysteresis,
		SupervisorInterval:        h.SupervisorInterval,
		ConnectTimeout:            h.ConnectTimeout,
		StaleAfter:                h.StaleAfter,
		ZombiePrimes:              h.ZombiePrimes,
		HardRestartsBeforeRecycle: h.HardRestartsBeforeRecycle,
		RecyclesBeforeRebuild:     h.RecyclesBeforeRebuild,
		RebuildsBeforeQuarantine:  h.RebuildsBeforeQuarantine,
		QuarantineDuration:        h.QuarantineDuration,
		CooldownBase:              h.CooldownBase,
		CooldownMax:               h.CooldownMax,
		ForgetMissingAfter:        h.ForgetMissingAfter,
		ObjectsRefreshInterval:    h.ObjectsRefreshInterval,
		StartRetryMax:             h.StartRetryMax,
		DepartedForgetAfter:       h.DepartedForgetAfter,
		HistorySafetyInterval:     h.HistorySafetyInterval,
		FailOfflineAfter:          h.FailOfflineAfter,
	}
}

func (h *healthFlags) validate() error { return h.health().Validate() }

// gatewayConfig builds the gateway's configuration from the flags: the
// exporter's gateway half.
func (h *healthFlags) gatewayConfig(cf *cloudFlags, client *cloudclient.Client, p cloudclient.Platform, st *store.Store, logger *slog.Logger) realtime.Config {
	return exporter.GatewayConfig(cf.cloud(), h.health(), client, p, st, logger)
}
