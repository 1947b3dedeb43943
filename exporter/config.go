package exporter

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/redact"
)

// Config is everything the exporter is told. Each field is a flag of serve
// (also a configuration file key of the same name); the comments name it, and
// so does every error Validate returns.
type Config struct {
	Cloud      Cloud
	Health     Health
	Catalog    Catalog
	Parameters Parameters
	Web        Web
	Simulate   Simulate
	// Diagnostics: the traffic ring, the log lines and the capture file.
	Diagnostics Diagnostics

	// Logger receives the exporter's logs; nil discards them.
	Logger *slog.Logger
	// Secrets is where the REST client remembers the password and the tokens
	// it is issued, for the log handlers to mask; nil keeps them in a set of
	// the client's own.
	Secrets *redact.Set
	// Version is the build on one line, shown on the landing page.
	Version string
}

// Health tunes the gateway's state machines and its recovery ladder (the
// flags of the Health group). Zero is not "default": the CLI fills in each
// owner's default.
type Health struct {
	PollInterval              time.Duration // --poll.interval (0 = no poll)
	SessionHysteresis         time.Duration // --session.down-hysteresis
	SupervisorInterval        time.Duration // --session.supervisor-interval
	ConnectTimeout            time.Duration // --session.connect-timeout
	StaleAfter                time.Duration // --push.stale-after (0 = off)
	ZombiePrimes              int           // --recovery.zombie-primes
	HardRestartsBeforeRecycle int           // --recovery.hard-restarts
	RecyclesBeforeRebuild     int           // --recovery.recycles-before-rebuild
	RebuildsBeforeQuarantine  int           // --recovery.rebuilds-before-quarantine
	QuarantineDuration        time.Duration // --recovery.quarantine-duration
	CooldownBase              time.Duration // --recovery.cooldown
	CooldownMax               time.Duration // --recovery.cooldown-max
	ForgetMissingAfter        time.Duration // --modules.forget-after (0 = never)
	ObjectsRefreshInterval    time.Duration // --objects.refresh-interval
	// StartRetryMax caps the pause between attempts to log in and read the
	// objects and modules at start (1 s, 2 s, 4 s, ...); 0 keeps the
	// default, a minute. --session.start-retry-max
	StartRetryMax         time.Duration
	DepartedForgetAfter   time.Duration // --objects.departed-forget-after (0 = until restart)
	HistorySafetyInterval time.Duration // --history.safety-interval (0 = with every poll)
	// FailOfflineAfter is the deprecated --modules.fail-offline-after: the
	// gateway warns that it has no effect.
	FailOfflineAfter int
}

// Catalog configures the parameter catalog read from the web app's assets.
type Catalog struct {
	Disable         bool          // --catalog.disable
	Language        string        // --catalog.language
	OverridesFile   string        // --catalog.overrides-file ("" = none)
	RefreshInterval time.Duration // --catalog.refresh-interval
}

// Parameters select and bound the exported parameter series.
type Parameters struct {
	Include   []string // --parameters.include
	Exclude   []string // --parameters.exclude
	MaxSeries int      // --parameters.max-series (0 = no cap)
}

// Web configures the HTTP side.
type Web struct {
	ListenAddress          string // --web.listen-address
	ConfigFile             string // --web.config.file (exporter-toolkit: TLS, basic auth)
	TelemetryPath          string // --web.telemetry-path
	DisableExporterMetrics bool   // --web.disable-exporter-metrics
	// HealthListenAddress, when set, is a second listener serving only
	// /-/healthy and /-/ready over plain HTTP, without the TLS and basic
	// auth of ConfigFile: probes (Kubernetes', a load balancer's) cannot
	// present a password or a client certificate. --web.health-listen-address
	HealthListenAddress string
}

// Simulate runs the exporter against an embedded simulated cloud on a
// loopback port, logged in to its demo account; Cloud's address and
// credentials are then not used.
type Simulate struct {
	Enabled         bool // --simulate
	Modules         int  // --simulate.modules
	Objects         int  // --simulate.objects: the modules are split over them
	ParamsPerModule int  // --simulate.params-per-module
}

// Validate checks the simulated cloud's sizes.
func (s Simulate) Validate() error {
	if s.Modules < 1 || s.ParamsPerModule < 1 {
		return configErrorf("--simulate.modules and --simulate.params-per-module must be at least 1")
	}
	if s.Objects < 1 || s.Objects > s.Modules {
		return configErrorf("--simulate.objects %d: want 1 to --simulate.modules (%d)", s.Objects, s.Modules)
	}
	return nil
}

// ConfigError is a configuration the exporter cannot run with: the value of
// a flag or configuration file key (its message names which), a catalog
// language the web app does not offer, or credentials the cloud refused. The
// command exits with its usage code on it.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, a ...any) error { return &ConfigError{fmt.Errorf(format, a...)} }

// Validate checks the whole configuration, every value of it, before anything
// starts; it reads the files the configuration names (the overrides file, the
// web configuration, the password file). The first problem is returned, as a
// *ConfigError naming the flag.
func (c *Config) Validate() error {
	_, err := c.check()
	return err
}

