package cloudsim

import (
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

func TestHandshakeNeedsValidBearerToken(t *testing.T) {
	c := startCloud(t, Options{})
	for name, tok := range map[string]string{"missing": "", "invalid": "not-a-token"} {
		if e := refused(t, c, tok); !strings.Contains(e, "Unauthorized") {
			t.Errorf("%s token: connect_error %q, want Unauthorized", name, e)
		}
	}
	if n := len(c.Sessions()); n != 0 {
		t.Fatalf("%d sessions after refused handshakes", n)
	}
	tok := login(t, c)
	tc := connected(t, c, tok)
	s, ok := sessionBySID(c, tc.SID())
	if !ok || !s.Connected || s.EngineSID == "" || s.EngineSID == s.SID || len(s.Bound) != 0 {
		t.Fatalf("session for %s = %+v (found %v)", tc.SID(), s, ok)
	}
	c.RevokeTokens()
	if e := refused(t, c, tok); !strings.Contains(e, "Unauthorized") {
		t.Fatalf("revoked token: %q", e)
	}
}

func TestPushesGoOnlyToBoundSessions(t *testing.T) {
	c := startCloud(t, Options{Modules: 2})
	tok := login(t, c)
	d := c.Devids()
	a := connected(t, c, tok)
	b := connected(t, c, tok)
	bind(t, c, tok, "wsid", a.SID(), []string{d[0]})
	if s, _ := sessionBySID(c, a.SID()); len(s.Bound) != 1 || s.Bound[0] != d[0] {
		t.Fatalf("bound = %v", s.Bound)
	}

	c.SetParam(d[0], "P4.v1", 55.5)
	ev := a.next(cloudapi.WireParamsChange)
	v1 := ev.payload[d[0]].(map[string]any)["P4"].(map[string]any)["v1"].(map[string]any)
	if v1["value"] != 55.5 || v1["updatedAt"] == nil || len(ev.payload) != 1 {
		t.Fatalf("delta = %s", mustJSON(ev.payload))
	}
	if c.Params(d[0])["P4.v1"] != 55.5 {
		t.Fatal("SetParam did not change the state")
	}

	// b is unbound: bind it to the other module and push there. Events on
	// one connection keep their order, so a leaked d[0] push would arrive
	// before this marker.
	bind(t, c, tok, "sid", b.SID(), []string{d[1]})
	c.SetParam(d[1], "P5.v2", 7)
	ev = b.next(cloudapi.WireParamsChange)
	if _, leaked := ev.payload[d[0]]; leaked || ev.payload[d[1]] == nil {
		t.Fatalf("unbound session got %s", mustJSON(ev.payload))
	}
	for _, name := range b.drainNames() {
		t.Fatalf("extra event %q on b", name)
	}

	// A plain command and a drift step are pushed as live deltas too.
	r := call(t, c, "POST", "/v1/module/command", tok, map[string]any{"devid": d[0], "pool": "P6", "parameter": "v3", "value": 4})
	if r.status != 200 {
		t.Fatalf("command = %d", r.status)
	}
	ev = a.next(cloudapi.WireParamsChange)
	if got := ev.payload[d[0]].(map[string]any)["P6"].(map[string]any)["v3"].(map[string]any)["value"]; got != float64(4) {
		t.Fatalf("command delta = %s", mustJSON(ev.payload))
	}
	c.Drift()
	ev = a.next(cloudapi.WireParamsChange)
	for pool, entries := range ev.payload[d[0]].(map[string]any) {
		for k, body := range entries.(map[string]any) {
			if k[0] != 'v' || body.(map[string]any)["value"] == nil {
				t.Fatalf("drift delta %s.%s = %v", pool, k, body)
			}
			if got := c.Params(d[0])[pool+"."+k]; mustJSON(got) != mustJSON(body.(map[string]any)["value"]) {
				t.Fatalf("drift delta %s.%s = %v, state %v", pool, k, body, got)
			}
		}
	}
}

func TestStaleSIDBindsNothing(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	d := c.Devids()[0]
	old := connected(t, c, tok)
	oldSID := old.SID()
	old.sock.Disconnect()
	eventually(t, "old session to end", func() bool { s, _ := sessionBySID(c, oldSID); return !s.Connected })

	cur := connected(t, c, tok)
	if cur.SID() == oldSID {
		t.Fatal("reconnect reused the namespace SID")
	}
	bind(t, c, tok, "wsid", oldSID, []string{d}) // answered 200 like the real cloud...
	if s, _ := sessionBySID(c, cur.SID()); len(s.Bound) != 0 {
		t.Fatalf("stale SID bound the current session: %v", s.Bound)
	}
	c.SetParam(d, "P4.v1", 1.5) // ...and nothing reaches the new session
	bind(t, c, tok, "wsid", cur.SID(), []string{d})
	c.SetParam(d, "P4.v1", 2.5)
	ev := cur.next(cloudapi.WireParamsChange)
	if got := ev.payload[d].(map[string]any)["P4"].(map[string]any)["v1"].(map[string]any)["value"]; got != 2.5 {
		t.Fatalf("first delta after a stale bind = %v, want only the one after the real bind (2.5)", got)
	}
	// The Engine.IO SID is not a namespace SID and binds nothing either.
	other := connected(t, c, tok)
	s, _ := sessionBySID(c, other.SID())
	bind(t, c, tok, "wsid", s.EngineSID, []string{d})
	if s, _ := sessionBySID(c, other.SID()); len(s.Bound) != 0 {
		t.Fatalf("engine SID bound the session: %v", s.Bound)
	}
}

func TestMemoryUpdatedIsNumericEvent22(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	d := c.Devids()[1]
	a := connected(t, c, tok)
	bind(t, c, tok, "wsid", a.SID(), []string{d})
	c.EmitMemoryUpdated(d)
	ev := a.next("22")
	if !ev.numeric || ev.payload["devid"] != d || len(ev.payload) != 1 {
		t.Fatalf("event 22 = %+v, want the number 22 with {\"devid\":%q}", ev, d)
	}
	if r := call(t, c, "POST", "/control/modules/"+d+"/memory-updated", "", nil); r.status != 200 {
		t.Fatalf("control memory-updated = %d", r.status)
	}
	if ev := a.next("22"); !ev.numeric {
		t.Fatalf("control event 22 = %+v", ev)
	}
	frame, err := eventFrame(cloudapi.WireMemoryUpdated, map[string]any{"devid": d})
	if err != nil || frame.String() != `2/ws,[22,{"devid":"`+d+`"}]` {
		t.Fatalf("frame = %v %v", frame, err)
	}
}

func TestConnectionStatusEvent(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	d := c.Devids()[0]
	a := connected(t, c, tok)
	bind(t, c, tok, "wsid", a.SID(), []string{d})
	c.SetModuleOnline(d, false)
	ev := a.next(cloudapi.WireConnectionStatus)
	body := ev.payload[d].(map[string]any)
	gw, _ := body["gateway"].(map[string]any)
	if body["connectedAt"] != float64(0) || gw["address"] == nil || gw["version"] == nil {
		t.Fatalf("offline status = %s", mustJSON(ev.payload))
	}
	if r := call(t, c, "POST", "/control/modules/"+d+"/online", "", nil); r.status != 200 {
		t.Fatalf("control online = %d", r.status)
	}
	ev = a.next(cloudapi.WireConnectionStatus)
	if at, _ := ev.payload[d].(map[string]any)["connectedAt"].(float64); at < 1e9 {
		t.Fatalf("online status = %s", mustJSON(ev.payload))
	}
}

func TestClientEmitsAndSessionTracking(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	a := connected(t, c, tok)
	mods := c.Devids()
	for _, ev := range []string{"app:modules:parameters:listen", "app:modules:activity:quantity:listen", "app:modules:alarms:quantity:listen"} {
		_ = a.sock.Emit(ev, map[string]any{"modules": mods, "group_id": c.ObjectID()})
		_ = a.sock.Emit(ev, map[string]any{"devids": mods, "group_id": c.ObjectID()})
	}
	eventually(t, "listen emits to be recorded", func() bool {
		s, _ := sessionBySID(c, a.SID())
		return s.Listens["app:modules:parameters:listen"] == 2 && s.Listens["app:modules:alarms:quantity:listen"] == 2
	})
	st := c.Snapshot()
	if len(st.Sessions) != 1 || st.Sessions[0].SID != a.SID() || !st.Sessions[0].Connected {
		t.Fatalf("state sessions = %+v", st.Sessions)
	}
	// The emits are kept in order with their argument as sent.
	emits := st.Sessions[0].Emits
	if len(emits) != 6 || emits[0].Event != "app:modules:parameters:listen" || emits[1].Event != emits[0].Event {
		t.Fatalf("emits = %+v", emits)
	}
	if arg, _ := emits[1].Arg.(map[string]any); arg["group_id"] != float64(c.ObjectID()) || arg["devids"] == nil {
		t.Fatalf("second emit's argument = %#v", emits[1].Arg)
	}
	a.sock.Disconnect()
	eventually(t, "session to be marked disconnected", func() bool { s, _ := sessionBySID(c, a.SID()); return !s.Connected && s.Reason != "" })
}

func TestMutePushesFault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	d := c.Devids()[0]
	a := connected(t, c, tok)
	bind(t, c, tok, "wsid", a.SID(), []string{d})

	id := c.Inject(Fault{Kind: FaultMutePushes})
	c.SetParam(d, "P4.v1", 10.0)
	c.EmitMemoryUpdated(d)
	c.SetModuleOnline(d, false)
	if s, _ := sessionBySID(c, a.SID()); !s.Connected {
		t.Fatal("mute_pushes ended the session")
	}
	c.Clear(id)
	c.SetParam(d, "P4.v1", 11.0)
	ev := a.next(cloudapi.WireParamsChange)
	if got := ev.payload[d].(map[string]any)["P4"].(map[string]any)["v1"].(map[string]any)["value"]; got != 11.0 {
		t.Fatalf("first push after mute = %v, want 11 (muted pushes leaked)", got)
	}
	if names := a.drainNames(); len(names) != 0 {
		t.Fatalf("muted events arrived: %v", names)
	}

	// Count limits the pushes swallowed; a Devid limits the module.
	c.Inject(Fault{Kind: FaultMutePushes, Count: 1})
	c.SetParam(d, "P4.v1", 12.0)
	c.SetParam(d, "P4.v1", 13.0)
	ev = a.next(cloudapi.WireParamsChange)
	if got := ev.payload[d].(map[string]any)["P4"].(map[string]any)["v1"].(map[string]any)["value"]; got != 13.0 {
		t.Fatalf("after a count-1 mute got %v, want 13", got)
	}
	other := c.Devids()[1]
	bind(t, c, tok, "wsid", a.SID(), []string{other})
	c.Inject(Fault{Kind: FaultMutePushes, Devid: other})
	c.SetParam(other, "P4.v1", 1.0)
	c.SetParam(d, "P4.v1", 14.0)
	ev = a.next(cloudapi.WireParamsChange)
	if ev.payload[d] == nil {
		t.Fatalf("mute of %s muted %s too, or leaked: %s", other, d, mustJSON(ev.payload))
	}
}

