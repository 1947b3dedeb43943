package collector

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

const namespace = "bragerone"

// The parameter family, which the /metrics handler may write itself (see
// DirectScrape).
const (
	paramValueName = namespace + "_parameter_value"
	paramValueHelp = "Numeric value of parameter <pool>.<param> (booleans as 0/1)."
)

// maxFilterCache bounds the remembered include/exclude decisions. Keys repeat
// across modules (every module of one model has the same "P4.v8"), so this is
// far above what an account produces; past it, decisions are computed but not
// remembered.
const maxFilterCache = 1 << 16

// Collector is a prometheus.Collector that reads one Snapshot and walks the
// parameter store on every scrape and emits const metrics. It keeps no series
// between scrapes. It is safe for concurrent scrapes.
type Collector struct {
	src    SnapshotSource
	params ParamSource
	opts   Options
	log    *slog.Logger

	// paramMu serialises the parameter pass of concurrent scrapes, so the
	// filter cache and the key buffer need no finer locking.
	paramMu     sync.Mutex
	filterCache map[string]bool
	keyBuf      []byte
	lastCount   int // parameter series seen at the last scrape; presizes the next

	skipped atomic.Uint64

	descs
	cat catalogDescs

	// renders are the described modules by devid, rendered for the
	// catalog in use; scrapeGen numbers scrapes; values holds the raw
	// values of the described module a scrape's walk is in. All are
	// guarded by paramMu.
	renders   map[string]*moduleRender
	scrapeGen uint32
	values    moduleValues
}

// descs are built once; each is emitted by Collect under the conditions in METRICS.md.
type descs struct {
	paramValue, parameters, paramsNonNumeric, paramsDropped, paramsRefused *prometheus.Desc

	moduleOnline, moduleConnectedAt, moduleInfo, moduleLastUpdate, moduleAlarms *prometheus.Desc
	moduleOutage, moduleLastOutage, moduleOutagesTotal                          *prometheus.Desc

	objectInfo, objectListFailureStreak *prometheus.Desc
	objectDeparted, moduleDeparted      *prometheus.Desc

	sessionUp, sessionOutage, sessionLastOutage, sessionOutagesTotal, sessionBlinks, sessionReconnectFailure *prometheus.Desc

	pushHealthy, liveStale, lastLiveUpdate, lastUpdate *prometheus.Desc

	recoveryActions, recoveryQuarantined, recoveryCooldown, pollFailureStreak, primeFailures *prometheus.Desc

	realtimeEvents *prometheus.Desc

	moduleAlarmsTotal, moduleAlarmLastDuration, moduleChangesTotal, moduleLastChange, historyRowsDropped *prometheus.Desc

	tokenExpiry *prometheus.Desc

	rateLimitPause, rateLimitPauses, loginFailure, loginRetry, tokensHeld, tokensRevoked *prometheus.Desc
}

// The event label of bragerone_realtime_events_total is the event kind's
// name (cloudapi.EventKind.String), the key of ObjectState.Events; the
// transport maps wire event names to kinds.

// EventOther is the event label of every event kind outside Events' named
// kinds; a count under a name that is not in Events is exported under it.
var EventOther = cloudapi.EventOther.String()

// Events lists every value of the event label: the name of every kind in
// cloudapi.EventKinds, each exported from the first scrape on.
var Events = eventLabels()

func eventLabels() []string {
	var out []string
	for _, k := range cloudapi.EventKinds() {
		out = append(out, k.String())
	}
	return out
}

// objectLabel is the label of every series of one watched object: the
// cloud's object id. It comes first, before the labels of the family.
const objectLabel = "object_id"

