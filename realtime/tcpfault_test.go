package realtime_test

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// The TCP fault suite: one exporter meets the faults of a home internet
// link in turn, every byte between it and the simulated cloud passing
// through an in-process Toxiproxy (chaos_test.go). Every duration is the
// real one divided by tcpTimeScale, so the ratios that decide the outcome
// (latency to ping timeout, a partition to the hysteresis, a prime's size
// to the HTTP timeout) are the field's. For each fault it records the three
// health signals over time, the outage reason, the recovery actions, when
// the dead link was noticed and how long the session took to come back
// once the fault ended, and checks that nothing was lost: values pushed
// during and after the fault, and one set silently (never pushed) during
// it, must all be exported as the cloud holds them.
//
// The table it logs is the one in SOAK.md and the README; regenerate it
// with
//
//	go test ./realtime -run TestTCPFaultSuite -v
//
// (-tcpfault.only=TEXT runs only the faults whose name contains TEXT;
// GATEWAY_TEST_LOG=1 logs the gateway at debug level.)
const tcpTimeScale = 25

var tcpFaultOnly = flag.String("tcpfault.only", "", "run only the TCP faults whose name contains this text")

// The field's durations (the cloud's Engine.IO ping, the exporter's
// defaults), scaled.
var (
	tcpPingInterval   = 25 * time.Second / tcpTimeScale // the cloud's Engine.IO ping interval
	tcpPingTimeout    = 20 * time.Second / tcpTimeScale // and ping timeout
	tcpConnectTimeout = transport.DefaultConnectTimeout / tcpTimeScale
	tcpProbeInterval  = transport.DefaultProbeInterval / tcpTimeScale
	tcpHTTPTimeout    = cloudclient.DefaultTimeout / tcpTimeScale
	tcpHysteresis     = outage.DefaultHysteresis / tcpTimeScale
	tcpSupervisor     = realtime.DefaultConfig().SupervisorInterval / tcpTimeScale
	tcpRTO            = partitionRTO / tcpTimeScale
	// A dead link is noticed within the ping interval and timeout, or by
	// the supervisor's next tick.
	tcpDetectBound = tcpPingInterval + tcpPingTimeout + tcpSupervisor
	// Once the link is back, the session is up within the longest
	// reconnect backoff (the supervisor interval) and one connect.
	tcpHealBound = tcpSupervisor + tcpConnectTimeout
)

// tcpBoundSlack multiplies every timing bound the suite asserts: the
// bounds are the configuration's, the slack is for a busy machine.
const tcpBoundSlack = 2

func startTCPFaultScenario(t *testing.T) (*scenario, *chaosProxy) {
	t.Helper()
	var chaos *chaosProxy
	s := startScenario(t, scenarioSetup{
		route: func(simURL string) string {
			chaos = newChaosProxy(t, simURL)
			chaos.link.setRTO(tcpRTO)
			return chaos.url
		},
		sim: func(o *cloudsim.Options) {
			o.Modules = 3
			o.ParamsPerModule = 60 // a full prime is 4 KB
			o.PingInterval, o.PingTimeout = tcpPingInterval, tcpPingTimeout
			o.ConnectTimeout = 45 * time.Second / tcpTimeScale
		},
		client: func(c *cloudclient.Config) {
			c.Timeout = tcpHTTPTimeout
			for i, d := range cloudclient.DefaultPrimeBackoff {
				c.PrimeBackoff[i] = d / tcpTimeScale
			}
		},
		connectTimeout: tcpConnectTimeout,
		transport:      func(c *transport.Config) { c.ProbeInterval = tcpProbeInterval },
		gw: func(c *realtime.Config) {
			def := realtime.DefaultConfig()
			c.SupervisorInterval = tcpSupervisor
			c.HealthInterval = def.HealthInterval / tcpTimeScale
			c.SessionHysteresis = tcpHysteresis
			c.ReconnectBackoff = def.ReconnectBackoff / tcpTimeScale
			c.TeardownTimeout = def.TeardownTimeout / tcpTimeScale
			// The real poll is a minute; at the supervisor's pace here, so
			// owed primes are paid without the suite waiting for them.
			c.PollInterval = tcpSupervisor
			c.Ladder.StaleAfter = def.Ladder.StaleAfter / tcpTimeScale
			c.Ladder.CooldownBase = def.Ladder.CooldownBase / tcpTimeScale
			c.Ladder.CooldownMax = def.Ladder.CooldownMax / tcpTimeScale
			c.Ladder.QuarantineFor = def.Ladder.QuarantineFor / tcpTimeScale
			c.Ladder.ModuleOnlineDebounce = def.Ladder.ModuleOnlineDebounce / tcpTimeScale
		},
	})
	return s, chaos
}