func TestCloseTransportFault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	a := connected(t, c, tok)
	c.Inject(Fault{Kind: FaultCloseTransport})
	select {
	case reason := <-a.discs:
		if reason != "transport close" {
			t.Fatalf("disconnect reason %q, want \"transport close\" (a clean close)", reason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("close_transport did not end the session")
	}
	eventually(t, "server to see the session end", func() bool { s, _ := sessionBySID(c, a.SID()); return !s.Connected })
	if len(c.Faults()) != 0 {
		t.Fatalf("one-shot fault still active: %v", c.Faults())
	}
	// One-shot: the next session lives.
	b := connected(t, c, tok)
	if s, _ := sessionBySID(c, b.SID()); !s.Connected {
		t.Fatal("second session closed too")
	}

	// Armed with no session present, it hits the next session to bind.
	c2 := startCloud(t, Options{})
	tok2 := login(t, c2)
	c2.Inject(Fault{Kind: FaultCloseTransport})
	if len(c2.Faults()) != 1 {
		t.Fatal("fault with no session to hit was dropped")
	}
	x := connected(t, c2, tok2)
	if s, _ := sessionBySID(c2, x.SID()); !s.Connected {
		t.Fatal("armed close_transport hit a session before it bound")
	}
	bind(t, c2, tok2, "wsid", x.SID(), c2.Devids()[:1])
	select {
	case <-x.discs:
	case <-time.After(10 * time.Second):
		t.Fatal("armed close_transport did not hit the next session")
	}
	if len(c2.Faults()) != 0 {
		t.Fatal("armed close_transport not spent after hitting a session")
	}
}

func TestStallHandshakeFault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	id := c.Inject(Fault{Kind: FaultStallHandshake})
	a := dial(t, c, tok)
	eventually(t, "the handshake request to arrive", func() bool { return c.Requests("GET /socket.io/") == 1 })
	select {
	case sid := <-a.connect:
		t.Fatalf("joined as %s through a stalled handshake", sid)
	case e := <-a.errs:
		t.Fatalf("stalled handshake answered: %s", e)
	default:
	}
	if len(c.Sessions()) != 0 {
		t.Fatal("a session exists behind a stalled handshake")
	}
	c.Clear(id)
	// The held request is answered once the fault clears: its Engine.IO
	// session opens.
	eventually(t, "the held handshake to be answered", func() bool { return c.io.Engine().ClientsCount() == 1 })
}

