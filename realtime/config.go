package realtime

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/realtime/transport"
	"github.com/bragerone/bragerone_exporter/traffic"
	"github.com/bragerone/bragerone_exporter/wire"
)

// Config configures a Gateway. Start from DefaultConfig: several durations
// take 0 to mean "disabled" (as the spec's knobs do), so the zero value is not
// the default.
type Config struct {
	Client *cloudclient.Client
	// NewTransport builds a Socket.IO transport. It is called at start and
	// again whenever recovery recycles the transport or rebuilds the manager
	// (the two steps do the same session work; see package lifecycle).
	NewTransport func() (transport.Transport, error)
	Store        *store.Store

	// ObjectID is the object (installation) whose modules are watched;
	// 0 = the account's first object.
	ObjectID int
	// Modules restricts the watched devids; empty = every module of the object,
	// following modules that join or leave the account. A devid the object's
	// module list lacks at start fails the start; one missing from a later
	// listing does not stop the gateway (see outage.Modules.CompletePoll).
	Modules []string
	// StartListing, when set, is the object's module list as read just
	// before the gateway was made (the fleet reads every object's list to
	// share --cloud.modules out): the start takes it in place of its own
	// first read, so a start costs the cloud one module-list request, not
	// two. It is trusted no further than a read of the start's own: only
	// when the start would accept such a read (see start) and it names
	// every devid of Modules, and only when read less than PollInterval ago
	// (never when PollInterval is 0: nothing would read it again); the first
	// poll then comes PollInterval after it was read, as it would after a
	// read of the start's own. Otherwise the start reads the list itself.
	// Needs ObjectID.
	StartListing *ListingRead

	// PollInterval is the module-list poll and ladder tick; 0 = no poll.
	PollInterval time.Duration
	// SupervisorInterval is how often the session is checked for a transport
	// that died without a disconnect, a lost session reconnected, and a
	// session the cloud has not bound to the modules bound again.
	SupervisorInterval time.Duration
	// HealthInterval is how often the session hysteresis and push health are
	// re-evaluated; it bounds how late an outage is published.
	HealthInterval time.Duration
	// SessionHysteresis: a disconnect shorter than this is a blink; 0 = none.
	SessionHysteresis time.Duration
	// SilentGrace is how long a session the supervisor found closed, with
	// its end not reported, may wait for that report (its disconnect, with
	// the real reason) before it is torn down as supervisor_stale.
	SilentGrace time.Duration
	// Ladder carries the live-silence threshold (StaleAfter) and every
	// recovery knob.
	Ladder ladder.Config
	// EpisodeLimit bounds the ring of recent connectivity episodes.
	EpisodeLimit int
	// ReconnectBackoff is the pause after the first failed reconnect; it
	// doubles per failure up to SupervisorInterval. The first reconnect after
	// a lost session is immediate, unless the session was up for less than
	// SupervisorInterval: a session lost so soon counts as a failed
	// reconnect (a link that cuts every session right after it joins is not
	// redialled, rebound and reprimed in a tight loop).
	ReconnectBackoff time.Duration
	// ReconnectOffset delays every reconnect by this much more (see
	// lifecycle.Config.ReconnectOffset): the gateways of an account's
	// objects each have their own. 0 = none.
	ReconnectOffset time.Duration
	// TeardownTimeout bounds the disconnect of a session being replaced.
	TeardownTimeout time.Duration
	// ForgetMissingAfter: a module absent from every usable listing for this
	// long has left the account and stops being exported (it is reported
	// offline, reason "derived", from the first such listing). Only when
	// Modules is empty. 0 = never forget.
	ForgetMissingAfter time.Duration
	// StartRetryMax caps the pause between attempts to discover the modules
	// at start while the cloud answers with errors.
	StartRetryMax time.Duration
	// HistorySafetyInterval is the longest the active alarm list, the alarm
	// history and the activity log go unread (a list is read at the
	// module-list poll nearest the end of this interval since its last
	// read: half a poll late at most).
	// Sooner, a change signal reads the alarm lists: a module's alarm count
	// moved in the module list or in the alarm-quantity push. A read that
	// failed or left pages for later is tried again at the next poll.
	// 0 = every list with every poll.
	HistorySafetyInterval time.Duration

	// GetModulesFailOfflineAfter is accepted for compatibility and ignored.
	//
	// Deprecated: unusable module-list polls never take a module offline.
	GetModulesFailOfflineAfter int

	Logger *slog.Logger
	Now    func() time.Time

	// OnLive, when set, receives every batch of live updates after it was
	// stored (called on the loop goroutine: it must not block).
	OnLive func(updates []wire.ParamUpdate)
	// OnEvent, when set, is told the kind of every realtime event (for
	// counters; called on the loop goroutine).
	OnEvent func(kind cloudapi.EventKind)
	// Recorder, when set, is given a record of every realtime event and of
	// the session and ladder transitions, redacted as it is made with the
	// client's secrets (package traffic); nil: nothing is recorded. Called
	// on the loop goroutine: it must not block.
	Recorder func(traffic.Record)
}