// tcpExpect is what a fault must (not) do beyond recovering completely and
// losing nothing, which every fault must.
type tcpExpect struct {
	// alive: a slow or sliced link; the session must never be found dead
	// (save when the case closes it on purpose, see faultRun.reconnect).
	alive bool
	// dead: the link is dead for longer than the detection bound; the
	// session must be found dead within it.
	dead bool
	// noOutage: no outage may be published.
	noOutage bool
}

type tcpCase struct {
	name   string
	expect tcpExpect
	// run switches the fault on (f.on), holds it, and switches it off
	// (f.off); it may set values and trigger traffic meanwhile.
	run func(f *faultRun)
}

func TestTCPFaultSuite(t *testing.T) {
	s, chaos := startTCPFaultScenario(t)
	s.waitUp()
	devids := s.sim.Devids()
	// Live traffic throughout, as a plant makes it: push health judges it.
	var pace atomic.Int64 // between pushes
	pace.Store(int64(20 * time.Millisecond))
	pushing := s.pushAtPace(devids[2], s.vKey(devids[2], 0), &pace)
	defer pushing()
	s.eventually("push healthy", func() bool { return s.is(1, "bragerone_push_healthy") })

	hold := func(d time.Duration) { time.Sleep(d) } // the fault's schedule, not a wait for a condition
	latency := both("latency", map[string]any{"latency": (2 * time.Second / tcpTimeScale).Milliseconds(), "jitter": (time.Second / tcpTimeScale).Milliseconds()})
	resetDown := toxic{Type: "reset_peer", Stream: "downstream", Attributes: map[string]any{"timeout": 0}}
	limit := func(stream string, n int) toxic {
		return toxic{Type: "limit_data", Stream: stream, Attributes: map[string]any{"bytes": n}}
	}

	cases := []tcpCase{
		{"latency 2s±1s, held 2× the ping timeout", tcpExpect{alive: true, noOutage: true}, func(f *faultRun) {
			f.on(func() func() { return chaos.add(latency...) })
			f.setDuring()
			hold(2 * tcpPingTimeout)
			f.off()
		}},
		{"latency 2s±1s, held 0.5× the ping timeout", tcpExpect{alive: true, noOutage: true}, func(f *faultRun) {
			f.on(func() func() { return chaos.add(latency...) })
			f.setDuring()
			hold(tcpPingTimeout / 2)
			f.off()
		}},
		{"bandwidth 1 KB/s down, full prime of 3 modules (4 KB)", tcpExpect{alive: true, noOutage: true}, func(f *faultRun) {
			f.on(func() func() {
				return chaos.add(toxic{Type: "bandwidth", Stream: "downstream", Attributes: map[string]any{"rate": 1 * tcpTimeScale}})
			})
			f.setDuring()
			f.reconnect() // a reconnect's full prime, through the trickle
			f.waitPrimed()
			f.off()
		}},
		{"bandwidth 0.25 KB/s down, full prime longer than the HTTP timeout", tcpExpect{alive: true, noOutage: true}, func(f *faultRun) {
			f.on(func() func() {
				return chaos.add(toxic{Type: "bandwidth", Stream: "downstream", Attributes: map[string]any{"rate": tcpTimeScale / 4}})
			})
			f.setDuring()
			f.reconnect()
			f.waitPrimeFailed()
			f.off()
		}},
		{"reset_peer during a prime", tcpExpect{}, func(f *faultRun) {
			f.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLatency, Path: "POST /v1/modules/parameters", DelayMS: int(tcpHTTPTimeout.Milliseconds() / 2), Count: 1})
			primes := f.sim.Requests("POST /v1/modules/parameters")
			f.sim.EmitMemoryUpdated(f.devids[0]) // event 22: a prime of that module
			f.s.requestsAfter("POST /v1/modules/parameters", primes)
			f.on(func() func() { return chaos.add(resetDown) }) // its answer, and every other connection's next bytes down
			f.setDuring()
			hold(tcpHTTPTimeout)
			f.off()
		}},
		{"reset_peer during a push burst", tcpExpect{}, func(f *faultRun) {
			burst := f.burst(time.Millisecond)
			hold(20 * time.Millisecond)
			f.on(func() func() { return chaos.add(resetDown) })
			f.setDuring()
			hold(tcpHTTPTimeout)
			burst()
			f.off()
		}},
		{"reset_peer during the handshake", tcpExpect{}, func(f *faultRun) {
			// On before the reconnect: every connection opened while it is
			// on is reset (RST) at its first request.
			f.on(func() func() {
				return chaos.add(toxic{Type: "reset_peer", Stream: "upstream", Attributes: map[string]any{"timeout": 0}})
			})
			f.setDuring()
			f.reconnect()
			hold(2 * tcpHysteresis)
			f.off()
		}},
		{"slicer 1–7 byte segments, 10µs apart, both ways", tcpExpect{alive: true, noOutage: true}, func(f *faultRun) {
			// Every segment of 1–7 bytes costs the proxy a hand-over and a
			// timer, so a sliced link is also a slow one here: the pushes
			// slow down to a pace it carries on a busy machine (it is the
			// framing that is on trial, not the bandwidth).
			pace.Store(int64(100 * time.Millisecond))
			defer pace.Store(int64(20 * time.Millisecond))
			f.on(func() func() {
				return chaos.add(both("slicer", map[string]any{"average_size": 4, "size_variation": 3, "delay": 10})...)
			})
			f.setDuring()
			hold(tcpPingInterval + tcpPingTimeout)
			f.reconnect() // a handshake, a bind and a full prime, sliced
			f.waitPrimed()
			f.off()
		}},
		{"partition 0.5× the ping timeout", tcpExpect{noOutage: true}, func(f *faultRun) {
			f.on(chaos.partition)
			f.setDuring()
			hold(tcpPingTimeout / 2)
			f.off()
		}},
		{"partition 2× the ping timeout", tcpExpect{}, func(f *faultRun) {
			f.on(chaos.partition)
			f.setDuring()
			hold(2 * tcpPingTimeout)
			f.off()
		}},
		{"partition 10× the ping timeout", tcpExpect{dead: true}, func(f *faultRun) {
			f.on(chaos.partition)
			f.setDuring()
			hold(10 * tcpPingTimeout)
			f.off()
		}},
		{"partition during a REST call (0.5× the ping timeout)", tcpExpect{noOutage: true}, func(f *faultRun) {
			f.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultLatency, Path: "POST /v1/modules/parameters", DelayMS: int(tcpHTTPTimeout.Milliseconds() / 4), Count: 1})
			primes := f.sim.Requests("POST /v1/modules/parameters")
			f.sim.EmitMemoryUpdated(f.devids[0])
			f.s.requestsAfter("POST /v1/modules/parameters", primes)
			f.on(chaos.partition) // the prime's answer is on its way
			f.setDuring()
			hold(tcpPingTimeout / 2) // longer than the HTTP timeout
			f.off()
		}},
		{"limit_data 64 B down (inside the upgrade answer)", tcpExpect{}, func(f *faultRun) {
			f.on(func() func() { return chaos.add(limit("downstream", 64)) })
			f.setDuring()
			hold(2 * tcpHysteresis)
			f.off()
		}},
		{"limit_data 600 B down (inside a WebSocket frame)", tcpExpect{}, func(f *faultRun) {
			f.on(func() func() { return chaos.add(limit("downstream", 600)) })
			burst := f.burst(time.Millisecond)
			f.setDuring()
			hold(2 * tcpHysteresis)
			burst()
			f.off()
		}},
		{"limit_data 3000 B down (inside a prime's answer)", tcpExpect{}, func(f *faultRun) {
			f.on(func() func() { return chaos.add(limit("downstream", 3000)) })
			f.setDuring()
			f.reconnect()
			hold(2 * tcpHysteresis)
			f.off()
		}},
		{"limit_data 200 B up (inside a request)", tcpExpect{}, func(f *faultRun) {
			f.on(func() func() { return chaos.add(limit("upstream", 200)) })
			f.setDuring()
			f.reconnect()
			hold(2 * tcpHysteresis)
			f.off()
		}},
		{"connection refused (proxy disabled) 2.5× the ping timeout", tcpExpect{dead: true}, func(f *faultRun) {
			f.on(chaos.refuse)
			f.setDuring()
			hold(5 * tcpPingTimeout / 2)
			f.off()
		}},
	}

	var samples []soakSample
	start := time.Now()
	sample := func() {
		sm := takeSoakSample(t, time.Since(start).Round(time.Millisecond), s.sim.URL(), chaos.url)
		samples = append(samples, sm)
	}
	sample()
	var rows []faultRow
	for i, c := range cases {
		if *tcpFaultOnly != "" && !strings.Contains(c.name, *tcpFaultOnly) {
			continue
		}
		f := newFaultRun(s, chaos, i, c)
		row := f.run()
		rows = append(rows, row)
		t.Logf("%s\n%s", c.name, row.detail())
		chaos.clear()
		// Sampled once the proxy holds nothing more: what a partition held
		// (the probes and attempts the exporter gave up on among it) is
		// delivered at its next retransmission.
		s.eventuallyWithin("the proxy to deliver what the partition held", 3*scenarioDeadline, chaos.link.empty)
		sample()
	}
	t.Logf("TCP faults (durations scaled by 1/%d; the table shows them at field scale):\n%s", tcpTimeScale, faultTable(rows))
	t.Logf("resources after each fault:\n%s", soakTable(samples))
	checkNoGrowth(t, samples, s, chaos)
}

