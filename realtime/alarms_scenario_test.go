package realtime_test

import (
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
)

// docs/spec.md W-2.5a and W-3.3d: each prime asks for the modules' alarm
// quantities and publishes them per module, and an alarm-quantity push
// updates the published count at once. The poll is an hour away, so nothing
// but the prime and the push can set the count.
func TestAlarmQuantitiesFromPrimeAndPush(t *testing.T) {
	s := startScenario(t, scenarioSetup{
		sim: func(o *cloudsim.Options) { o.Modules = 2 },
		gw:  func(c *realtime.Config) { c.PollInterval = time.Hour },
	})
	s.waitBoundAndPrimed()
	asked := s.sim.Requests("POST /v1/modules/alarms/quantity")
	if asked == 0 {
		t.Fatal("the prime did not ask for the alarm quantities")
	}
	for _, d := range s.sim.Devids() {
		want := float64(len(s.sim.DescribedAlarms(d, "en")))
		s.eventually("the primed alarm count of "+d, func() bool { return s.is(want, "bragerone_module_alarms", "devid", d) })
	}

	d := s.sim.Devids()[0]
	other := s.sim.Devids()[1]
	otherCount, _ := s.metric("bragerone_module_alarms", "devid", other)
	pushed := len(s.sim.DescribedAlarms(d, "en")) + 4
	s.sim.EmitAlarmsQuantity(d, pushed)
	s.eventually("the pushed alarm count", func() bool {
		return s.is(float64(pushed), "bragerone_module_alarms", "devid", d)
	})
	if !s.is(otherCount, "bragerone_module_alarms", "devid", other) {
		t.Errorf("a push for %s changed the count of %s", d, other)
	}
	if n := s.sim.Requests("POST /v1/modules/alarms/quantity"); n != asked {
		t.Errorf("the push was answered by %d more REST asks; it must be taken as pushed", n-asked)
	}
}
