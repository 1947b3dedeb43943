package realtime_test

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// The soak is opt-in: it runs for as long as -soak says and is not part of
// the default test run.
var (
	soak         = flag.Duration("soak", 0, "run the fault-churn soak for this long (e.g. -soak=5m); 0 skips it")
	soakSeed     = flag.Uint64("soak.seed", 1, "seed of the soak's fault schedule")
	soakInterval = flag.Duration("soak.sample", 10*time.Second, "how often the soak samples goroutines, heap and open files")
	soakStacks   = flag.Bool("soak.stacks", false, "log the goroutines (grouped by stack) and open files at the end of the soak")
)

// Resource bounds of the soak. Growth compares the median of the last third
// of the samples with the median of the second third (the first third is
// warm-up: connection pools, buffers and caches fill there); a bounded
// process stays within factor×before+slack, while a leak of so much per
// reconnect grows the last third's median by about half over the second's.
// The caps bound every sample. The figures are the whole test process: the
// exporter and the simulated cloud, less the chaos proxy's goroutines and
// descriptors when one is in between (Toxiproxy leaves the goroutines of a
// toxic stage blocked once its connection is gone; they are the test's
// tool, not the exporter); the table also splits goroutines and descriptors
// by side, so a failure says whose they are.
var soakBounds = []struct {
	name   string
	factor float64
	slack  float64
	cap    float64
}{
	{"goroutines", 1.2, 20, 2000},
	{"heap_inuse_MiB", 1.2, 4, 256},
	{"open_fds", 1.2, 10, 512},
}

// recoveryDeadline bounds the recovery after the churn: a cleared cloud must
// see the exporter up, bound, push-healthy and complete within it. It spans
// a worst-case quarantine (soakQuarantine) and a few cooldowns.
const recoveryDeadline = 30 * time.Second

const soakQuarantine = 2 * time.Second

type soakSample struct {
	at          time.Duration
	goroutines  float64
	heapMiB     float64
	fds         float64
	rounds      int
	sioRequests int
	side        resourceSides
	recoveries  float64
}

// values are what the bounds judge: the chaos proxy's goroutines and
// descriptors left out.
func (s soakSample) values() []float64 {
	return []float64{s.goroutines - float64(s.side.proxyGoroutines), s.heapMiB, s.fds - float64(s.side.proxyFDs)}
}

// takeSoakSample samples the process; proxyURL is the chaos proxy's ("" when
// the exporter talks to the simulator directly).
func takeSoakSample(t *testing.T, at time.Duration, simURL, proxyURL string) soakSample {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting open files: %v (the soak needs /proc)", err)
	}
	return soakSample{
		at:         at,
		goroutines: float64(runtime.NumGoroutine()),
		heapMiB:    float64(ms.HeapInuse) / (1 << 20),
		fds:        float64(len(fds)),
		side:       sides(simURL, proxyURL),
	}
}

