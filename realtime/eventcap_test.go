package realtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
	"github.com/bragerone/bragerone_exporter/wire"
)

// idleGateway is a gateway that is never run: its event handling is driven
// directly, for rules that need no cloud.
func idleGateway(t *testing.T, st *store.Store, subscribed []string, tune func(*Config)) *Gateway {
	t.Helper()
	client, err := cloudclient.New(cloudclient.Config{BaseURL: "http://127.0.0.1:9", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.Client, cfg.Store, cfg.Logger = client, st, testLogger()
	cfg.NewTransport = func() (transport.Transport, error) { return nil, errors.New("not used") }
	if tune != nil {
		tune(&cfg)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.setSubscribed(subscribed)
	return g
}

// hostileDelta is one parameters:change payload with n keys for devid and
// three ordinary ones for other.
func hostileDelta(devid string, n int, other string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{%q:{"P9":{`, devid)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"v%d":%d`, i, i)
	}
	fmt.Fprintf(&b, `}},%q:{"P4":{"v1":1,"v2":2,"v3":3}}}`, other)
	return []byte(b.String())
}

// An event with 100,000 keys for one module is cut to the store's bound per
// module before it reaches the store: the store never sees the rest, which
// is counted as refused, and the other module of the event is untouched.
func TestOversizedEventCutBeforeTheStore(t *testing.T) {
	const hostile, bound = 100_000, 100
	st := store.NewLimited(bound)
	seen := map[string]int{}
	g := idleGateway(t, st, []string{"D1", "D2"}, func(c *Config) {
		c.OnLive = func(ups []wire.ParamUpdate) {
			for _, u := range ups {
				seen[u.Devid]++
			}
		}
	})
	ev := transport.Event{Kind: cloudapi.EventParamsChange, Name: cloudapi.WireParamsChange, Payload: hostileDelta("D1", hostile, "D2")}
	g.handleEvent(context.Background(), ev, true)

	if seen["D1"] != bound || seen["D2"] != 3 {
		t.Fatalf("updates handed to the store: %v, want D1 %d and D2 3", seen, bound)
	}
	stats := st.Stats()
	if stats["D1"].Params != bound || stats["D1"].Refused != hostile-bound {
		t.Fatalf("D1: %+v, want %d params and %d refused", stats["D1"], bound, hostile-bound)
	}
	if stats["D2"].Params != 3 || stats["D2"].Refused != 0 {
		t.Fatalf("D2: %+v", stats["D2"])
	}
	// The event still counts as live traffic.
	if _, live := st.LastUpdate(); live.IsZero() {
		t.Fatal("the cut event was not stored as live traffic")
	}
}

// The default store bounds what one event can allocate.
func TestDefaultStoreBoundsAnEvent(t *testing.T) {
	st := store.New()
	g := idleGateway(t, st, []string{"D1", "D2"}, nil)
	over := store.DefaultMaxKeysPerModule + 500
	ev := transport.Event{Kind: cloudapi.EventParamsChange, Name: cloudapi.WireParamsChange, Payload: hostileDelta("D1", over, "D2")}
	g.handleEvent(context.Background(), ev, true)
	if got := st.Stats()["D1"]; got.Params != store.DefaultMaxKeysPerModule || got.Refused != 500 {
		t.Fatalf("D1 after a %d-key event: %+v, want %d params and 500 refused", over, got, store.DefaultMaxKeysPerModule)
	}
}