func newDescs() descs {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
	}
	return descs{
		paramValue:       prometheus.NewDesc(paramValueName, paramValueHelp, []string{"devid", "pool", "param"}, nil),
		parameters:       d("parameters", "Parameters stored for the module, numeric or not.", "devid"),
		paramsNonNumeric: d("parameters_non_numeric", "Stored parameters whose value is not numeric (not exported as series).", "devid"),
		paramsDropped:    d("parameter_series_dropped", "Numeric parameters not exported at this scrape because of the series cap.", "devid"),
		paramsRefused:    d("parameter_updates_refused_total", "Parameter updates refused because the module held the store's bound of keys or an event carried more.", "devid"),

		moduleOnline:       d("module_online", "Module to cloud link: 1 online, 0 offline; absent while unknown.", "devid"),
		moduleConnectedAt:  d("module_connected_at_timestamp_seconds", "The module's connectedAt in seconds since the epoch; 0 while offline.", "devid"),
		moduleInfo:         d("module_info", "Module metadata and the object the module belongs to; always 1.", "devid", objectLabel, "name", "title", "version", "gateway_version"),
		moduleLastUpdate:   d("module_last_update_timestamp_seconds", "Last update of any parameter of the module (prime or live), seconds since the epoch.", "devid"),
		moduleAlarms:       d("module_alarms", "Active alarms of the module from the cloud's alarm quantity.", "devid"),
		moduleOutage:       d("module_outage_seconds", "Duration of the current module outage; present only while offline.", "devid", "reason"),
		moduleLastOutage:   d("module_last_outage_seconds", "Duration of the last finished module outage.", "devid", "reason"),
		moduleOutagesTotal: d("module_outages_total", "Module outages begun, by reason.", "devid", "reason"),

		objectInfo:              d("object_info", "A watched object (installation) of the account and its name; always 1.", objectLabel, "name"),
		objectListFailureStreak: d("object_list_failure_streak", "Unusable listings of the account's objects in a row."),
		objectDeparted:          d("object_departed_timestamp_seconds", "When a watched object stopped being watched, seconds since the epoch; reason: unlisted (the account no longer lists it) or modules_missing (listed, but none of the requested modules is in its module list); present until it is watched again, the departure is forgotten or the exporter restarts.", objectLabel, "name", "reason"),
		moduleDeparted:          d("module_departed_timestamp_seconds", "When a module left its still watched object and stopped being exported, seconds since the epoch; present until it returns, the departure is forgotten or the exporter restarts.", "devid", objectLabel, "name"),

		sessionUp:               d("session_up", "The object's exporter to cloud Socket.IO session: 1 up, 0 down.", objectLabel),
		sessionOutage:           d("session_outage_seconds", "Duration of the object's current session outage; present only while down.", objectLabel, "reason"),
		sessionLastOutage:       d("session_last_outage_seconds", "Duration of the object's last finished session outage.", objectLabel, "reason"),
		sessionOutagesTotal:     d("session_outages_total", "Published session outages of the object by reason (blinks are not outages).", objectLabel, "reason"),
		sessionBlinks:           d("session_blinks_total", "Session disconnects of the object absorbed by the down-hysteresis.", objectLabel),
		sessionReconnectFailure: d("session_reconnect_failure_reason", "Always 1; the reason of the latest failed reconnect while the object's session is down.", objectLabel, "reason"),

		pushHealthy:    d("push_healthy", "Live push health of the object's session: 1 healthy, 0 unhealthy; absent while unknown.", objectLabel),
		liveStale:      d("live_stale_seconds", "Seconds without a live update while the object's push is unhealthy and its session is up.", objectLabel),
		lastLiveUpdate: d("last_live_update_timestamp_seconds", "Last live (pushed) parameter update of the object's modules, seconds since the epoch.", objectLabel),
		lastUpdate:     d("last_update_timestamp_seconds", "Last parameter update of the object's modules from any source (prime or live), seconds since the epoch.", objectLabel),

		recoveryActions:     d("recovery_actions_total", "Recovery ladder actions of the object's session by step and result.", objectLabel, "step", "result"),
		recoveryQuarantined: d("recovery_quarantined", "1 while the object's realtime recovery is paused in REST-only quarantine.", objectLabel),
		recoveryCooldown:    d("recovery_cooldown_seconds", "Seconds left of the object's recovery cooldown; 0 when none.", objectLabel),
		pollFailureStreak:   d("module_poll_failure_streak", "Unusable module-list polls of the object in a row.", objectLabel),
		primeFailures:       d("prime_failures_total", "REST primes of the object's modules that failed after their retries, by trigger.", objectLabel, "trigger"),

		realtimeEvents: d("realtime_events_total", "Realtime events received on the object's session, by a fixed set of names plus other.", objectLabel, "event"),

		moduleAlarmsTotal:       d("module_alarms_total", "Alarm occurrences of the module begun since it was watched, from its active alarm list and alarm history, each counted once.", "devid", "code", "name"),
		moduleAlarmLastDuration: d("module_alarm_last_duration_seconds", "Length of the module's last finished occurrence of the alarm.", "devid", "code"),
		moduleChangesTotal:      d("module_changes_total", "Changes in the module's activity log made since it was watched, by outcome.", "devid", "state"),
		moduleLastChange:        d("module_last_change_timestamp_seconds", "When the newest change in the module's activity log was made, seconds since the epoch.", "devid"),
		historyRowsDropped:      d("history_rows_dropped_total", "Rows of the module's alarm history or activity log that could not be used (bad fields, future times, out of order, repeated).", "devid", "list"),

		tokenExpiry: d("token_expiry_timestamp_seconds", "When the current access token expires, seconds since the epoch; absent when it never expires or no token is held."),

		rateLimitPause:  d("rate_limit_pause_seconds", "Seconds left of the account-wide pause the cloud's throttling imposed on every request; 0 when none."),
		rateLimitPauses: d("rate_limit_pauses_total", "Throttling answers of the cloud (429, or 503 with Retry-After) that paused every request of the account."),
		loginFailure:    d("login_failure_reason", "Always 1; why the account's last login failed (rejected, blocked, rate_limited, unreachable); absent after a successful login and before any.", "reason"),
		loginRetry:      d("login_retry_timestamp_seconds", "When the next login may be sent after a failed one (backoff, or the hold on rejected credentials), seconds since the epoch; present only while that is ahead."),
		tokensHeld:      d("tokens_held", "Access tokens obtained and not yet revoked, the current one included."),
		tokensRevoked:   d("tokens_revoked_total", "Superseded access tokens revoked once nothing used them any more."),
	}
}