func TestNoNamespaceAckFault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	c.Inject(Fault{Kind: FaultNoNamespaceAck, Count: 1})
	var a *testClient
	for i := 0; len(c.Faults()) != 0; i++ {
		if i == connectAttempts {
			t.Fatal("no namespace CONNECT reached the server")
		}
		// The fault is spent when the server receives the CONNECT it then
		// leaves unanswered. The client has no namespace timeout of its
		// own (the field's half-open client); a connect_error here is the
		// client library losing the connect before sending CONNECT.
		a = dial(t, c, tok)
		deadline := time.Now().Add(10 * time.Second)
	wait:
		for len(c.Faults()) != 0 {
			select {
			case sid := <-a.connect:
				t.Fatalf("namespace acknowledged (%s) despite the fault", sid)
			case <-a.errs:
				break wait
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatal("neither the CONNECT nor a connect_error")
			}
		}
	}
	if c.io.Engine().ClientsCount() == 0 {
		t.Fatal("no Engine.IO session: the fault should let Engine.IO open")
	}
	select {
	case sid := <-a.connect:
		t.Fatalf("namespace acknowledged (%s) despite the fault", sid)
	default:
	}
	if len(c.Sessions()) != 0 {
		t.Fatalf("sessions = %v", c.Sessions())
	}
	connected(t, c, tok) // Count 1: the next CONNECT is answered
}

