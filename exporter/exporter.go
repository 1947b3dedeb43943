package exporter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/fleet"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/serving"
	"github.com/bragerone/bragerone_exporter/serving/status"
)

// Shutdown bounds: how long Run waits for the gateway to stop (it publishes
// the session down, reason stop) and for the web server's requests in
// flight (the logout's is cloudclient.ExitLogoutTimeout).
const (
	gatewayStopTimeout = 10 * time.Second
	webShutdownTimeout = 3 * time.Second
)

// restEndpoints are the REST endpoint templates the exporter may call: each
// keeps an endpoint label of its own, whatever else is called.
var restEndpoints = []string{
	cloudapi.EndpointLogin, cloudapi.EndpointRevoke, cloudapi.EndpointUser, cloudapi.EndpointObjects,
	cloudapi.EndpointModules, cloudapi.EndpointModulesConnect, cloudapi.EndpointParameters,
	cloudapi.EndpointAlarmsQuantity, cloudapi.EndpointCommand, cloudapi.EndpointCommandRaw,
	cloudapi.EndpointAlarms, cloudapi.EndpointAlarmHistory, cloudapi.EndpointActivity, cloudapi.EndpointSystemVersion,
	cloudapi.EndpointAsset,
}

// Exporter is one assembled exporter: the REST client (one login for the
// account), the parameter store, the fleet of realtime gateways (one per
// watched object), the catalog loader, the collector and the pages that
// serve them.
type Exporter struct {
	cfg     Config
	log     *slog.Logger
	sim     *cloudsim.Cloud // the embedded simulated cloud; nil unless Simulate
	client  *cloudclient.Client
	fleet   *fleet.Fleet
	loader  *catalogload.Loader // nil with the catalog off
	handler http.Handler
	source  FleetSource  // the /status model
	diag    diag         // the traffic ring and the capture (diagnostics.go)
	probes  http.Handler // /-/healthy and /-/ready alone, for Web.HealthListenAddress
}

// New validates cfg and assembles the exporter. Nothing runs until Run but
// the embedded simulated cloud, which New starts (its address is the REST
// client's) and Run stops. New logs nothing but warnings: a configuration it
// refuses is one error, with no log line before it.
func New(cfg Config) (*Exporter, error) {
	ok, err := cfg.check()
	if err != nil {
		return nil, err
	}
	e := &Exporter{cfg: cfg, log: cfg.logger()}
	cloud := cfg.Cloud
	if cfg.Simulate.Enabled {
		if cloud, e.sim, err = SimulatedCloud(e.log, cfg.Simulate, cloud); err != nil {
			return nil, err
		}
	}
	if err := e.assemble(cloud, ok); err != nil {
		if e.sim != nil {
			_ = e.sim.Close()
		}
		return nil, err
	}
	return e, nil
}

