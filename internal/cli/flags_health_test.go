package cli

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// recyclesBeforeFirstRebuild drives the ladder with every step failing to
// bring live traffic back and counts the transport recycles that run before
// the first manager rebuild (-1: no rebuild within 100 steps).
func recyclesBeforeFirstRebuild(c ladder.Config) int {
	t0 := time.Unix(0, 0)
	var st ladder.State
	recycles, steps := 0, 0
	for k := 3; steps < 100; k++ {
		now := t0.Add(time.Duration(k) * time.Minute)
		var d ladder.Decision
		st, d = c.OnTick(st, ladder.Input{Now: now, SessionUp: true, AnyLiveSeen: true, LiveAge: now.Sub(t0)})
		step := d.Step()
		if step == "" {
			continue
		}
		steps++
		switch step {
		case ladder.Rebuild:
			return recycles
		case ladder.Recycle:
			recycles++
		}
		st, _ = c.OnActionResult(st, step, ladder.Result{}, now)
	}
	return -1
}

// TestRecycleCountIsDocumented: the help of --recovery.recycles-before-rebuild
// and the README's ladder table say how many transport recycles run before a
// manager rebuild, and the ladder the flags build runs exactly that many.
func TestRecycleCountIsDocumented(t *testing.T) {
	field, _ := reflect.TypeOf(healthFlags{}).FieldByName("RecyclesBeforeRebuild")
	if help := field.Tag.Get("help"); !strings.Contains(help, "N-1 recycles run before it") ||
		!strings.Contains(help, "1 = rebuild instead of any recycle") || !strings.Contains(help, "0 = never rebuild") {
		t.Errorf("--recovery.recycles-before-rebuild help %q does not say that N-1 recycles run before the rebuild", help)
	}
	for n, want := range map[string]int{"0": -1, "1": 0, "2": 1, "3": 2} {
		cli, err := parseForTest(t, "serve", "--recovery.recycles-before-rebuild="+n)
		if err != nil {
			t.Fatal(err)
		}
		lc := cli.Serve.healthFlags.gatewayConfig(&cli.Serve.cloudFlags, nil, cloudclient.Platform{}, nil, nil).Ladder
		if got := recyclesBeforeFirstRebuild(lc); got != want {
			t.Errorf("--recovery.recycles-before-rebuild=%s: %d recycles before the first rebuild, want %d", n, got, want)
		}
	}

	cli, err := parseForTest(t, "serve")
	if err != nil {
		t.Fatal(err)
	}
	lc := cli.Serve.healthFlags.gatewayConfig(&cli.Serve.cloudFlags, nil, cloudclient.Platform{}, nil, nil).Ladder
	words := []string{"no", "one", "two", "three", "four"}
	n := recyclesBeforeFirstRebuild(lc)
	if n < 0 || n >= len(words) {
		t.Fatalf("default ladder: %d recycles before the first rebuild", n)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if row := "| 4 | " + words[n] + " transport recycle"; !strings.Contains(string(readme), row) {
		t.Errorf("README.md's ladder table has no row starting %q: with the defaults %d recycle(s) run before the rebuild", row, n)
	}
}

// TestFlagDefaultsAreTheOwnersDefaults parses command lines that set no
// health, cloud, parameter or simulator flag and checks that every default
// reaching the gateway, the REST client, the collector and the simulated
// cloud is the one its owning package states, so a default changed there
// changes the flag.
func TestFlagDefaultsAreTheOwnersDefaults(t *testing.T) {
	for _, cmd := range []string{"serve", "watch"} {
		cli, err := parseForTest(t, cmd)
		if err != nil {
			t.Fatal(err)
		}
		h, cf := cli.Serve.healthFlags, &cli.Serve.cloudFlags
		if cmd == "watch" {
			h, cf = cli.Watch.healthFlags, &cli.Watch.cloudFlags
		}
		got := h.gatewayConfig(cf, nil, cloudclient.Platform{}, nil, nil)
		want := realtime.DefaultConfig()
		for name, pair := range map[string][2]time.Duration{
			"--poll.interval":               {got.PollInterval, want.PollInterval},
			"--session.supervisor-interval": {got.SupervisorInterval, want.SupervisorInterval},
			"--session.down-hysteresis":     {got.SessionHysteresis, outage.DefaultHysteresis},
			"--modules.forget-after":        {got.ForgetMissingAfter, want.ForgetMissingAfter},
			"--session.connect-timeout":     {h.ConnectTimeout, transport.DefaultConnectTimeout},
		} {
			if pair[0] != pair[1] {
				t.Errorf("%s %s default = %v, want the owner's %v", cmd, name, pair[0], pair[1])
			}
		}
		if cf.Timeout != cloudclient.DefaultTimeout {
			t.Errorf("%s --cloud.timeout default = %v, want the REST client's %v", cmd, cf.Timeout, cloudclient.DefaultTimeout)
		}
		if got.Ladder != ladder.DefaultConfig() {
			t.Errorf("%s ladder from default flags = %+v, want ladder.DefaultConfig() %+v", cmd, got.Ladder, ladder.DefaultConfig())
		}
	}
	cli, err := parseForTest(t, "serve")
	if err != nil {
		t.Fatal(err)
	}
	if cli.Serve.ParametersMaxSeries != collector.DefaultMaxSeriesPerModule {
		t.Errorf("--parameters.max-series default = %d, want the collector's %d", cli.Serve.ParametersMaxSeries, collector.DefaultMaxSeriesPerModule)
	}

	// The simulator's defaults, in serve --simulate and in simulate.
	for name, pair := range map[string][2]int{
		"serve --simulate.modules":           {cli.Serve.SimulateModules, cloudsim.DefaultModules},
		"serve --simulate.objects":           {cli.Serve.SimulateObjects, cloudsim.DemoObjects},
		"serve --simulate.params-per-module": {cli.Serve.SimulateParamsPerModule, cloudsim.DefaultParamsPerModule},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s default = %d, want cloudsim's %d", name, pair[0], pair[1])
		}
	}
	cli, err = parseForTest(t, "simulate")
	if err != nil {
		t.Fatal(err)
	}
	sim := cli.Simulate
	for name, pair := range map[string][2]int64{
		"simulate --modules":           {int64(sim.Modules), cloudsim.DefaultModules},
		"simulate --objects":           {int64(sim.Objects), cloudsim.DemoObjects},
		"simulate --params-per-module": {int64(sim.ParamsPerModule), cloudsim.DefaultParamsPerModule},
		"simulate --drift-interval":    {int64(sim.DriftInterval), int64(cloudsim.DefaultDriftInterval)},
		"simulate --token-ttl":         {int64(sim.TokenTTL), int64(cloudsim.DefaultTokenTTL)},
		"simulate --seed":              {sim.Seed, cloudsim.DefaultSeed},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s default = %d, want cloudsim's %d", name, pair[0], pair[1])
		}
	}
}

