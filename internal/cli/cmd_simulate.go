package cli

import (
	"context"
	"fmt"
	"math"
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
	Replay             string        `name:"replay" env:"REPLAY" placeholder:"FILE" help:"Play a recorded cloud back instead of simulating one: a capture (serve --capture.file) or a diagnostics bundle holding one. Any credentials log in; --modules, --objects, --params-per-module, --drift-interval and --seed are not used."`
	ReplaySpeed        float64       `name:"replay.speed" env:"REPLAY_SPEED" default:"1" help:"How many times faster than recorded the replay runs (10 = ten recorded seconds a second)."`
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
	if s.Replay != "" {
		return s.runReplay(ctx, g)
	}
	if s.ReplaySpeed != 1 && s.ReplaySpeed != 0 { // 0: a command built in Go without the flag
		return usageErrorf("--replay.speed needs --replay")
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

// runReplay serves a recorded cloud (--replay). A recording that cannot be
// read is refused before anything listens.
func (s *simulateCmd) runReplay(ctx context.Context, g *Globals) error {
	if s.ReplaySpeed <= 0 || math.IsInf(s.ReplaySpeed, 0) || math.IsNaN(s.ReplaySpeed) {
		return usageErrorf("--replay.speed %v: want a positive number", s.ReplaySpeed)
	}
	if s.Latency < 0 || s.TokenTTL <= 0 {
		return usageErrorf("--latency must not be negative, --token-ttl must be positive")
	}
	rp, h, err := cloudsim.LoadReplay(s.Replay, cloudsim.ReplayOptions{Speed: s.ReplaySpeed})
	if err != nil {
		return fmt.Errorf("--replay: %w", err)
	}
	cloud := cloudsim.New(cloudsim.Options{
		Modules: 1, ParamsPerModule: 1, TokenTTL: s.TokenTTL, Latency: s.Latency,
		AllowRemoteControl: s.AllowRemoteControl, Logger: g.Logger, Replay: rp,
	})
	if err := cloud.Start(s.Listen); err != nil {
		return fmt.Errorf("replayed cloud: %w", err)
	}
	st, _ := cloud.ReplayState()
	url := cloud.URL()
	g.Logger.Info("replayed cloud serving", "url", url, "socketio", url+"/socket.io/ (namespace /ws)", "file", s.Replay,
		"recorded_from", st.Clock.Format(time.RFC3339), "recorded_seconds", st.SpanSeconds, "records", st.Records,
		"speed", s.ReplaySpeed, "capture_started", h.Started.Format(time.RFC3339))
	g.Logger.Info("the replay clock starts at the first login; any email and password log in", "state", url+"/control/state")
	<-ctx.Done()
	g.Logger.Info("replayed cloud shutting down")
	return cloud.Close()
}
