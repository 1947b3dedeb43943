package outage

import (
	"errors"
	"log/slog"
	"testing"
)

var errPoll = errors.New("503 Service Unavailable")

func rows(rs ...Row) Listing { return Listing{Recognised: true, Rows: rs} }

func on(devid string, at int64) Row { return Row{Devid: devid, ConnectedAt: at} }
func off(devid string) Row          { return Row{Devid: devid} }
func gw(addr string) *Gateway       { return &Gateway{Address: addr, Interface: "wifi", Version: "V2.08"} }
func wsOn(devid string, at int64) StatusEvent {
	return StatusEvent{Devid: devid, HasConnectedAt: true, ConnectedAt: at}
}
func wsOff(devid string) StatusEvent { return StatusEvent{Devid: devid, HasConnectedAt: true} }

// poll runs one poll begun and completed at the same instant.
func poll(t *testing.T, m *Modules, l Listing, s float64) ModulesResult {
	t.Helper()
	r, err := m.CompletePoll(m.BeginPoll(), l, at(s))
	if err != nil {
		t.Fatalf("CompletePoll: %v", err)
	}
	return r
}

func mustState(t *testing.T, m *Modules, devid string, wantKnown, wantOnline bool) {
	t.Helper()
	online, known := m.Online(devid)
	if known != wantKnown || online != wantOnline {
		t.Fatalf("%s: known=%v online=%v, want known=%v online=%v", devid, known, online, wantKnown, wantOnline)
	}
}

func modSnap(t *testing.T, m *Modules, devid string, s float64) ModuleSnapshot {
	t.Helper()
	for _, ms := range m.Snapshot(at(s)).Modules {
		if ms.Devid == devid {
			return ms
		}
	}
	t.Fatalf("%s not in snapshot", devid)
	return ModuleSnapshot{}
}

func onlineModules(t *testing.T, eps *Episodes) *Modules {
	t.Helper()
	m := NewModules(ModulesConfig{Subscribed: []string{"A", "B"}, Episodes: eps})
	poll(t, m, rows(on("A", 1700000000), on("B", 1700000001)), 0)
	mustState(t, m, "A", true, true)
	mustState(t, m, "B", true, true)
	return m
}

// The spec's "Module online state" table, one test per row.

func TestModuleRow1_Online_PollRowConnectedAtZero_Offline(t *testing.T) {
	m := onlineModules(t, nil)
	r := poll(t, m, rows(off("A"), on("B", 1700000001)), 10)
	mustState(t, m, "A", true, false)
	mustState(t, m, "B", true, true)
	if len(r.Changes) != 1 || !r.Changes[0].WentOffline || r.Changes[0].Source != SourceREST {
		t.Fatalf("changes: %+v", r.Changes)
	}
	o := modSnap(t, m, "A", 25).Outage
	if !o.Down || o.Reason != SourceREST || !o.DownSince.Equal(at(10)) || o.DownFor != secs(15) {
		t.Fatalf("outage: %+v", o)
	}
}

// A degraded row (connectedAt null, gateway {} or null) arrives with
// ConnectedAt 0 and an empty gateway: it must count as offline (docs/spec.md W-7.6).
func TestModuleRow1_Online_DegradedRowNullConnectedAt_Offline(t *testing.T) {
	m := onlineModules(t, nil)
	poll(t, m, rows(Row{Devid: "A"}, on("B", 1700000001)), 10)
	mustState(t, m, "A", true, false)
	if s := modSnap(t, m, "A", 10); s.ConnectedAt != 0 || s.Gateway != (Gateway{}) {
		t.Fatalf("degraded row metadata: %+v", s)
	}
}

func TestModuleRow2_Online_RowMissingWithSibling_DerivedOffline(t *testing.T) {
	m := onlineModules(t, nil)
	r := poll(t, m, rows(on("B", 1700000001)), 10)
	mustState(t, m, "A", true, false)
	if len(r.Changes) != 1 || r.Changes[0].Devid != "A" || r.Changes[0].Source != SourceDerived || r.Changes[0].MetadataChanged {
		t.Fatalf("changes: %+v", r.Changes)
	}
	s := modSnap(t, m, "A", 10)
	if s.Outage.Reason != SourceDerived || s.ConnectedAt != 1700000000 {
		t.Fatalf("derived-missing keeps connectedAt, reason derived: %+v", s)
	}
}