// checkNoGrowth fails when a sample is above a cap of soakBounds, or when
// the soak's growth rule finds growth; it then logs where the goroutines
// wait and the open files.
func checkNoGrowth(t *testing.T, samples []soakSample, s *scenario, chaos *chaosProxy) {
	t.Helper()
	grew := false
	for i, b := range soakBounds {
		for _, sm := range samples {
			if v := sm.values()[i]; v > b.cap {
				grew = true
				t.Errorf("%s = %.1f at %v, above the cap %.0f", b.name, v, sm.at, b.cap)
			}
		}
	}
	if len(samples) >= 6 && soakGrowth(t, samples) {
		grew = true
	}
	if grew {
		t.Logf("goroutines at the end, by where they wait and who started them:\n%s", goroutineSummary())
		t.Logf("open files at the end:\n%s", openFiles(s.sim.URL(), chaos.url))
	}
}

// faultRun is one fault of the suite.
type faultRun struct {
	s      *scenario
	chaos  *chaosProxy
	sim    *cloudsim.Cloud
	t      *testing.T
	c      tcpCase
	idx    int
	devids []string

	onAt, offAt time.Time
	undo        func()
	reconnects  int // sessions the case closed on purpose

	during []setValue // values set while the fault was on
	before baseline
	tl     *timeline
}

