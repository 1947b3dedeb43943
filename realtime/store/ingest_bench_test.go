package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// liveDelta is a live delta as the cloud (and the simulator) pushes it: one
// module, n value entries with their updatedAt.
func liveDelta(devid string, n, seq int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{%q:{"P4":{`, devid)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"v%d":{"value":%d.5,"updatedAt":%d}`, (seq*n+i)%300, seq%97, 1757000000+seq)
	}
	b.WriteString(`}}}`)
	return b.Bytes()
}

// BenchmarkDecodeAndStore is the client's own share of live ingest, without
// the network: DecodeParameters on a delta as pushed, then Store.ApplyLive,
// for deltas of 1 and 3 values (SetParam and a typical drift step) and for
// a 32-value burst. ns/update is per stored value. The baseline
// (values=N/encoding_json) is encoding/json's generic decode of the same
// deltas alone, before any flattening or storing.
func BenchmarkDecodeAndStore(b *testing.B) {
	for _, n := range []int{1, 3, 32} {
		b.Run(fmt.Sprintf("values=%d/encoding_json", n), func(b *testing.B) {
			payloads := make([][]byte, 64)
			for i := range payloads {
				payloads[i] = liveDelta("FTTCTBSLCE", n, i)
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var v map[string]any
				if err := json.Unmarshal(payloads[i%len(payloads)], &v); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/update")
			b.ReportMetric(1e9*float64(b.N*n)/float64(b.Elapsed().Nanoseconds()), "updates/s")
		})
		b.Run(fmt.Sprintf("values=%d/decode+store", n), func(b *testing.B) {
			st := store.New()
			payloads := make([][]byte, 64)
			for i := range payloads {
				payloads[i] = liveDelta("FTTCTBSLCE", n, i)
			}
			now := time.Unix(1757000000, 0)
			b.ReportAllocs()
			var updates int
			for i := 0; b.Loop(); i++ {
				ups, err := wire.DecodeParameters(payloads[i%len(payloads)])
				if err != nil {
					b.Fatal(err)
				}
				updates += st.ApplyLive(ups, store.SourceLive, now)
			}
			if updates != b.N*n {
				b.Fatalf("%d updates stored, want %d", updates, b.N*n)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(updates), "ns/update")
			b.ReportMetric(1e9*float64(updates)/float64(b.Elapsed().Nanoseconds()), "updates/s")
		})
	}
}

// simPrime returns the raw prime answer of the simulated cloud for modules
// × perModule parameters, as POST /v1/modules/parameters sends it.
func simPrime(b *testing.B, modules, perModule int) []byte {
	b.Helper()
	sim := cloudsim.New(cloudsim.Options{Modules: modules, ParamsPerModule: perModule, Seed: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	client, err := cloudclient.New(cloudclient.Config{
		BaseURL: sim.URL(), AssetsURL: sim.URL(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := client.Login(context.Background()); err != nil {
		b.Fatal(err)
	}
	tok, err := client.AccessToken()
	if err != nil {
		b.Fatal(err)
	}
	body := fmt.Sprintf(`{"modules":%s}`, jsonStrings(sim.Devids()))
	req, _ := http.NewRequest(http.MethodPost, sim.URL()+"/v1/modules/parameters", bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("prime: %d %v", resp.StatusCode, err)
	}
	return raw
}

func jsonStrings(ss []string) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q", s)
	}
	b.WriteByte(']')
	return b.String()
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkStoreFootprint primes a store with the simulator's answer for 10
// modules × 1000 parameters (values and their meta keys, as sent) and
// reports the live heap the store keeps per stored parameter after a GC.
// Each iteration builds one store; the figure is the mean. The baseline
// (encoding_json) keeps the same answer as encoding/json's generic
// map[string]any tree instead.
func BenchmarkStoreFootprint(b *testing.B) {
	raw := simPrime(b, 10, 1000)
	b.Run("encoding_json", func(b *testing.B) {
		var total uint64
		for b.Loop() {
			before := heapInUse()
			var tree map[string]any
			if err := json.Unmarshal(raw, &tree); err != nil {
				b.Fatal(err)
			}
			after := heapInUse()
			runtime.KeepAlive(tree)
			if after > before {
				total += after - before
			}
		}
		b.ReportMetric(float64(total)/float64(b.N)/10000, "heap-B/param")
	})
	b.Run("store", func(b *testing.B) { benchStoreFootprint(b, raw) })
}

func benchStoreFootprint(b *testing.B, raw []byte) {
	now := time.Unix(1757000000, 0)
	var total uint64
	var params int
	b.ReportAllocs()
	for b.Loop() {
		before := heapInUse()
		st := store.New()
		ups, err := wire.DecodeParameters(raw)
		if err != nil {
			b.Fatal(err)
		}
		st.ApplyPrime(st.BeginPrime(), ups, now)
		ups = nil
		after := heapInUse()
		n := 0
		for _, s := range st.Stats() {
			n += s.Params
		}
		runtime.KeepAlive(st)
		if after > before {
			total += after - before
		}
		params += n
	}
	b.ReportMetric(float64(total)/float64(params), "heap-B/param")
	b.ReportMetric(float64(params)/float64(b.N), "params")
}

// BenchmarkPrimePeak stores the simulator's prime answer for 100 modules ×
// 1000 parameters (2.2 MB of JSON) in a new store, the two ways the
// gateway could: "whole" decodes the answer (wire.DecodeParameters), then
// stores it (what the gateway did before issue 23), "each" decodes and
// stores it one module at a time (wire.DecodeParametersEach, what
// cloudclient.PrimeEach and the gateway do now). Reported: the live heap
// at its highest while the prime is stored (peak-live-MB, sampled after a
// forced collection at each step: the decoded answer, then every 10th
// module; the answer's bytes count in both), the store once done
// (store-MB), and B/op.
func BenchmarkPrimePeak(b *testing.B) {
	raw := simPrime(b, 100, 1000)
	now := time.Unix(1757000000, 0)
	for _, way := range []string{"whole", "each"} {
		b.Run(way, func(b *testing.B) {
			var peak, final float64
			b.ReportAllocs()
			for b.Loop() {
				base := heapInUse()
				high := uint64(0)
				sample := func() {
					if h := heapInUse(); h > base && h-base > high {
						high = h - base
					}
				}
				st := store.New()
				mark := st.BeginPrime()
				if way == "whole" {
					ups, err := wire.DecodeParameters(raw)
					if err != nil {
						b.Fatal(err)
					}
					sample()
					st.ApplyPrime(mark, ups, now)
					sample()
					runtime.KeepAlive(ups)
				} else {
					n := 0
					err := wire.DecodeParametersEach(raw, func(ups []wire.ParamUpdate) {
						st.ApplyPrime(mark, ups, now)
						if n++; n%10 == 0 {
							sample()
						}
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				done := heapInUse() - base
				runtime.KeepAlive(st)
				peak += float64(high) / 1e6
				final += float64(done) / 1e6
			}
			b.ReportMetric(peak/float64(b.N), "peak-live-MB")
			b.ReportMetric(final/float64(b.N), "store-MB")
		})
	}
}
