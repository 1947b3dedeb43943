package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestConnectHeadersSIDsAndEvents(t *testing.T) {
	g := newGoServer(t, goServerOptions{})
	c := newTestClient(t, g.URL, g.token, nil)
	s := connect(t, c)

	h := g.lastHeader()
	if got := h.Get("Authorization"); got != "Bearer good-token" {
		t.Errorf("server saw Authorization %q", got)
	}
	if got := h.Get("Origin"); got != "https://one.example.test" {
		t.Errorf("server saw Origin %q", got)
	}
	if got := h.Get("Referer"); got != "https://one.example.test/" {
		t.Errorf("server saw Referer %q", got)
	}
	if got := h.Get("X-Appversion"); got != AppVersion {
		t.Errorf("server saw x-appversion %q", got)
	}
	if got := h.Get("Accept-Language"); got != AcceptLanguage {
		t.Errorf("server saw Accept-Language %q", got)
	}

	srvSock := g.socket(1)
	if s.NamespaceSID() == "" || s.NamespaceSID() != string(srvSock.Id()) {
		t.Errorf("namespace SID %q, server socket id %q", s.NamespaceSID(), srvSock.Id())
	}
	if s.EngineSID() == "" || s.EngineSID() != srvSock.Conn().Id() {
		t.Errorf("engine SID %q, server engine id %q", s.EngineSID(), srvSock.Conn().Id())
	}
	if s.EngineSID() == s.NamespaceSID() {
		t.Errorf("engine and namespace SIDs are equal: %q", s.EngineSID())
	}
	if !s.Connected() {
		t.Error("Connected() = false on a fresh session")
	}

	if ev := nextEvent(t, s); ev.Kind != EventConnect {
		t.Fatalf("first event %v, want connect", ev.Kind)
	}

	_ = srvSock.Emit("app:modules:parameters:change", map[string]any{"M1": map[string]any{"P4": map[string]any{"v1": map[string]any{"value": 21.5}}}})
	emitRaw(srvSock, `2/ws,[22,{"devid":"M1"}]`)
	_ = srvSock.Emit("app:module:connection:status:changed", map[string]any{"M1": map[string]any{"connectedAt": 1700000100}})
	emitRaw(srvSock, `2/ws,[61,{"task":1}]`)
	_ = srvSock.Emit("app:modules:alarms:quantity:change", map[string]any{"alarmsQuantity": map[string]any{"M1": 2}})
	_ = srvSock.Emit("snapshot", map[string]any{"M1": map[string]any{}})
	_ = srvSock.Emit("something:else", "x", 2)

	want := []struct {
		kind    EventKind
		name    string
		wire    string
		payload string
		nargs   int
	}{
		{EventParamsChange, "app:modules:parameters:change", "app:modules:parameters:change", `{"M1":{"P4":{"v1":{"value":21.5}}}}`, 1},
		{EventMemoryUpdated, "22", "22", `{"devid":"M1"}`, 1},
		{EventConnectionStatus, NameConnectionStatus, NameConnectionStatus, `{"M1":{"connectedAt":1700000100}}`, 1},
		{EventOther, NameTaskCreated, "61", `{"task":1}`, 1},
		{EventAlarmsQuantity, NameAlarmsQuantity, NameAlarmsQuantity, `{"alarmsQuantity":{"M1":2}}`, 1},
		{EventSnapshot, "snapshot", "snapshot", `{"M1":{}}`, 1},
		{EventOther, "something:else", "something:else", `"x"`, 2},
	}
	for i, w := range want {
		ev := nextEvent(t, s)
		if ev.Kind != w.kind || ev.Name != w.name || ev.WireName != w.wire || string(ev.Payload) != w.payload || len(ev.Args) != w.nargs {
			t.Errorf("event %d = {%v %q %q %s %d args}, want {%v %q %q %s %d}", i, ev.Kind, ev.Name, ev.WireName, ev.Payload, len(ev.Args), w.kind, w.name, w.wire, w.payload, w.nargs)
		}
		if ev.Received.IsZero() {
			t.Errorf("event %d has no Received time", i)
		}
	}
	devid, err := DecodeDevid(json.RawMessage(`{"devid":"M1"}`))
	if err != nil || devid != "M1" {
		t.Errorf("DecodeDevid = %q, %v", devid, err)
	}

	// Client → server.
	if err := s.Emit("app:modules:parameters:listen", map[string]any{"modules": []string{"M1"}, "group_id": 7}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "server to receive the listen emit", func() bool {
		for _, r := range g.receivedList() {
			if r == `app:modules:parameters:listen [{"group_id":7,"modules":["M1"]}]` {
				return true
			}
		}
		return false
	})

	if err := s.Disconnect(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev := drainToEnd(t, s)
	_ = ev
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed after Disconnect")
	}
	if err := s.Emit("x"); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("Emit after Disconnect = %v, want ErrSessionEnded", err)
	}
	if s.Connected() {
		t.Error("Connected() after Disconnect")
	}
}

// drainToEnd reads until the channel closes and returns the Disconnect event
// if one was delivered.
func drainToEnd(t *testing.T, s Session) *Event {
	t.Helper()
	var last *Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				return last
			}
			if last != nil {
				t.Fatalf("event %v after the Disconnect event", ev.Kind)
			}
			if ev.Kind == EventDisconnect {
				e := ev
				last = &e
			}
		case <-timeout:
			t.Fatal("events channel not closed within 10s")
		}
	}
}

var _ = fmt.Sprintf
var _ = strings.Contains
var _ = net.Listen
var _ = http.StatusOK
var _ = httptest.NewServer
