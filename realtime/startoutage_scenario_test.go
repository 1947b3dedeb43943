package realtime_test

import (
	"slices"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/outage"
)

// An exporter started while the cloud answers 503 says why it is not up:
// a failed login is the connect failure reason (the first connect cannot be
// made without it), and every failed attempt to read the module list at
// start (at the login, the object list or the list itself) counts as an
// unusable poll. The session was never up, so no outage is published. When
// the cloud answers again the session comes up and both clear.
func TestScenarioStartDuringCloudOutage(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		reason     string // the connect failure reason published; "" = none
	}{
		{"every request 503", "", outage.ReasonLoginUnreachable},
		{"login 503", "POST /v1/auth/user", outage.ReasonLoginUnreachable},
		{"object list 503", "GET /v1/objects", ""},
		{"module list 503", "GET /v1/modules", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fault int
			s := startScenario(t, scenarioSetup{before: func(s *scenario) {
				fault = s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: tc.path, Status: 503})
			}})
			s.eventually("failed start attempts counted as unusable polls", func() bool {
				v, _ := s.metric("bragerone_module_poll_failure_streak")
				return v >= 2
			})
			if !s.is(0, "bragerone_session_up") {
				t.Fatalf("session up during the outage:%s", s.dump())
			}
			want := []string{}
			if tc.reason != "" {
				// A gateway that has not read its object yet publishes
				// under object 0 (the exporter's fleet always names one).
				want = []string{"object_id=0,reason=" + tc.reason}
				if !s.is(1, "bragerone_session_reconnect_failure_reason", "reason", tc.reason) {
					t.Fatalf("reconnect failure reason = %v, want %q at 1", s.labelSets("bragerone_session_reconnect_failure_reason"), tc.reason)
				}
			}
			if got := s.labelSets("bragerone_session_reconnect_failure_reason"); !slices.Equal(got, want) {
				t.Fatalf("reconnect failure reason series = %v, want %v", got, want)
			}
			if !s.absent("bragerone_session_outage_seconds") {
				t.Fatalf("an outage published for a session that was never up: %v", s.labelSets("bragerone_session_outage_seconds"))
			}

			s.sim.Clear(fault)
			s.waitUp()
			s.eventually("start failures cleared", func() bool {
				return s.is(0, "bragerone_module_poll_failure_streak") && s.absent("bragerone_session_reconnect_failure_reason")
			})
			s.nothingLost()
		})
	}
}
