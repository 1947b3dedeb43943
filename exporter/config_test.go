package exporter

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/fleet"
)

// validConfig is a configuration Validate accepts: a real cloud's address
// and credentials, every other setting at a working value.
func validConfig(t *testing.T) Config {
	t.Helper()
	t.Setenv("BRAGERONE_TEST_PASSWORD", "secret")
	return Config{
		Cloud: Cloud{Email: "a@example.com", PasswordEnv: "BRAGERONE_TEST_PASSWORD", Timeout: time.Second},
		Health: Health{
			PollInterval: time.Minute, SessionHysteresis: time.Second, SupervisorInterval: time.Second,
			ConnectTimeout: time.Second, StaleAfter: time.Minute, ZombiePrimes: 2, HardRestartsBeforeRecycle: 2,
			RecyclesBeforeRebuild: 2, RebuildsBeforeQuarantine: 3, QuarantineDuration: time.Hour,
			CooldownBase: time.Second, CooldownMax: time.Minute, ForgetMissingAfter: time.Hour,
		},
		Catalog:    Catalog{Language: "en", RefreshInterval: time.Hour},
		Parameters: Parameters{Include: []string{"P4.v*"}, MaxSeries: 10},
		Web:        Web{ListenAddress: "127.0.0.1:0", TelemetryPath: "/metrics"},
		Simulate:   Simulate{Modules: 1, Objects: 1, ParamsPerModule: 1},
	}
}

// TestValidateNamesTheFlag breaks one setting at a time and checks that
// Validate refuses it with a *ConfigError whose message names the flag (the
// configuration file key of the same name), so the operator knows what to
// fix whichever way the value was given.
func TestValidateNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	badOverrides := filepath.Join(dir, "overrides.yml")
	badWeb := filepath.Join(dir, "web.yml")
	for path, body := range map[string]string{empty: "", badOverrides: "registers: [", badWeb: "tls_server_config: [\n"} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, tc := range map[string]struct {
		breakIt func(*Config)
		want    string
	}{
		"negative poll":           {func(c *Config) { c.Health.PollInterval = -1 }, "--poll.interval must not be negative"},
		"negative hysteresis":     {func(c *Config) { c.Health.SessionHysteresis = -1 }, "--session.down-hysteresis must not be negative"},
		"negative stale":          {func(c *Config) { c.Health.StaleAfter = -1 }, "--push.stale-after must not be negative"},
		"negative quarantine":     {func(c *Config) { c.Health.QuarantineDuration = -1 }, "--recovery.quarantine-duration must not be negative"},
		"negative cooldown":       {func(c *Config) { c.Health.CooldownBase = -1 }, "--recovery.cooldown must not be negative"},
		"negative cooldown max":   {func(c *Config) { c.Health.CooldownMax = -1 }, "--recovery.cooldown-max must not be negative"},
		"negative forget":         {func(c *Config) { c.Health.ForgetMissingAfter = -1 }, "--modules.forget-after must not be negative"},
		"zero supervisor":         {func(c *Config) { c.Health.SupervisorInterval = 0 }, "--session.supervisor-interval"},
		"zero connect timeout":    {func(c *Config) { c.Health.ConnectTimeout = 0 }, "--session.connect-timeout"},
		"negative zombie primes":  {func(c *Config) { c.Health.ZombiePrimes = -1 }, "--recovery.zombie-primes must not be negative"},
		"negative hard restarts":  {func(c *Config) { c.Health.HardRestartsBeforeRecycle = -1 }, "--recovery.hard-restarts must not be negative"},
		"negative recycles":       {func(c *Config) { c.Health.RecyclesBeforeRebuild = -1 }, "--recovery.recycles-before-rebuild must not be negative"},
		"negative rebuilds":       {func(c *Config) { c.Health.RebuildsBeforeQuarantine = -1 }, "--recovery.rebuilds-before-quarantine must not be negative"},
		"negative max series":     {func(c *Config) { c.Parameters.MaxSeries = -1 }, "--parameters.max-series must not be negative"},
		"relative telemetry path": {func(c *Config) { c.Web.TelemetryPath = "metrics" }, "--web.telemetry-path"},
		"empty telemetry path":    {func(c *Config) { c.Web.TelemetryPath = "" }, "--web.telemetry-path"},
		"bad web config":          {func(c *Config) { c.Web.ConfigFile = badWeb }, "--web.config.file"},
		"bad include pattern":     {func(c *Config) { c.Parameters.Include = []string{"P4.["} }, `parameter include pattern "P4.["`},
		"empty exclude pattern":   {func(c *Config) { c.Parameters.Exclude = []string{""} }, "parameter exclude pattern"},
		"bad language":            {func(c *Config) { c.Catalog.Language = "e n" }, "--catalog.language"},
		"zero refresh":            {func(c *Config) { c.Catalog.RefreshInterval = 0 }, "--catalog.refresh-interval must be positive"},
		"missing overrides":       {func(c *Config) { c.Catalog.OverridesFile = filepath.Join(dir, "none") }, "--catalog.overrides-file"},
		"bad overrides":           {func(c *Config) { c.Catalog.OverridesFile = badOverrides }, "--catalog.overrides-file " + badOverrides},
		"no simulated modules": {func(c *Config) { c.Simulate = Simulate{Enabled: true, ParamsPerModule: 1} },
			"--simulate.modules and --simulate.params-per-module must be at least 1"},
		"no simulated params": {func(c *Config) { c.Simulate = Simulate{Enabled: true, Modules: 1, Objects: 1} },
			"--simulate.modules and --simulate.params-per-module must be at least 1"},
		"no simulated objects": {func(c *Config) { c.Simulate = Simulate{Enabled: true, Modules: 3, ParamsPerModule: 1} },
			"--simulate.objects 0: want 1 to --simulate.modules (3)"},
		"health address without a port": {func(c *Config) { c.Web.HealthListenAddress = "localhost" },
			"--web.health-listen-address \"localhost\""},
		"health address is the main one": {func(c *Config) { c.Web.ListenAddress, c.Web.HealthListenAddress = ":9826", ":9826" },
			"--web.health-listen-address \":9826\": must differ from --web.listen-address"},
		"more simulated objects than modules": {func(c *Config) { c.Simulate = Simulate{Enabled: true, Modules: 3, Objects: 4, ParamsPerModule: 1} },
			"--simulate.objects 4: want 1 to --simulate.modules (3)"},
		"bad cloud url":    {func(c *Config) { c.Cloud.URL = "ftp://x" }, `--cloud.url "ftp://x"`},
		"bad assets url":   {func(c *Config) { c.Cloud.AssetsURL = "x.example" }, `--cloud.assets-url "x.example"`},
		"no email":         {func(c *Config) { c.Cloud.Email = "" }, "no account email: set --cloud.email or BRAGERONE_EMAIL"},
		"no password":      {func(c *Config) { c.Cloud.PasswordEnv = "BRAGERONE_TEST_UNSET" }, "no account password: set BRAGERONE_TEST_UNSET or --cloud.password-file"},
		"empty password":   {func(c *Config) { c.Cloud.PasswordFile = empty }, "--cloud.password-file " + empty + " is empty"},
		"missing password": {func(c *Config) { c.Cloud.PasswordFile = filepath.Join(dir, "none") }, "--cloud.password-file"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := validConfig(t)
			tc.breakIt(&cfg)
			err := cfg.Validate()
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate = %v, want a *ConfigError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %q, want it to say %q", err, tc.want)
			}
			if _, err := New(cfg); !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want Validate's error", err)
			}
		})
	}
}