type setValue struct {
	devid, key string
	v          float64
	silent     bool
}

// baseline is what the counters showed before the fault.
type baseline struct {
	outages, blinks, handshakes, primes, decodeErrors float64
	primeFailures                                     uint64
	recoveries                                        map[string]float64
}

func newFaultRun(s *scenario, chaos *chaosProxy, idx int, c tcpCase) *faultRun {
	return &faultRun{s: s, chaos: chaos, sim: s.sim, t: s.t, c: c, idx: idx, devids: s.sim.Devids()}
}

func (f *faultRun) snapshot() baseline {
	st := f.s.gw.Status()
	b := baseline{
		outages:      f.s.sum("bragerone_session_outages_total"),
		blinks:       f.s.sum("bragerone_session_blinks_total"),
		handshakes:   float64(f.sim.Requests("GET /socket.io/")),
		primes:       float64(f.sim.Requests("POST /v1/modules/parameters")),
		decodeErrors: float64(st.DecodeErrors),
		recoveries:   map[string]float64{},
	}
	for _, n := range st.PrimeFailures {
		b.primeFailures += n
	}
	for _, sm := range f.s.series("bragerone_recovery_actions_total") {
		b.recoveries[sm.labels["step"]+"/"+sm.labels["result"]] = sm.value
	}
	return b
}

