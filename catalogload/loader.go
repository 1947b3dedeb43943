// Package catalogload keeps the exporter's parameter catalog current: it
// loads the catalog (package catalog) from the cloud's web-app assets in the
// background once the first parameter snapshot is stored, refreshes it on a
// schedule, when the cloud's frontend version changes and when a module
// joins or changes its menu or permissions, keeps the last good catalog when
// a refresh fails, and publishes the catalog in use with its health.
//
// Nothing waits for it: until a catalog is loaded (or when none ever loads)
// the exporter works without names. Its only hard failure is a language the
// web app does not offer, found by the first index read: a configuration
// error to report at start.
package catalogload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// Defaults of the schedule. DefaultRefreshInterval is the flag's default.
const (
	DefaultRefreshInterval = 6 * time.Hour
	DefaultCheckInterval   = 30 * time.Second
	DefaultVersionInterval = 10 * time.Minute
	DefaultRetryMin        = time.Minute
	DefaultRetryMax        = 30 * time.Minute
)

// StageLanguage counts refreshes that found the configured language no
// longer offered; with catalog.Stages it makes the failure stages.
const StageLanguage catalog.Stage = "language"

// Stages are the failure stages the loader reports, each from the start.
var Stages = append(slices.Clone(catalog.Stages), StageLanguage)

// ErrLanguage is wrapped by Run's error when the first index read found the
// configured language not offered; the error also wraps the
// *catalog.LanguageError that lists the offered ones.
var ErrLanguage = errors.New("catalog language not offered by the web app")

// languageError is the error of a language the web app does not offer: it
// says so once, in the words of the *catalog.LanguageError it wraps (which
// lists the offered ones), and is ErrLanguage.
type languageError struct{ err error }

func (e languageError) Error() string        { return e.err.Error() }
func (e languageError) Unwrap() error        { return e.err }
func (e languageError) Is(target error) bool { return target == ErrLanguage }

// Config configures a Loader.
type Config struct {
	// Fetcher fetches assets (cloudclient's conditional-GET client).
	Fetcher catalog.Fetcher
	// Modules returns the watched modules as the module list describes
	// them now; modules the listing has not described yet are left out.
	Modules func() []catalog.ModuleSpec
	// Ready is closed once the first parameter snapshot is stored: the
	// first load starts then, so it never competes with the start.
	Ready <-chan struct{}
	// Version returns the cloud's frontend version (GET
	// /v1/system/version); a change triggers a refresh. Nil: not watched.
	Version func(context.Context) (string, error)

	// Options bound each load and choose the language.
	Options catalog.Options
	// Overrides are applied to every catalog loaded; nil: none.
	Overrides *catalog.Overrides

	// RefreshInterval is the time between refreshes of a good catalog.
	RefreshInterval time.Duration
	// CheckInterval is how often the module list is looked at for modules
	// that joined or changed their menu or permissions.
	CheckInterval time.Duration
	// VersionInterval is how often the frontend version is asked.
	VersionInterval time.Duration
	// RetryMin and RetryMax bound the pause after a failed load; it doubles
	// per failure and never exceeds RefreshInterval.
	RetryMin, RetryMax time.Duration

	Now    func() time.Time
	Logger *slog.Logger
}

// State is the loader's published picture; shared, never changed.
type State struct {
	// Catalog is the catalog in use (overrides applied); nil before the
	// first good load. The same pointer stays while refreshes find the
	// same content.
	Catalog *catalog.Catalog
	// LoadedAt is when the catalog in use was last loaded or confirmed by
	// a refresh; zero before the first good load.
	LoadedAt time.Time
	// IndexAsset and Language are those of the last good load: a
	// redeployment with the same content changes the index asset and keeps
	// the catalog.
	IndexAsset, Language string
	// Loads counts load attempts.
	Loads uint64
	// Failures counts failures by stage: a failed load at its stage, and
	// each asset that failed inside a usable load at its.
	Failures map[catalog.Stage]uint64
	// AssetsKnown is true once a load was attempted; AssetsUp says whether
	// the last attempt got any answer from the assets site.
	AssetsKnown, AssetsUp bool
	// LastError is the error of the last failed load; nil after a good one.
	LastError error
}

// Loader loads and refreshes the catalog. Create it with New, drive it with
// Run, read it with State from any goroutine.
type Loader struct {
	cfg   Config
	log   *slog.Logger
	state atomic.Pointer[State]

	// Owned by Run's goroutine.
	fingerprint string // of the catalog in use, before overrides
	inUseFailed int    // assets that failed in the load of the catalog in use
	loaded      bool   // a load succeeded
	specKey     string // the modules the last good load was for
	version     string // the frontend version it was loaded at ("" unknown)
	failStreak  int
}