func (d *descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.paramValue, d.parameters, d.paramsNonNumeric, d.paramsDropped, d.paramsRefused,
		d.moduleOnline, d.moduleConnectedAt, d.moduleInfo, d.moduleLastUpdate, d.moduleAlarms,
		d.moduleOutage, d.moduleLastOutage, d.moduleOutagesTotal,
		d.objectInfo, d.objectListFailureStreak, d.objectDeparted, d.moduleDeparted,
		d.sessionUp, d.sessionOutage, d.sessionLastOutage, d.sessionOutagesTotal, d.sessionBlinks, d.sessionReconnectFailure,
		d.pushHealthy, d.liveStale, d.lastLiveUpdate, d.lastUpdate,
		d.recoveryActions, d.recoveryQuarantined, d.recoveryCooldown, d.pollFailureStreak, d.primeFailures,
		d.realtimeEvents,
		d.moduleAlarmsTotal, d.moduleAlarmLastDuration, d.moduleChangesTotal, d.moduleLastChange, d.historyRowsDropped,
		d.tokenExpiry,
		d.rateLimitPause, d.rateLimitPauses, d.loginFailure, d.loginRetry, d.tokensHeld, d.tokensRevoked,
	}
}

// New returns a Collector reading src and params (params may be nil: no
// parameter series are exported then). It fails on invalid Options.
func New(src SnapshotSource, params ParamSource, opts Options) (*Collector, error) {
	if src == nil {
		return nil, fmt.Errorf("collector: snapshot source is nil")
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("collector: %w", err)
	}
	c := &Collector{
		src:         src,
		params:      params,
		opts:        opts,
		log:         opts.Logger,
		filterCache: make(map[string]bool),
		descs:       newDescs(),
		cat:         newCatalogDescs(),
		renders:     make(map[string]*moduleRender),
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}

// Skipped returns how many series were skipped since the start because they
// could not be built (this does not happen with the current label handling;
// the count exists so that it would be seen if it did).
func (c *Collector) Skipped() uint64 { return c.skipped.Load() }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.all() {
		ch <- d
	}
	for _, d := range c.cat.all() {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) { c.collect(ch, nil) }

// directSeries are the large families of one scrape, which the /metrics
// handler writes itself.
type directSeries struct {
	params  []paramSeries
	stream  *paramStream // instead of params: written from a walk of its own
	catalog catalogSeries
}

// collect emits one scrape. With direct non-nil, the parameter series and
// the catalog's parameter series are stored in direct instead of being sent
// on ch: the /metrics handler writes them itself.
func (c *Collector) collect(ch chan<- prometheus.Metric, direct *directSeries) {
	s := c.src.Snapshot()
	var cs *CatalogState
	if c.opts.Catalog != nil {
		cs = c.opts.Catalog.Catalog()
	}
	e := emitter{c: c, ch: ch}

	objects := c.collectObjects(&e, s.Objects)
	e.emit(c.objectListFailureStreak, prometheus.GaugeValue, float64(s.ObjectListFailureStreak))
	c.collectAccount(&e, &s)
	c.collectDepartures(&e, s)

	mods := c.collectModules(&e, s.Modules, objects)
	c.collectAlarms(&e, s.Modules, mods, cs)
	c.collectHistory(&e, s.Modules, mods, cs)
	c.collectCatalogHealth(&e, cs, mods)
	c.collectParams(&e, mods, cs, direct)

	if e.skipped > 0 {
		c.skipped.Add(uint64(e.skipped))
		c.log.Warn("metrics skipped at scrape", "skipped", e.skipped, "err", e.firstErr)
	}
}

type emitter struct {
	c        *Collector
	ch       chan<- prometheus.Metric
	skipped  int
	firstErr error
	// labels is the label values of the series being built, reused from
	// series to series: NewConstMetric copies them, and the caller's
	// variadic arguments then need no heap allocation of their own.
	labels []string
}

// emit sends one const metric. An error (which would mean a label value the
// sanitiser let through) skips the series instead of failing the scrape.
func (e *emitter) emit(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	e.labels = append(e.labels[:0], labels...)
	m, err := prometheus.NewConstMetric(d, t, v, e.labels...)
	if err != nil {
		e.skipped++
		if e.firstErr == nil {
			e.firstErr = err
		}
		return
	}
	e.ch <- m
}

func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

// seconds converts a duration for export; a negative duration (a clock step
// between two readings) is exported as 0.
func seconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return d.Seconds()
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectAccount exports the account's token, login and throttling. The
// token's expiry is the account's while it is known (nothing is said of a
// token the account does not hold), else the snapshot's.
func (c *Collector) collectAccount(e *emitter, s *Snapshot) {
	a := s.Account
	if a == nil {
		if !s.TokenExpiry.IsZero() {
			e.emit(c.tokenExpiry, prometheus.GaugeValue, unixSeconds(s.TokenExpiry))
		}
		return
	}
	if a.HasToken && !a.TokenExpires.IsZero() {
		e.emit(c.tokenExpiry, prometheus.GaugeValue, unixSeconds(a.TokenExpires))
	}
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	e.emit(c.rateLimitPause, prometheus.GaugeValue, seconds(a.Paused(now)))
	e.emit(c.rateLimitPauses, prometheus.CounterValue, float64(a.Pauses))
	if reason, failed := a.LoginFailure(); failed {
		e.emit(c.loginFailure, prometheus.GaugeValue, 1, string(reason))
	}
	if at, ok := a.NextLogin(now); ok {
		e.emit(c.loginRetry, prometheus.GaugeValue, unixSeconds(at))
	}
	e.emit(c.tokensHeld, prometheus.GaugeValue, float64(max(0, a.TokensHeld)))
	e.emit(c.tokensRevoked, prometheus.CounterValue, float64(a.SupersededRevoked))
}

// collectDepartures exports the objects and modules that left, each once
// (an object that is watched again is not departed; the snapshot's memory
// says so, and a duplicate would fail the scrape).
func (c *Collector) collectDepartures(e *emitter, s Snapshot) {
	seen := map[int]bool{}
	for _, o := range s.DepartedObjects {
		if seen[o.ID] {
			continue
		}
		seen[o.ID] = true
		e.emit(c.objectDeparted, prometheus.GaugeValue, unixSeconds(o.Since), strconv.Itoa(o.ID), LabelValue(o.Name), LabelValue(o.Reason))
	}
	seenMod := map[string]bool{}
	for _, m := range s.DepartedModules {
		if seenMod[m.Devid] {
			continue
		}
		seenMod[m.Devid] = true
		e.emit(c.moduleDeparted, prometheus.GaugeValue, unixSeconds(m.Since), LabelValue(m.Devid), strconv.Itoa(m.ObjectID), LabelValue(m.Name))
	}
}

// collectObjects exports the series of every watched object, each labelled
// with the object's id, and returns the id labels by object id for the
// modules. An id listed twice is exported once, from its first entry: a
// duplicate series would fail the whole scrape.
func (c *Collector) collectObjects(e *emitter, objects []ObjectState) map[int]string {
	labels := make(map[int]string, len(objects))
	for i := range objects {
		o := &objects[i]
		if _, dup := labels[o.ID]; dup {
			continue
		}
		id := strconv.Itoa(o.ID)
		labels[o.ID] = id

		e.emit(c.objectInfo, prometheus.GaugeValue, 1, id, LabelValue(o.Name))
		c.collectSession(e, id, &o.Session)
		c.collectPush(e, id, &o.Push, o.Session.Up)
		c.collectRecovery(e, id, &o.Recovery)
		e.emit(c.pollFailureStreak, prometheus.GaugeValue, float64(o.PollFailureStreak), id)
		emitByReason(e, c.primeFailures, nil, o.PrimeFailures, id)
		c.collectEvents(e, id, o.Events)
	}
	return labels
}

func (c *Collector) collectSession(e *emitter, id string, ss *SessionState) {
	e.emit(c.sessionUp, prometheus.GaugeValue, boolValue(ss.Up), id)
	e.emit(c.sessionBlinks, prometheus.CounterValue, float64(ss.Blinks), id)
	if ss.Outage.Down {
		e.emit(c.sessionOutage, prometheus.GaugeValue, seconds(ss.Outage.DownFor), id, LabelValue(ss.Outage.Reason))
	}
	if ss.Outage.HasLast {
		e.emit(c.sessionLastOutage, prometheus.GaugeValue, seconds(ss.Outage.LastDownFor), id, LabelValue(ss.Outage.LastReason))
	}
	if !ss.Up && ss.ReconnectFailure != "" {
		e.emit(c.sessionReconnectFailure, prometheus.GaugeValue, 1, id, LabelValue(ss.ReconnectFailure))
	}
	emitByReason(e, c.sessionOutagesTotal, SessionReasons, ss.OutagesByReason, id)
}

// emitByReason exports a counter per reason: the known reasons always (0 until
// they happen), plus any other reason present in counts. Reasons are exported
// in sorted order of the sanitised value, deduplicated.
// prefix are the label values before the reason (the module's devid, the
// object's id).
func emitByReason(e *emitter, d *prometheus.Desc, known []string, counts map[string]uint64, prefix ...string) {
	merged := make(map[string]uint64, len(known)+len(counts))
	for _, r := range known {
		merged[r] = 0
	}
	for r, n := range counts {
		merged[LabelValue(r)] += n
	}
	var buf [4]string // the label values, without a heap allocation per series
	labels := append(buf[:0], prefix...)
	for _, r := range slices.Sorted(maps.Keys(merged)) {
		e.emit(d, prometheus.CounterValue, float64(merged[r]), append(labels, r)...)
	}
}

func (c *Collector) collectPush(e *emitter, id string, p *PushState, sessionUp bool) {
	if p.Known {
		e.emit(c.pushHealthy, prometheus.GaugeValue, boolValue(p.Healthy), id)
		if !p.Healthy && sessionUp {
			e.emit(c.liveStale, prometheus.GaugeValue, seconds(p.StaleFor), id)
		}
	}
	if !p.LastLiveUpdate.IsZero() {
		e.emit(c.lastLiveUpdate, prometheus.GaugeValue, unixSeconds(p.LastLiveUpdate), id)
	}
	if !p.LastUpdate.IsZero() {
		e.emit(c.lastUpdate, prometheus.GaugeValue, unixSeconds(p.LastUpdate), id)
	}
}

func (c *Collector) collectRecovery(e *emitter, id string, r *RecoveryState) {
	merged := make(map[ActionKey]uint64, len(RecoverySteps)*len(RecoveryResults)+len(r.Actions))
	for _, step := range RecoverySteps {
		for _, res := range RecoveryResults {
			merged[ActionKey{step, res}] = 0
		}
	}
	for k, n := range r.Actions {
		merged[ActionKey{LabelValue(k.Step), LabelValue(k.Result)}] += n
	}
	keys := make([]ActionKey, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ActionKey) int {
		return cmp.Or(cmp.Compare(a.Step, b.Step), cmp.Compare(a.Result, b.Result))
	})
	for _, k := range keys {
		e.emit(c.recoveryActions, prometheus.CounterValue, float64(merged[k]), id, k.Step, k.Result)
	}
	e.emit(c.recoveryQuarantined, prometheus.GaugeValue, boolValue(r.Quarantined), id)
	e.emit(c.recoveryCooldown, prometheus.GaugeValue, seconds(r.CooldownLeft), id)
}

