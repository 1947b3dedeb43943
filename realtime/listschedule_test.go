package realtime

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
)

func TestReadDue(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	const safety = 15 * time.Minute
	for _, tc := range []struct {
		name   string
		now    time.Time
		last   time.Time
		owed   bool
		safety time.Duration
		want   bool
	}{
		{"never read", t0, time.Time{}, false, safety, true},
		{"just read", t0, t0, false, safety, false},
		{"inside the safety interval", t0.Add(safety - time.Second), t0, false, safety, false},
		{"the safety interval passed", t0.Add(safety), t0, false, safety, true},
		{"long past it", t0.Add(3 * safety), t0, false, safety, true},
		{"owed: failed or unfinished read, a module joined", t0.Add(time.Minute), t0, true, safety, true},
		{"interval 0: with every poll", t0.Add(time.Minute), t0, false, 0, true},
		{"interval 0, read this instant", t0, t0, false, 0, true},
		{"the clock went back", t0.Add(-time.Minute), t0, false, safety, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readDue(tc.now, tc.last, tc.owed, tc.safety); got != tc.want {
				t.Errorf("readDue(now=last%+v, owed=%v, safety=%v) = %v, want %v", tc.now.Sub(tc.last), tc.owed, tc.safety, got, tc.want)
			}
		})
	}
}

// listCounts is how often the simulator served each of the gateway's lists.
type listCounts struct{ active, history, activity int }

func (h *harness) listCounts() listCounts {
	return listCounts{
		active:   h.sim.Requests(cloudapi.EndpointAlarms),
		history:  h.sim.Requests(cloudapi.EndpointAlarmHistory),
		activity: h.sim.Requests(cloudapi.EndpointActivity),
	}
}

// waitPolls waits until the simulator served n more module lists than it
// had (answered or refused).
func (h *harness) waitPolls(n int) {
	h.t.Helper()
	from := h.sim.Requests(cloudapi.EndpointModules)
	h.waitUntil("module-list polls", func() bool { return h.sim.Requests(cloudapi.EndpointModules) >= from+n })
}

// quietLists waits out the start's reads, then checks that polls alone
// read none of the lists: inside the safety interval, with nothing
// changed, a poll asks the cloud for its module list only. It returns the
// counts the quiet polls left.
func (h *harness) quietLists() listCounts {
	h.t.Helper()
	h.waitUntil("the start's reads of every list", func() bool {
		c := h.listCounts()
		return c.active > 0 && c.history > 0 && c.activity > 0
	})
	h.waitPolls(2) // a read begun with the start has been served by then
	quiet := h.listCounts()
	h.waitPolls(5)
	if got := h.listCounts(); got != quiet {
		h.t.Fatalf("five healthy polls inside the safety interval read lists: %+v, then %+v", quiet, got)
	}
	return quiet
}

// listTestConfig: a safety interval of an hour on a clock the test moves,
// and no zombie ladder (the clock's jumps would make every push late).
func listTestConfig(clock *simClock) func(*Config) {
	return func(c *Config) {
		c.Now = clock.now
		c.HistorySafetyInterval = time.Hour
		c.Ladder.StaleAfter = 0
	}
}

// A healthy period reads no list between safety intervals; once the
// interval has passed, the next poll reads each list once.
func TestGatewayHealthyPollsReadListsOncePerSafetyInterval(t *testing.T) {
	clock := &simClock{}
	h := startHarness(t, listTestConfig(clock))
	quiet := h.quietLists()

	clock.offset.Add(int64(time.Hour + time.Minute))
	h.waitUntil("every list read after the safety interval", func() bool {
		c := h.listCounts()
		return c.active > quiet.active && c.history > quiet.history && c.activity > quiet.activity
	})
	h.waitPolls(5)
	want := listCounts{quiet.active + 1, quiet.history + 1, quiet.activity + 1}
	if got := h.listCounts(); got != want {
		t.Errorf("after the safety interval: %+v, want each list read once: %+v", got, want)
	}
}