// TestSoakFaultChurn runs the real gateway, the real REST client and the real
// Socket.IO transport against the simulated cloud over loopback while a
// seeded schedule switches the cloud's faults on and off (closed and aborted
// transports, muted pushes, stalled handshakes, 503 storms on REST paths,
// degraded and missing module rows, modules going offline, revoked tokens)
// with parameters drifting throughout. It samples goroutines, heap in use
// and open file descriptors and fails when they grow without bound, or when
// the exporter does not recover completely once every fault is cleared.
//
// Run it with:
//
//	go test ./realtime -run SoakFault -soak=5m -v
//
// (-soak.seed=N picks another fault schedule, -soak.sample=D the sampling
// period, -soak.stacks logs the goroutines and open files at the end;
// GATEWAY_TEST_LOG=1 logs the gateway at debug level. A soak longer than
// about nine minutes needs -timeout above go test's default of 10m.)
func TestSoakFaultChurn(t *testing.T) {
	if *soak <= 0 {
		t.Skip("the fault-churn soak is opt-in: go test ./realtime -run SoakFault -soak=5m -v")
	}
	if *soakInterval <= 0 {
		t.Fatalf("-soak.sample must be positive, got %v", *soakInterval)
	}
	s := startScenario(t, scenarioSetup{
		sim: func(o *cloudsim.Options) {
			o.Modules = 3
			o.ParamsPerModule = 60
			o.DriftInterval = 0 // the soak drives drift itself, so it can stop it
			// A dead transport is noticed by pings within a second.
			o.PingInterval = 300 * time.Millisecond
			o.PingTimeout = 300 * time.Millisecond
			o.ConnectTimeout = time.Second
		},
		client: func(c *cloudclient.Config) { c.Timeout = time.Second },
		gw: func(c *realtime.Config) {
			c.PollInterval = 100 * time.Millisecond
			c.SupervisorInterval = 100 * time.Millisecond
			c.HealthInterval = 20 * time.Millisecond
			c.SessionHysteresis = 200 * time.Millisecond
			c.ReconnectBackoff = 20 * time.Millisecond
			c.StartRetryMax = 100 * time.Millisecond
			c.Ladder.StaleAfter = 300 * time.Millisecond
			c.Ladder.CooldownBase = 100 * time.Millisecond
			c.Ladder.CooldownMax = 200 * time.Millisecond
			c.Ladder.QuarantineFor = soakQuarantine
			c.Ladder.ModuleOnlineDebounce = 100 * time.Millisecond
		},
	})
	s.waitUp()

	rng := rand.New(rand.NewPCG(*soakSeed, 0x50a4))
	devids := s.sim.Devids()
	restPaths := []string{
		"POST /v1/auth/user", "/v1/modules", "POST /v1/modules/parameters", "POST /v1/modules/connect",
		"GET /v1/objects", "POST /v1/modules/alarms/quantity", "GET /v1/user",
	}

	// Parameters drift while the faults churn, so there is live traffic to
	// lose and push health to judge.
	endDrift := startDrift(s.sim)
	defer func() { endDrift() }()

	// One churn round switches one or two faults on, holds them for a short
	// while, and switches them off again.
	type applied struct {
		what  string
		clear func()
	}
	inject := func(f cloudsim.Fault) func() {
		id, err := s.sim.InjectFault(f)
		if err != nil {
			t.Fatalf("injecting %+v: %v", f, err)
		}
		return func() { s.sim.Clear(id) }
	}
	nop := func() {}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	faults := []func() applied{
		func() applied {
			return applied{"close_transport", inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})}
		},
		func() applied {
			return applied{"abort_transport", inject(cloudsim.Fault{Kind: cloudsim.FaultAbortTransport})}
		},
		func() applied { return applied{"mute_pushes", inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})} },
		func() applied {
			d := pick(devids)
			return applied{"mute_pushes " + d, inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, Devid: d})}
		},
		func() applied {
			// A stalled handshake only bites when a reconnect happens, so
			// the transport goes too.
			c := inject(cloudsim.Fault{Kind: cloudsim.FaultStallHandshake})
			inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
			return applied{"stall_handshake+close", c}
		},
		func() applied {
			p := pick(restPaths)
			return applied{"http_status 503 " + p, inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: p, Status: 503})}
		},
		func() applied {
			c := inject(cloudsim.Fault{Kind: cloudsim.FaultHandshake503})
			inject(cloudsim.Fault{Kind: cloudsim.FaultAbortTransport})
			return applied{"handshake_503+abort", c}
		},
		func() applied {
			return applied{"dispatch_timeout prime", inject(cloudsim.Fault{Kind: cloudsim.FaultDispatchTimeout, Path: "POST /v1/modules/parameters"})}
		},
		func() applied {
			d := pick(devids)
			return applied{"degraded_row " + d, inject(cloudsim.Fault{Kind: cloudsim.FaultDegradedRow, Devid: d})}
		},
		func() applied {
			d := pick(devids)
			return applied{"missing_row " + d, inject(cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: d})}
		},
		func() applied {
			return applied{"connect_not_bound", inject(cloudsim.Fault{Kind: cloudsim.FaultConnectNotBound})}
		},
		func() applied {
			d := pick(devids)
			s.sim.SetModuleOnline(d, false)
			return applied{"module offline " + d, func() { s.sim.SetModuleOnline(d, true) }}
		},
		func() applied {
			s.sim.RevokeTokens()
			return applied{"revoke_tokens", nop}
		},
		func() applied {
			d := pick(devids)
			s.sim.EmitMemoryUpdated(d)
			return applied{"memory_updated " + d, nop}
		},
		func() applied {
			for range 1 + rng.IntN(5) {
				s.sim.Drift()
			}
			return applied{"drift burst", nop}
		},
	}

	start := time.Now()
	var samples []soakSample
	rounds := 0
	kinds := map[string]int{}
	sample := func() {
		sm := takeSoakSample(t, time.Since(start).Round(time.Second), s.sim.URL(), "")
		sm.rounds = rounds
		sm.sioRequests = s.sim.Requests("GET /socket.io/")
		sm.recoveries = s.sum("bragerone_recovery_actions_total")
		samples = append(samples, sm)
		for i, b := range soakBounds {
			if v := sm.values()[i]; v > b.cap {
				t.Errorf("%s = %.1f at %v, above the cap %.0f", b.name, v, sm.at, b.cap)
			}
		}
	}
	sample()
	nextSample := start.Add(*soakInterval)
	for time.Since(start) < *soak {
		rounds++
		var on []applied
		for range 1 + rng.IntN(2) {
			a := faults[rng.IntN(len(faults))]()
			on = append(on, a)
			kinds[strings.Fields(a.what)[0]]++
		}
		// Holding a fault is the schedule, not a wait for a condition.
		time.Sleep(time.Duration(100+rng.IntN(500)) * time.Millisecond)
		for _, a := range on {
			a.clear()
		}
		s.sim.ClearAll() // consumed or not, no fault outlives its round
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		if time.Now().After(nextSample) {
			sample()
			nextSample = nextSample.Add(*soakInterval)
		}
	}

	// The churn ends: every fault cleared, every module online, drift
	// stopped so the values hold still for the comparison.
	endDrift()
	s.sim.ClearAll()
	for _, d := range devids {
		s.sim.SetModuleOnline(d, true)
	}
	churned := time.Since(start)
	recoveredIn := soakRecover(t, s, func() { endDrift = startDrift(s.sim) })
	endDrift()
	sample()

	t.Logf("soak: seed %d, %v of churn, %d rounds, recovered in %v after the churn ended", *soakSeed, churned.Round(time.Second), rounds, recoveredIn.Round(time.Millisecond))
	t.Logf("fault rounds by kind: %v", kinds)
	t.Logf("recovery actions: %s", soakRecoveryCounts(s))
	t.Logf("\n%s", soakTable(samples))

	if len(samples) < 6 {
		t.Logf("only %d samples: too few to judge growth (run longer or sample more often)", len(samples))
		return
	}
	grew := false
	defer func() {
		if grew || *soakStacks {
			t.Logf("goroutines at the end, by where they wait and who started them:\n%s", goroutineSummary())
			t.Logf("open files at the end:\n%s", openFiles(s.sim.URL(), ""))
		}
	}()
	grew = soakGrowth(t, samples)
}