// collectEvents exports the object's event counters: every name of Events
// from the first scrape on (0 until it happens); a count under any other
// name is added to EventOther, so the label set stays fixed.
func (c *Collector) collectEvents(e *emitter, id string, counts map[string]uint64) {
	var other uint64
	for name, n := range counts {
		if !slices.Contains(Events, name) {
			other += n
		}
	}
	for _, name := range Events {
		n := counts[name]
		if name == EventOther {
			n += other
		}
		e.emit(c.realtimeEvents, prometheus.CounterValue, float64(n), id, name)
	}
}

// exportedModule is a module of the snapshot as the parameter pass needs it.
type exportedModule struct {
	label   string // sanitised devid, the label value of every series of the module
	series  int    // numeric parameters passing the filters at this scrape
	dropped int    // of those, over the series cap
	devid   string // the devid as the cloud sent it
}

// collectModules exports the per-module series and returns the exported
// modules by raw devid. A devid listed twice (or two devids that sanitise to
// the same label value) is exported once, from its first entry: a duplicate
// series would fail the whole scrape. objects are the object id labels
// collectObjects built, reused for module_info.
func (c *Collector) collectModules(e *emitter, modules []ModuleState, objects map[int]string) map[string]*exportedModule {
	out := make(map[string]*exportedModule, len(modules))
	seen := make(map[string]bool, len(modules))
	for i := range modules {
		m := &modules[i]
		devid := LabelValue(m.Devid)
		if seen[devid] {
			continue
		}
		seen[devid] = true
		out[m.Devid] = &exportedModule{label: devid, devid: m.Devid}

		object, ok := objects[m.ObjectID]
		if !ok {
			object = strconv.Itoa(m.ObjectID)
		}
		e.emit(c.moduleInfo, prometheus.GaugeValue, 1, devid, object,
			LabelValue(m.Name), LabelValue(m.Title), LabelValue(m.Version), LabelValue(m.GatewayVersion))
		if m.OnlineKnown {
			e.emit(c.moduleOnline, prometheus.GaugeValue, boolValue(m.Online), devid)
			e.emit(c.moduleConnectedAt, prometheus.GaugeValue, float64(m.ConnectedAt), devid)
		}
		if !m.LastUpdate.IsZero() {
			e.emit(c.moduleLastUpdate, prometheus.GaugeValue, unixSeconds(m.LastUpdate), devid)
		}
		if m.AlarmsKnown {
			e.emit(c.moduleAlarms, prometheus.GaugeValue, float64(m.Alarms), devid)
		}
		if m.Outage.Down {
			e.emit(c.moduleOutage, prometheus.GaugeValue, seconds(m.Outage.DownFor), devid, LabelValue(m.Outage.Reason))
		}
		if m.Outage.HasLast {
			e.emit(c.moduleLastOutage, prometheus.GaugeValue, seconds(m.Outage.LastDownFor), devid, LabelValue(m.Outage.LastReason))
		}
		emitByReason(e, c.moduleOutagesTotal, ModuleReasons, m.OutagesByReason, devid)
		e.emit(c.parameters, prometheus.GaugeValue, float64(m.Params), devid)
		e.emit(c.paramsNonNumeric, prometheus.GaugeValue, float64(m.NonNumeric), devid)
		e.emit(c.paramsRefused, prometheus.CounterValue, float64(m.Refused), devid)
	}
	return out
}