func TestModuleRow3_Online_WSConnectionStatusDisconnect_Offline(t *testing.T) {
	m := onlineModules(t, nil)
	r := m.ObserveWS(wsOff("A"), at(10))
	mustState(t, m, "A", true, false)
	if len(r.Changes) != 1 || !r.Changes[0].WentOffline || r.Changes[0].Source != SourceWS {
		t.Fatalf("changes: %+v", r.Changes)
	}
	if o := modSnap(t, m, "A", 10).Outage; o.Reason != SourceWS {
		t.Fatalf("outage: %+v", o)
	}
}

func TestModuleRow4_Online_PollFailsOnce_Unchanged(t *testing.T) {
	m := onlineModules(t, nil)
	r := poll(t, m, Listing{Err: errPoll}, 10)
	mustState(t, m, "A", true, true)
	mustState(t, m, "B", true, true)
	if !r.Failure || r.Usable || len(r.Changes) != 0 || r.FailureStreak != 1 || r.LogLevel != slog.LevelWarn {
		t.Fatalf("result: %+v", r)
	}
}

func TestModuleRow5_Online_SustainedUnusablePolls_Unchanged(t *testing.T) {
	unusable := []struct {
		name string
		l    Listing
	}{
		{"error", Listing{Err: errPoll}},
		{"empty", rows()},
		{"unrecognised", Listing{Recognised: false}},
		{"no subscribed devid", rows(on("FOREIGN", 1))},
		{"only unparseable subscribed rows", rows(Row{Devid: "A", Unparsed: true}, Row{Devid: "B", Unparsed: true})},
	}
	m := onlineModules(t, nil)
	for round := 0; round < 3; round++ {
		for i, u := range unusable {
			r := poll(t, m, u.l, float64(10+round*100+i))
			streak := round*len(unusable) + i + 1
			if !r.Failure || r.FailureStreak != streak || len(r.Changes) != 0 {
				t.Fatalf("%s: %+v", u.name, r)
			}
			// Logged once per outage window: WARN first, DEBUG after.
			want := slog.LevelDebug
			if streak == 1 {
				want = slog.LevelWarn
			}
			if r.LogLevel != want {
				t.Fatalf("%s (streak %d): level %v, want %v", u.name, streak, r.LogLevel, want)
			}
			mustState(t, m, "A", true, true)
			mustState(t, m, "B", true, true)
		}
	}
	if m.FailureStreak() != 15 || m.Snapshot(at(400)).FailureStreak != 15 {
		t.Fatalf("streak %d", m.FailureStreak())
	}
	// A usable listing resets the streak; the next window warns again.
	if r := poll(t, m, rows(on("A", 1), on("B", 2)), 500); !r.Usable || r.FailureStreak != 0 {
		t.Fatalf("usable: %+v", r)
	}
	if r := poll(t, m, rows(), 510); r.FailureStreak != 1 || r.LogLevel != slog.LevelWarn {
		t.Fatalf("new window: %+v", r)
	}
}

func TestModuleRow6_Offline_RESTNonZeroConnectedAt_Online(t *testing.T) {
	eps := NewEpisodes(DefaultEpisodeLimit)
	m := onlineModules(t, eps)
	poll(t, m, rows(off("A"), on("B", 2)), 10)
	r := poll(t, m, rows(on("A", 1700000100), on("B", 2)), 70)
	mustState(t, m, "A", true, true)
	if got := r.CameOnline(); len(got) != 1 || got[0] != "A" {
		t.Fatalf("CameOnline %v (%+v)", got, r.Changes)
	}
	c := r.Changes[0]
	if c.RestoredAfter != secs(60) || c.RestoredReason != SourceREST || c.Episode == nil {
		t.Fatalf("change: %+v", c)
	}
	o := modSnap(t, m, "A", 80).Outage
	if o.Down || !o.HasLast || o.LastDownFor != secs(60) || o.LastReason != SourceREST {
		t.Fatalf("record: %+v", o)
	}
	e := eps.Snapshot()
	if len(e) != 1 || e[0].Layer != LayerModule || e[0].Devid != "A" || e[0].Reason != SourceREST || e[0].DownFor != secs(60) {
		t.Fatalf("episodes: %+v", e)
	}
}

func TestModuleRow6_Offline_WSNonZeroConnectedAt_Online(t *testing.T) {
	m := onlineModules(t, nil)
	m.ObserveWS(wsOff("A"), at(10))
	r := m.ObserveWS(StatusEvent{Devid: "A", HasConnectedAt: true, ConnectedAt: 1700000100, Gateway: gw("10.0.0.2")}, at(40))
	mustState(t, m, "A", true, true)
	if len(r.CameOnline()) != 1 || r.Changes[0].Source != SourceWS || !r.Changes[0].MetadataChanged {
		t.Fatalf("changes %+v", r.Changes)
	}
	s := modSnap(t, m, "A", 40)
	if s.ConnectedAt != 1700000100 || s.Gateway.Address != "10.0.0.2" || s.Outage.LastDownFor != secs(30) {
		t.Fatalf("snapshot %+v", s)
	}
}