// ListingRead is one object's module list and when it was read.
type ListingRead struct {
	Listing *cloudclient.ModuleListing
	// ReadAt is when the request was sent, on the gateway's clock
	// (Config.Now): the list is at least that old.
	ReadAt time.Time
}

// DefaultHistorySafetyInterval is the default HistorySafetyInterval: four
// reads an hour of each list, where a read with every 60 s poll made sixty.
const DefaultHistorySafetyInterval = 15 * time.Minute

// DefaultSilentGrace is the default SilentGrace: one default health tick,
// the wait a sighting always had.
const DefaultSilentGrace = time.Second

// DefaultConfig returns the spec's defaults (docs/spec.md I-8c;
// docs/spec.md W-3.1f, W-4.1d, W-4.1e).
func DefaultConfig() Config {
	return Config{
		PollInterval:       60 * time.Second,
		SupervisorInterval: 15 * time.Second,
		HealthInterval:     time.Second,
		SessionHysteresis:  outage.DefaultHysteresis,
		SilentGrace:        DefaultSilentGrace,
		Ladder:             ladder.DefaultConfig(),
		EpisodeLimit:       outage.DefaultEpisodeLimit,
		ReconnectBackoff:   250 * time.Millisecond,
		TeardownTimeout:    transport.DefaultTeardownTimeout,
		ForgetMissingAfter: time.Hour,
		StartRetryMax:      time.Minute,

		HistorySafetyInterval: DefaultHistorySafetyInterval,
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("a Client is required"))
	}
	if c.NewTransport == nil {
		errs = append(errs, errors.New("NewTransport is required"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("a Store is required"))
	}
	for name, d := range map[string]time.Duration{
		"SupervisorInterval": c.SupervisorInterval, "HealthInterval": c.HealthInterval,
		"ReconnectBackoff": c.ReconnectBackoff, "TeardownTimeout": c.TeardownTimeout, "StartRetryMax": c.StartRetryMax,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", name, d))
		}
	}
	for name, d := range map[string]time.Duration{
		"PollInterval": c.PollInterval, "SessionHysteresis": c.SessionHysteresis, "ForgetMissingAfter": c.ForgetMissingAfter,
		"SilentGrace": c.SilentGrace, "ReconnectOffset": c.ReconnectOffset, "HistorySafetyInterval": c.HistorySafetyInterval,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", name, d))
		}
	}
	if c.StartListing != nil && c.ObjectID == 0 {
		errs = append(errs, errors.New("a StartListing needs the ObjectID it was read for"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("realtime: invalid config: %w", err)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if len(c.Modules) > 0 {
		c.Modules = sortedUnique(c.Modules)
	}
	return nil
}

func sortedUnique(in []string) []string {
	return slices.DeleteFunc(slices.Compact(slices.Sorted(slices.Values(in))), func(s string) bool { return s == "" })
}