// collectParams walks the store once, then emits. Emitting happens after the
// walk so the store's lock is never held while the registry drains the channel.
// For the /metrics handler's own writing, the walk keeps no series when the
// handler can write them from a walk of its own (see paramStream).
//
// Label values: devid is the module's sanitised label, computed once per
// module in collectModules; pool and param are the store's own strings,
// passed through LabelValue, which returns them unchanged (no copy, no
// allocation) unless they are too long or not valid UTF-8.
func (c *Collector) collectParams(e *emitter, mods map[string]*exportedModule, cs *CatalogState, direct *directSeries) {
	if c.params != nil {
		c.paramMu.Lock()
		c.syncRenders(cs, mods)
		c.scrapeGen++
		filtering := len(c.opts.Include) > 0 || len(c.opts.Exclude) > 0
		stream := streamCheck{limit: c.opts.MaxSeries, ok: direct != nil && !filtering}
		checking := stream.ok // keep no series; walk again if the check fails
		var series []paramSeries
		if !checking {
			series = make([]paramSeries, 0, c.lastCount)
		}
		var (
			lastDevid string
			lastMod   *exportedModule
			haveLast  bool
		)
		cat := catalogWalk{c: c, gen: c.scrapeGen}
		c.params.ForEachParam(func(devid, pool, param string, value float64, numeric bool) {
			// The store hands out a module's parameters together, so one map
			// lookup per module is the common case.
			if !haveLast || devid != lastDevid {
				lastDevid, lastMod, haveLast = devid, mods[devid], true
				if lastMod != nil {
					cat.enter(c.renders[devid])
				} else {
					cat.enter(nil)
				}
			}
			if lastMod == nil {
				return // not a module of the snapshot: nothing stale is exported
			}
			// Every register, filtered or not: the catalog's rules read any.
			cat.observe(pool, param, value, numeric)
			if !numeric {
				return
			}
			if filtering && !c.keep(pool, param) {
				return
			}
			if checking {
				stream.add(lastMod, pool, param)
				return
			}
			series = append(series, paramSeries{desc: c.paramValue, mod: lastMod, pool: LabelValue(pool), param: LabelValue(param), value: value})
		})
		catalog := cat.finish(mods)
		if checking && !stream.ok {
			series = c.walkSeries(mods, stream.count) // the walk cannot be written as it goes
		}
		c.lastCount = max(len(series), stream.count)
		c.paramMu.Unlock()

		if limit := c.opts.MaxSeries; limit > 0 {
			series = capPerModule(series, limit)
		}
		if direct != nil && stream.ok {
			direct.stream, direct.catalog = &paramStream{c: c, mods: mods, count: stream.count}, catalog
		} else if direct != nil {
			direct.params, direct.catalog = series, catalog
		} else {
			wires := make([]paramWire, len(series))
			for i := range series {
				series[i].wire = &wires[i]
				e.ch <- &series[i]
			}
			c.sendCatalogSeries(e.ch, &catalog)
		}
	}
	labels := make([]string, 0, len(mods))
	byLabel := make(map[string]*exportedModule, len(mods))
	for _, m := range mods {
		labels = append(labels, m.label)
		byLabel[m.label] = m
	}
	slices.Sort(labels)
	for _, l := range labels {
		e.emit(c.paramsDropped, prometheus.GaugeValue, float64(byLabel[l].dropped), l)
	}
}

