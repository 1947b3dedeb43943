package cli

import (
	"context"
	"strconv"

	"github.com/alecthomas/kong"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/exporter"
)

// serveVars are the serve flags' defaults, taken from the collector.
func serveVars() kong.Vars {
	return kong.Vars{"parameters_max_series": strconv.Itoa(collector.DefaultMaxSeriesPerModule)}
}

// serveCmd runs the exporter: the gateway keeps the cloud picture current,
// and /metrics, /status, /-/healthy and /-/ready serve it.
type serveCmd struct {
	cloudFlags       `embed:""`
	healthFlags      `embed:""`
	catalogFlags     `embed:""`
	diagnosticsFlags `embed:""`

	ListenAddress           string   `name:"web.listen-address" default:":9826" help:"Address to serve /metrics and /status on." group:"Web"`
	WebConfigFile           string   `name:"web.config.file" type:"existingfile" help:"exporter-toolkit web configuration file (TLS, basic auth)." group:"Web"`
	TelemetryPath           string   `name:"web.telemetry-path" default:"/metrics" help:"Path of the metrics endpoint." group:"Web"`
	DisableExporterMetrics  bool     `name:"web.disable-exporter-metrics" help:"Leave out the Go runtime and process metrics of the exporter itself." group:"Web"`
	ParametersInclude       []string `name:"parameters.include" help:"Export only parameters matching one of these patterns (e.g. P4.v*)." group:"Parameters"`
	ParametersExclude       []string `name:"parameters.exclude" help:"Never export parameters matching these patterns (e.g. *.s*)." group:"Parameters"`
	ParametersMaxSeries     int      `name:"parameters.max-series" default:"${parameters_max_series}" help:"Cap on exported parameter series per module (0 = none); what the cap drops is counted." group:"Parameters"`
	Simulate                bool     `help:"Run against an embedded simulated cloud with the demo account (no credentials needed)." group:"Cloud"`
	SimulateModules         int      `name:"simulate.modules" default:"${simulate_modules}" help:"Modules of the embedded simulated cloud." group:"Cloud"`
	SimulateObjects         int      `name:"simulate.objects" default:"${simulate_objects}" help:"Objects (installations) the simulated modules are split over, 1 to --simulate.modules." group:"Cloud"`
	SimulateParamsPerModule int      `name:"simulate.params-per-module" default:"${simulate_params_per_module}" help:"Parameters per simulated module." group:"Cloud"`
}

func (s *serveCmd) Run(ctx context.Context, g *Globals) error {
	cfg, err := s.config(g)
	if err != nil {
		return err
	}
	e, err := exporter.New(cfg)
	if err != nil {
		return err
	}
	// The configuration is accepted: a mistake in it is one line on
	// stderr, never after these.
	logStart(g.Logger)
	return e.Run(ctx)
}

// config maps the flags to the exporter's configuration.
func (s *serveCmd) config(g *Globals) (exporter.Config, error) {
	diag, err := s.diagnosticsFlags.diagnostics(g, s)
	if err != nil {
		return exporter.Config{}, err
	}
	return exporter.Config{
		Cloud:   s.cloudFlags.cloud(),
		Health:  s.healthFlags.health(),
		Catalog: s.catalogFlags.catalog(),
		Parameters: exporter.Parameters{
			Include: s.ParametersInclude, Exclude: s.ParametersExclude, MaxSeries: s.ParametersMaxSeries,
		},
		Web: exporter.Web{
			ListenAddress: s.ListenAddress, ConfigFile: s.WebConfigFile, TelemetryPath: s.TelemetryPath,
			DisableExporterMetrics: s.DisableExporterMetrics,
		},
		Simulate: exporter.Simulate{Enabled: s.Simulate, Modules: s.SimulateModules, Objects: s.SimulateObjects, ParamsPerModule: s.SimulateParamsPerModule},
		Logger:   g.Logger,
		Secrets:  g.Secrets,
		Version:  versionString(),

		Diagnostics: diag,
	}, nil
}
