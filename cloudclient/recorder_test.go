package cloudclient_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// The Recorder is given every exchange and the login, redacted as it is
// made: the request's password and the answer's tokens masked, no
// Authorization header, the group_id's object on a module listing, the
// time from Config.Now.
func TestRecorderGetsRedactedExchanges(t *testing.T) {
	sim := startSim(t, cloudsim.Options{Email: "rec@example.org", Password: "rec-password-123"})
	at := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var recs []traffic.Record
	c, err := cloudclient.New(cloudclient.Config{
		BaseURL: sim.URL(), AssetsURL: sim.URL(),
		Credentials: cloudclient.StaticCredentials(cloudclient.Credentials{Email: "rec@example.org", Password: "rec-password-123"}),
		Now:         func() time.Time { return at },
		Recorder: func(r traffic.Record) {
			mu.Lock()
			defer mu.Unlock()
			recs = append(recs, r)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Modules(ctx, sim.ObjectID()); err != nil {
		t.Fatal(err)
	}
	tok, _ := c.Token()
	mu.Lock()
	defer mu.Unlock()
	var login, list, transition bool
	for _, r := range recs {
		text := string(r.Request) + string(r.Body) + r.BodyText + r.Path
		for _, secret := range []string{"rec-password-123", "rec@example.org", tok.AccessToken, tok.RefreshToken} {
			if strings.Contains(text, secret) {
				t.Errorf("%s record holds %q", r.Endpoint, secret)
			}
		}
		if _, ok := r.Headers["Authorization"]; ok {
			t.Errorf("%s record holds the Authorization header", r.Endpoint)
		}
		if !r.At.Equal(at) {
			t.Errorf("record at %v, want Config.Now's %v", r.At, at)
		}
		switch {
		case r.Endpoint == cloudapi.EndpointLogin:
			login = r.Status == 200 && strings.Contains(string(r.Request), `"password":"REDACTED"`)
		case r.Endpoint == cloudapi.EndpointModules:
			list = r.Object == sim.ObjectID() && r.Status == 200 && strings.Contains(string(r.Body), sim.Devids()[0])
		case r.Kind == traffic.KindTransition && r.What == "login":
			transition = r.Detail["outcome"] == string(cloudapi.LoginOK)
		}
	}
	if !login || !list || !transition {
		t.Errorf("login %v, module list %v, login transition %v in %d records", login, list, transition, len(recs))
	}
}
