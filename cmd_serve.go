package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/alecthomas/kong"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/serving"
	"github.com/bragerone/bragerone_exporter/serving/status"
)

// restEndpoints are the REST endpoint templates (cloudclient's) serve may
// call: each keeps an endpoint label of its own, whatever else is called.
var restEndpoints = []string{
	cloudclient.EndpointLogin, cloudclient.EndpointRevoke, cloudclient.EndpointUser, cloudclient.EndpointObjects,
	cloudclient.EndpointModules, cloudclient.EndpointModulesConnect, cloudclient.EndpointParameters,
	cloudclient.EndpointAlarmsQuantity, cloudclient.EndpointCommand, cloudclient.EndpointCommandRaw,
	cloudclient.EndpointAlarms, cloudclient.EndpointSystemVersion, cloudclient.EndpointAsset,
}

// serveVars are the serve flags' defaults, taken from the collector.
func serveVars() kong.Vars {
	return kong.Vars{"parameters_max_series": strconv.Itoa(collector.DefaultMaxSeriesPerModule)}
}

// serveCmd runs the exporter: the gateway keeps the cloud picture current,
// and /metrics, /status, /-/healthy and /-/ready serve it.
type serveCmd struct {
	cloudFlags   `embed:""`
	healthFlags  `embed:""`
	catalogFlags `embed:""`

	ListenAddress           string   `name:"web.listen-address" default:":9826" help:"Address to serve /metrics and /status on." group:"Web"`
	WebConfigFile           string   `name:"web.config.file" type:"existingfile" help:"exporter-toolkit web configuration file (TLS, basic auth)." group:"Web"`
	TelemetryPath           string   `name:"web.telemetry-path" default:"/metrics" help:"Path of the metrics endpoint." group:"Web"`
	DisableExporterMetrics  bool     `name:"web.disable-exporter-metrics" help:"Leave out the Go runtime and process metrics of the exporter itself." group:"Web"`
	ParametersInclude       []string `name:"parameters.include" help:"Export only parameters matching one of these patterns (e.g. P4.v*)." group:"Parameters"`
	ParametersExclude       []string `name:"parameters.exclude" help:"Never export parameters matching these patterns (e.g. *.s*)." group:"Parameters"`
	ParametersMaxSeries     int      `name:"parameters.max-series" default:"${parameters_max_series}" help:"Cap on exported parameter series per module (0 = none); what the cap drops is counted." group:"Parameters"`
	Simulate                bool     `help:"Run against an embedded simulated cloud with the demo account (no credentials needed)." group:"Cloud"`
	SimulateModules         int      `name:"simulate.modules" default:"3" help:"Modules of the embedded simulated cloud." group:"Cloud"`
	SimulateParamsPerModule int      `name:"simulate.params-per-module" default:"800" help:"Parameters per simulated module." group:"Cloud"`

	// moduleParams names the parameters of the per-module status pages.
	moduleParams status.ParamSource
}