// capPerModule keeps at most limit series of each module: the first ones in
// the order (pool, param), so the same set is kept from scrape to scrape,
// and counts the rest as dropped. Series of modules under the cap keep
// their order; the series are sorted only when some module is over it.
func capPerModule(series []paramSeries, limit int) []paramSeries {
	over := false
	for i := range series {
		m := series[i].mod
		m.series++
		over = over || m.series > limit
	}
	if !over {
		return series
	}
	slices.SortStableFunc(series, func(a, b paramSeries) int {
		return cmp.Or(cmp.Compare(a.mod.label, b.mod.label), cmp.Compare(a.pool, b.pool), cmp.Compare(a.param, b.param))
	})
	out := series[:0]
	kept := 0
	var mod *exportedModule
	for _, s := range series {
		if s.mod != mod {
			mod, kept = s.mod, 0
		}
		if kept >= limit {
			mod.dropped++
			continue
		}
		kept++
		out = append(out, s)
	}
	return out
}

// keep applies Include and Exclude to "<pool>.<param>". Called with paramMu
// held. Decisions are remembered per key; the lookup converts the reused
// byte buffer without allocating.
func (c *Collector) keep(pool, param string) bool {
	c.keyBuf = append(append(append(c.keyBuf[:0], pool...), '.'), param...)
	if v, ok := c.filterCache[string(c.keyBuf)]; ok {
		return v
	}
	key := string(c.keyBuf)
	v := c.decide(key)
	if len(c.filterCache) < maxFilterCache {
		c.filterCache[key] = v
	}
	return v
}

func (c *Collector) decide(key string) bool {
	if len(c.opts.Include) > 0 {
		in := false
		for _, p := range c.opts.Include {
			if MatchRegister(p, key) {
				in = true
				break
			}
		}
		if !in {
			return false
		}
	}
	for _, p := range c.opts.Exclude {
		if MatchRegister(p, key) {
			return false
		}
	}
	return true
}
