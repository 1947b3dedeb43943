package cloudclient_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

func TestCommandRoutingErrorsBeforeIO(t *testing.T) {
	cases := []struct {
		name string
		cmd  cloudclient.Command
		want error
	}{
		{"both styles", cloudclient.Command{Devid: "D", Command: "MODULE_RESTART", Pool: "P4", Parameter: "v1"}, cloudclient.ErrAmbiguousRoute},
		{"command and pool", cloudclient.Command{Devid: "D", Command: "MODULE_RESTART", Pool: "P4"}, cloudclient.ErrAmbiguousRoute},
		{"command and parameter", cloudclient.Command{Devid: "D", Command: "X", Parameter: "v1"}, cloudclient.ErrAmbiguousRoute},
		{"nothing", cloudclient.Command{Devid: "D"}, cloudclient.ErrMissingRoute},
		{"pool only", cloudclient.Command{Devid: "D", Pool: "P4"}, cloudclient.ErrMissingRoute},
		{"parameter only", cloudclient.Command{Devid: "D", Parameter: "v1", Value: 1}, cloudclient.ErrMissingRoute},
		{"no devid", cloudclient.Command{Pool: "P4", Parameter: "v1"}, cloudclient.ErrInvalidCommand},
	}
	fc := newFakeCloud(t)
	c, _ := newClient(t, fc)
	for _, tc := range cases {
		_, err := c.Command(ctxT(t), tc.cmd)
		if !errors.Is(err, tc.want) || !errors.Is(err, cloudclient.ErrInvalidCommand) {
			t.Errorf("%s: err = %v, want %v (wrapping ErrInvalidCommand)", tc.name, err, tc.want)
		}
	}
	if fc.total() != 0 {
		t.Fatalf("%d requests made (a login included) for invalid commands", fc.total())
	}
}

func TestCommandBodies(t *testing.T) {
	unit := 1
	cases := []struct {
		name  string
		cmd   cloudclient.Command
		route string
		body  map[string]any
	}{
		{"plain with extras", cloudclient.Command{Devid: "DEV1", Pool: "P4", Parameter: "v8", Value: 42, ParameterName: "PARAM_66", Unit: &unit,
			Extra: map[string]any{"note": "ha", "devid": "ignored"}},
			"POST /v1/module/command", map[string]any{"devid": "DEV1", "pool": "P4", "parameter": "v8", "value": 42.0, "parameterName": "PARAM_66", "unit": 1.0, "note": "ha"}},
		{"plain null value", cloudclient.Command{Devid: "DEV1", Pool: "P4", Parameter: "s3"},
			"POST /v1/module/command", map[string]any{"devid": "DEV1", "pool": "P4", "parameter": "s3", "value": nil}},
		{"raw", cloudclient.Command{Devid: "DEV1", Command: "MODULE_RESTART"},
			"POST /v1/module/command/raw", map[string]any{"devid": "DEV1", "command": "MODULE_RESTART"}},
		{"raw with value and extras", cloudclient.Command{Devid: "DEV1", Command: "BOILER_START", Value: "ONLINE", Extra: map[string]any{"k": true}},
			"POST /v1/module/command/raw", map[string]any{"devid": "DEV1", "command": "BOILER_START", "value": "ONLINE", "k": true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCloud(t)
			fc.handleJSON(tc.route, 202, `{"queued":true}`)
			c, _ := newClient(t, fc)
			res, err := c.Command(ctxT(t), tc.cmd)
			if err != nil || res.Status != 202 || !reflect.DeepEqual(res.Data, map[string]any{"queued": true}) {
				t.Fatalf("Command = %+v, %v", res, err)
			}
			reqs := fc.seenFor(tc.route)
			if len(reqs) != 1 {
				t.Fatalf("%d requests to %s", len(reqs), tc.route)
			}
			if b := reqs[0].json(t); !reflect.DeepEqual(b, tc.body) {
				t.Fatalf("body %v, want %v", b, tc.body)
			}
		})
	}
}

func TestCommandStatuses(t *testing.T) {
	for _, st := range []int{200, 201, 202, 204, 206, 400, 500} {
		fc := newFakeCloud(t)
		fc.handleJSON("POST /v1/module/command", st, `{}`)
		c, _ := newClient(t, fc)
		res, err := c.Command(ctxT(t), cloudclient.Command{Devid: "D", Pool: "P4", Parameter: "v1", Value: 1})
		ok := st == 200 || st == 201 || st == 202 || st == 204
		if ok != (err == nil) || (ok && res.Status != st) {
			t.Errorf("status %d: %+v %v", st, res, err)
		}
	}
}

func TestCommandRateLimit(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("POST /v1/module/command", 200, `{}`)
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.WriteRate = 0.001; cfg.WriteBurst = 2 })
	cmd := cloudclient.Command{Devid: "D", Pool: "P4", Parameter: "v1", Value: 1}
	for i := range 2 {
		if _, err := c.Command(ctxT(t), cmd); err != nil {
			t.Fatalf("write %d inside the burst: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Command(ctx, cmd); err == nil {
		t.Fatal("a third write went through a burst of 2 at 0.001/s")
	}
	if n := len(fc.seenFor("POST /v1/module/command")); n != 2 {
		t.Fatalf("%d writes reached the cloud, want 2", n)
	}
}

func TestCommandDefaultRateLimit(t *testing.T) {
	fc := newFakeCloud(t)
	fc.handleJSON("POST /v1/module/command/raw", 200, `{}`)
	c, _ := newClient(t, fc, func(cfg *cloudclient.Config) { cfg.WriteRate = 0; cfg.WriteBurst = 0 }) // defaults: 1/s, burst 3
	cmd := cloudclient.Command{Devid: "D", Command: "BOILER_START"}
	for i := range 3 {
		if _, err := c.Command(ctxT(t), cmd); err != nil {
			t.Fatalf("write %d inside the default burst: %v", i, err)
		}
	}
	// The 4th write must wait about a second; a deadline shorter than that fails at once.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Command(ctx, cmd); err == nil {
		t.Fatal("a 4th write went through the default burst of 3")
	}
	if n := len(fc.seenFor("POST /v1/module/command/raw")); n != 3 {
		t.Fatalf("%d writes reached the cloud", n)
	}
}