// A module's alarm count moving in the module list (moduleAlarms; the
// pushes are muted, so no alarm-quantity push says it) reads the active
// alarm list and the alarm history at once, and not the activity log.
func TestGatewayListedAlarmCountReadsTheAlarmLists(t *testing.T) {
	clock := &simClock{}
	h := startHarnessWithFaults(t, listTestConfig(clock), []cloudsim.Fault{{Kind: cloudsim.FaultMutePushes}})
	devid := h.sim.Devids()[0]
	quiet := h.quietLists()

	h.mustRaise(devid, 57)
	h.waitAlarmListsRead(quiet, devid, 57)
	if got := h.listCounts().activity; got != quiet.activity {
		t.Errorf("the activity log was read %d times on an alarm count: want none", got-quiet.activity)
	}
}

// startWithoutModuleLists starts a gateway whose module lists then fail (so
// no listing shows an alarm count), once its start's list reads are done;
// it returns the first module and the list reads so far.
func startWithoutModuleLists(t *testing.T) (*harness, string, listCounts) {
	t.Helper()
	h := startHarness(t, listTestConfig(&simClock{}))
	h.quietLists()
	h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: cloudapi.EndpointModules, Status: 503})
	h.waitPolls(3)
	return h, h.sim.Devids()[0], h.listCounts()
}

// The alarm-quantity push reads the active alarm list and the alarm history
// at once, though no module list shows the count (they fail).
func TestGatewayAlarmQuantityPushReadsTheAlarmLists(t *testing.T) {
	h, devid, quiet := startWithoutModuleLists(t)
	h.waitPolls(3)
	if got := h.listCounts(); got != quiet {
		t.Fatalf("failed polls inside the safety interval read lists: %+v, then %+v", quiet, got)
	}

	h.mustRaise(devid, 57) // pushes {"alarmsQuantity":{devid:n+1}}
	h.waitAlarmListsRead(quiet, devid, 57)
	if got := h.listCounts().activity; got != quiet.activity {
		t.Errorf("the activity log was read %d times on an alarm push: want none", got-quiet.activity)
	}
}

// A prime's alarm quantity that moved since the last known count (the push
// that said so was lost, and no module list shows it: they fail) reads the
// active alarm list and the alarm history at once, as the push would have.
func TestGatewayPrimedAlarmCountReadsTheAlarmLists(t *testing.T) {
	h, devid, quiet := startWithoutModuleLists(t)

	h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes, Devid: devid, Count: 1})
	h.mustRaise(devid, 57) // its quantity push is the one muted
	h.waitPolls(3)
	if got := h.listCounts(); got != quiet {
		t.Fatalf("lists read with no signal of the alarm: %+v, then %+v", quiet, got)
	}
	primes := h.sim.Requests("POST /v1/modules/alarms/quantity")
	h.sim.EmitMemoryUpdated(devid) // event 22: a prime of the module, with its alarm quantity
	h.waitUntil("the prime's alarm quantity read", func() bool { return h.sim.Requests("POST /v1/modules/alarms/quantity") > primes })
	h.waitAlarmListsRead(quiet, devid, 57)

	// A prime whose counts did not move reads nothing.
	settled := h.listCounts()
	primes = h.sim.Requests("POST /v1/modules/alarms/quantity")
	h.sim.EmitMemoryUpdated(devid)
	h.waitUntil("the second prime's alarm quantity read", func() bool { return h.sim.Requests("POST /v1/modules/alarms/quantity") > primes })
	h.waitPolls(3)
	if got := h.listCounts(); got != settled {
		t.Errorf("a prime with unmoved counts read lists: %+v, then %+v", settled, got)
	}
}

// An alarm that began and ended between two reads, unseen by any signal
// (the pushes muted, no module list listing it), is counted once, at the
// next read of the alarm history: the safety read. Later reads do not
// count it again.
func TestGatewayAlarmBetweenReadsIsCountedOnceAtTheSafetyRead(t *testing.T) {
	clock := &simClock{}
	h := startHarnessWithFaults(t, listTestConfig(clock), []cloudsim.Fault{{Kind: cloudsim.FaultMutePushes}})
	devid := h.sim.Devids()[0]
	h.quietLists()

	// No module list can be read while the alarm lives: none shows the
	// count it had for an instant.
	id := h.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: cloudapi.EndpointModules, Status: 503})
	h.mustRaise(devid, 57)
	h.mustClear(devid, 57)
	h.sim.Clear(id)
	n := h.listCounts().history
	h.waitPolls(5)
	if got := moduleHistoryOf(h.gw.Status(), devid).Alarms.Counts["57"]; got != 0 || h.listCounts().history != n {
		t.Fatalf("before the safety read: alarm 57 counted %d times, history read %d times; want neither", got, h.listCounts().history-n)
	}

	for read := 1; read <= 2; read++ {
		clock.offset.Add(int64(time.Hour + time.Minute))
		h.waitUntil("the safety read of the alarm history", func() bool { return h.listCounts().history >= n+read })
		h.waitPolls(2) // the read's pages applied
		hist := h.waitHistory("alarm 57 counted", devid, func(hist *History) bool { return hist.Alarms.Counts["57"] > 0 })
		if got := hist.Alarms.Counts["57"]; got != 1 {
			t.Fatalf("after safety read %d: alarm 57 counted %d times, want 1", read, got)
		}
	}
}