// docs/spec.md W-4.4c test: down via ws at t=0, metadata update via rest at t=8, up at
// t=8 → last_down_for_s=8, last_reason=ws.
func TestModuleOutageRecord_DownViaWS_MetadataViaREST_UpAt8(t *testing.T) {
	m := NewModules(ModulesConfig{Subscribed: []string{"A", "B"}})
	poll(t, m, rows(on("A", 1), on("B", 2)), -60)
	m.ObserveWS(wsOff("A"), at(0))
	r := poll(t, m, rows(Row{Devid: "A", Gateway: *gw("10.0.0.9")}, on("B", 2)), 8)
	if len(r.Changes) != 1 || r.Changes[0].OnlineChanged || !r.Changes[0].MetadataChanged {
		t.Fatalf("metadata-only change expected: %+v", r.Changes)
	}
	o := modSnap(t, m, "A", 8).Outage
	if !o.Down || !o.DownSince.Equal(at(0)) || o.Reason != SourceWS {
		t.Fatalf("metadata while down must keep down_since and reason: %+v", o)
	}
	m.ObserveWS(wsOn("A", 1700000008), at(8))
	o = modSnap(t, m, "A", 8).Outage
	if o.Down || o.LastDownFor != secs(8) || o.LastReason != SourceWS {
		t.Fatalf("last_down_for_s=8 last_reason=ws expected: %+v", o)
	}
}

// Rules listed under the table.

func TestModuleRule_DeprecatedFailOfflineAfter_HasNoEffect(t *testing.T) {
	m := NewModules(ModulesConfig{Subscribed: []string{"A"}, GetModulesFailOfflineAfter: 1})
	poll(t, m, rows(on("A", 1)), 0)
	for i := 0; i < 10; i++ {
		poll(t, m, Listing{Err: errPoll}, float64(60*(i+1)))
	}
	mustState(t, m, "A", true, true)
	if o := modSnap(t, m, "A", 700).Outage; o.Down {
		t.Fatalf("failures must not open an outage: %+v", o)
	}
}

func TestModuleRule_RealtimeDisconnectKeepsInFlightFailedPollInStreak(t *testing.T) {
	m := onlineModules(t, nil)
	s := NewSession(SessionConfig{})
	s.Connected(at(0))
	gen := m.BeginPoll()
	s.Disconnected(at(5), ReasonEIOClose) // ordinary realtime disconnect
	r, err := m.CompletePoll(gen, Listing{Err: errPoll}, at(8))
	if err != nil || r.Discarded || r.FailureStreak != 1 {
		t.Fatalf("the failed poll must stay in the streak: %+v %v", r, err)
	}
}

func TestModuleRule_OnlyStopInvalidatesInFlightCompletion(t *testing.T) {
	m := onlineModules(t, nil)
	poll(t, m, Listing{Err: errPoll}, 5)
	gen := m.BeginPoll()
	m.Stop()
	if m.FailureStreak() != 0 {
		t.Fatalf("stop resets the streak, have %d", m.FailureStreak())
	}
	r, err := m.CompletePoll(gen, Listing{Err: errPoll}, at(8))
	if err != nil || !r.Discarded || r.DiscardReason != DiscardStopped || m.FailureStreak() != 0 {
		t.Fatalf("completion begun before stop must be discarded: %+v %v", r, err)
	}
	r, err = func() (ModulesResult, error) {
		g := m.BeginPoll()
		return m.CompletePoll(g, rows(off("A"), on("B", 2)), at(9))
	}()
	if err != nil || r.Discarded {
		t.Fatalf("a poll begun after stop applies: %+v %v", r, err)
	}
	// A usable listing begun before stop is discarded too, state untouched.
	gen = m.BeginPoll()
	m.Stop()
	if r, _ := m.CompletePoll(gen, rows(on("A", 5), on("B", 2)), at(10)); !r.Discarded {
		t.Fatalf("usable completion after stop must be discarded: %+v", r)
	}
	mustState(t, m, "A", true, false)
	if r := poll(t, m, rows(), 11); r.LogLevel != slog.LevelWarn || r.FailureStreak != 1 {
		t.Fatalf("first failure after stop opens a new window: %+v", r)
	}
}