// on switches the fault on (switchOn returns what switches it off).
func (f *faultRun) on(switchOn func() (switchOff func())) {
	f.chaos.link.resetTransit()
	f.onAt = time.Now()
	f.undo = switchOn()
}

// off switches the fault off.
func (f *faultRun) off() {
	f.undo()
	f.offAt = time.Now()
}

// value picks the case's value for the n-th key it sets.
func (f *faultRun) value(n int) float64 { return float64(10000*(f.idx+1) + n) }

// setDuring sets values at the cloud while the fault is on: one pushed
// (lost if the link is dead; a reconnect's prime must bring it), one set
// silently (never pushed: only a prime brings it).
func (f *faultRun) setDuring() {
	d0, d1 := f.devids[0], f.devids[1]
	pushed := setValue{d0, f.s.vKey(d0, 1+f.idx%5), f.value(1), false}
	silent := setValue{d1, f.s.vKey(d1, 1+f.idx%5), f.value(2), true}
	f.sim.SetParam(pushed.devid, pushed.key, pushed.v)
	f.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, Devid: silent.devid, Count: 1})
	f.sim.SetParam(silent.devid, silent.key, silent.v)
	f.during = append(f.during, pushed, silent)
}

// pushAtPace changes a parameter at the cloud every pace until the returned
// stop, as a working plant does.
func (s *scenario) pushAtPace(devid, key string, pace *atomic.Int64) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for v := 1.0; ; v++ {
			s.sim.SetParam(devid, key, v)
			select {
			case <-quit:
				return
			case <-time.After(time.Duration(pace.Load())):
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { close(quit); <-done }) }
	s.t.Cleanup(stop)
	return stop
}

