package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bragerone/bragerone_exporter/collector"
)

// Display bounds for values from the cloud.
const (
	maxShown = 64  // runes shown in a cell
	maxTitle = 512 // bytes kept in a hover title
)

// notConnected is how the controller's app words a module the cloud has no
// connection to (its connection panel's "Not connected").
const notConnected = "not connected"

// Status classes, the CSS classes of states.
const (
	classOK      = "ok"
	classBad     = "bad"
	classWarn    = "warn"
	classUnknown = "unknown"
)

type page struct {
	Title      string
	RefreshSec int
	Now        string

	Cards    []card
	Session  sessionView
	Push     pushView
	Recovery recoveryView
	Modules  []moduleView
	Timeline timeline
}

// card is one big state box at the top of the page.
type card struct {
	Label, State, Class, Detail string
}

type outageView struct {
	Down                bool
	Since, For, Reason  string
	HasLast             bool
	LastFor, LastReason string
}

type reasonCount struct {
	Reason string
	Count  uint64
}

type sessionView struct {
	Up     bool
	Outage outageView
	// ConnectFailure is why the latest connect attempt failed while the
	// session is down: why it is still down, or has not come up since start.
	ConnectFailure string
	Blinks         uint64
	ByReason       []reasonCount
	PollFails      int
	Token          string
}

type pushView struct {
	State, Class      string
	StaleFor          string
	LastLive, LastAny string
	LastResumedAfter  string
	HasResumedAfter   bool
	// ModulesOffline is set while push is unhealthy with the session up and
	// every module offline: the silence is the modules' outage, not a zombie.
	ModulesOffline bool
}

// actionRow is one step of the recovery ladder: how many times it ran
// since live updates stopped (the streak the ladder climbs on) and how each
// run since the exporter started ended.
type actionRow struct {
	Step                string
	Streak              int
	HasStreak           bool // the ladder keeps a streak of this step
	OK, Failed, Aborted uint64
	Other               uint64
}

type recoveryView struct {
	Quarantined                  bool
	QuarantineLeft, CooldownLeft string
	Actions                      []actionRow
}

type moduleView struct {
	Devid, DevidFull   string
	Link               string // to the module's own page
	Name, Title        string
	State, Class       string
	ConnectedAt        string
	Outage             outageView
	LastUpdate         string
	Params, NonNumeric int
	Alarms             string
	AlarmClass         string
	Version            string
}