func TestModuleRule_SerializedPolls_OlderFailureAfterNewerSuccess_NoStreak(t *testing.T) {
	m := onlineModules(t, nil)
	older := m.BeginPoll()
	newer := m.BeginPoll()
	if r, _ := m.CompletePoll(newer, rows(on("A", 1), on("B", 2)), at(10)); !r.Usable {
		t.Fatalf("newer: %+v", r)
	}
	r, err := m.CompletePoll(older, Listing{Err: errPoll}, at(11))
	if err != nil || !r.Discarded || r.DiscardReason != DiscardStale || m.FailureStreak() != 0 {
		t.Fatalf("older failure must not rebuild the streak: %+v %v streak=%d", r, err, m.FailureStreak())
	}
	// An older usable completion must not overwrite the newer state either.
	older = m.BeginPoll()
	newer = m.BeginPoll()
	m.CompletePoll(newer, rows(off("A"), on("B", 2)), at(20))
	if r, _ := m.CompletePoll(older, rows(on("A", 1), on("B", 2)), at(21)); !r.Discarded {
		t.Fatalf("older listing must be discarded: %+v", r)
	}
	mustState(t, m, "A", true, false)
}

func TestModuleRule_OlderRESTDoesNotOverwriteNewerWS(t *testing.T) {
	m := onlineModules(t, nil)
	gen := m.BeginPoll()
	m.ObserveWS(wsOff("A"), at(5))                         // newer than the poll's begin
	m.ObserveWS(wsOn("B", 9), at(5))                       // B observed too
	r, err := m.CompletePoll(gen, rows(on("A", 1)), at(6)) // B missing: would derive offline
	if err != nil || !r.Usable || len(r.Changes) != 0 {
		t.Fatalf("older REST must not change WS-observed modules: %+v %v", r, err)
	}
	mustState(t, m, "A", true, false)
	mustState(t, m, "B", true, true)
	// A poll begun after the WS observation applies.
	poll(t, m, rows(on("A", 1), off("B")), 7)
	mustState(t, m, "A", true, true)
	mustState(t, m, "B", true, false)
}

func TestModuleRule_UnknownUntilFirstObservation(t *testing.T) {
	m := NewModules(ModulesConfig{Subscribed: []string{"A", "B"}})
	mustState(t, m, "A", false, false)
	if s := modSnap(t, m, "A", 0); s.Known || s.Outage.Down {
		t.Fatalf("snapshot %+v", s)
	}
	poll(t, m, Listing{Err: errPoll}, 1)
	mustState(t, m, "A", false, false)
	r := poll(t, m, rows(on("A", 1)), 2)
	c := r.Changes
	if len(c) != 2 || c[0].Devid != "A" || !c[0].OnlineChanged || c[0].CameOnline || c[0].Episode != nil {
		t.Fatalf("unknown→online is a change but not a return: %+v", c)
	}
	if c[1].Devid != "B" || !c[1].WentOffline || c[1].Source != SourceDerived {
		t.Fatalf("B derived: %+v", c[1])
	}
	if o := modSnap(t, m, "A", 3).Outage; o.Down || o.HasLast {
		t.Fatalf("unknown→online opens no record: %+v", o)
	}
}

