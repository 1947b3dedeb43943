package collector

import (
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// perObjectFamilies are the families every watched object has from its
// first scrape, whatever its state.
var perObjectFamilies = []string{
	"bragerone_object_info", "bragerone_session_up", "bragerone_session_blinks_total",
	"bragerone_session_outages_total", "bragerone_recovery_actions_total", "bragerone_recovery_quarantined",
	"bragerone_recovery_cooldown_seconds", "bragerone_module_poll_failure_streak",
	"bragerone_prime_failures_total", "bragerone_realtime_events_total",
}

// TestObjectsKeepTheirOwnSignals: Home's session is down (a disconnect,
// reconnects answered 503) while Cottage's is up and healthy; each
// object's series say its own state, and each module's info names its
// object.
func TestObjectsKeepTheirOwnSignals(t *testing.T) {
	g := gather(t, newTestCollector(t, sessionDownSnapshot(), healthyParams(), Options{}))
	want := map[string]map[string]float64{
		"bragerone_object_info": {
			"name=Home,object_id=1001": 1, "name=Cottage,object_id=1002": 1,
		},
		"bragerone_session_up":           {"object_id=1001": 0, "object_id=1002": 1},
		"bragerone_push_healthy":         {"object_id=1001": 0, "object_id=1002": 1},
		"bragerone_session_blinks_total": {"object_id=1001": 3, "object_id=1002": 0},
		// Only the object that is down has an outage and a reconnect failure.
		"bragerone_session_outage_seconds":           {"object_id=1001,reason=disconnect": 95},
		"bragerone_session_reconnect_failure_reason": {"object_id=1001,reason=handshake_503": 1},
		"bragerone_session_last_outage_seconds":      {"object_id=1001,reason=eio_close": 42},
		"bragerone_module_poll_failure_streak":       {"object_id=1001": 2, "object_id=1002": 0},
		"bragerone_last_live_update_timestamp_seconds": {
			"object_id=1001": unixSeconds(t0.Add(-97e9)), "object_id=1002": unixSeconds(t0.Add(-7e9)),
		},
		"bragerone_object_list_failure_streak": {"": 1},
		"bragerone_module_info": {
			"devid=MOD1,gateway_version=V2.08,name=Kitchen,object_id=1001,title=Kitchen boiler room,version=3.1.4": 1,
			"devid=MOD2,gateway_version=V2.08,name=Garage,object_id=1002,title=Garage boiler room,version=3.1.4":   1,
		},
	}
	for name, series := range want {
		if len(g[name]) != len(series) {
			t.Errorf("%s = %v, want %v", name, g[name], series)
			continue
		}
		for key, v := range series {
			if got, ok := g[name][key]; !ok || got != v {
				t.Errorf("%s{%s} = %v (present %v), want %v", name, key, got, ok, v)
			}
		}
	}
	for key, v := range map[string]float64{
		"object_id=1001,trigger=tick":              2,
		"object_id=1002,trigger=tick":              0,
		"object_id=1001,reason=disconnect":         1,
		"event=params_change,object_id=1001":       120,
		"event=params_change,object_id=1002":       40,
		"event=connect_error,object_id=1001":       4,
		"event=connect_error,object_id=1002":       0,
		"object_id=1002,result=ok,step=quarantine": 0,
	} {
		found := false
		for _, name := range []string{"bragerone_prime_failures_total", "bragerone_session_outages_total",
			"bragerone_realtime_events_total", "bragerone_recovery_actions_total"} {
			if got, ok := g[name][key]; ok {
				found = true
				if got != v {
					t.Errorf("%s{%s} = %v, want %v", name, key, got, v)
				}
			}
		}
		if !found {
			t.Errorf("no series {%s}", key)
		}
	}
	// The zombie's age belongs to the object whose session is up and
	// silent only: none here (Home is down, Cottage is healthy).
	if s := g["bragerone_live_stale_seconds"]; len(s) != 0 {
		t.Errorf("live_stale_seconds = %v, want none", s)
	}
	// Every series of a per-object family carries object_id.
	for _, name := range append(perObjectFamilies, "bragerone_push_healthy", "bragerone_session_outage_seconds",
		"bragerone_last_update_timestamp_seconds", "bragerone_module_info") {
		for key := range g[name] {
			if !strings.Contains(key, "object_id=100") {
				t.Errorf("%s{%s} has no object_id", name, key)
			}
		}
	}
}

// TestZombieAgeIsPerObject: the stale age is exported for the object whose
// session is up and silent, not for the healthy one beside it.
func TestZombieAgeIsPerObject(t *testing.T) {
	g := gather(t, newTestCollector(t, zombieSnapshot(), nil, Options{}))
	if s := g["bragerone_live_stale_seconds"]; len(s) != 1 || s["object_id=1001"] != 200 {
		t.Errorf("live_stale_seconds = %v, want only object 1001 at 200", s)
	}
	if s := g["bragerone_push_healthy"]; s["object_id=1001"] != 0 || s["object_id=1002"] != 1 {
		t.Errorf("push_healthy = %v, want 1001 at 0 and 1002 at 1", s)
	}
}

// TestObjectLeavingTakesEveryOneOfItsSeries: once the snapshot no longer
// holds Cottage (and so neither its module MOD2), no series names it or its
// module, while Home's series stay as they were.
func TestObjectLeavingTakesEveryOneOfItsSeries(t *testing.T) {
	snap := healthySnapshot()
	c := newTestCollector(t, snap, healthyParams(), Options{})
	before := gather(t, c)
	if _, ok := before["bragerone_object_info"]["name=Cottage,object_id=1002"]; !ok {
		t.Fatal("Cottage not exported while it is in the snapshot: the test would prove nothing")
	}

	snap.Objects = snap.Objects[:1]
	snap.Modules = snap.Modules[:1]
	c = newTestCollector(t, snap, healthyParams(), Options{})
	after := gather(t, c)
	for name, series := range after {
		for key := range series {
			if strings.Contains(key, "object_id=1002") || strings.Contains(key, "devid=MOD2") || strings.Contains(key, "Cottage") {
				t.Errorf("%s{%s} still exported after Cottage left", name, key)
			}
		}
	}
	for _, name := range perObjectFamilies {
		if len(after[name]) == 0 {
			t.Errorf("%s has no series for Home", name)
		}
		for key, v := range after[name] {
			if was, ok := before[name][key]; !ok || was != v {
				t.Errorf("%s{%s} = %v, was %v (present %v) before Cottage left", name, key, v, was, ok)
			}
		}
	}
	if _, ok := after["bragerone_module_info"]; !ok {
		t.Error("Home's module left with Cottage")
	}

	// No object at all: no per-object series, the account's stay.
	snap.Objects, snap.Modules = nil, nil
	none := gather(t, newTestCollector(t, snap, healthyParams(), Options{}))
	for _, name := range append(perObjectFamilies, "bragerone_module_info", "bragerone_push_healthy") {
		if len(none[name]) != 0 {
			t.Errorf("%s = %v without objects", name, none[name])
		}
	}
	if _, ok := none["bragerone_object_list_failure_streak"][""]; !ok {
		t.Error("object_list_failure_streak absent without objects")
	}
}

// TestEventSeriesPerObject: every event kind's name is exported at 0 for an
// object from its first scrape (increase() sees the first event), overflow
// included; counts under names outside the vocabulary are added to other,
// so the label set stays fixed however many names arrive.
func TestEventSeriesPerObject(t *testing.T) {
	fresh := ObjectState{ID: 5}
	busy := ObjectState{ID: 6, Events: map[string]uint64{}}
	want := map[string]float64{}
	for _, k := range cloudapi.EventKinds() {
		busy.Events[k.String()] = 1
		want[k.String()] = 1
	}
	for i := range 500 {
		busy.Events[cloudapi.EventKind(1000+i).String()] = 2
	}
	want[EventOther] = 1 + 1000
	g := gather(t, newTestCollector(t, Snapshot{Objects: []ObjectState{fresh, busy}}, nil, Options{}))
	events := g["bragerone_realtime_events_total"]
	if len(events) != 2*len(cloudapi.EventKinds()) {
		t.Fatalf("%d event series, want %d for each of 2 objects: %v", len(events), len(cloudapi.EventKinds()), events)
	}
	for _, k := range cloudapi.EventKinds() {
		name := k.String()
		if v, ok := events["event="+name+",object_id=5"]; !ok || v != 0 {
			t.Errorf("fresh object: %s = %v (present %v), want 0", name, v, ok)
		}
		if v := events["event="+name+",object_id=6"]; v != want[name] {
			t.Errorf("busy object: %s = %v, want %v", name, v, want[name])
		}
	}
	if _, ok := events["event=overflow,object_id=5"]; !ok {
		t.Error("overflow has no series of its own")
	}
}
