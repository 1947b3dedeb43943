package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// trackerStep is a gateway status watch sees and the events it prints for
// it: as text after the time, and as the JSON line.
type trackerStep struct {
	name   string
	status realtime.Status
	text   []string
	json   []string
}

// trackerSteps walk a session through every change of state watch reports,
// one second apart from trackerStart.
var trackerStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func trackerSteps() []trackerStep {
	up := outage.SessionSnapshot{State: outage.SessionUp, Up: true, UpSince: trackerStart}
	online := func(outages uint64, last outage.Record) []realtime.ModuleStatus {
		return []realtime.ModuleStatus{{ModuleSnapshot: outage.ModuleSnapshot{Devid: "D1", Known: true, Online: true,
			Outages: map[string]uint64{"ws": outages}, Outage: last}}}
	}
	withSession := func(s outage.SessionSnapshot, f func(*outage.SessionSnapshot)) outage.SessionSnapshot {
		f(&s)
		return s
	}
	return []trackerStep{{
		name:   "connected",
		status: realtime.Status{Connected: true, Session: up, Modules: online(0, outage.Record{})},
		text:   []string{"# session up", "# module D1 online"},
		json:   []string{`"event":"session_up","object_id":5747}`, `"event":"module_online","devid":"D1"}`},
	}, {
		name: "ready, push healthy",
		status: realtime.Status{Ready: true, ObjectID: 5747, Subscribed: []string{"D1"}, Connected: true, Session: up,
			Modules: online(0, outage.Record{}), Push: outage.PushStatus{State: outage.PushHealthy}},
		text: []string{"# ready: object 5747, modules [D1], 0 parameters primed", "# live push healthy"},
		json: []string{`"event":"ready","object_id":5747,"modules":[{"devid":"D1"}],"parameters":0}`,
			`"event":"push","object_id":5747,"state":"healthy","stale_seconds":null}`},
	}, {
		name: "push stale",
		status: realtime.Status{Ready: true, Connected: true, Session: up, Modules: online(0, outage.Record{}),
			Push: outage.PushStatus{State: outage.PushUnhealthy, HasStaleFor: true, LiveStaleFor: 300 * time.Second}},
		text: []string{"# live push unhealthy (no live update for 5m0s)"},
		json: []string{`"event":"push","object_id":5747,"state":"unhealthy","stale_seconds":300}`},
	}, {
		name: "disconnected within the hysteresis",
		status: realtime.Status{Ready: true, Session: withSession(up, func(s *outage.SessionSnapshot) { s.PendingReason = "disconnect" }),
			Modules: online(0, outage.Record{})},
		text: []string{"# session disconnected (disconnect); an outage if not back within 15s"},
		json: []string{`"event":"session_disconnected","object_id":5747,"reason":"disconnect","hysteresis_seconds":15}`},
	}, {
		name: "down, module offline",
		status: realtime.Status{Ready: true, Session: outage.SessionSnapshot{State: outage.SessionDown, Outage: outage.Record{Down: true, Reason: "handshake_503"}},
			Modules: []realtime.ModuleStatus{{ModuleSnapshot: outage.ModuleSnapshot{Devid: "D1", Known: true,
				Outages: map[string]uint64{"ws": 1}, Outage: outage.Record{Down: true, Reason: "ws"}}}}},
		text: []string{"# session down (handshake_503)", "# module D1 offline (ws)"},
		json: []string{`"event":"session_down","object_id":5747,"reason":"handshake_503"}`, `"event":"module_offline","devid":"D1","reason":"ws","stale":true,"as_of":null}`},
	}, {
		name:   "up again",
		status: realtime.Status{Ready: true, Connected: true, Session: up, Modules: online(1, outage.Record{})},
		text:   []string{"# session up", "# module D1 online"},
		json:   []string{`"event":"session_up","object_id":5747}`, `"event":"module_online","devid":"D1"}`},
	}, {
		name: "down and up between two looks",
		status: realtime.Status{Ready: true, Connected: true, Session: withSession(up, func(s *outage.SessionSnapshot) {
			s.Outages = map[string]uint64{"eio_close": 1}
			s.Outage = outage.Record{HasLast: true, LastReason: "eio_close", LastDownFor: 1500 * time.Millisecond}
		}), Modules: online(2, outage.Record{HasLast: true, LastReason: "rest", LastDownFor: 2 * time.Second})},
		text: []string{"# session down (eio_close) for 1.5s, up again", "# module D1 offline (rest) for 2s, online again"},
		json: []string{`"event":"session_recovered","object_id":5747,"reason":"eio_close","down_seconds":1.5}`,
			`"event":"module_recovered","devid":"D1","reason":"rest","down_seconds":2}`},
	}, {
		name: "a blink",
		status: realtime.Status{Ready: true, Connected: true, Session: withSession(up, func(s *outage.SessionSnapshot) {
			s.Outages = map[string]uint64{"eio_close": 1}
			s.Blinks = 1
		}), Modules: online(2, outage.Record{})},
		text: []string{"# session blinked: reconnected within the 15s hysteresis"},
		json: []string{`"event":"session_blink","object_id":5747,"hysteresis_seconds":15}`},
	}, {
		name: "reconnected",
		status: realtime.Status{Ready: true, Connected: true, Session: withSession(up, func(s *outage.SessionSnapshot) {
			s.Outages = map[string]uint64{"eio_close": 1}
			s.Blinks = 1
			s.UpSince = trackerStart.Add(time.Minute)
		}), Modules: online(2, outage.Record{})},
		text: []string{"# session reconnected"},
		json: []string{`"event":"session_reconnected","object_id":5747}`},
	}, {
		name:   "closed",
		status: realtime.Status{Ready: true, Session: outage.SessionSnapshot{State: outage.SessionIdle}, Modules: online(2, outage.Record{})},
		text:   []string{"# session closed"},
		json:   []string{`"event":"session_closed","object_id":5747}`},
	}}
}

// trackerEvents runs the tracker through trackerSteps, a status a second.
func trackerEvents(t *testing.T, each func(step trackerStep, at time.Time, events []watchEvent)) {
	tracker := stateTracker{hysteresis: 15 * time.Second, objectID: 5747}
	st := store.New()
	for i, step := range trackerSteps() {
		at := trackerStart.Add(time.Duration(i) * time.Second)
		each(step, at, tracker.observe(&step.status, st, at))
	}
}

// Each change of state is one event, stamped with the time it was seen,
// and reads the same as text and as JSON.
func TestWatchStateEvents(t *testing.T) {
	trackerEvents(t, func(step trackerStep, at time.Time, events []watchEvent) {
		stamp := at.Format("2006-01-02T15:04:05.000Z07:00")
		var text, json []string
		for _, e := range events {
			text = append(text, strings.TrimSuffix(string(e.render(false)), "\n"))
			json = append(json, strings.TrimSuffix(string(e.render(true)), "\n"))
		}
		var wantText, wantJSON []string
		for _, l := range step.text {
			wantText = append(wantText, stamp+" "+l)
		}
		for _, l := range step.json {
			wantJSON = append(wantJSON, `{"time":"`+stamp+`",`+l)
		}
		if strings.Join(text, "\n") != strings.Join(wantText, "\n") {
			t.Errorf("%s: text\n%s\nwant\n%s", step.name, strings.Join(text, "\n"), strings.Join(wantText, "\n"))
		}
		if strings.Join(json, "\n") != strings.Join(wantJSON, "\n") {
			t.Errorf("%s: json\n%s\nwant\n%s", step.name, strings.Join(json, "\n"), strings.Join(wantJSON, "\n"))
		}
	})
}
