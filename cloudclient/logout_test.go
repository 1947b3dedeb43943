package cloudclient_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// A program that stops logs out on a context of its own (its own is
// cancelled by then): the token is revoked and dropped, and a failed revoke
// is logged at debug level, never returned.
func TestLogoutOnExit(t *testing.T) {
	for _, status := range []int{200, 500} {
		fc := newFakeCloud(t)
		fc.handle("POST /v1/auth/revoke", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) })
		var logs bytes.Buffer
		c, _ := newClient(t, fc, func(cfg *cloudclient.Config) {
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
		ctx, cancel := context.WithCancel(ctxT(t))
		if _, err := c.Login(ctx); err != nil {
			t.Fatal(err)
		}
		cancel() // the program is stopping
		c.LogoutOnExit()

		reqs := fc.seenFor("POST /v1/auth/revoke")
		if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer tok-1" {
			t.Errorf("status %d: revoke requests %+v, want one with the token", status, reqs)
		}
		if _, err := c.AccessToken(); !errors.Is(err, cloudclient.ErrNotAuthenticated) {
			t.Errorf("status %d: token survived the logout: %v", status, err)
		}
		if logged := strings.Contains(logs.String(), "level=DEBUG msg=logout"); logged != (status != 200) {
			t.Errorf("status %d: debug record of the failed logout: %v, want %v; logs:\n%s", status, logged, status != 200, logs.String())
		}
	}
}