// New checks cfg and returns a loader; nothing runs until Run.
func New(cfg Config) (*Loader, error) {
	if cfg.Fetcher == nil || cfg.Modules == nil || cfg.Ready == nil {
		return nil, errors.New("catalogload: Fetcher, Modules and Ready are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.RefreshInterval, DefaultRefreshInterval)
	def(&cfg.CheckInterval, DefaultCheckInterval)
	def(&cfg.VersionInterval, DefaultVersionInterval)
	def(&cfg.RetryMin, DefaultRetryMin)
	def(&cfg.RetryMax, DefaultRetryMax)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Options.Logger == nil {
		cfg.Options.Logger = cfg.Logger
	}
	l := &Loader{cfg: cfg, log: cfg.Logger}
	l.state.Store(&State{Failures: map[catalog.Stage]uint64{}})
	return l, nil
}

// State returns the latest published state.
func (l *Loader) State() *State { return l.state.Load() }

// Run waits for Ready, loads, and keeps the catalog current until ctx ends.
// It returns nil when ctx ends, or an error wrapping ErrLanguage when the
// first index read finds the configured language not offered.
func (l *Loader) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-l.cfg.Ready:
	}
	next := time.NewTimer(time.Hour)
	next.Stop()
	defer next.Stop()
	check := time.NewTicker(l.cfg.CheckInterval)
	defer check.Stop()
	var versionC <-chan time.Time
	if l.cfg.Version != nil {
		vt := time.NewTicker(l.cfg.VersionInterval)
		defer vt.Stop()
		versionC = vt.C
	}

	load := func(why, version string) error {
		wait, err := l.load(ctx, why, version)
		if err != nil {
			return err
		}
		next.Stop()
		next.Reset(wait)
		return nil
	}
	if err := load("start", ""); err != nil {
		return err
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-next.C:
			err = load("schedule", "")
		case <-check.C:
			// Before a first good load the retry pause rules instead.
			if key := specKey(l.cfg.Modules()); l.loaded && key != l.specKey && grew(l.specKey, key) {
				err = load("modules changed", "")
			}
		case <-versionC:
			if v, changed := l.versionChanged(ctx); changed {
				err = load("frontend version "+v, v)
			}
		}
		if err != nil {
			return err
		}
	}
}

// versionChanged asks the frontend version; a change from a known version
// means a new deployment. A failed ask changes nothing.
func (l *Loader) versionChanged(ctx context.Context) (string, bool) {
	v, err := l.cfg.Version(ctx)
	if err != nil || v == "" {
		if err != nil && ctx.Err() == nil {
			l.log.Debug("frontend version check failed", "err", err)
		}
		return "", false
	}
	if l.version == "" {
		l.version = v
		return v, false
	}
	return v, v != l.version
}

// load runs one load and publishes its outcome. It returns when to load
// next, or the fatal language error before any catalog was good. version is
// the frontend version just read by the caller, or "" to read it here.
func (l *Loader) load(ctx context.Context, why, version string) (time.Duration, error) {
	specs := l.cfg.Modules()
	key := specKey(specs)
	if version == "" && l.cfg.Version != nil {
		// The version this attempt sees: a later change means a newer
		// deployment; a failed attempt is retried on its own pause.
		if v, err := l.cfg.Version(ctx); err == nil {
			version = v
		}
	}
	if version != "" {
		l.version = version
	}
	opts := l.cfg.Options
	prev := l.State()
	opts.KnownIndex = prev.IndexAsset
	probe := &probingFetcher{f: l.cfg.Fetcher}
	start := l.cfg.Now()
	c, err := catalog.Load(ctx, probe, specs, opts)
	if ctx.Err() != nil {
		return 0, nil // shutting down: nothing to publish
	}
	now := l.cfg.Now()

	st := *prev
	st.Loads++
	st.Failures = maps.Clone(prev.Failures)
	st.AssetsKnown, st.AssetsUp = true, probe.answered.Load()

	if err != nil {
		stage := failedStage(err)
		st.Failures[stage]++
		var le *catalog.LanguageError
		if errors.As(err, &le) && prev.Catalog == nil {
			st.LastError = err
			l.state.Store(&st)
			return 0, languageError{err}
		}
		return l.failed(ctx, &st, why, string(stage), err), nil
	}

	failed := 0
	for stage, n := range c.Failures() {
		st.Failures[stage] += uint64(n)
		failed += n
	}
	if prev.Catalog != nil && failed > l.inUseFailed {
		// Assets that failed in this load (a site going down midway, a
		// broken deployment) would make a poorer catalog than the one in
		// use: keep that one and try again soon.
		return l.failed(ctx, &st, why, "assets", fmt.Errorf("%d assets failed, the catalog in use had %d", failed, l.inUseFailed)), nil
	}
	st.LastError = nil
	st.LoadedAt = now
	st.IndexAsset, st.Language = c.IndexAsset(), c.Language()
	l.failStreak = 0
	l.loaded, l.specKey = true, key
	if prev.Catalog == nil || c.Fingerprint() != l.fingerprint {
		l.fingerprint, l.inUseFailed = c.Fingerprint(), failed
		if l.cfg.Overrides != nil {
			c = c.WithOverrides(l.cfg.Overrides)
		}
		st.Catalog = c
		l.log.Info("parameter catalog loaded", "why", why, "index", c.IndexAsset(), "language", c.Language(),
			"modules", describedCounts(c, specs), "failures", failureCounts(c), "took", now.Sub(start).Round(time.Millisecond))
	} else {
		l.log.Debug("parameter catalog unchanged", "why", why, "took", now.Sub(start).Round(time.Millisecond))
	}
	l.state.Store(&st)
	return l.cfg.RefreshInterval, nil
}