// checked is what validating the configuration produced for New.
type checked struct {
	collector collector.Options
	overrides *catalog.Overrides
}

// check validates c in the order the flags are documented in and returns
// what New builds from.
func (c *Config) check() (checked, error) {
	var out checked
	if err := c.Health.Validate(); err != nil {
		return out, err
	}
	if c.Parameters.MaxSeries < 0 {
		return out, configErrorf("--parameters.max-series must not be negative")
	}
	if c.Web.TelemetryPath == "" || c.Web.TelemetryPath[0] != '/' {
		return out, configErrorf("--web.telemetry-path %q: want a path starting with /", c.Web.TelemetryPath)
	}
	if h := c.Web.HealthListenAddress; h != "" {
		_, port, err := net.SplitHostPort(h)
		if err != nil {
			return out, configErrorf("--web.health-listen-address %q: %v", h, err)
		}
		if h == c.Web.ListenAddress && port != "0" {
			return out, configErrorf("--web.health-listen-address %q: must differ from --web.listen-address", h)
		}
	}
	if c.Web.ConfigFile != "" {
		if err := web.Validate(c.Web.ConfigFile); err != nil {
			return out, configErrorf("--web.config.file: %v", err)
		}
	}
	out.collector = collector.Options{
		Include: c.Parameters.Include, Exclude: c.Parameters.Exclude, MaxSeries: c.Parameters.MaxSeries,
		Logger: c.logger(),
	}
	if err := out.collector.Validate(); err != nil {
		return out, &ConfigError{err}
	}
	var err error
	if out.overrides, err = c.Catalog.check(true); err != nil {
		return out, err
	}
	if c.Simulate.Enabled {
		if err := c.Simulate.Validate(); err != nil {
			return out, err
		}
		return out, nil // the simulator's address and demo account replace Cloud's
	}
	if _, err := c.Cloud.Platform(); err != nil {
		return out, err
	}
	if _, err := c.Cloud.Credentials(); err != nil {
		return out, err
	}
	return out, nil
}

// Validate checks the health settings: durations not negative (the
// supervisor interval and the connect timeout positive), counts not
// negative.
func (h Health) Validate() error {
	for name, d := range map[string]time.Duration{
		"--poll.interval": h.PollInterval, "--session.down-hysteresis": h.SessionHysteresis, "--push.stale-after": h.StaleAfter,
		"--recovery.quarantine-duration": h.QuarantineDuration, "--recovery.cooldown": h.CooldownBase, "--recovery.cooldown-max": h.CooldownMax,
		"--modules.forget-after": h.ForgetMissingAfter, "--objects.refresh-interval": h.ObjectsRefreshInterval,
		"--session.start-retry-max":       h.StartRetryMax,
		"--objects.departed-forget-after": h.DepartedForgetAfter,
		"--history.safety-interval":       h.HistorySafetyInterval,
	} {
		if d < 0 {
			return configErrorf("%s must not be negative", name)
		}
	}
	if h.SupervisorInterval <= 0 || h.ConnectTimeout <= 0 {
		return configErrorf("--session.supervisor-interval and --session.connect-timeout must be positive")
	}
	for name, n := range map[string]int{
		"--recovery.zombie-primes": h.ZombiePrimes, "--recovery.hard-restarts": h.HardRestartsBeforeRecycle,
		"--recovery.recycles-before-rebuild": h.RecyclesBeforeRebuild, "--recovery.rebuilds-before-quarantine": h.RebuildsBeforeQuarantine,
	} {
		if n < 0 {
			return configErrorf("%s must not be negative", name)
		}
	}
	return nil
}

// Overrides checks the catalog settings a command that reads the catalog
// once needs (the language's form and the overrides file, which it parses,
// so a bad file stops the start) and returns the overrides; nil when none
// are given or the catalog is off.
func (c Catalog) Overrides() (*catalog.Overrides, error) { return c.check(false) }

// check is Overrides, with the refresh interval checked too when the
// catalog is kept current.
func (c Catalog) check(refreshed bool) (*catalog.Overrides, error) {
	if c.Disable {
		return nil, nil
	}
	if !languageCode(c.Language) {
		return nil, configErrorf("--catalog.language %q: want a language code such as en or pl", c.Language)
	}
	if refreshed && c.RefreshInterval <= 0 {
		return nil, configErrorf("--catalog.refresh-interval must be positive")
	}
	if c.OverridesFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.OverridesFile)
	if err != nil {
		return nil, configErrorf("--catalog.overrides-file: %v", err)
	}
	o, err := catalog.ParseOverrides(data)
	if err != nil {
		return nil, configErrorf("--catalog.overrides-file %s: %v", c.OverridesFile, err)
	}
	return o, nil
}

// languageCode accepts the shape of a language code (en, pl, pt-br, zh_tw).
func languageCode(s string) bool {
	if len(s) < 2 || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (c == '-' || c == '_') && i > 0) {
			return false
		}
	}
	return true
}

// LanguageError is the start failure for a catalog language the web app
// does not offer (a *catalog.LanguageError, which lists the offered ones).
func LanguageError(err error) error { return configErrorf("--catalog.language: %v", err) }

func (c *Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}
