package realtime_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// rig is the exporter as serve builds it (gateway, REST client, Socket.IO
// transport, store, collector in a registry) against the simulated cloud
// over loopback, with durations in milliseconds. Tests read it the way an
// operator does: through the metrics.
type rig struct {
	t      *testing.T
	sim    *cloudsim.Cloud
	client *cloudclient.Client
	store  *store.Store
	gw     *realtime.Gateway
	reg    *prometheus.Registry
	cancel context.CancelFunc
	runErr chan error
}

// rigSetup tunes a rig before it starts.
type rigSetup struct {
	sim    func(*cloudsim.Options)
	client func(*cloudclient.Config)
	gw     func(*realtime.Config)
}

const rigDeadline = 10 * time.Second

// rigLogger discards, or logs at debug to stderr with RIG_TEST_LOG set.
func rigLogger() *slog.Logger {
	if os.Getenv("RIG_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func startRig(t *testing.T, su rigSetup) *rig {
	t.Helper()
	so := cloudsim.Options{Modules: 2, ParamsPerModule: 40, Seed: 5, Logger: rigLogger()}
	if su.sim != nil {
		su.sim(&so)
	}
	sim := cloudsim.New(so)
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })

	ccfg := cloudclient.Config{
		BaseURL: sim.URL(), AssetsURL: sim.URL(),
		Credentials:  cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
		PrimeBackoff: []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond},
		Timeout:      2 * time.Second,
		Logger:       rigLogger(),
	}
	if su.client != nil {
		su.client(&ccfg)
	}
	client, err := cloudclient.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	st := store.New()
	cfg := realtime.DefaultConfig()
	cfg.PollInterval = 30 * time.Millisecond
	cfg.SupervisorInterval = 40 * time.Millisecond
	cfg.HealthInterval = 5 * time.Millisecond
	cfg.SessionHysteresis = 0
	cfg.ReconnectBackoff = 10 * time.Millisecond
	cfg.TeardownTimeout = 400 * time.Millisecond
	cfg.StartRetryMax = 50 * time.Millisecond
	cfg.Ladder.StaleAfter = time.Hour // no zombie recovery unless a test wants it
	cfg.Client, cfg.Store, cfg.Logger = client, st, rigLogger()
	cfg.NewTransport = func() (transport.Transport, error) {
		return transport.New(transport.Config{
			BaseURL: sim.URL(), Header: realtime.HandshakeHeaders(client, sim.URL()),
			ConnectTimeout: 400 * time.Millisecond, TeardownTimeout: 300 * time.Millisecond, Logger: rigLogger(),
		})
	}
	if su.gw != nil {
		su.gw(&cfg)
	}
	gw, err := realtime.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	col, err := collector.New(collector.GatewaySource{Status: gw.Status, Store: st},
		collector.ParamSourceFunc(st.ForEachParamInLabelOrder), collector.Options{MaxSeries: collector.DefaultMaxSeriesPerModule})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, sim: sim, client: client, store: st, gw: gw, reg: prometheus.NewPedanticRegistry(), runErr: make(chan error, 1)}
	r.reg.MustRegister(col)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.runErr <- gw.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

func (r *rig) stop() {
	r.cancel()
	select {
	case err := <-r.runErr:
		if err != nil {
			r.t.Errorf("Run returned %v", err)
		}
		r.runErr <- nil
	case <-time.After(10 * time.Second):
		r.t.Errorf("Run did not return after cancel")
	}
}

// until waits for cond, checking it every few milliseconds, up to d.
func (r *rig) until(what string, d time.Duration, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s; status: %s", what, r.describe())
		}
		time.Sleep(3 * time.Millisecond)
	}
}

func (r *rig) describe() string {
	st := r.gw.Status()
	return fmt.Sprintf("connected=%v session=%+v primeFailures=%v requests=%v faults=%v",
		st.Connected, st.Session, st.PrimeFailures, r.sim.RequestCounts(), r.sim.Faults())
}

// metric returns the value of the sample of name whose labels include the
// pairs, and whether there is one (NaN when there is none).
func (r *rig) metric(name string, pairs ...string) (float64, bool) {
	r.t.Helper()
	for _, sm := range gatherSamples(r.t, r.reg, name) {
		if matches(sm.labels, pairs) {
			return sm.value, true
		}
	}
	return math.NaN(), false
}

// labels returns the label sets of every sample of name, as "k=v,…" with
// the names in order.
func (r *rig) labels(name string) []string {
	r.t.Helper()
	var out []string
	for _, sm := range gatherSamples(r.t, r.reg, name) {
		names := make([]string, 0, len(sm.labels))
		for k := range sm.labels {
			names = append(names, k)
		}
		sort.Strings(names)
		kv := make([]string, len(names))
		for i, k := range names {
			kv[i] = k + "=" + sm.labels[k]
		}
		out = append(out, strings.Join(kv, ","))
	}
	sort.Strings(out)
	return out
}

// waitBound waits until the session is bound at the simulator and the
// prime after the bind is stored: from then on nothing primes unless a test
// makes it (a prime made by the poll tick before the session came up may
// otherwise still be followed by the bind's).
func (r *rig) waitBound() {
	r.t.Helper()
	r.until("session bound and primed", rigDeadline, func() bool {
		st := r.gw.Status()
		if !st.Connected || !st.Ready || st.Binding != 0 {
			return false
		}
		for _, s := range r.sim.Sessions() {
			if s.SID == st.NamespaceSID && s.Connected && len(s.Bound) > 0 {
				return true
			}
		}
		return false
	})
}

// numericValueKey is the first value-channel parameter of a module holding
// a number, in key order.
func (r *rig) numericValueKey(devid string) (string, float64) {
	r.t.Helper()
	var keys []string
	params := r.sim.Params(devid)
	for k, v := range params {
		if pk, ok := store.ParseKey(k); ok && pk.Chan == 'v' {
			switch v.(type) {
			case float64, int:
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		r.t.Fatalf("module %s has no numeric value parameter", devid)
	}
	sort.Strings(keys)
	switch v := params[keys[0]].(type) {
	case float64:
		return keys[0], v
	case int:
		return keys[0], float64(v)
	}
	panic("unreachable")
}

// exported is bragerone_parameter_value of one parameter.
func (r *rig) exported(devid, key string) (float64, bool) {
	r.t.Helper()
	pool, param, _ := strings.Cut(key, ".")
	return r.metric("bragerone_parameter_value", "devid", devid, "pool", pool, "param", param)
}