// burst pushes values of one module every period until the returned stop
// (the values are checked at the end like every other).
func (f *faultRun) burst(period time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	d := f.devids[0]
	keys := []string{f.s.vKey(d, 6), f.s.vKey(d, 7), f.s.vKey(d, 8)}
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			f.sim.SetParam(d, keys[n%len(keys)], f.value(100+n))
			select {
			case <-quit:
				return
			case <-time.After(period):
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// reconnect makes the cloud close the session (cleanly, at the
// application level), so a handshake, a bind and a full prime go through
// the fault.
func (f *faultRun) reconnect() {
	f.reconnects++
	f.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
}

// waitPrimed waits for a successful prime after the fault went on.
func (f *faultRun) waitPrimed() {
	f.t.Helper()
	f.s.eventuallyWithin("a full prime through the fault", 10*tcpHTTPTimeout+scenarioDeadline, func() bool {
		st := f.s.gw.Status()
		return st.Connected && st.Binding == 0 && st.LastUpdate.After(f.onAt) && f.sim.Requests("POST /v1/modules/parameters") > int(f.before.primes)
	})
}

// waitPrimeFailed waits for a prime that failed after the fault went on.
func (f *faultRun) waitPrimeFailed() {
	f.t.Helper()
	f.s.eventuallyWithin("a prime failed through the fault", 10*tcpHTTPTimeout+scenarioDeadline, func() bool {
		var n uint64
		for _, v := range f.s.gw.Status().PrimeFailures {
			n += v
		}
		return n > f.before.primeFailures
	})
}

// run runs the case and checks it.
func (f *faultRun) run() faultRow {
	f.t.Helper()
	f.before = f.snapshot()
	f.tl = startTimeline(f.s)
	f.c.run(f)
	row := faultRow{name: f.c.name, reconnects: f.reconnects}

	// After the fault: a value pushed, a live update stored, and, when the
	// session stayed up (no reconnect prime), event 22 primes the module
	// whose value was set silently.
	d2 := f.devids[2]
	after := setValue{d2, f.s.vKey(d2, 1+f.idx%5), f.value(3), false}
	f.sim.SetParam(after.devid, after.key, after.v)
	healed, lost := f.waitHealed()
	if !f.tl.droppedSince(f.onAt) {
		for _, v := range f.during {
			if v.silent {
				f.sim.EmitMemoryUpdated(v.devid)
			}
		}
	}
	f.s.nudgeLive(f.devids[0], f.s.vKey(f.devids[0], 0), f.value(500))
	f.s.nothingLost()
	f.s.eventuallyWithin("push healthy, no recovery step in flight", 3*scenarioDeadline, func() bool {
		st := f.s.gw.Status()
		return f.s.is(1, "bragerone_push_healthy") && st.Recovering == "" && st.QuarantineLeft == 0
	})
	f.tl.stop()
	row.lost = "nothing lost"

	after0 := f.snapshot()
	row.outages = int(after0.outages - f.before.outages)
	row.blinks = int(after0.blinks - f.before.blinks)
	row.handshakes = int(after0.handshakes - f.before.handshakes)
	row.primes = int(after0.primes - f.before.primes)
	row.primeFailures = int(after0.primeFailures - f.before.primeFailures)
	for k, v := range after0.recoveries {
		if d := v - f.before.recoveries[k]; d > 0 {
			row.recoveries = append(row.recoveries, fmt.Sprintf("%s=%g", k, d))
		}
	}
	slices.Sort(row.recoveries)
	row.detected, row.wasDown = f.tl.firstDrop(f.onAt)
	row.healed, row.healedDuring = max(healed, 0), lost && healed < 0
	row.reasons = f.tl.reasons()
	row.signals = f.tl.render(f.onAt, f.offAt)
	row.hold = f.offAt.Sub(f.onAt)

	f.check(row, after0)
	return row
}

// waitHealed waits until the session is up, bound at the cloud to every
// module, every module online, and returns when, relative to the fault's
// end, the session came back (see timeline.upAgain).
func (f *faultRun) waitHealed() (time.Duration, bool) {
	f.t.Helper()
	var sid string
	f.s.eventuallyWithin("the session up, bound and every module online after the fault", 3*scenarioDeadline, func() bool {
		st := f.s.gw.Status()
		if !st.Connected || !st.Session.Up || st.NamespaceSID == "" {
			return false
		}
		ss, ok := f.s.simSession(st.NamespaceSID)
		if !ok || !ss.Connected || len(ss.Bound) < len(f.devids) {
			return false
		}
		for _, m := range st.Modules {
			if !m.Online {
				return false
			}
		}
		sid = st.NamespaceSID
		return true
	})
	return f.tl.upAgain(f.offAt, sid)
}

// check asserts the case's expectations and the suite's rules.
func (f *faultRun) check(row faultRow, after baseline) {
	f.t.Helper()
	t := f.t
	if f.c.expect.noOutage && row.outages > 0 {
		t.Errorf("%s: %d outages published, want none:%s", f.c.name, row.outages, f.s.dump())
	}
	if row.outages > 0 {
		// No outage shorter than the hysteresis is published.
		if d, ok := f.s.metric("bragerone_session_last_outage_seconds"); !ok || d < tcpHysteresis.Seconds() {
			t.Errorf("%s: an outage of %.3fs was published (present %v), shorter than the hysteresis %v", f.c.name, d, ok, tcpHysteresis)
		}
	}
	if f.c.expect.alive {
		if drops := f.tl.drops(f.onAt); drops > f.reconnects {
			t.Errorf("%s: a slow link was treated as dead: the session was lost %d times, %d of them closed by the cloud on purpose; the cloud's sessions ended: %s; the WebSocket's bytes took at most %v down and %v up through the proxy\n%s", f.c.name, drops, f.reconnects, f.s.simSessionEnds(), f.chaos.link.longestTransit("downstream"), f.chaos.link.longestTransit("upstream"), row.signals)
		}
		if f.tl.moduleWentOffline() {
			t.Errorf("%s: a module was shown offline on a slow link\n%s", f.c.name, row.signals)
		}
	}
	if f.c.expect.dead && !row.wasDown {
		t.Errorf("%s: the dead link was never noticed\n%s", f.c.name, row.signals)
	}
	if row.wasDown && f.reconnects == 0 && f.c.expect.dead {
		if bound := tcpBoundSlack * tcpDetectBound; row.detected > bound {
			t.Errorf("%s: the dead link was noticed %v after it died, want within %v (ping interval + timeout + supervisor tick, ×%d)", f.c.name, row.detected, bound, tcpBoundSlack)
		}
	}
	if bound := tcpBoundSlack * tcpHealBound; row.healed > bound {
		t.Errorf("%s: the session was up %v after the fault ended, want within %v (longest backoff + one connect, ×%d)\n%s", f.c.name, row.healed, bound, tcpBoundSlack, row.signals)
	}
	// The exporter dials no faster than its backoff allows, whatever the
	// link does to the sessions it makes.
	if budget := tcpBoundSlack*dialBudget(time.Since(f.onAt)) + f.reconnects; row.handshakes > budget {
		t.Errorf("%s: %d handshakes in %v, want at most %d (the reconnect backoff's pace, ×%d): the exporter redials in a tight loop", f.c.name, row.handshakes, time.Since(f.onAt).Round(time.Millisecond), budget, tcpBoundSlack)
	}
	if d := after.decodeErrors - f.before.decodeErrors; d > 0 {
		t.Errorf("%s: %g realtime frames failed to decode: framing broke", f.c.name, d)
	}
}

// dialBudget is how many connects the reconnect backoff allows in d: the
// pauses double from the first to the longest, then stay there.
func dialBudget(d time.Duration) int {
	def := realtime.DefaultConfig()
	pause, longest := def.ReconnectBackoff/tcpTimeScale, tcpSupervisor
	n := 1
	for ; pause < longest; pause *= 2 {
		n++
	}
	return n + int(d/longest) + 1
}

// ---- the three health signals over time ----

// timeline samples the gateway's published status every few milliseconds
// and keeps each change of the three health signals (session_up,
// push_healthy, module online, as the collector exports them from it) and
// of the session being connected.
type timeline struct {
	s    *scenario
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	changes []signalChange
	last    signalState
	why     map[string]bool // outage reasons and connect failure reasons seen
}

type signalState struct {
	connected, up, pushHealthy, modulesOnline bool
	sid                                       string
}

type signalChange struct {
	at time.Time
	signalState
}

func startTimeline(s *scenario) *timeline {
	tl := &timeline{s: s, quit: make(chan struct{}), done: make(chan struct{}), why: map[string]bool{}}
	tl.observe()
	go func() {
		defer close(tl.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tl.quit:
				return
			case <-tick.C:
				tl.observe()
			}
		}
	}()
	return tl
}

func (tl *timeline) observe() {
	st := tl.s.gw.Status()
	now := time.Now()
	cur := signalState{
		connected:     st.Connected,
		up:            st.Session.Up,
		pushHealthy:   st.Push.State == outage.PushHealthy,
		modulesOnline: true,
		sid:           st.NamespaceSID,
	}
	for _, m := range st.Modules {
		if !m.Online {
			cur.modulesOnline = false
		}
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if r := st.Session.Outage.Reason; st.Session.Outage.Down && r != "" {
		tl.why["outage "+r] = true
	}
	if r := st.Session.ConnectFailure; r != "" {
		tl.why["reconnect failure "+r] = true
	}
	if len(tl.changes) == 0 || cur != tl.last {
		tl.changes = append(tl.changes, signalChange{now, cur})
		tl.last = cur
	}
}

func (tl *timeline) stop() {
	close(tl.quit)
	<-tl.done
}

// firstDrop returns how long after since the session was first found not
// connected, and whether it was.
func (tl *timeline) firstDrop(since time.Time) (time.Duration, bool) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, c := range tl.changes {
		if !c.at.Before(since) && !c.connected {
			return c.at.Sub(since), true
		}
	}
	return 0, false
}

// droppedSince reports whether the session was found not connected since.
func (tl *timeline) droppedSince(since time.Time) bool {
	_, ok := tl.firstDrop(since)
	return ok
}

// drops counts the sessions lost since.
func (tl *timeline) drops(since time.Time) int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	n, prev := 0, true
	for _, c := range tl.changes {
		if !c.at.Before(since) && prev && !c.connected {
			n++
		}
		prev = c.connected
	}
	return n
}

