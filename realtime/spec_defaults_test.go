package realtime

import (
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/realtime/transport"
)

// The spec's defaults the gateway starts with (docs/spec.md I-8c, W-3.1f,
// W-3.1g, W-4.1d): a 60 s connectivity poll, a 15 s supervisor tick, a 15 s
// session-down hysteresis, a 20 s connect bound, and 20 s to resolve a
// fresh token before a connect.
func TestSpecDefaults(t *testing.T) {
	c := DefaultConfig()
	for name, got := range map[string][2]time.Duration{
		"poll interval":          {c.PollInterval, 60 * time.Second},
		"supervisor interval":    {c.SupervisorInterval, 15 * time.Second},
		"session hysteresis":     {c.SessionHysteresis, 15 * time.Second},
		"connect timeout":        {transport.DefaultConnectTimeout, 20 * time.Second},
		"token resolution bound": {tokenResolveTimeout, 20 * time.Second},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %v, the spec's default is %v", name, got[0], got[1])
		}
	}
}
