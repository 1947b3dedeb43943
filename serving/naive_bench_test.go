package serving_test

// The naive exporter scripts/footprint.sh measures beside serve: what an
// exporter of the same cloud written the obvious way with client_golang
// holds for the same account. It logs in like serve, lists the modules of
// every object, asks for their parameters (POST /v1/modules/parameters),
// decodes the answer with encoding/json, keeps the numbers in a map per
// module and polls that again every 15 s (it has no push session), and
// serves one prometheus.MustNewConstMetric per parameter through
// promhttp.HandlerFor, with the Go and process collectors serve registers
// too. It is this test binary started with BRAGERONE_BENCH_SERVE=naive and
// BRAGERONE_BENCH_CLOUD=<the simulator's URL>; it prints its address once
// the first answer is stored, and serves /metrics and /debug/pprof/ until
// its standard input closes.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
)

const benchCloudEnv = "BRAGERONE_BENCH_CLOUD"

// naiveExporter holds the last answer: devid → "P4.v1" → value.
type naiveExporter struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	values map[string]map[string]float64
}

func (n *naiveExporter) Describe(ch chan<- *prometheus.Desc) { ch <- n.desc }

func (n *naiveExporter) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for devid, params := range n.values {
		for key, v := range params {
			pool, param, _ := strings.Cut(key, ".")
			ch <- prometheus.MustNewConstMetric(n.desc, prometheus.GaugeValue, v, devid, param, pool)
		}
	}
}

// poll asks for every module's parameters and keeps the numbers.
func (n *naiveExporter) poll(ctx context.Context, client *cloudclient.Client, base string, devids []string) error {
	tok, err := client.AccessToken()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"modules": devids})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/modules/parameters", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer map[string]map[string]map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		return err
	}
	values := make(map[string]map[string]float64, len(answer))
	for devid, pools := range answer {
		params := map[string]float64{}
		for pool, entries := range pools {
			for key, body := range entries {
				if obj, ok := body.(map[string]any); ok {
					body = obj["value"]
				}
				switch v := body.(type) {
				case float64:
					params[pool+"."+key] = v
				case bool:
					params[pool+"."+key] = map[bool]float64{false: 0, true: 1}[v]
				case string:
					if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						params[pool+"."+key] = f
					}
				}
			}
		}
		values[devid] = params
	}
	n.mu.Lock()
	n.values = values
	n.mu.Unlock()
	return nil
}

// serveNaive is the naive exporter's process.
func serveNaive() error {
	base := os.Getenv(benchCloudEnv)
	if base == "" {
		return fmt.Errorf("%s: the simulated cloud's URL is not set", benchCloudEnv)
	}
	ctx := context.Background()
	client, err := cloudclient.New(cloudclient.Config{
		BaseURL: base, AssetsURL: base,
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: cloudsim.DefaultPassword}),
	})
	if err != nil {
		return err
	}
	if _, err := client.Login(ctx); err != nil {
		return err
	}
	objects, err := client.Objects(ctx)
	if err != nil {
		return err
	}
	var devids []string
	for _, o := range objects {
		l, err := client.Modules(ctx, o.ID)
		if err != nil {
			return err
		}
		for _, m := range l.Modules {
			devids = append(devids, m.Devid)
		}
	}
	n := &naiveExporter{desc: prometheus.NewDesc("bragerone_parameter_value", "Numeric value of parameter <pool>.<param>.", []string{"devid", "param", "pool"}, nil)}
	if err := n.poll(ctx, client, base, devids); err != nil {
		return err
	}
	go func() {
		for range time.Tick(15 * time.Second) {
			_ = n.poll(ctx, client, base, devids)
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(n, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, serveOpts(reg)))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Println(ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}