// moduleWentOffline reports whether a module was shown offline.
func (tl *timeline) moduleWentOffline() bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, c := range tl.changes {
		if !c.modulesOnline {
			return true
		}
	}
	return false
}

// upAgain returns when, relative to off, the session sid (the one up at
// the end) was connected and published up after the session was lost
// (negative: before the fault ended), and whether it was lost at all.
func (tl *timeline) upAgain(off time.Time, sid string) (time.Duration, bool) {
	tl.observe()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	dropped := false
	for _, c := range tl.changes {
		if !c.connected {
			dropped = true
		}
		if dropped && c.connected && c.up && c.sid == sid {
			return c.at.Sub(off), true
		}
	}
	return 0, false
}

func (tl *timeline) reasons() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []string
	for r := range tl.why {
		out = append(out, r)
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// render lists the changes relative to the fault going on.
func (tl *timeline) render(on, off time.Time) string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	bit := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	fmt.Fprintf(&b, "    %9s  connected session_up push_healthy modules_online\n", "at")
	for _, c := range tl.changes {
		mark := ""
		if !off.IsZero() && !c.at.Before(off) {
			mark = " (after the fault)"
		}
		fmt.Fprintf(&b, "    %+8.3fs  %9d %10d %12d %14d%s\n", c.at.Sub(on).Seconds(), bit(c.connected), bit(c.up), bit(c.pushHealthy), bit(c.modulesOnline), mark)
	}
	return b.String()
}