// TestValidateAcceptsWhatItDoesNotUse: a configuration that only breaks
// settings the exporter will not use is valid: the catalog's when the
// catalog is off, the cloud's address and credentials when the simulator
// replaces them.
func TestValidateAcceptsWhatItDoesNotUse(t *testing.T) {
	cfg := validConfig(t)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("valid configuration refused: %v", err)
	}
	cfg.Catalog = Catalog{Disable: true, Language: "e n", OverridesFile: "/nonexistent"}
	if err := cfg.Validate(); err != nil {
		t.Errorf("catalog off: %v", err)
	}
	cfg = validConfig(t)
	cfg.Simulate.Enabled = true
	cfg.Cloud = Cloud{URL: "ftp://x", PasswordFile: "/nonexistent"}
	if err := cfg.Validate(); err != nil {
		t.Errorf("simulated cloud: %v", err)
	}
}

// TestFleetConfigSpreadsObjects: the assembled fleet spreads the objects'
// reconnects and starts by its package's defaults, and reads the objects
// again at the configured interval.
func TestFleetConfigSpreadsObjects(t *testing.T) {
	cfg := FleetConfig(Cloud{}, Health{ObjectsRefreshInterval: 7 * time.Minute}, nil, cloudclient.Platform{}, nil, nil)
	if cfg.ReconnectSpread != fleet.DefaultReconnectSpread || cfg.StartSpread != fleet.DefaultStartSpread || cfg.ReconnectSpread <= 0 || cfg.StartSpread <= 0 {
		t.Errorf("spreads %v, %v; want the fleet's defaults", cfg.ReconnectSpread, cfg.StartSpread)
	}
	if cfg.RefreshInterval != 7*time.Minute {
		t.Errorf("refresh interval %v", cfg.RefreshInterval)
	}
}