// assemble builds the parts in the order they depend on each other.
func (e *Exporter) assemble(cloud Cloud, ok checked) error {
	reg := prometheus.NewRegistry()
	inst, err := collector.NewInstrumentation(reg, collector.InstrumentationOptions{Endpoints: restEndpoints})
	if err != nil {
		return err
	}
	if !e.cfg.Web.DisableExporterMetrics {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	var fl *fleet.Fleet // set below, before anything logs in
	e.newDiag()
	rec := e.recorder()
	client, platform, err := cloud.NewClient(e.log, e.cfg.Secrets, func(c *cloudclient.Config) {
		c.Observer = inst.ObserveHTTP
		c.Recorder = rec
		// A long-running exporter waits out the cloud's throttling; the
		// tools say so and stop.
		c.HoldWhileThrottled = true
		c.LoginObserver = func(o cloudapi.LoginOutcome) {
			inst.ObserveLogin(o)
			if o == cloudapi.LoginRejected {
				// One line per verdict: the client does not send the same
				// credentials again before the hold ends.
				e.log.Warn("the cloud rejected the credentials; not sending them again until they change",
					"until", e.client.Account().CredentialsHeldUntil.UTC().Format(time.RFC3339))
			}
			if o == cloudapi.LoginOK {
				// A login is when objects change hands: read them again.
				fl.Relist()
			}
		}
	})
	if err != nil {
		return err
	}
	e.client = client
	st := store.New()
	fcfg := FleetConfig(cloud, e.cfg.Health, client, platform, st, e.log)
	if gw := fcfg.Gateway; rec != nil {
		fcfg.Gateway = func(id int) realtime.Config {
			c := gw(id)
			c.Recorder = rec
			return c
		}
	}
	if fl, err = fleet.New(fcfg); err != nil {
		return &ConfigError{err}
	}
	e.fleet = fl
	// Every gateway's configuration is checked once, here (and the
	// deprecated flag warned about once).
	if _, err := realtime.New(GatewayConfig(cloud, e.cfg.Health, client, platform, st, e.log)); err != nil {
		return &ConfigError{err}
	}
	source := FleetSource{Status: fl.Status, Store: st, Account: ClientAccount{Client: client},
		Departures: collector.NewDepartures(e.cfg.Health.DepartedForgetAfter)}
	e.source = source
	colOpts := ok.collector
	if !e.cfg.Catalog.Disable {
		if e.loader, err = newLoader(e.cfg.Catalog, client, fl, st, ok.overrides, e.log.With("component", "catalog")); err != nil {
			return err
		}
		colOpts.Catalog = &CatalogLoaderSource{State: e.loader.State, Values: st.Reader}
	}
	// Parameters in exposition order: the registry then finds them sorted.
	col, err := collector.New(source, collector.ParamSourceFunc(st.ForEachParamInLabelOrder), colOpts)
	if err != nil {
		return &ConfigError{err}
	}
	moduleParams := status.CatalogParams{Catalog: colOpts.Catalog,
		Values: st.Reader, Times: st.UpdatedAt}
	e.handler, err = e.newHandler(reg, col, source, moduleParams)
	return err
}

// Handler serves /metrics (or Web.TelemetryPath), /status and the module
// pages, /-/healthy, /-/ready, the Go runtime's profiles under /debug/pprof/
// and a landing page; Run serves it on Web.ListenAddress.
func (e *Exporter) Handler() http.Handler { return e.handler }

// newHandler builds the pages. /metrics serves reg's families and col's;
// col is not registered in reg: the handler writes its parameter series
// straight into text answers.
func (e *Exporter) newHandler(reg *prometheus.Registry, col *collector.Collector, source collector.SnapshotSource, moduleParams status.ParamSource) (http.Handler, error) {
	telemetryPath := e.cfg.Web.TelemetryPath
	mux := http.NewServeMux()
	mux.Handle(telemetryPath, serving.NewHandler(reg, col, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          reg,
		EnableOpenMetrics: true,
	}))
	mux.Handle("/status", status.Handler(source, status.Options{Alarms: moduleParams, DiagnosticsLink: diagnosticsPath}))
	mux.Handle(status.ModulePath, status.ModuleHandler(source, moduleParams, status.Options{}))
	e.probes = e.probeHandler()
	mux.Handle("/-/healthy", e.probes)
	mux.Handle("/-/ready", e.probes)
	// The Go runtime's profiles, as node_exporter serves them, behind the
	// same TLS and basic auth as the rest (--web.config.file): the landing
	// page links the heap and CPU profiles.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// The diagnostics bundle (diagnostics.go), behind the same web
	// configuration.
	mux.Handle(diagnosticsPath, e.diagnosticsHandler())
	if telemetryPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "bragerone_exporter",
			Description: "Prometheus exporter and health monitor for the BragerOne device cloud",
			Version:     e.cfg.Version,
			Links: []web.LandingLinks{
				{Address: telemetryPath, Text: "Metrics"},
				{Address: "/status", Text: "Status", Description: "each object's session, live push, recovery ladder and modules at a glance"},
				{Address: "/-/healthy", Text: "Health"},
				{Address: "/-/ready", Text: "Readiness", Description: "ready once every object's first parameter snapshot is stored"},
				{Address: diagnosticsPath, Text: "Diagnostics bundle", Description: "a redacted .tar.gz for a problem report: configuration, status, recent cloud traffic and logs"},
			},
		})
		if err != nil {
			return nil, err
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}

// probeHandler serves /-/healthy (the process answers) and /-/ready (every
// object's first parameter snapshot is stored) and nothing else: Run serves
// it on Web.HealthListenAddress without TLS or authentication, so it must
// never grow a page that tells more than these two answers.
func (e *Exporter) probeHandler() http.Handler {
	probes := http.NewServeMux()
	probes.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		fmt.Fprintln(w, "Healthy")
	})
	ready := e.fleet.Ready()
	probes.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
			w.WriteHeader(http.StatusOK)
			fmt.Fprintln(w, "Ready")
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "Not ready: not every object's first parameter snapshot has been stored yet")
		}
	})
	return probes
}