// ---- the table ----

type faultRow struct {
	name                                string
	hold                                time.Duration
	detected, healed                    time.Duration
	wasDown, healedDuring               bool
	outages, blinks, handshakes, primes int
	primeFailures, reconnects           int
	recoveries                          []string
	reasons, signals, lost              string
}

// field turns a suite duration into the field's.
func field(d time.Duration) string {
	return (d * tcpTimeScale).Round(100 * time.Millisecond).String()
}

func (r faultRow) detail() string {
	detected, healed := "never (not dead)", "stayed up"
	if r.wasDown {
		detected, healed = field(r.detected), field(r.healed)+" after the fault"
		if r.healedDuring {
			healed = "during the fault"
		}
	}
	rec := "none"
	if len(r.recoveries) > 0 {
		rec = strings.Join(r.recoveries, " ")
	}
	return fmt.Sprintf("  held %s; session lost after %s, up again %s; outages published %d, blinks %d; reasons: %s\n"+
		"  handshakes %d, primes %d (failed %d), ladder steps: %s; sessions closed by the test %d; %s\n%s",
		field(r.hold), detected, healed, r.outages, r.blinks, r.reasons, r.handshakes, r.primes, r.primeFailures, rec, r.reconnects, r.lost, r.signals)
}

func faultTable(rows []faultRow) string {
	var b strings.Builder
	b.WriteString("| fault | detected after | healed after | outages published | nothing lost |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		detected, healed := "not dead", "stayed up"
		if r.wasDown {
			detected, healed = field(r.detected), field(r.healed)
			if r.reconnects > 0 {
				detected = "(closed by the cloud)"
			}
			if r.healedDuring {
				healed = "during the fault"
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s |\n", r.name, detected, healed, r.outages, map[bool]string{true: "yes", false: "no"}[r.lost == "nothing lost"])
	}
	return b.String()
}
