package realtime_test

import (
	"context"
	"io"
	"log/slog"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
	"github.com/bragerone/bragerone_exporter/wire"
)

// benchGateway is the exporter's realtime path against the simulated cloud
// over loopback: the real REST client, Socket.IO transport, decoder, store
// and gateway. The cloud's goroutines carry the profiler label side=server,
// the gateway's side=client, so a CPU profile splits the two
// (go tool pprof -tags).
type benchGateway struct {
	sim    *cloudsim.Cloud
	client *cloudclient.Client
	store  *store.Store
	gw     *realtime.Gateway
	cancel context.CancelFunc
	done   chan error

	updates atomic.Int64 // parameter updates handed to the store by live events
	events  atomic.Int64 // parameter-change events received
	wake    chan struct{}
}

var (
	serverLabels = pprof.Labels("side", "server")
	clientLabels = pprof.Labels("side", "client")
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startBenchGateway(b *testing.B, modules, perModule int, tune func(*realtime.Config)) *benchGateway {
	b.Helper()
	bg := &benchGateway{done: make(chan error, 1), wake: make(chan struct{}, 1)}
	var startErr error
	pprof.Do(context.Background(), serverLabels, func(context.Context) {
		bg.sim = cloudsim.New(cloudsim.Options{Modules: modules, ParamsPerModule: perModule, Seed: 1, Logger: discardLogger()})
		startErr = bg.sim.Start("127.0.0.1:0")
	})
	if startErr != nil {
		b.Fatal(startErr)
	}
	b.Cleanup(func() { bg.sim.Close() })
	client, err := cloudclient.New(cloudclient.Config{
		BaseURL: bg.sim.URL(), AssetsURL: bg.sim.URL(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
		Logger:      discardLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	bg.client = client
	bg.store = store.New()
	cfg := realtime.DefaultConfig()
	cfg.Client, cfg.Store, cfg.Logger = client, bg.store, discardLogger()
	cfg.NewTransport = func() (transport.Transport, error) {
		return transport.New(transport.Config{
			BaseURL: bg.sim.URL(), Header: realtime.HandshakeHeaders(client, bg.sim.URL()), Logger: discardLogger(),
		})
	}
	cfg.OnLive = func(ups []wire.ParamUpdate) {
		bg.updates.Add(int64(len(ups)))
		select {
		case bg.wake <- struct{}{}:
		default:
		}
	}
	cfg.OnEvent = func(k cloudapi.EventKind) {
		if k == cloudapi.EventParamsChange {
			bg.events.Add(1)
		}
	}
	if tune != nil {
		tune(&cfg)
	}
	bg.gw, err = realtime.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	bg.cancel = cancel
	pprof.Do(ctx, clientLabels, func(ctx context.Context) {
		go func() { bg.done <- bg.gw.Run(ctx) }()
	})
	b.Cleanup(bg.stop)
	bg.waitBound(b, "")
	return bg
}

func (bg *benchGateway) stop() {
	bg.cancel()
	select {
	case <-bg.done:
	case <-time.After(10 * time.Second):
	}
}

// waitBound waits until the gateway holds a session other than oldSID, the
// simulator has it bound to every module and the first prime is stored.
func (bg *benchGateway) waitBound(b *testing.B, oldSID string) *realtime.Status {
	b.Helper()
	deadline := time.Now().Add(20 * time.Second)
	want := len(bg.sim.Devids())
	for {
		st := bg.gw.Status()
		if st.Ready && st.Connected && st.NamespaceSID != "" && st.NamespaceSID != oldSID && bg.simBound(st.NamespaceSID) == want {
			return st
		}
		if time.Now().After(deadline) {
			b.Fatalf("gateway not bound: connected=%v sid=%q ready=%v session=%+v", st.Connected, st.NamespaceSID, st.Ready, st.Session)
		}
		time.Sleep(time.Millisecond)
	}
}

func (bg *benchGateway) simBound(sid string) int {
	for _, s := range bg.sim.Sessions() {
		if s.SID == sid && s.Connected {
			return len(s.Bound)
		}
	}
	return 0
}

// valueKeys returns up to n value-channel keys ("P4.v3") of a module.
func (bg *benchGateway) valueKeys(devid string, n int) []string {
	var keys []string
	for k := range bg.sim.Params(devid) {
		if _, rest, ok := strings.Cut(k, "."); ok && strings.HasPrefix(rest, "v") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys[:min(n, len(keys))]
}

// waitEvents reports whether at least n parameter-change events arrived
// within d.
func (bg *benchGateway) waitEvents(n int64, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for bg.events.Load() < n {
		select {
		case <-bg.wake:
		case <-deadline.C:
			return bg.events.Load() >= n
		}
	}
	return true
}

// awaitEvents waits until at least n parameter-change events arrived,
// failing after a deadline with what was seen.
func (bg *benchGateway) awaitEvents(b *testing.B, n int64, window int64) {
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for bg.events.Load() < n-window {
		select {
		case <-bg.wake:
		case <-deadline.C:
			b.Fatalf("ingest stalled: %d of %d events arrived", bg.events.Load(), n)
		}
	}
}

// ingestWindow bounds the events pushed but not yet stored, far below the
// transport's event buffer: the benchmark measures sustained throughput,
// not a burst that overflows into a re-prime.
const ingestWindow = 256

// BenchmarkIngest pushes live deltas from the simulator's Socket.IO server
// over loopback through the real transport, decoder, store and gateway loop.
//
//   - setparam: one delta per update (SetParam), the worst case per event;
//   - drift: the simulator's drift step, one delta per module with 2-4
//     values each, for 10 modules.
//
// Each iteration is one SetParam or one Drift call. Reported: updates/s,
// events/s and process CPU µs per update and per event (client and server
// together: run with -cpuprofile and `go tool pprof -tags` for the
// side=client share).
//
// The baselines (transport-only/...) push the same deltas to a bare
// transport session bound by hand and only count the events: the Socket.IO
// library and transport alone, without decoder, store or gateway.
func BenchmarkIngest(b *testing.B) {
	b.Run("transport-only/setparam", func(b *testing.B) {
		bt := startBenchTransport(b, 1, 800)
		devid := bt.sim.Devids()[0]
		keys := bt.valueKeys(devid, 200)
		runIngest(b, bt, func(i int) int64 {
			bt.sim.SetParam(devid, keys[i%len(keys)], float64(i))
			return 1
		})
	})
	b.Run("transport-only/drift", func(b *testing.B) {
		bt := startBenchTransport(b, 10, 1000)
		modules := int64(len(bt.sim.Devids()))
		runIngest(b, bt, func(int) int64 {
			bt.sim.Drift()
			return modules
		})
	})
	b.Run("setparam", func(b *testing.B) {
		bg := startBenchGateway(b, 1, 800, nil)
		devid := bg.sim.Devids()[0]
		keys := bg.valueKeys(devid, 200)
		runIngest(b, bg, func(i int) int64 {
			bg.sim.SetParam(devid, keys[i%len(keys)], float64(i))
			return 1
		})
	})
	b.Run("drift", func(b *testing.B) {
		bg := startBenchGateway(b, 10, 1000, nil)
		modules := int64(len(bg.sim.Devids()))
		runIngest(b, bg, func(int) int64 {
			bg.sim.Drift()
			return modules
		})
	})
}

// runIngest calls push b.N times (push returns the events it sent), keeping
// at most ingestWindow events in flight, then waits for all of them.
func runIngest(b *testing.B, bg *benchGateway, push func(i int) int64) {
	b.Helper()
	baseEvents, baseUpdates := bg.events.Load(), bg.updates.Load()
	var sent int64
	cpu0 := processCPU()
	start := time.Now()
	b.ResetTimer()
	pprof.Do(context.Background(), serverLabels, func(context.Context) {
		for i := 0; i < b.N; i++ {
			sent += push(i)
			bg.awaitEvents(b, baseEvents+sent, ingestWindow)
		}
	})
	bg.awaitEvents(b, baseEvents+sent, 0)
	b.StopTimer()
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	events := bg.events.Load() - baseEvents
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(events), "cpu-µs/event")
	if bg.gw == nil {
		return // transport only: values are not decoded, so not counted
	}
	if st := bg.gw.Status(); st.DroppedEvents != 0 {
		b.Fatalf("%d events dropped on a full buffer: the window is too large", st.DroppedEvents)
	}
	updates := bg.updates.Load() - baseUpdates
	if updates <= 0 {
		b.Fatal("no update reached the store")
	}
	b.ReportMetric(float64(updates)/elapsed.Seconds(), "updates/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(updates), "cpu-µs/update")
}

// startBenchTransport connects a bare transport session to the simulator,
// binds it to every module over REST and counts parameter-change events
// (nothing decodes them, so values are not counted: compare per event).
func startBenchTransport(b *testing.B, modules, perModule int) *benchGateway {
	b.Helper()
	bg := &benchGateway{done: make(chan error, 1), wake: make(chan struct{}, 1), cancel: func() {}}
	var startErr error
	pprof.Do(context.Background(), serverLabels, func(context.Context) {
		bg.sim = cloudsim.New(cloudsim.Options{Modules: modules, ParamsPerModule: perModule, Seed: 1, Logger: discardLogger()})
		startErr = bg.sim.Start("127.0.0.1:0")
	})
	if startErr != nil {
		b.Fatal(startErr)
	}
	b.Cleanup(func() { bg.sim.Close() })
	ctx := context.Background()
	client, err := cloudclient.New(cloudclient.Config{
		BaseURL: bg.sim.URL(), AssetsURL: bg.sim.URL(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
		Logger:      discardLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	bg.client = client
	devid := bg.sim.Devids()[0]
	probe := bg.valueKeys(devid, 1)[0]
	// A session whose bind did not take (or that the simulator lost while
	// joining) receives nothing; the gateway would replace it, so does this
	// harness, before any measurement.
	for attempt := 1; ; attempt++ {
		sess, tr := connectBound(b, ctx, bg.sim, client)
		seen := bg.events.Load()
		pprof.Do(ctx, clientLabels, func(context.Context) {
			go func() {
				for ev := range sess.Events() {
					if ev.Kind == cloudapi.EventParamsChange {
						bg.events.Add(1)
						select {
						case bg.wake <- struct{}{}:
						default:
						}
					}
				}
			}()
		})
		bg.sim.SetParam(devid, probe, -1.0)
		if bg.waitEvents(seen+1, 2*time.Second) {
			b.Cleanup(func() {
				_ = sess.Disconnect(ctx)
				_ = tr.Close()
			})
			break
		}
		_ = sess.Disconnect(ctx)
		_ = tr.Close()
		if attempt == 5 {
			b.Fatalf("no parameter push reached 5 bound transport sessions; simulator sessions: %+v", bg.sim.Sessions())
		}
	}
	return bg
}

// connectBound opens a transport session to the simulator and binds it to
// every module with its namespace SID, as the gateway does.
func connectBound(b *testing.B, ctx context.Context, sim *cloudsim.Cloud, client *cloudclient.Client) (transport.Session, transport.Transport) {
	b.Helper()
	var (
		tr   transport.Transport
		sess transport.Session
		err  error
	)
	pprof.Do(ctx, clientLabels, func(ctx context.Context) {
		tr, err = transport.New(transport.Config{BaseURL: sim.URL(), Header: realtime.HandshakeHeaders(client, sim.URL()), Logger: discardLogger()})
		if err == nil {
			sess, err = tr.Connect(ctx)
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	bound, err := client.ModulesConnect(ctx, cloudclient.BindRequest{
		NamespaceSID: sess.NamespaceSID(), EngineSID: sess.EngineSID(), Modules: sim.Devids(), GroupID: sim.ObjectID(),
	})
	if err != nil || !bound {
		b.Fatalf("bind: bound=%v err=%v", bound, err)
	}
	return sess, tr
}
