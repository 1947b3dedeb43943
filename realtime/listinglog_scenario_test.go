package realtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
)

// logRecords keeps the records a logger wrote, for tests that count them.
type logRecords struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}

// warnings returns the WARN (and louder) records whose message contains
// substr, each as "message attr=value …".
func (l *logRecords) warnings(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Level < slog.LevelWarn || !strings.Contains(r.Message, substr) {
			continue
		}
		line := r.Message
		r.Attrs(func(a slog.Attr) bool {
			line += fmt.Sprintf(" %s=%v", a.Key, a.Value)
			return true
		})
		out = append(out, line)
	}
	return out
}

// Every kind of unusable module listing logs one WARN per streak of unusable
// polls, saying why; the repeats go to DEBUG. A listing of an unrecognised
// shape used to log a WARN on every poll.
func TestScenarioUnusableListingWarnsOncePerStreak(t *testing.T) {
	for _, tc := range []struct {
		name, body, why string
	}{
		{"unrecognised shape", `{"unexpected":true}`, "why=unrecognised shape"},
		{"object without a list", `{"data":{"rows":[]}}`, "why=unrecognised shape"},
		{"no modules", `[]`, "why=no modules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logRecords{}
			s := startScenario(t, scenarioSetup{
				client: func(c *cloudclient.Config) { c.Logger = slog.New(logs) },
				gw:     func(c *realtime.Config) { c.Logger = slog.New(logs) },
			})
			s.waitUp()
			before := len(logs.warnings("module list"))
			s.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultListing, Body: tc.body})
			s.eventually("four unusable polls in a row", func() bool {
				v, _ := s.metric("bragerone_module_poll_failure_streak")
				return v >= 4
			})
			got := logs.warnings("module list")[before:]
			if len(got) != 1 || !strings.Contains(got[0], tc.why) {
				t.Fatalf("WARN records for one streak of unusable listings: %q, want one saying %q", got, tc.why)
			}
		})
	}
}