// waitAlarmListsRead waits until the active alarm list and the alarm
// history were read since quiet, and the read shows alarm code active on
// devid.
func (h *harness) waitAlarmListsRead(quiet listCounts, devid string, code int) {
	h.t.Helper()
	h.waitUntil("the alarm lists read", func() bool {
		c := h.listCounts()
		return c.active > quiet.active && c.history > quiet.history
	})
	h.waitFor(fmt.Sprintf("alarm %d active", code), func(st *Status) bool { return hasActive(st, devid, code) })
}

// alarmCount is a module's alarm count; -1 when not known.
func alarmCount(st *Status, devid string) int {
	for _, m := range st.Modules {
		if m.Devid == devid && m.AlarmsKnown {
			return m.Alarms
		}
	}
	return -1
}

func hasActive(st *Status, devid string, code int) bool {
	for _, m := range st.Modules {
		for _, a := range m.ActiveAlarms {
			if m.Devid == devid && a.Code == code {
				return true
			}
		}
	}
	return false
}

// heldAnswers is a reverse proxy in front of the simulated cloud's REST API
// that, while holding, keeps the answers to the alarm quantity back until
// released: an answer read from the cloud at the question's time that
// arrives late (a slow network).
type heldAnswers struct {
	holding  atomic.Bool
	release  chan struct{}
	held     atomic.Int32 // answers held back
	answered atomic.Int32 // held answers passed on
}

func startHeldAnswers(t *testing.T, target string) (*heldAnswers, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &heldAnswers{release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.Request.URL.Path == "/v1/modules/alarms/quantity" && h.holding.Load() {
			body, err := io.ReadAll(r.Body) // the answer as the cloud gave it now
			r.Body.Close()
			if err != nil {
				return err
			}
			h.held.Add(1)
			<-h.release
			r.Body = io.NopCloser(bytes.NewReader(body))
			defer h.answered.Add(1)
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		srv.Close()
	})
	return h, srv.URL
}

// A count pushed while a prime's question for the counts is out is newer
// than that question's answer: the late answer does not undo it, so the
// push that brings the count back to what the late answer said still reads
// the alarm lists.
func TestGatewayPushedAlarmCountOutlivesALatePrimeAnswer(t *testing.T) {
	clock := &simClock{}
	sim := cloudsim.New(cloudsim.Options{Modules: 2, ParamsPerModule: 40, Seed: 7, Logger: testLogger()})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	held, proxyURL := startHeldAnswers(t, sim.URL())
	h := startHarnessOn(t, sim, listTestConfig(clock), func(c *cloudclient.Config) { c.BaseURL = proxyURL })
	devid := h.sim.Devids()[0]
	h.quietLists()
	before := alarmCount(h.gw.Status(), devid)

	held.holding.Store(true)
	h.sim.EmitMemoryUpdated(devid) // a prime, whose count answer (before) is held
	h.waitUntil("the prime's count question held", func() bool { return held.held.Load() == 1 })
	h.mustRaise(devid, 57) // pushed: before+1, read at once
	h.waitFor("alarm 57 active", func(st *Status) bool { return hasActive(st, devid, 57) })
	held.holding.Store(false)
	close(held.release) // the late answer: before
	h.waitUntil("the late answer passed on", func() bool { return held.answered.Load() == 1 })
	h.waitPolls(3)
	if got := alarmCount(h.gw.Status(), devid); got != before+1 {
		t.Fatalf("the late prime answer set the count to %d, want the pushed %d", got, before+1)
	}

	h.mustClear(devid, 57) // pushed: before again
	h.waitFor("alarm 57 no longer active", func(st *Status) bool { return !hasActive(st, devid, 57) })
}
