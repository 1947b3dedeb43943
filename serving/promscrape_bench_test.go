package serving_test

// The scrape as users get it: each /metrics handler in a process of its own,
// scraped over loopback HTTP by a net/http client (BenchmarkHTTPScrape) and
// by a real Prometheus server (BenchmarkPrometheusScrape). Both need
// BRAGERONE_BENCH_SERVERS=1 (they start server processes and, for the
// second, Prometheus); scripts/bench.sh runs them.
//
// The server processes are this test binary, started again with
// BRAGERONE_BENCH_SERVE=<kind>:<modules>:<per module> (or "naive", the
// naive exporter of scripts/footprint.sh: naive_bench_test.go), kind "exporter"
// (serving.NewHandler, as serve runs it) or "baseline" (promhttp over a
// plain MustNewConstMetric collector); it prints its address and serves
// until its standard input closes. BRAGERONE_BENCH_BEFORE=<test binary>
// adds a third target, "before": the same kind "exporter" served by a
// test binary built from another tree (scripts/bench.sh builds one from an
// earlier commit with this file copied in), so before and after are
// measured in one run.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/internal/promrequest"
	"github.com/bragerone/bragerone_exporter/serving"
)

const (
	benchServersEnv = "BRAGERONE_BENCH_SERVERS"
	benchServeEnv   = "BRAGERONE_BENCH_SERVE"
	benchBeforeEnv  = "BRAGERONE_BENCH_BEFORE"
	// BRAGERONE_BENCH_PROMETHEUS_SECONDS: how long Prometheus scrapes
	// (default 90); BRAGERONE_BENCH_PROMETHEUS_INTERVAL: its scrape
	// interval (default 5s); BRAGERONE_BENCH_PROMETHEUS: the server's
	// binary (default: prometheus on the PATH).
	benchPromSecondsEnv  = "BRAGERONE_BENCH_PROMETHEUS_SECONDS"
	benchPromIntervalEnv = "BRAGERONE_BENCH_PROMETHEUS_INTERVAL"
	benchPromBinaryEnv   = "BRAGERONE_BENCH_PROMETHEUS"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchServeEnv) == "naive" {
		if err := serveNaive(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if spec := os.Getenv(benchServeEnv); spec != "" {
		if err := serveBenchTarget(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveBenchTarget is the server process: one handler over a filled store.
func serveBenchTarget(spec string) error {
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return fmt.Errorf("%s=%q: want kind:modules:perModule", benchServeEnv, spec)
	}
	modules, err1 := strconv.Atoi(parts[1])
	perModule, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s=%q: bad sizes", benchServeEnv, spec)
	}
	st, snap := filledStore(modules, perModule)
	reg := prometheus.NewRegistry()
	var h http.Handler
	switch parts[0] {
	case "exporter", "static":
		c, err := collector.New(collector.SnapshotFunc(func() collector.Snapshot { return snap }),
			collector.ParamSourceFunc(st.ForEachParamInLabelOrder), collector.Options{})
		if err != nil {
			return err
		}
		h = serving.NewHandler(reg, c, serveOpts(reg))
		if parts[0] == "static" {
			h = replayHandler(h)
		}
	case "baseline":
		reg.MustRegister(&baselineCollector{
			desc:  prometheus.NewDesc("bragerone_parameter_value", "Numeric value of parameter <pool>.<param>.", []string{"devid", "pool", "param"}, nil),
			store: st,
		})
		h = promhttp.HandlerFor(reg, serveOpts(reg))
	default:
		return fmt.Errorf("%s=%q: unknown kind", benchServeEnv, spec)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	runtime.GC()
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	go func() { _ = http.Serve(ln, mux) }()
	fmt.Println(ln.Addr().String())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the benchmark is done with us
	return nil
}

// replayHandler answers each distinct request (Accept, Accept-Encoding)
// with what h answered the first time: a target that costs next to nothing
// to scrape, so that what a scrape costs Prometheus itself shows.
func replayHandler(h http.Handler) http.Handler {
	var mu sync.Mutex
	answers := map[string]*httptest.ResponseRecorder{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Accept") + "\x00" + r.Header.Get("Accept-Encoding")
		mu.Lock()
		a := answers[key]
		if a == nil {
			a = httptest.NewRecorder()
			h.ServeHTTP(a, r)
			answers[key] = a
		}
		mu.Unlock()
		for k, v := range a.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(a.Code)
		_, _ = w.Write(a.Body.Bytes())
	})
}

// benchTarget is a running server process.
type benchTarget struct {
	name, addr string
	cmd        *exec.Cmd
	stdin      io.WriteCloser
}

func startBenchTarget(b *testing.B, name, bin, kind string, modules, perModule int) *benchTarget {
	b.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d:%d", benchServeEnv, kind, modules, perModule))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	t := &benchTarget{name: name, cmd: cmd, stdin: stdin}
	b.Cleanup(t.stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("%s: no address: %v", name, err)
	}
	t.addr = strings.TrimSpace(line)
	return t
}

func (t *benchTarget) stop() {
	if t.stdin != nil {
		_ = t.stdin.Close()
		t.stdin = nil
		_ = t.cmd.Wait()
	}
}

// startBenchTargets starts the exporter, the baseline, with floor the
// exporter's answers replayed ("floor") and, with BRAGERONE_BENCH_BEFORE,
// the earlier exporter.
func startBenchTargets(b *testing.B, modules, perModule int, floor bool) []*benchTarget {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ts := []*benchTarget{
		startBenchTarget(b, "exporter", self, "exporter", modules, perModule),
		startBenchTarget(b, "baseline", self, "baseline", modules, perModule),
	}
	if floor {
		ts = append(ts, startBenchTarget(b, "floor", self, "static", modules, perModule))
	}
	if before := os.Getenv(benchBeforeEnv); before != "" {
		ts = append(ts, startBenchTarget(b, "before", before, "exporter", modules, perModule))
	}
	return ts
}

func needServers(b *testing.B) {
	if os.Getenv(benchServersEnv) == "" {
		b.Skipf("starts server processes (and Prometheus): set %s=1 (scripts/bench.sh does)", benchServersEnv)
	}
}

// httpFormats are the requests of the HTTP table: Accept, Accept-Encoding.
var httpFormats = []struct{ name, accept, encoding string }{
	{"text", "text/plain;version=0.0.4", ""},
	{"text+gzip", "text/plain;version=0.0.4", "gzip"},
	{"openmetrics", "application/openmetrics-text;version=1.0.0", ""},
	{"openmetrics+gzip", "application/openmetrics-text;version=1.0.0", "gzip"},
	{"openmetrics+zstd", "application/openmetrics-text;version=1.0.0", "zstd"},
	// What Prometheus 2.42 and 3.16 send by default.
	{"prometheus", promrequest.Prometheus2Accept, promrequest.AcceptEncoding},
	{"prometheus3", promrequest.Prometheus3Accept, promrequest.AcceptEncoding},
}

// BenchmarkHTTPScrape GETs /metrics of each target over loopback for 1k,
// 10k and 100k parameter series in every format, with and without
// compression, reading the body as sent (not decompressed), as curl does.
// Reported: ns/series of the whole exchange and wire bytes per series.
func BenchmarkHTTPScrape(b *testing.B) {
	needServers(b)
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, size := range scrapeSizes {
		n := size.modules * size.perModule
		targets := startBenchTargets(b, size.modules, size.perModule, false)
		for _, f := range httpFormats {
			for _, t := range targets {
				b.Run(fmt.Sprintf("series=%d/%s/%s", n, f.name, t.name), func(b *testing.B) {
					req, err := http.NewRequest(http.MethodGet, "http://"+t.addr+"/metrics", nil)
					if err != nil {
						b.Fatal(err)
					}
					req.Header.Set("Accept", f.accept)
					if f.encoding != "" {
						req.Header.Set("Accept-Encoding", f.encoding)
					}
					get := func() int64 {
						resp, err := client.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						defer resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							b.Fatalf("%s: %s", t.name, resp.Status)
						}
						if ce := resp.Header.Get("Content-Encoding"); ce != f.encoding {
							// An earlier exporter that does not offer it.
							b.Skipf("%s answers Content-Encoding %q when asked for %q", t.name, ce, f.encoding)
						}
						k, err := io.Copy(io.Discard, resp.Body)
						if err != nil {
							b.Fatal(err)
						}
						return k
					}
					wire := get() // connection and caches warm
					for b.Loop() {
						get()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/series")
					b.ReportMetric(float64(wire)/float64(n), "wire-B/series")
				})
			}
		}
		for _, t := range targets {
			t.stop()
		}
	}
}

// BenchmarkPrometheusScrape has Debian's Prometheus scrape the targets
// (100 × 1000 parameter series each) with its default request (OpenMetrics
// first, gzip) and reports, per target, the median of scrape_duration_seconds
// over the run and that per parameter series. A fourth target, "floor",
// replays the exporter's first answer to each request, so its median is
// what the scrape costs Prometheus itself (request, gunzip, parse, append).
// One iteration is the whole run; use -benchtime 1x.
func BenchmarkPrometheusScrape(b *testing.B) {
	needServers(b)
	bin := os.Getenv(benchPromBinaryEnv)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("prometheus"); err != nil {
			b.Fatal("prometheus not found: install the Debian package `prometheus`")
		}
	}
	var err error
	seconds, interval := 90, "5s"
	if v := os.Getenv(benchPromSecondsEnv); v != "" {
		if seconds, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	if v := os.Getenv(benchPromIntervalEnv); v != "" {
		interval = v
	}
	const modules, perModule = 100, 1000
	n := modules * perModule
	for b.Loop() {
		targets := startBenchTargets(b, modules, perModule, true)
		dir := b.TempDir()
		var cfg strings.Builder
		fmt.Fprintf(&cfg, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n", interval, interval)
		for _, t := range targets {
			fmt.Fprintf(&cfg, "  - job_name: %s\n    static_configs:\n      - targets: [%q]\n", t.name, t.addr)
		}
		if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		promAddr := ln.Addr().String()
		ln.Close()
		prom := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+promAddr, "--log.level=warn")
		prom.Stderr = os.Stderr
		if err := prom.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = prom.Process.Kill(); _ = prom.Wait() })

		query := func(q string) (map[string]float64, error) {
			resp, err := http.Get("http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q))
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			var r struct {
				Status string
				Data   struct {
					Result []struct {
						Metric map[string]string
						Value  [2]any
					}
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				return nil, err
			}
			out := map[string]float64{}
			for _, s := range r.Data.Result {
				v, _ := s.Value[1].(string)
				out[s.Metric["job"]], _ = strconv.ParseFloat(v, 64)
			}
			return out, nil
		}
		// Wait until every target has been scraped up, then let it run.
		deadline := time.Now().Add(180 * time.Second) // a first scrape creates every series
		for {
			up, err := query("up == 1")
			if err == nil && len(up) == len(targets) {
				break
			}
			if time.Now().After(deadline) {
				var detail string
				if resp, err := http.Get("http://" + promAddr + "/api/v1/targets"); err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					detail = string(body)
				}
				b.Fatalf("targets not all up: %v %v\n%s", up, err, detail)
			}
			time.Sleep(500 * time.Millisecond)
		}
		time.Sleep(time.Duration(seconds) * time.Second)
		window := fmt.Sprintf("[%ds]", seconds)
		med, err := query("quantile_over_time(0.5, scrape_duration_seconds" + window + ")")
		if err != nil {
			b.Fatal(err)
		}
		count, _ := query("count_over_time(scrape_duration_seconds" + window + ")")
		upMin, _ := query("min_over_time(up" + window + ")")
		samples, _ := query("scrape_samples_scraped")
		for _, t := range targets {
			if upMin[t.name] != 1 {
				b.Errorf("%s was down during the run", t.name)
			}
			b.ReportMetric(med[t.name]*1e3, t.name+"-ms")
			b.ReportMetric(med[t.name]*1e9/float64(n), t.name+"-ns/series")
			b.ReportMetric(count[t.name], t.name+"-scrapes")
			b.ReportMetric(samples[t.name], t.name+"-samples")
		}
		if med["exporter"] > 0 && !math.IsNaN(med["baseline"]) {
			b.ReportMetric(med["baseline"]/med["exporter"], "baseline÷exporter")
		}
		for _, t := range targets {
			t.stop()
		}
	}
}