func TestHandshake503Fault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	c.Inject(Fault{Kind: FaultHandshake503, Count: 1})
	r := call(t, c, "GET", "/socket.io/?EIO=4&transport=polling", "", nil)
	if r.status != 503 || string(r.body) != html503 {
		t.Fatalf("handshake = %d %s", r.status, r.body)
	}
	if r := call(t, c, "GET", "/socket.io/?EIO=4&transport=polling", "", nil); r.status != 200 {
		t.Fatalf("handshake after the fault = %d", r.status)
	}
	c.Inject(Fault{Kind: FaultHandshake503, Count: 1})
	a := dial(t, c, tok)
	select {
	case <-a.errs:
	case sid := <-a.connect:
		t.Fatalf("joined as %s through a 503 handshake", sid)
	case <-time.After(15 * time.Second):
		t.Fatal("no connect_error after a 503 handshake")
	}
	connected(t, c, tok)
}

func TestAlarmsQuantityPush(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	d := c.Devids()[0]
	a := connected(t, c, tok)
	bind(t, c, tok, "wsid", a.SID(), []string{d})
	c.EmitAlarmsQuantity(d, 3)
	ev := a.next(cloudapi.WireAlarmsQuantity)
	q, _ := ev.payload["alarmsQuantity"].(map[string]any)
	if ev.numeric || len(ev.payload) != 1 || q[d] != float64(3) {
		t.Fatalf("alarms quantity event = %+v, want {\"alarmsQuantity\":{%q:3}}", ev, d)
	}
}