func (s *serveCmd) Run(ctx context.Context, g *Globals) error {
	if err := s.healthFlags.validate(); err != nil {
		return err
	}
	if s.ParametersMaxSeries < 0 {
		return usageErrorf("--parameters.max-series must not be negative")
	}
	if s.TelemetryPath == "" || s.TelemetryPath[0] != '/' {
		return usageErrorf("--web.telemetry-path %q: want a path starting with /", s.TelemetryPath)
	}
	if s.WebConfigFile != "" {
		if err := web.Validate(s.WebConfigFile); err != nil {
			return usageErrorf("--web.config.file: %v", err)
		}
	}
	colOpts := collector.Options{
		Include: s.ParametersInclude, Exclude: s.ParametersExclude, MaxSeries: s.ParametersMaxSeries,
		Logger: g.Logger,
	}
	if err := colOpts.Validate(); err != nil {
		return usageError{err}
	}
	overrides, err := s.catalogFlags.validate()
	if err != nil {
		return err
	}

	var sim *cloudsim.Cloud
	if s.Simulate {
		sim, err = startSimulation(g, s.SimulateModules, s.SimulateParamsPerModule)
		if err != nil {
			return err
		}
		defer sim.Close()
		s.cloudFlags.URL, s.cloudFlags.AssetsURL = sim.URL(), sim.URL()
		s.cloudFlags.Email = cloudsim.DefaultEmail
		s.cloudFlags.PasswordFile = ""
		s.cloudFlags.ObjectID = 0
		s.cloudFlags.password = cloudsim.DefaultPassword
	}

	reg := prometheus.NewRegistry()
	inst, err := collector.NewInstrumentation(reg, collector.InstrumentationOptions{Endpoints: restEndpoints})
	if err != nil {
		return err
	}
	if !s.DisableExporterMetrics {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	client, platform, err := s.cloudFlags.newClient(g, func(c *cloudclient.Config) {
		c.Observer = inst.ObserveHTTP
		c.LoginObserver = inst.ObserveLogin
	})
	if err != nil {
		return err
	}
	st := store.New()
	gcfg := s.healthFlags.gatewayConfig(&s.cloudFlags, client, platform, st, g.Logger)
	gcfg.OnEvent = inst.ObserveEvent
	gw, err := realtime.New(gcfg)
	if err != nil {
		return usageError{err}
	}
	source := collector.GatewaySource{Status: gw.Status, Store: st}
	var loader *catalogload.Loader
	if !s.catalogFlags.Disable {
		if loader, err = s.catalogFlags.newLoader(client, gw, st, overrides, g.Logger.With("component", "catalog")); err != nil {
			return err
		}
		colOpts.Catalog = &collector.CatalogLoaderSource{State: loader.State}
	}
	// Parameters in exposition order: the registry then finds them sorted.
	col, err := collector.New(source, collector.ParamSourceFunc(st.ForEachParamInLabelOrder), colOpts)
	if err != nil {
		return usageError{err}
	}
	s.moduleParams = status.CatalogParams{Catalog: colOpts.Catalog,
		Values: func(devid string) collector.Reader { return collector.Reader(storeReader(st, devid)) }}

	handler, err := s.handler(reg, col, source, gw)
	if err != nil {
		return err
	}
	// The configuration is accepted: a mistake in it is one line on
	// stderr, never after these.
	logStart(g.Logger)
	if sim != nil {
		g.Logger.Info("running against the embedded simulated cloud", "url", sim.URL(), "control", sim.URL()+"/control/state")
	}
	ln, err := net.Listen("tcp", s.ListenAddress)
	if err != nil {
		return fmt.Errorf("--web.listen-address: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() {
		noSystemd := false
		flags := &web.FlagConfig{WebListenAddresses: &[]string{s.ListenAddress}, WebSystemdSocket: &noSystemd, WebConfigFile: &s.WebConfigFile}
		serveErr <- web.Serve(ln, srv, flags, g.Logger)
	}()

	gwCtx, stopGateway := context.WithCancel(context.Background())
	gwDone := make(chan error, 1)
	go func() { gwDone <- gw.Run(gwCtx) }()
	var catalogDone chan error // nil (never ready) with the catalog off
	if loader != nil {
		catalogDone = make(chan error, 1)
		go func() { catalogDone <- loader.Run(gwCtx) }()
	}

	var runErr error
wait:
	for {
		select {
		case <-ctx.Done():
			g.Logger.Info("shutting down")
		case err := <-serveErr:
			runErr = fmt.Errorf("web server: %w", err)
		case err := <-gwDone:
			gwDone <- err
			runErr = startError(err)
		case err := <-catalogDone:
			if err == nil {
				catalogDone = nil
				continue wait
			}
			runErr = languageUsageError(err)
		}
		break
	}
	// Stop the gateway first (publishes session down, reason stop), then
	// log out, then stop serving.
	stopGateway()
	select {
	case <-gwDone:
	case <-time.After(10 * time.Second):
		g.Logger.Warn("gateway did not stop in time")
	}
	logoutCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	if err := client.Logout(logoutCtx); err != nil {
		g.Logger.Debug("logout", "err", err)
	}
	cancel()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	return runErr
}

// startError is the exit of a gateway whose start failed (nil: none): a
// login the cloud rejects and a devid of --cloud.modules the object does not
// list are mistakes in the configuration (exit 2), as the tools find them.
func startError(err error) error {
	var missing *cloudclient.MissingModulesError
	switch {
	case errors.Is(err, realtime.ErrStartAuth):
		return usageErrorf("login rejected by the cloud: check the email and password (%v)", err)
	case errors.As(err, &missing):
		return usageErrorf("%s: %w", modulesFlag, err)
	}
	return err
}

// handler serves /metrics, /status, the health endpoints and a landing page.
// /metrics serves reg's families and col's; col is not registered in reg:
// the handler writes its parameter series straight into text answers.
func (s *serveCmd) handler(reg *prometheus.Registry, col *collector.Collector, source collector.SnapshotSource, gw *realtime.Gateway) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.Handle(s.TelemetryPath, serving.NewHandler(reg, col, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          reg,
		EnableOpenMetrics: true,
	}))
	mux.Handle("/status", status.Handler(source, status.Options{}))
	mux.Handle(status.ModulePath, status.ModuleHandler(source, s.moduleParams, status.Options{}))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		fmt.Fprintln(w, "Healthy")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-gw.Ready():
			w.WriteHeader(http.StatusOK)
			fmt.Fprintln(w, "Ready")
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "Not ready: the first parameter snapshot has not been stored yet")
		}
	})
	// The Go runtime's profiles, as node_exporter serves them, behind the
	// same TLS and basic auth as the rest (--web.config.file): the landing
	// page links the heap and CPU profiles.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if s.TelemetryPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "bragerone_exporter",
			Description: "Prometheus exporter and health monitor for the BragerOne device cloud",
			Version:     versionString(),
			Links: []web.LandingLinks{
				{Address: s.TelemetryPath, Text: "Metrics"},
				{Address: "/status", Text: "Status", Description: "session, live push, recovery ladder and modules at a glance"},
				{Address: "/-/healthy", Text: "Health"},
				{Address: "/-/ready", Text: "Readiness", Description: "ready once the first parameter snapshot is stored"},
			},
		})
		if err != nil {
			return nil, err
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}

// startSimulation runs the simulated cloud in-process on a loopback port.
func startSimulation(g *Globals, modules, params int) (*cloudsim.Cloud, error) {
	if modules < 1 || params < 1 {
		return nil, usageErrorf("--simulate.modules and --simulate.params-per-module must be at least 1")
	}
	sim := cloudsim.New(cloudsim.Options{
		Modules: modules, ParamsPerModule: params, Seed: 1,
		DriftInterval: 2 * time.Second, Logger: g.Logger.With("component", "cloudsim"),
	})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("simulated cloud: %w", err)
	}
	return sim, nil
}