// failed publishes a failed load (the last good catalog stays) and returns
// the pause before the next attempt, which doubles per failure.
func (l *Loader) failed(ctx context.Context, st *State, why, stage string, err error) time.Duration {
	st.LastError = err
	l.failStreak++
	wait := min(l.cfg.RetryMin<<min(l.failStreak-1, 20), l.cfg.RetryMax, l.cfg.RefreshInterval)
	kept := st.Catalog != nil
	lvl := slog.LevelWarn
	if kept {
		lvl = slog.LevelInfo // the last good catalog stays in use
	}
	l.log.Log(ctx, lvl, "parameter catalog load failed", "why", why, "stage", stage, "assets_reachable", st.AssetsUp,
		"keeping_last_good", kept, "retry_in", wait, "err", err)
	l.state.Store(st)
	return wait
}

// failedStage classifies the error of a failed load.
func failedStage(err error) catalog.Stage {
	var le *catalog.LanguageError
	switch {
	case errors.As(err, &le):
		return StageLanguage
	case errors.Is(err, catalog.ErrNoIndex):
		return catalog.StageDiscovery
	default:
		return catalog.StageIndex
	}
}

func describedCounts(c *catalog.Catalog, specs []catalog.ModuleSpec) string {
	parts := make([]string, 0, len(specs))
	for _, s := range specs {
		n := 0
		if m := c.Module(s.DevID); m != nil {
			n = len(m.Params())
		}
		parts = append(parts, s.DevID+"="+strconv.Itoa(n))
	}
	return strings.Join(parts, " ")
}

// failureCounts is "none", or the assets that failed to load by stage, as
// "i18n=2 units=1" in the catalog's stage order.
func failureCounts(c *catalog.Catalog) string {
	failures := c.Failures()
	var parts []string
	for _, stage := range catalog.Stages {
		if n := failures[stage]; n > 0 {
			parts = append(parts, string(stage)+"="+strconv.Itoa(n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// specKey identifies what a set of modules asks of the catalog: each
// module's devid, menu and permissions, one line per module in devid order.
func specKey(specs []catalog.ModuleSpec) string {
	lines := make([]string, 0, len(specs))
	for _, s := range specs {
		perms := slices.Clone(s.Permissions)
		slices.Sort(perms)
		lines = append(lines, s.DevID+"\x00"+strconv.Itoa(s.DeviceMenu)+"\x00"+strings.Join(perms, "\x01"))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// grew reports whether key has a module line that old lacks: a module that
// joined or changed its menu or permissions. A module that left needs no
// load (its description is simply not used).
func grew(old, key string) bool {
	have := map[string]bool{}
	for _, l := range strings.Split(old, "\n") {
		have[l] = true
	}
	for _, l := range strings.Split(key, "\n") {
		if l != "" && !have[l] {
			return true
		}
	}
	return false
}

// probingFetcher notes whether the assets site answered at all during a load.
type probingFetcher struct {
	f        catalog.Fetcher
	answered atomic.Bool
}

func (p *probingFetcher) Asset(ctx context.Context, path string) ([]byte, error) {
	b, err := p.f.Asset(ctx, path)
	if err == nil || answeredError(err) {
		p.answered.Store(true)
	}
	return b, err
}

// answeredError is an error that still proves the site answered: an HTTP
// status below 500 other than 429 (a missing file, a forbidden one).
func answeredError(err error) bool {
	var apiErr *cloudclient.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Status > 0 && apiErr.Status < 500 && apiErr.Status != 429
	}
	return false
}
