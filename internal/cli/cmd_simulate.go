package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/alecthomas/kong"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// simulateCmd runs the simulated cloud on its own, for trying the exporter
// (or any other client) without a real account. Its environment variables
// are BRAGERONE_SIMULATE_ + the flag name (the envprefix on CLI.Simulate),
// so none of them reads like one of the exporter's: BRAGERONE_MODULES would
// look like --cloud.modules.
type simulateCmd struct {
	Listen             string        `env:"LISTEN" default:"127.0.0.1:8465" help:"Address to serve REST, Socket.IO, assets and /control/ on."`
	Modules            int           `env:"MODULES" default:"${simulate_modules}" help:"Number of simulated modules."`
	Objects            int           `env:"OBJECTS" default:"${simulate_objects}" help:"Objects (installations) the modules are split over, 1 to --modules."`
	ParamsPerModule    int           `name:"params-per-module" env:"PARAMS_PER_MODULE" default:"${simulate_params_per_module}" help:"Parameters per module (pools P4-P6)."`
	DriftInterval      time.Duration `name:"drift-interval" env:"DRIFT_INTERVAL" default:"${simulate_drift_interval}" help:"How often parameters drift and are pushed live (0 = never)."`
	Latency            time.Duration `env:"LATENCY" default:"0s" help:"Latency added to every REST answer."`
	TokenTTL           time.Duration `name:"token-ttl" env:"TOKEN_TTL" default:"${simulate_token_ttl}" help:"Lifetime of issued access tokens."`
	Seed               int64         `env:"SEED" default:"${simulate_seed}" help:"Seed of devids, names and parameter values."`
	AllowRemoteControl bool          `name:"allow-remote-control" env:"ALLOW_REMOTE_CONTROL" help:"Let non-loopback clients use the /control/ endpoint."`
}

// simulateVars are the simulator's defaults, taken from cloudsim: the
// simulate command's and serve --simulate's.
func simulateVars() kong.Vars {
	return kong.Vars{
		"simulate_modules":           strconv.Itoa(cloudsim.DefaultModules),
		"simulate_objects":           strconv.Itoa(cloudsim.DemoObjects),
		"simulate_params_per_module": strconv.Itoa(cloudsim.DefaultParamsPerModule),
		"simulate_drift_interval":    shortDuration(cloudsim.DefaultDriftInterval),
		"simulate_token_ttl":         shortDuration(cloudsim.DefaultTokenTTL),
		"simulate_seed":              strconv.Itoa(cloudsim.DefaultSeed),
	}
}

func (s *simulateCmd) Run(ctx context.Context, g *Globals) error {
	if s.Modules < 1 || s.ParamsPerModule < 1 {
		return usageErrorf("%s and %s must be at least 1", g.named("modules"), g.named("params-per-module"))
	}
	if s.Objects < 1 || s.Objects > s.Modules {
		return usageErrorf("%s %d: want 1 to %s (%d)", g.named("objects"), s.Objects, g.named("modules"), s.Modules)
	}
	if s.DriftInterval < 0 || s.Latency < 0 || s.TokenTTL <= 0 {
		return usageErrorf("%s and %s must not be negative, %s must be positive", g.named("drift-interval"), g.named("latency"), g.named("token-ttl"))
	}
	cloud := cloudsim.New(cloudsim.Options{
		Modules:            s.Modules,
		Objects:            s.Objects,
		ParamsPerModule:    s.ParamsPerModule,
		Seed:               s.Seed,
		TokenTTL:           s.TokenTTL,
		DriftInterval:      s.DriftInterval,
		Latency:            s.Latency,
		AllowRemoteControl: s.AllowRemoteControl,
		Logger:             g.Logger,
	})
	if err := cloud.Start(s.Listen); err != nil {
		return fmt.Errorf("simulated cloud: %w", err)
	}
	url := cloud.URL()
	// Every devid of the cloud, with no object: each object and its own
	// devids are on the lines below.
	g.Logger.Info("simulated cloud serving", "url", url, "socketio", url+"/socket.io/ (namespace /ws)",
		"objects", len(cloud.Objects()), "devids", cloud.Devids())
	for _, o := range cloud.Objects() {
		g.Logger.Info("simulated object", "object_id", o.ID, "name", o.Name, "devids", o.Devids)
	}
	g.Logger.Info("demo account", "email", cloudsim.DefaultEmail, "demo_password", cloudsim.DefaultPassword)
	g.Logger.Info("control endpoint", "state", url+"/control/state", "faults", url+"/control/faults")
	<-ctx.Done()
	g.Logger.Info("simulated cloud shutting down")
	return cloud.Close()
}