func buildPage(s collector.Snapshot, o Options) page {
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	p := page{
		Title: o.Title,
		Now:   fmtTime(now, o.Location),
	}
	if o.Refresh > 0 {
		p.RefreshSec = max(1, int(o.Refresh/time.Second))
	}

	p.Session = sessionView{
		Up:        s.Session.Up,
		Outage:    outage(s.Session.Outage, o.Location),
		Blinks:    s.Session.Blinks,
		PollFails: s.PollFailureStreak,
		Token:     "never expires",
	}
	if !s.Session.Up {
		p.Session.ConnectFailure = clean(s.Session.ReconnectFailure, maxShown)
	}
	for r, n := range s.Session.OutagesByReason {
		p.Session.ByReason = append(p.Session.ByReason, reasonCount{clean(r, maxShown), n})
	}
	slices.SortFunc(p.Session.ByReason, func(a, b reasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	if !s.TokenExpiry.IsZero() {
		p.Session.Token = fmtTime(s.TokenExpiry, o.Location) + " (in " + fmtDuration(s.TokenExpiry.Sub(now)) + ")"
	}

	p.Push = pushView{LastLive: "never", LastAny: "never"}
	switch {
	case !s.Push.Known:
		p.Push.State, p.Push.Class = "UNKNOWN", classUnknown
	case s.Push.Healthy:
		p.Push.State, p.Push.Class = "HEALTHY", classOK
	default:
		p.Push.State, p.Push.Class = "UNHEALTHY", classBad
		if s.Session.Up {
			p.Push.StaleFor = fmtDuration(s.Push.StaleFor)
		}
	}
	if !s.Push.LastLiveUpdate.IsZero() {
		p.Push.LastLive = fmtAge(s.Push.LastLiveUpdate, now, o.Location)
	}
	if !s.Push.LastUpdate.IsZero() {
		p.Push.LastAny = fmtAge(s.Push.LastUpdate, now, o.Location)
	}
	if s.Push.LastResumedAfter > 0 {
		p.Push.HasResumedAfter = true
		p.Push.LastResumedAfter = fmtDuration(s.Push.LastResumedAfter)
	}

	r := s.Recovery
	p.Recovery = recoveryView{
		Quarantined:    r.Quarantined,
		QuarantineLeft: fmtDuration(r.QuarantineLeft),
		CooldownLeft:   fmtDuration(r.CooldownLeft),
		Actions:        actionRows(r.Actions, streaks(r)),
	}

	online, offline, unknown := 0, 0, 0
	for _, m := range s.Modules {
		mv := module(m, now, o.Location)
		switch {
		case !m.OnlineKnown:
			unknown++
		case m.Online:
			online++
		default:
			offline++
		}
		p.Modules = append(p.Modules, mv)
	}
	// Offline first, then unknown, then online: what needs attention is on top.
	rank := map[string]int{classBad: 0, classUnknown: 1, classOK: 2}
	slices.SortStableFunc(p.Modules, func(a, b moduleView) int {
		return cmp.Or(cmp.Compare(rank[a.Class], rank[b.Class]), cmp.Compare(a.DevidFull, b.DevidFull))
	})

	// The ladder's rule (outage.Modules.AllOffline): at least one module and
	// every one known offline; a module not known yet counts as online. Then
	// nothing is there to push, the ladder holds back and so does the
	// page: the push state stays as defined, without the zombie's alarm.
	if p.Push.StaleFor != "" && offline > 0 && online == 0 && unknown == 0 {
		p.Push.ModulesOffline, p.Push.Class = true, classUnknown
	}

	p.Cards = cards(s, online, offline, unknown, p)
	p.Timeline = buildTimeline(s, now, o)
	return p
}

func cards(s collector.Snapshot, online, offline, unknown int, p page) []card {
	var out []card
	if s.Session.Up {
		out = append(out, card{"Cloud session", "UP", classOK, ""})
	} else {
		d := "no outage recorded"
		switch {
		case s.Session.Outage.Down:
			d = "down " + p.Session.Outage.For + " · " + p.Session.Outage.Reason
		case p.Session.ConnectFailure != "":
			// Never up since start: the failed connect says why.
			d = "not up yet · " + p.Session.ConnectFailure
		}
		out = append(out, card{"Cloud session", "DOWN", classBad, d})
	}
	pd := ""
	if p.Push.StaleFor != "" {
		pd = "no live update for " + p.Push.StaleFor
		if p.Push.ModulesOffline {
			pd += " · every module offline"
		}
	} else if p.Push.Class == classUnknown {
		pd = "no live update yet since the session came up"
	}
	out = append(out, card{"Live push", p.Push.State, p.Push.Class, pd})

	total := online + offline + unknown
	mc := card{Label: "Modules", State: fmt.Sprintf("%d/%d online", online, total), Class: classOK}
	switch {
	case offline > 0:
		mc.Class, mc.Detail = classBad, fmt.Sprintf("%d offline", offline)
	case unknown > 0:
		mc.Class, mc.Detail = classUnknown, fmt.Sprintf("%d not known yet", unknown)
	case total == 0:
		mc.Class, mc.Detail = classUnknown, "no modules"
	}
	out = append(out, mc)

	rc := card{Label: "Recovery", State: "IDLE", Class: classOK}
	switch {
	case s.Recovery.Quarantined:
		rc.State, rc.Class, rc.Detail = "QUARANTINE", classBad, p.Recovery.QuarantineLeft+" left, REST only"
	case s.Recovery.CooldownLeft > 0:
		rc.State, rc.Class, rc.Detail = "COOLDOWN", classWarn, p.Recovery.CooldownLeft+" left"
	default:
		// The highest step with a streak, as the table's "in a row" says it.
		for _, a := range p.Recovery.Actions {
			if a.Streak > 0 {
				rc.State, rc.Class = "RECOVERING", classWarn
				rc.Detail = fmt.Sprintf("%s %d in a row", a.Step, a.Streak)
			}
		}
	}
	out = append(out, rc)
	return out
}

// streaks are the ladder's streaks by step: the steps run since live
// updates stopped, each reset when the ladder climbs past it.
func streaks(r collector.RecoveryState) map[string]int {
	return map[string]int{
		collector.StepZombiePrime:      r.PrimeStreak,
		collector.StepHardRestart:      r.HardRestartStreak,
		collector.StepTransportRecycle: r.RecycleStreak,
		collector.StepManagerRebuild:   r.RebuildCount,
	}
}

func actionRows(actions map[collector.ActionKey]uint64, streak map[string]int) []actionRow {
	rows := make(map[string]*actionRow)
	var order []string
	row := func(step string) *actionRow {
		if r, ok := rows[step]; ok {
			return r
		}
		r := &actionRow{Step: step}
		rows[step] = r
		order = append(order, step)
		return r
	}
	for _, step := range collector.RecoverySteps {
		row(step)
	}
	var extra []string
	for k := range actions {
		if !slices.Contains(collector.RecoverySteps, k.Step) {
			extra = append(extra, clean(k.Step, maxShown))
		}
	}
	slices.Sort(extra)
	for _, step := range slices.Compact(extra) {
		row(step)
	}
	for k, n := range actions {
		r := row(clean(k.Step, maxShown))
		switch k.Result {
		case collector.ResultOK:
			r.OK += n
		case collector.ResultFailed:
			r.Failed += n
		case collector.ResultAborted:
			r.Aborted += n
		default:
			r.Other += n
		}
	}
	out := make([]actionRow, 0, len(order))
	for _, step := range order {
		r := *rows[step]
		r.Streak, r.HasStreak = streak[step]
		out = append(out, r)
	}
	return out
}

func module(m collector.ModuleState, now time.Time, loc *time.Location) moduleView {
	mv := moduleView{
		Devid:      clean(m.Devid, maxShown),
		DevidFull:  cleanTitle(m.Devid),
		Link:       moduleLink(m.Devid),
		Name:       clean(m.Name, maxShown),
		Title:      clean(m.Title, maxShown),
		Outage:     outage(m.Outage, loc),
		LastUpdate: "never",
		Params:     m.Params,
		NonNumeric: m.NonNumeric,
		Alarms:     "—",
		Version:    clean(strings.TrimSpace(m.Version+" "+gatewayVersion(m.GatewayVersion)), maxShown),
	}
	switch {
	case !m.OnlineKnown:
		mv.State, mv.Class = "unknown", classUnknown
	case m.Online:
		mv.State, mv.Class = "online", classOK
	default:
		mv.State, mv.Class = "OFFLINE", classBad
	}
	// The cloud's connectedAt is when the module connected, 0 while it is
	// not; an offline module may keep the time of its last connection (a
	// listing that left it out), which is no longer "connected since".
	switch {
	case !m.OnlineKnown:
		mv.ConnectedAt = "—"
	case !m.Online:
		mv.ConnectedAt = notConnected
	case m.ConnectedAt != 0:
		mv.ConnectedAt = fmtTime(time.Unix(m.ConnectedAt, 0), loc)
	default:
		mv.ConnectedAt = "—"
	}
	if !m.LastUpdate.IsZero() {
		mv.LastUpdate = fmtDuration(now.Sub(m.LastUpdate)) + " ago"
	}
	if m.AlarmsKnown {
		mv.Alarms = fmt.Sprint(m.Alarms)
		if m.Alarms > 0 {
			mv.AlarmClass = classBad
		}
	}
	return mv
}

func gatewayVersion(v string) string {
	if v == "" {
		return ""
	}
	return "(gateway " + v + ")"
}

func outage(o collector.Outage, loc *time.Location) outageView {
	v := outageView{Down: o.Down, HasLast: o.HasLast}
	if o.Down {
		v.For = fmtDuration(o.DownFor)
		v.Reason = clean(o.Reason, maxShown)
		if !o.DownSince.IsZero() {
			v.Since = fmtTime(o.DownSince, loc)
		}
	}
	if o.HasLast {
		v.LastFor = fmtDuration(o.LastDownFor)
		v.LastReason = clean(o.LastReason, maxShown)
	}
	return v
}

// clean makes a value from the cloud fit for display: invalid UTF-8 and
// control characters become U+FFFD, and it is cut to n runes with an
// ellipsis. Escaping is left to html/template.
func clean(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\uFFFE' || r == '\uFFFF' {
			return '\uFFFD'
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// cleanTitle is clean for hover titles: longer, bounded in bytes.
func cleanTitle(s string) string {
	s = clean(s, maxTitle)
	if len(s) > maxTitle {
		cut := maxTitle
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func fmtTime(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

func fmtAge(t, now time.Time, loc *time.Location) string {
	return fmtDuration(now.Sub(t)) + " ago (" + fmtTime(t, loc) + ")"
}

// fmtDuration is a compact, readable duration: 42s, 3m12s, 5h03m, 2d4h.
func fmtDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	}
}