func TestModuleRule_FirstObservationOffline_OpensOutage(t *testing.T) {
	m := NewModules(ModulesConfig{Subscribed: []string{"A"}})
	r := poll(t, m, rows(off("A")), 0)
	if len(r.Changes) != 1 || !r.Changes[0].WentOffline {
		t.Fatalf("changes %+v", r.Changes)
	}
	s := modSnap(t, m, "A", 30)
	if !s.Outage.Down || s.Outage.Reason != SourceREST || s.Outage.DownFor != secs(30) || s.Outages[SourceREST] != 1 {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestModuleRule_UnparseableConnectedAtRowSkipped(t *testing.T) {
	m := onlineModules(t, nil)
	r := poll(t, m, rows(Row{Devid: "A", Unparsed: true, Gateway: *gw("x")}, off("B")), 10)
	if !r.Usable {
		t.Fatalf("B makes it usable: %+v", r)
	}
	mustState(t, m, "A", true, true) // not applied, not derived-missing
	mustState(t, m, "B", true, false)
	if s := modSnap(t, m, "A", 10); s.Gateway.Address == "x" {
		t.Fatalf("skipped row must not change metadata: %+v", s)
	}
}

func TestModuleRule_GatewayOnlyWS_MetadataOnlyWhenKnown(t *testing.T) {
	m := NewModules(ModulesConfig{Subscribed: []string{"A"}})
	if r := m.ObserveWS(StatusEvent{Devid: "A", Gateway: gw("10.0.0.2")}, at(0)); !r.Ignored {
		t.Fatalf("gateway-only while unknown must be ignored: %+v", r)
	}
	mustState(t, m, "A", false, false)
	m.ObserveWS(wsOff("A"), at(1))
	r := m.ObserveWS(StatusEvent{Devid: "A", Gateway: gw("10.0.0.3")}, at(5))
	if len(r.Changes) != 1 || r.Changes[0].OnlineChanged || !r.Changes[0].MetadataChanged {
		t.Fatalf("gateway-only while known: metadata change only: %+v", r)
	}
	s := modSnap(t, m, "A", 5)
	if s.Online || s.Gateway.Address != "10.0.0.3" || !s.Outage.DownSince.Equal(at(1)) || s.Outage.Reason != SourceWS {
		t.Fatalf("snapshot %+v", s)
	}
	if r := m.ObserveWS(StatusEvent{Devid: "A", Gateway: gw("10.0.0.3")}, at(6)); len(r.Changes) != 0 {
		t.Fatalf("same metadata is no change: %+v", r)
	}
	if r := m.ObserveWS(StatusEvent{Devid: "A"}, at(7)); !r.Ignored {
		t.Fatalf("empty body ignored: %+v", r)
	}
}

func TestModuleRule_ForeignDevidIgnored(t *testing.T) {
	m := onlineModules(t, nil)
	if r := m.ObserveWS(wsOff("FOREIGN"), at(1)); !r.Ignored || len(r.Changes) != 0 {
		t.Fatalf("foreign WS: %+v", r)
	}
	if _, known := m.Online("FOREIGN"); known {
		t.Fatal("foreign devid must not be tracked")
	}
	if len(m.Snapshot(at(1)).Modules) != 2 {
		t.Fatal("only subscribed devids are tracked")
	}
}

func TestModuleRule_OutagesCountedByReason(t *testing.T) {
	m := onlineModules(t, nil)
	m.ObserveWS(wsOff("A"), at(1))
	m.ObserveWS(wsOn("A", 3), at(2))
	poll(t, m, rows(on("B", 2)), 3)
	poll(t, m, rows(on("A", 4), on("B", 2)), 4)
	poll(t, m, rows(off("A"), on("B", 2)), 5)
	poll(t, m, rows(off("A"), on("B", 2)), 6) // still down: not a new outage
	got := modSnap(t, m, "A", 6).Outages
	if got[SourceWS] != 1 || got[SourceDerived] != 1 || got[SourceREST] != 1 || len(got) != 3 {
		t.Fatalf("outages %v", got)
	}
}

func TestModuleRule_CompleteUnknownPollIsAnError(t *testing.T) {
	m := onlineModules(t, nil)
	if _, err := m.CompletePoll(999, rows(), at(1)); !errors.Is(err, ErrUnknownPoll) {
		t.Fatalf("err %v", err)
	}
	gen := m.BeginPoll()
	if _, err := m.CompletePoll(gen, rows(on("A", 1)), at(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CompletePoll(gen, rows(), at(2)); !errors.Is(err, ErrUnknownPoll) {
		t.Fatalf("second completion: %v", err)
	}
	if m.FailureStreak() != 0 {
		t.Fatal("an erroneous completion must change nothing")
	}
}

func TestModulesAllOffline_UnknownCountsAsOnline(t *testing.T) {
	m := NewModules(ModulesConfig{Subscribed: []string{"A", "B"}})
	if m.AllOffline() {
		t.Fatal("all unknown is not all offline")
	}
	m.ObserveWS(wsOff("A"), at(0))
	if m.AllOffline() {
		t.Fatal("B unknown counts as online")
	}
	m.ObserveWS(wsOff("B"), at(0))
	if !m.AllOffline() {
		t.Fatal("both known offline")
	}
	m.ObserveWS(wsOn("B", 1), at(1))
	if m.AllOffline() {
		t.Fatal("B online")
	}
	if NewModules(ModulesConfig{}).AllOffline() {
		t.Fatal("no modules is not all offline")
	}
}

func TestModulesSetSubscribed(t *testing.T) {
	m := onlineModules(t, nil)
	m.SetSubscribed([]string{"B", "C"})
	if _, known := m.Online("A"); known {
		t.Fatal("A must be forgotten")
	}
	mustState(t, m, "B", true, true)
	mustState(t, m, "C", false, false)
}

func TestModulesSnapshotIsACopy(t *testing.T) {
	m := NewModules(ModulesConfig{Subscribed: []string{"A"}})
	poll(t, m, rows(off("A")), 0)
	s := m.Snapshot(at(1))
	s.Modules[0].Outages[SourceREST] = 42
	if modSnap(t, m, "A", 1).Outages[SourceREST] != 1 {
		t.Fatal("snapshot aliases counters")
	}
}