// soakGrowth fails the test when a bounded figure grows without bound
// across samples (see soakBounds) and reports whether one did.
func soakGrowth(t *testing.T, samples []soakSample) (grew bool) {
	t.Helper()
	third := len(samples) / 3
	for i, b := range soakBounds {
		var mid, last []float64
		for _, sm := range samples[third : 2*third] {
			mid = append(mid, sm.values()[i])
		}
		for _, sm := range samples[len(samples)-third:] {
			last = append(last, sm.values()[i])
		}
		before, after := median(mid), median(last)
		if limit := before*b.factor + b.slack; after > limit {
			grew = true
			t.Errorf("%s grows without bound: median %.1f in the last third, %.1f in the second third (limit %.1f)", b.name, after, before, limit)
		}
	}
	return grew
}

// startDrift makes the cloud drift every 100 ms until the returned stop is
// called (stop waits for the drift to end and may be called again).
func startDrift(sim *cloudsim.Cloud) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				sim.Drift()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// soakRecover waits, with recoveryDeadline, until the exporter shows a
// complete recovery once the churn has ended: session up and bound at the
// cloud with every module online; every value the cloud holds exported
// (drift is stopped, so the values hold still); then, with live traffic
// resumed (resumeDrift), a live update stored, push healthy, no quarantine
// and no recovery step in flight, and none starting for a second. It returns
// how long the recovery took.
func soakRecover(t *testing.T, s *scenario, resumeDrift func()) time.Duration {
	t.Helper()
	begin := time.Now()
	deadline := begin.Add(recoveryDeadline)
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("no recovery within %v after the churn: %s never held; the exporter shows:%s", recoveryDeadline, what, s.dump())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait("session up, bound at the cloud, modules online", func() bool {
		st := s.gw.Status()
		if !st.Connected || st.NamespaceSID == "" || !s.is(1, "bragerone_session_up") {
			return false
		}
		ss, ok := s.simSession(st.NamespaceSID)
		if !ok || !ss.Connected || len(ss.Bound) < len(s.sim.Devids()) {
			return false
		}
		for _, d := range s.sim.Devids() {
			if !s.is(1, "bragerone_module_online", "devid", d) {
				return false
			}
		}
		return true
	})
	var diff string
	wait("nothing lost (every simulator value exported)", func() bool {
		diff = s.lostDiff()
		return diff == ""
	})

	// Live traffic again: without it a silent session is, rightly, a
	// zombie after StaleAfter. A live update must arrive: change a value
	// until the exporter has it as a pushed update (a push sent while a
	// rebind is under way is not delivered, by design of the cloud).
	resumeDrift()
	d := s.sim.Devids()[0]
	key := s.vKey(d, 0)
	k, _ := store.ParseKey(key)
	v := 900000.0
	s.sim.SetParam(d, key, v)
	next := time.Now().Add(150 * time.Millisecond)
	wait(fmt.Sprintf("a live update of %s %s", d, key), func() bool {
		if e, ok := s.store.Get(d, k); ok && e.Source.IsLive() && e.Value == v {
			return true
		}
		if time.Now().After(next) {
			v++
			s.sim.SetParam(d, key, v)
			next = time.Now().Add(150 * time.Millisecond)
		}
		return false
	})
	wait("push healthy, no quarantine, no recovery step in flight", func() bool {
		st := s.gw.Status()
		return s.is(1, "bragerone_push_healthy") && s.is(0, "bragerone_recovery_quarantined") &&
			st.Recovering == "" && st.QuarantineLeft == 0
	})
	took := time.Since(begin)

	// Settled means settled: while pushes flow, no step starts again and
	// the session stays up.
	settle := time.Now().Add(time.Second)
	for time.Now().Before(settle) {
		if st := s.gw.Status(); st.Recovering != "" || !st.Connected {
			t.Fatalf("recovery step %q in flight (connected=%v) while live updates flow after the recovery; the exporter shows:%s", st.Recovering, st.Connected, s.dump())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return took
}

func soakRecoveryCounts(s *scenario) string {
	var parts []string
	for _, sm := range s.series("bragerone_recovery_actions_total") {
		if sm.value > 0 {
			parts = append(parts, fmt.Sprintf("%s/%s=%g", sm.labels["step"], sm.labels["result"], sm.value))
		}
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

func soakTable(samples []soakSample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%8s %10s %14s %8s | %6s %6s %7s %6s | %6s %8s %7s | %7s %11s %10s\n",
		"elapsed", "goroutines", "heap_inuse_MiB", "open_fds", "g_sim", "g_queue", "g_proxy", "g_rest", "fd_sim", "fd_proxy", "fd_rest", "rounds", "sio_requests", "recoveries")
	for _, sm := range samples {
		fmt.Fprintf(&b, "%8v %10.0f %14.2f %8.0f | %6d %6d %7d %6d | %6d %8d %7d | %7d %11d %10.0f\n",
			sm.at, sm.goroutines, sm.heapMiB, sm.fds, sm.side.simGoroutines, sm.side.queueGoroutines, sm.side.proxyGoroutines, sm.side.otherGoroutines,
			sm.side.simFDs, sm.side.proxyFDs, sm.side.otherFDs, sm.rounds, sm.sioRequests, sm.recoveries)
	}
	b.WriteString("g_sim: goroutines with a simulator frame (cloudsim, the Socket.IO server); g_queue: the Socket.IO library's\n" +
		"task-queue loops, whose stacks do not say which side started them; g_proxy: the chaos proxy's (Toxiproxy);\n" +
		"g_rest: the exporter and the test. fd_sim: the simulator's ends of TCP connections (listener included);\n" +
		"fd_proxy: the chaos proxy's ends (both ways); fd_rest: every other descriptor. The bounds judge the totals\n" +
		"less g_proxy and fd_proxy.\n")
	return b.String()
}

func median(xs []float64) float64 {
	ys := slices.Clone(xs)
	slices.Sort(ys)
	n := len(ys)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return ys[n/2]
	}
	return (ys[n/2-1] + ys[n/2]) / 2
}

// openFiles lists what /proc/self/fd points at, counted by target kind;
// TCP sockets are told apart by side (the simulator's end of a connection,
// or the exporter's) and state.
func openFiles(simURL, proxyURL string) string {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err.Error()
	}
	simPort, proxyPort := urlPort(simURL), urlPort(proxyURL)
	tcp := tcpSockets()
	kinds := map[string]int{}
	for _, e := range entries {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			if c, ok := tcp[strings.TrimSuffix(inode, "]")]; ok {
				side := "exporter end"
				switch {
				case c.localPort == simPort:
					side = "simulator end"
				case proxyPort != "" && (c.localPort == proxyPort || c.remotePort == simPort):
					side = "chaos proxy end"
				}
				kinds["tcp "+side+" "+c.state]++
				continue
			}
			if port, ok := socketPort(e.Name()); ok {
				side := "exporter end"
				if port == simPort {
					side = "simulator end"
				}
				kinds["tcp "+side+" closed (reset, descriptor still open)"]++
				continue
			}
		}
		if i := strings.Index(target, ":["); i >= 0 {
			target = target[:i]
		}
		kinds[target]++
	}
	var lines []string
	for k, n := range kinds {
		lines = append(lines, fmt.Sprintf("%5d %s", n, k))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

type tcpSocket struct{ localPort, remotePort, state string }

// urlPort is the port of a http://host:port URL ("" for "").
func urlPort(u string) string {
	if u == "" {
		return ""
	}
	return u[strings.LastIndex(u, ":")+1:]
}

// hexPort is the port of an address of /proc/net/tcp ("0100007F:1F90").
func hexPort(addr string) string {
	port, err := strconv.ParseUint(addr[strings.LastIndex(addr, ":")+1:], 16, 16)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(port, 10)
}

// socketPort is the local port of an open socket descriptor of this
// process; it still answers once the connection has left the TCP table
// (closed by a reset while the descriptor stays open).
func socketPort(fd string) (string, bool) {
	n, err := strconv.Atoi(fd)
	if err != nil {
		return "", false
	}
	sa, err := syscall.Getsockname(n)
	if err != nil {
		return "", false
	}
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return strconv.Itoa(a.Port), true
	case *syscall.SockaddrInet6:
		return strconv.Itoa(a.Port), true
	}
	return "", false
}

// tcpSockets reads /proc/self/net/tcp{,6}: socket inode to local port and
// state.
func tcpSockets() map[string]tcpSocket {
	states := map[string]string{"01": "established", "06": "time_wait", "08": "close_wait", "0A": "listen", "04": "fin_wait1", "05": "fin_wait2", "07": "close", "09": "last_ack", "0B": "closing"}
	out := map[string]tcpSocket{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 {
				continue
			}
			local := hexPort(fs[1])
			if local == "" {
				continue
			}
			st := states[fs[3]]
			if st == "" {
				st = fs[3]
			}
			out[fs[9]] = tcpSocket{localPort: local, remotePort: hexPort(fs[2]), state: st}
		}
	}
	return out
}