// --history.safety-interval reaches the gateway from a flag, the
// environment and the config file, defaults to the gateway's own default,
// and refuses a negative interval.
func TestHistorySafetyIntervalReachesTheGateway(t *testing.T) {
	interval := func(t *testing.T, args ...string) time.Duration {
		t.Helper()
		cli, err := parseForTest(t, append([]string{"serve"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return cli.Serve.healthFlags.gatewayConfig(&cli.Serve.cloudFlags, nil, cloudclient.Platform{}, nil, nil).HistorySafetyInterval
	}
	if got := interval(t); got != realtime.DefaultHistorySafetyInterval {
		t.Errorf("default: %v, want %v", got, realtime.DefaultHistorySafetyInterval)
	}
	if got := interval(t, "--history.safety-interval=0"); got != 0 {
		t.Errorf("flag 0: %v, want 0 (every poll)", got)
	}
	if got := interval(t, "--config.file", writeConfig(t, "history.safety-interval: 5m\n")); got != 5*time.Minute {
		t.Errorf("config file: %v, want 5m", got)
	}
	t.Setenv("BRAGERONE_HISTORY_SAFETY_INTERVAL", "30m")
	if got := interval(t); got != 30*time.Minute {
		t.Errorf("environment: %v, want 30m", got)
	}
	cli, err := parseForTest(t, "serve", "--history.safety-interval=-1m")
	if err == nil {
		err = cli.Serve.healthFlags.validate()
	}
	if err == nil || !strings.Contains(err.Error(), "--history.safety-interval") {
		t.Errorf("a negative interval: err = %v, want one naming --history.safety-interval", err)
	}
}
