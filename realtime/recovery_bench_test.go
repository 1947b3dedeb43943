package realtime_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// BenchmarkRecovery measures, over loopback with the default gateway
// configuration, the time from a transport drop on the simulator until a new
// namespace SID is bound to every module at the simulator and the prime
// requested after the reconnect is in the store. The drop is a clean
// WebSocket close (fault close_transport) or a TCP reset (abort_transport).
// Each iteration is one drop; run with -benchtime=50x for the median and p95
// of 50 drops.
//
// The baseline (direct) is the same work done in a straight line by the
// benchmark itself, with no drop to notice: connect a transport session,
// bind it over REST, prime and store. It is the floor the gateway's
// recovery can approach.
func BenchmarkRecovery(b *testing.B) {
	b.Run("direct", benchDirectReconnect)
	for _, kind := range []cloudsim.FaultKind{cloudsim.FaultCloseTransport, cloudsim.FaultAbortTransport} {
		b.Run(string(kind), func(b *testing.B) { benchRecovery(b, kind) })
	}
}

func benchRecovery(b *testing.B, kind cloudsim.FaultKind) {
	bg := startBenchGateway(b, cloudsim.DefaultModules, cloudsim.DefaultParamsPerModule, nil)
	devids := bg.sim.Devids()
	probes := make([]store.Key, 0, len(devids))
	for _, d := range devids {
		k, ok := store.ParseKey(bg.valueKeys(d, 1)[0])
		if !ok {
			b.Fatal("unparseable simulator key")
		}
		probes = append(probes, k)
	}
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		old := bg.gw.Status().NamespaceSID
		start := time.Now()
		bg.sim.Inject(cloudsim.Fault{Kind: kind})
		deadline := start.Add(20 * time.Second)
		for {
			st := bg.gw.Status()
			if st.Connected && st.NamespaceSID != old && bg.simBound(st.NamespaceSID) == len(devids) && bg.primedSince(devids, probes, start) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("no recovery within 20s: connected=%v sid=%q (old %q) session=%+v", st.Connected, st.NamespaceSID, old, st.Session)
			}
			time.Sleep(200 * time.Microsecond)
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	reportLatencies(b, took)
}

// primedSince reports whether every module's probe parameter was written by
// a prime at or after since.
func (bg *benchGateway) primedSince(devids []string, probes []store.Key, since time.Time) bool {
	for i, d := range devids {
		e, ok := bg.store.Get(d, probes[i])
		if !ok || e.Source != store.SourcePrime || e.UpdatedAt.Before(since) {
			return false
		}
	}
	return true
}

func benchDirectReconnect(b *testing.B) {
	bt := startBenchTransport(b, cloudsim.DefaultModules, cloudsim.DefaultParamsPerModule)
	ctx := context.Background()
	st := store.New()
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		sess, tr := connectBound(b, ctx, bt.sim, bt.client)
		mark := st.BeginPrime()
		ups, err := bt.client.Prime(ctx, bt.sim.Devids())
		if err != nil {
			b.Fatal(err)
		}
		st.ApplyPrime(mark, ups, time.Now())
		took = append(took, time.Since(start))
		b.StopTimer()
		_ = sess.Disconnect(ctx)
		_ = tr.Close()
		b.StartTimer()
	}
	b.StopTimer()
	reportLatencies(b, took)
}

func reportLatencies(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(took[(len(took)*95+99)/100-1].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
}