// resourceSides splits goroutines and descriptors between the simulated
// cloud, the chaos proxy (when there is one) and the rest of the process.
type resourceSides struct {
	simGoroutines, queueGoroutines, proxyGoroutines, otherGoroutines int
	simFDs, proxyFDs, otherFDs                                       int
}

// isProxyGoroutine says whether a goroutine's stack is the chaos proxy's.
func isProxyGoroutine(stack string) bool {
	return strings.Contains(stack, "toxiproxy/v2") || strings.Contains(stack, "realtime_test.(*partitionToxic)")
}

func sides(simURL, proxyURL string) resourceSides {
	var r resourceSides
	var buf strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	for _, g := range strings.Split(buf.String(), "\n\n") {
		switch {
		case strings.TrimSpace(g) == "":
		case isProxyGoroutine(g):
			r.proxyGoroutines++
		case strings.Contains(g, "/cloudsim.") || strings.Contains(g, "socket.io/servers/"):
			r.simGoroutines++
		case strings.Contains(g, "pkg/queue.(*Queue).loop"):
			r.queueGoroutines++
		default:
			r.otherGoroutines++
		}
	}
	simPort, proxyPort := urlPort(simURL), urlPort(proxyURL)
	tcp := tcpSockets()
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		inode, ok := strings.CutPrefix(target, "socket:[")
		if ok {
			c := tcp[strings.TrimSuffix(inode, "]")]
			port := c.localPort
			if port == "" {
				port, _ = socketPort(e.Name())
			}
			switch {
			case port == simPort:
				r.simFDs++
				continue
			case proxyPort != "" && (port == proxyPort || c.remotePort == simPort):
				// The proxy's listener and accepted ends, and its
				// connections to the simulator (the exporter reaches the
				// simulator only through the proxy).
				r.proxyFDs++
				continue
			}
		}
		r.otherFDs++
	}
	return r
}

// goroutineSummary counts the live goroutines by the function they wait in
// and the place that started them.
func goroutineSummary() string {
	var buf strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	counts := map[string]int{}
	for _, g := range strings.Split(buf.String(), "\n\n") {
		lines := strings.Split(strings.TrimSpace(g), "\n")
		if len(lines) < 2 {
			continue
		}
		top := lines[1]
		if i := strings.LastIndex(top, "("); i > 0 {
			top = top[:i]
		}
		origin := "?"
		for i, l := range lines {
			if strings.HasPrefix(l, "created by ") && i+1 < len(lines) {
				origin = strings.TrimPrefix(l, "created by ")
				if j := strings.Index(origin, " in goroutine"); j > 0 {
					origin = origin[:j]
				}
				origin += " at " + strings.Fields(strings.TrimSpace(lines[i+1]))[0]
			}
		}
		counts[top+"  <-  "+origin]++
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%5d %s", n, k))
	}
	slices.Sort(out)
	slices.Reverse(out)
	return strings.Join(out, "\n")
}