// Run serves the pages on Web.ListenAddress and runs the gateway and the
// catalog loader until ctx ends (it then returns nil) or one of them fails
// for good: a login the cloud rejects at the start and a catalog language
// the web app does not offer are *ConfigError. It then stops the gateway
// (the session goes down with reason stop), logs out, stops serving and
// stops the embedded simulated cloud. Run is called once.
func (e *Exporter) Run(ctx context.Context) error {
	if e.sim != nil {
		defer e.sim.Close()
		e.log.Info("running against the embedded simulated cloud", "url", e.sim.URL(), "control", e.sim.URL()+"/control/state")
	}
	ln, err := net.Listen("tcp", e.cfg.Web.ListenAddress)
	if err != nil {
		return fmt.Errorf("--web.listen-address: %w", err)
	}
	srv := &http.Server{Handler: e.handler, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 2)
	// The probes' listener: plain HTTP, /-/healthy and /-/ready only.
	var probeSrv *http.Server
	if addr := e.cfg.Web.HealthListenAddress; addr != "" {
		pln, err := net.Listen("tcp", addr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--web.health-listen-address: %w", err)
		}
		probeSrv = &http.Server{Handler: e.probes, ReadHeaderTimeout: 10 * time.Second}
		e.log.Info("Listening for probes (/-/healthy, /-/ready) without TLS or authentication", "address", pln.Addr().String())
		go func() {
			if err := probeSrv.Serve(pln); !errors.Is(err, http.ErrServerClosed) {
				serveErr <- fmt.Errorf("health listener: %w", err)
			}
		}()
	}
	go func() {
		noSystemd := false
		flags := &web.FlagConfig{WebListenAddresses: &[]string{e.cfg.Web.ListenAddress}, WebSystemdSocket: &noSystemd, WebConfigFile: &e.cfg.Web.ConfigFile}
		serveErr <- web.Serve(ln, srv, flags, e.log)
	}()

	if err := e.openCapture(); err != nil {
		_ = srv.Close()
		return &ConfigError{err}
	}
	defer e.closeCapture()
	gwCtx, stopGateway := context.WithCancel(context.Background())
	gwDone := make(chan error, 1)
	go func() { gwDone <- e.fleet.Run(gwCtx) }()
	if e.diag.auto {
		go e.followAccount(gwCtx)
	}
	var catalogDone chan error // nil (never ready) with the catalog off
	if e.loader != nil {
		catalogDone = make(chan error, 1)
		go func() { catalogDone <- e.loader.Run(gwCtx) }()
	}

	var runErr error
wait:
	for {
		select {
		case <-ctx.Done():
			e.log.Info("shutting down")
		case err := <-serveErr:
			runErr = fmt.Errorf("web server: %w", err)
		case err := <-gwDone:
			gwDone <- err
			runErr = StartError(err)
		case err := <-catalogDone:
			if err == nil {
				catalogDone = nil
				continue wait
			}
			runErr = LanguageError(err)
		}
		break
	}
	// Stop the gateway first (publishes session down, reason stop), then
	// log out, then stop serving.
	stopGateway()
	select {
	case <-gwDone:
	case <-time.After(gatewayStopTimeout):
		e.log.Warn("gateway did not stop in time")
	}
	e.client.LogoutOnExit()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), webShutdownTimeout)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if probeSrv != nil {
		_ = probeSrv.Shutdown(shutdownCtx)
	}
	return runErr
}

// LoginError is the error of a failed first login: credentials the cloud
// rejects are a mistake in the configuration (*ConfigError); anything else,
// an unreachable cloud for one, is a runtime failure.
func LoginError(err error) error {
	var apiErr *cloudclient.APIError
	if cloudclient.ClassifyLogin(err) == cloudapi.LoginRejected && errors.As(err, &apiErr) {
		return loginRejected(err)
	}
	if advice := cloudclient.ThrottleAdvice(err, time.Now()); advice != "" {
		return fmt.Errorf("login failed: %s: %w", advice, err)
	}
	return fmt.Errorf("login failed: %w", err)
}

// loginRejected says the one thing to do about a login the cloud rejects.
func loginRejected(err error) error {
	return configErrorf("login rejected by the cloud: check the email and password (%v)", err)
}

// StartError is the error of a start that failed (nil: none): a login the
// cloud rejects, an object id of --cloud.object-id the account does not
// list and a devid of --cloud.modules no watched object lists are mistakes
// in the configuration, *ConfigError.
func StartError(err error) error {
	var missing *cloudclient.MissingModulesError
	var unknown *fleet.UnknownObjectsError
	switch {
	case errors.Is(err, realtime.ErrStartAuth):
		return loginRejected(err)
	case errors.As(err, &missing):
		return configErrorf("--cloud.modules: %w", err)
	case errors.As(err, &unknown):
		return configErrorf("--cloud.object-id: %w", err)
	}
	return err
}

// SimulatedCloud starts the embedded simulated cloud of s in-process on a
// loopback port and returns cloud pointed at it, logged in to its demo
// account (the address, assets, credentials and object ids of cloud are
// replaced); the caller closes the simulator. serve --simulate and every
// tool's --simulate use it.
func SimulatedCloud(logger *slog.Logger, s Simulate, cloud Cloud) (Cloud, *cloudsim.Cloud, error) {
	if err := s.Validate(); err != nil {
		return cloud, nil, err
	}
	sim, err := startSimulation(logger, s)
	if err != nil {
		return cloud, nil, err
	}
	cloud.URL, cloud.AssetsURL = sim.URL(), sim.URL()
	cloud.Email, cloud.Password = cloudsim.DefaultEmail, cloudsim.DefaultPassword
	cloud.PasswordFile, cloud.ObjectIDs = "", nil
	return cloud, sim, nil
}

// startSimulation runs the simulated cloud in-process on a loopback port.
func startSimulation(logger *slog.Logger, s Simulate) (*cloudsim.Cloud, error) {
	sim := cloudsim.New(cloudsim.Options{
		Modules: s.Modules, Objects: s.Objects, ParamsPerModule: s.ParamsPerModule, Seed: cloudsim.DefaultSeed,
		DriftInterval: cloudsim.DefaultDriftInterval, Logger: logger.With("component", "cloudsim"),
	})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("simulated cloud: %w", err)
	}
	return sim, nil
}
