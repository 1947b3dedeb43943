package status

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
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
	// classAlarm is a boiler alarm: what the owner needs to see first,
	// above every state of the exporter's own health.
	classAlarm = "alarm"
)

type page struct {
	Title      string
	RefreshSec int
	Now        string

	// Summary says what the exporter holds: how many objects and realtime
	// sessions, and why one session per object.
	Summary summaryView
	// Account is the account's login, token and throttling; nil when the
	// snapshot does not know it.
	Account *accountView
	// Cards are the headline: each names the objects that are wrong.
	Cards []card
	// Index lists the sections with their state, when there is more than one.
	Index    []objectView
	Objects  []objectView
	Timeline timeline
	Episodes episodeList
	// Departed are the objects and modules that were watched and left,
	// one line each, oldest departure first.
	Departed []departedView

	// Diagnostics links the diagnostics bundle; "" for none.
	Diagnostics string
}

// departedView is one line about an object or module that left.
type departedView struct {
	What, Since, Detail string
}

// card is one big state box.
type card struct {
	Label, State, Class, Detail string
}

type summaryView struct {
	Text  string
	Token string
	// ObjectListFails is the object listing's failure streak, shown while
	// it is not 0 (the watched objects stay watched meanwhile).
	ObjectListFails int
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
	// Realtime is the Socket.IO connection's state: open or not, binding,
	// primed.
	Realtime      string
	Blinks        uint64
	ByReason      []reasonCount
	PollFails     int
	PrimeFailures []reasonCount
}

type pushView struct {
	State, Class      string
	StaleFor          string
	LastLive, LastAny string
	LastResumedAfter  string
	HasResumedAfter   bool
	// ModulesOffline is set while push is unhealthy with the session up and
	// every module of the object offline: the silence is the modules'
	// outage, not a zombie.
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
	InFlight                     string // the step running now, "" when none
	Actions                      []actionRow
	// Ran is false while no step has run since start: the page says so in
	// a line instead of a table of zeros (most objects of a large account).
	Ran bool
}

// objectView is one section of the page: a watched object (installation)
// with its own session, live push, recovery ladder and modules, or the
// section of modules that belong to no watched object (Other).
type objectView struct {
	ID     int
	Anchor string // the section's id, the fragment links point at
	Name   string // the object's name, or "object <id>" when it has none
	IDText string // "object 12"
	Other  bool
	Class  string // the worst of its cards
	// Cards are the section's states: session, live push, modules, recovery
	// (only modules for Other).
	Cards    []card
	Open     bool // the session, push and recovery panels start unfolded
	Session  sessionView
	Push     pushView
	Recovery recoveryView
	Modules  []moduleView

	online, offline, unknown int
	// alarms are the active boiler alarms of the section's modules, the
	// oldest first; alarmsKnown is false while no module's alarms were read.
	alarms      []activeAlarm
	alarmsKnown bool
	// health is the worst of the cards other than the alarms'.
	health string
}

// The order of an object's cards: the boiler's alarms first, then the
// exporter's own health.
const (
	cardAlarms = iota
	cardSession
	cardPush
	cardModules
	cardRecovery
)

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

// otherAnchor is the id of the section of modules that belong to no
// watched object.
const otherAnchor = "object-other"

func objectAnchor(id int) string { return "object-" + strconv.Itoa(id) }

// objectName is how the page names an object: its name in the account, or
// its id when the listing gave no name.
func objectName(o collector.ObjectState) string {
	if n := clean(strings.TrimSpace(o.Name), maxShown); n != "" {
		return n
	}
	return "object " + strconv.Itoa(o.ID)
}

// objectLabel names an object with its id: "Home (object 12)".
func objectLabel(o collector.ObjectState) string {
	id := "object " + strconv.Itoa(o.ID)
	if n := objectName(o); n != id {
		return n + " (" + id + ")"
	}
	return id
}

// classRank orders states by how much they need attention.
var classRank = map[string]int{classAlarm: 0, classBad: 1, classWarn: 2, classUnknown: 3, classOK: 4}

func worse(a, b string) string {
	if classRank[b] < classRank[a] {
		return b
	}
	return a
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
	p.Diagnostics = o.DiagnosticsLink
	if o.Refresh > 0 {
		p.RefreshSec = max(1, int(o.Refresh/time.Second))
	}

	// Modules by object, in the snapshot's order; those of no watched
	// object go to the Other section rather than disappear.
	index := make(map[int]int, len(s.Objects))
	for i, obj := range s.Objects {
		if _, dup := index[obj.ID]; !dup {
			index[obj.ID] = i
		}
	}
	byObject := make([][]collector.ModuleState, len(s.Objects))
	var other []collector.ModuleState
	for _, m := range s.Modules {
		if i, ok := index[m.ObjectID]; ok {
			byObject[i] = append(byObject[i], m)
		} else {
			other = append(other, m)
		}
	}
	open := 0
	for i, obj := range s.Objects {
		if index[obj.ID] != i {
			continue // the snapshot's objects are unique by ID; a duplicate shows once
		}
		if obj.Connected {
			open++
		}
		p.Objects = append(p.Objects, objectSection(obj, byObject[i], o.Alarms, now, o.Location))
	}
	// What needs attention is on top; then the snapshot's order (by ID).
	// Among objects of one class (two with alarms, say), the one whose
	// health is worse.
	slices.SortStableFunc(p.Objects, func(a, b objectView) int {
		return cmp.Or(cmp.Compare(classRank[a.Class], classRank[b.Class]), cmp.Compare(classRank[a.health], classRank[b.health]))
	})
	if len(other) > 0 {
		p.Objects = append(p.Objects, otherSection(other, o.Alarms, now, o.Location))
	}
	if len(p.Objects) > 1 {
		p.Index = p.Objects
	}

	p.Summary = summary(s, len(index), open, len(other), now, o.Location)
	p.Departed = departures(s, o.Alarms, now, o.Location)
	p.Cards = headline(p.Objects, o.Alarms, now)
	if p.Account = buildAccount(s.Account, now, o.Location); p.Account != nil && p.Account.Class != classOK {
		// An account in trouble is a headline, after the boiler's alarms;
		// a healthy one is the line under the summary alone.
		p.Cards = slices.Insert(p.Cards, 1, accountCard(p.Account))
	}
	names := namesOf(s.Objects)
	p.Timeline = buildTimeline(s, names, now, o)
	p.Episodes = buildEpisodes(s.Episodes, names, now, o)
	return p
}

func summary(s collector.Snapshot, objects, open, other int, now time.Time, loc *time.Location) summaryView {
	sv := summaryView{Token: tokenLine(s, now, loc), ObjectListFails: s.ObjectListFailureStreak}
	if objects == 0 {
		sv.Text = "No object of the account is watched yet, so no realtime session is held: the object listing has not given one."
	} else {
		sv.Text = fmt.Sprintf("Watching %s of the account with %s (%d open now), one per object: "+
			"the cloud binds a Socket.IO session to the modules of one object (its group_id), "+
			"so each object needs a session of its own; the login and its access token are shared by all.",
			plural(objects, "object", "objects"), plural(objects, "realtime session", "realtime sessions"), open)
	}
	if other > 0 {
		sv.Text += " " + plural(other, "module belongs", "modules belong") + " to no watched object (listed under Other modules)."
	}
	return sv
}

// departures words the objects and modules that left: who, since when,
// and what they took along (modules, alarms active when they left).
func departures(s collector.Snapshot, names AlarmNamer, now time.Time, loc *time.Location) []departedView {
	watched := map[int]string{}
	for _, o := range s.Objects {
		watched[o.ID] = objectLabel(o)
	}
	alarmsText := func(as []collector.DepartedAlarm) string {
		var out []string
		for _, a := range as {
			out = append(out, alarmTitle(names, a.Code, a.Symbol))
		}
		if len(out) == 0 {
			return ""
		}
		return "; alarms active when it left: " + strings.Join(out, ", ")
	}
	var out []departedView
	for _, o := range s.DepartedObjects {
		why := " is no longer listed by the account"
		if o.Reason == collector.DepartureModulesMissing {
			why = " is listed, but none of the modules --cloud.modules asks for is in its module list"
		}
		v := departedView{
			What:  "Object " + objectLabel(collector.ObjectState{ID: o.ID, Name: o.Name}) + why,
			Since: fmtAge(o.Since, now, loc),
		}
		v.Detail = "its series left /metrics; " + plural(len(o.Modules), "module", "modules") + " no longer watched"
		v.Detail += alarmsText(o.Alarms)
		out = append(out, v)
	}
	for _, m := range s.DepartedModules {
		name := clean(strings.TrimSpace(m.Name), maxShown)
		if name == "" {
			name = clean(m.Devid, maxShown)
		} else {
			name += " (" + clean(m.Devid, maxShown) + ")"
		}
		object := watched[m.ObjectID]
		if object == "" {
			object = "object " + strconv.Itoa(m.ObjectID)
		}
		out = append(out, departedView{
			What:   "Module " + name + " left " + object,
			Since:  fmtAge(m.Since, now, loc),
			Detail: "its series left /metrics" + alarmsText(m.Alarms),
		})
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func objectSection(obj collector.ObjectState, modules []collector.ModuleState, names AlarmNamer, now time.Time, loc *time.Location) objectView {
	ov := objectView{
		ID:     obj.ID,
		Anchor: objectAnchor(obj.ID),
		Name:   objectName(obj),
		IDText: "object " + strconv.Itoa(obj.ID),
	}
	ss := obj.Session
	ov.Session = sessionView{
		Up:        ss.Up,
		Outage:    outage(ss.Outage, loc),
		Blinks:    ss.Blinks,
		PollFails: obj.PollFailureStreak,
		Realtime:  realtimeState(obj),
	}
	if !ss.Up {
		ov.Session.ConnectFailure = clean(ss.ReconnectFailure, maxShown)
	}
	ov.Session.ByReason = counts(ss.OutagesByReason)
	ov.Session.PrimeFailures = counts(obj.PrimeFailures)

	ps := obj.Push
	ov.Push = pushView{LastLive: "never", LastAny: "never"}
	switch {
	case !ps.Known:
		ov.Push.State, ov.Push.Class = "UNKNOWN", classUnknown
	case ps.Healthy:
		ov.Push.State, ov.Push.Class = "HEALTHY", classOK
	default:
		ov.Push.State, ov.Push.Class = "UNHEALTHY", classBad
		if ss.Up {
			ov.Push.StaleFor = fmtDuration(ps.StaleFor)
		}
	}
	if !ps.LastLiveUpdate.IsZero() {
		ov.Push.LastLive = fmtAge(ps.LastLiveUpdate, now, loc)
	}
	if !ps.LastUpdate.IsZero() {
		ov.Push.LastAny = fmtAge(ps.LastUpdate, now, loc)
	}
	if ps.LastResumedAfter > 0 {
		ov.Push.HasResumedAfter = true
		ov.Push.LastResumedAfter = fmtDuration(ps.LastResumedAfter)
	}

	r := obj.Recovery
	ov.Recovery = recoveryView{
		Quarantined:    r.Quarantined,
		QuarantineLeft: fmtDuration(r.QuarantineLeft),
		CooldownLeft:   fmtDuration(r.CooldownLeft),
		InFlight:       clean(obj.Recovering, maxShown),
		Actions:        actionRows(r.Actions, streaks(r)),
	}
	for _, a := range ov.Recovery.Actions {
		if a.Streak > 0 || a.OK+a.Failed+a.Aborted+a.Other > 0 {
			ov.Recovery.Ran = true
		}
	}

	ov.addModules(modules, now, loc)
	// The ladder's rule (outage.Modules.AllOffline), per object: at least
	// one module and every one known offline; a module not known yet counts
	// as online. Then nothing is there to push, the ladder holds back and so
	// does the page: the push state stays as defined, without the zombie's
	// alarm.
	if ov.Push.StaleFor != "" && ov.offline > 0 && ov.online == 0 && ov.unknown == 0 {
		ov.Push.ModulesOffline, ov.Push.Class = true, classUnknown
	}

	ov.Cards = []card{cardAlarms: alarmsCard("Boiler alarms", ov.alarms, ov.alarmsKnown, names, now, false),
		cardSession: sessionCard(ov), cardPush: pushCard(ov), cardModules: modulesCard(ov), cardRecovery: recoveryCard(ov, r)}
	ov.Class, ov.health = sectionClass(ov.Cards)
	// The panels of a healthy object stay folded; a long account reads as
	// its problems.
	ov.Open = ov.Cards[cardSession].Class != classOK || ov.Cards[cardPush].Class != classOK || ov.Cards[cardRecovery].Class != classOK
	return ov
}

func otherSection(modules []collector.ModuleState, names AlarmNamer, now time.Time, loc *time.Location) objectView {
	ov := objectView{Anchor: otherAnchor, Name: "Other modules", Other: true}
	ov.addModules(modules, now, loc)
	ov.Cards = []card{alarmsCard("Boiler alarms", ov.alarms, ov.alarmsKnown, names, now, false), modulesCard(ov)}
	ov.Class, ov.health = sectionClass(ov.Cards)
	return ov
}

// sectionClass is the worst of a section's cards, its first being its
// alarms: an active alarm turns the section to the alarm colour, while
// alarms not read yet leave it to the other cards.
func sectionClass(cards []card) (class, health string) {
	health = classOK
	for _, c := range cards[1:] {
		health = worse(health, c.Class)
	}
	if cards[0].Class == classAlarm {
		return classAlarm, health
	}
	return health, health
}

func (ov *objectView) addModules(modules []collector.ModuleState, now time.Time, loc *time.Location) {
	for _, m := range modules {
		switch {
		case !m.OnlineKnown:
			ov.unknown++
		case m.Online:
			ov.online++
		default:
			ov.offline++
		}
		ov.Modules = append(ov.Modules, module(m, now, loc))
		as, known := moduleAlarms(m)
		for i := range as {
			if !ov.Other {
				as[i].Object = ov.Name
			}
		}
		ov.alarms = append(ov.alarms, as...)
		ov.alarmsKnown = ov.alarmsKnown || known
	}
	sortAlarms(ov.alarms)
	// Offline first, then unknown, then online: what needs attention is on top.
	rank := map[string]int{classBad: 0, classUnknown: 1, classOK: 2}
	slices.SortStableFunc(ov.Modules, func(a, b moduleView) int {
		return cmp.Or(cmp.Compare(rank[a.Class], rank[b.Class]), cmp.Compare(a.DevidFull, b.DevidFull))
	})
}

// realtimeState words the object's Socket.IO connection: whether it is
// open, and whether the object's modules are bound and primed on it.
func realtimeState(obj collector.ObjectState) string {
	switch {
	case !obj.Connected:
		return "not open"
	case obj.Binding > 0:
		return fmt.Sprintf("open · binding the modules (%d in flight)", obj.Binding)
	case !obj.Ready:
		return "open · no parameter snapshot stored yet"
	default:
		return "open · modules bound, parameters primed"
	}
}

// counts lists a counter map, largest first, without zeros.
func counts(m map[string]uint64) []reasonCount {
	var out []reasonCount
	for r, n := range m {
		if n > 0 {
			out = append(out, reasonCount{clean(r, maxShown), n})
		}
	}
	slices.SortFunc(out, func(a, b reasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	return out
}

func sessionCard(ov objectView) card {
	if ov.Session.Up {
		return card{"Cloud session", "UP", classOK, ""}
	}
	d := "no outage recorded"
	switch {
	case ov.Session.Outage.Down:
		d = "down " + ov.Session.Outage.For + " · " + ov.Session.Outage.Reason
	case ov.Session.ConnectFailure != "":
		// Never up since start: the failed connect says why.
		d = "not up yet · " + ov.Session.ConnectFailure
	}
	return card{"Cloud session", "DOWN", classBad, d}
}

func pushCard(ov objectView) card {
	d := ""
	if ov.Push.StaleFor != "" {
		d = "no live update for " + ov.Push.StaleFor
		if ov.Push.ModulesOffline {
			d += " · every module offline"
		}
	} else if ov.Push.Class == classUnknown {
		d = "no live update yet since the session came up"
	}
	return card{"Live push", ov.Push.State, ov.Push.Class, d}
}

func modulesCard(ov objectView) card {
	total := ov.online + ov.offline + ov.unknown
	mc := card{Label: "Modules", State: fmt.Sprintf("%d/%d online", ov.online, total), Class: classOK}
	switch {
	case ov.offline > 0:
		mc.Class, mc.Detail = classBad, fmt.Sprintf("%d offline", ov.offline)
	case ov.unknown > 0:
		mc.Class, mc.Detail = classUnknown, fmt.Sprintf("%d not known yet", ov.unknown)
	case total == 0:
		mc.Class, mc.Detail = classUnknown, "no modules"
	}
	return mc
}

func recoveryCard(ov objectView, r collector.RecoveryState) card {
	rc := card{Label: "Recovery", State: "IDLE", Class: classOK}
	switch {
	case r.Quarantined:
		rc.State, rc.Class, rc.Detail = "QUARANTINE", classBad, ov.Recovery.QuarantineLeft+" left, REST only"
	case r.CooldownLeft > 0:
		rc.State, rc.Class, rc.Detail = "COOLDOWN", classWarn, ov.Recovery.CooldownLeft+" left"
	default:
		// The highest step with a streak, as the table's "in a row" says it.
		for _, a := range ov.Recovery.Actions {
			if a.Streak > 0 {
				rc.State, rc.Class = "RECOVERING", classWarn
				rc.Detail = fmt.Sprintf("%s %d in a row", a.Step, a.Streak)
			}
		}
		if ov.Recovery.InFlight != "" {
			rc.State, rc.Class = "RECOVERING", classWarn
			rc.Detail = strings.TrimPrefix(rc.Detail+" · "+ov.Recovery.InFlight+" running", " · ")
		}
	}
	return rc
}

// headlineNames bounds how many objects a headline card names.
const headlineNames = 3

// headline is the page's "what is wrong": one card per kind of state over
// every object, as bad as the worst object's, naming the objects in that
// state so that one object's outage is not read as every object's.
func headline(objects []objectView, names AlarmNamer, now time.Time) []card {
	var sections []objectView
	var alarms []activeAlarm
	alarmsKnown := false
	for _, ov := range objects {
		if !ov.Other {
			sections = append(sections, ov)
		}
		alarms = append(alarms, ov.alarms...)
		alarmsKnown = alarmsKnown || ov.alarmsKnown
	}
	sortAlarms(alarms)
	// The boiler's alarms lead: what the owner needs at 3 a.m.
	alarmCard := alarmsCard("Boiler alarms", alarms, alarmsKnown, names, now, true)
	if len(sections) == 0 {
		return []card{
			alarmCard,
			{Label: "Cloud sessions", State: "NONE", Class: classUnknown, Detail: "no object watched"},
			modulesHeadline(objects),
		}
	}
	return []card{
		alarmCard,
		objectsHeadline("Cloud sessions", sections, cardSession),
		objectsHeadline("Live push", sections, cardPush),
		modulesHeadline(objects),
		objectsHeadline("Recovery", sections, cardRecovery),
	}
}

func objectsHeadline(label string, objects []objectView, kind int) card {
	worst := classOK
	for _, ov := range objects {
		worst = worse(worst, ov.Cards[kind].Class)
	}
	var at []objectView
	for _, ov := range objects {
		if ov.Cards[kind].Class == worst {
			at = append(at, ov)
		}
	}
	// The states of the objects in the worst class, which may differ
	// within it (recovering and cooling down are both warnings).
	var states []string
	for _, ov := range at {
		if st := ov.Cards[kind].State; !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	hc := card{Label: label, Class: worst, State: strings.Join(states, " · ")}
	if len(at) < len(objects) {
		hc.State = fmt.Sprintf("%d/%d %s", len(at), len(objects), hc.State)
	}
	if worst == classOK {
		if len(objects) > 1 {
			hc.Detail = "every object"
		}
		return hc
	}
	var named []string
	for _, ov := range at[:min(len(at), headlineNames)] {
		n := ov.Name
		if d := ov.Cards[kind].Detail; d != "" {
			n += ": " + d
		}
		named = append(named, n)
	}
	hc.Detail = strings.Join(named, "; ")
	if more := len(at) - headlineNames; more > 0 {
		hc.Detail += fmt.Sprintf("; and %d more", more)
	}
	return hc
}

func modulesHeadline(objects []objectView) card {
	var all objectView
	var offlineIn []string
	for _, ov := range objects {
		all.online += ov.online
		all.offline += ov.offline
		all.unknown += ov.unknown
		if ov.offline > 0 {
			offlineIn = append(offlineIn, ov.Name)
		}
	}
	mc := modulesCard(all)
	if len(offlineIn) > 0 {
		if len(offlineIn) > headlineNames {
			offlineIn = append(offlineIn[:headlineNames], fmt.Sprintf("%d more", len(offlineIn)-headlineNames))
		}
		mc.Detail += " · " + strings.Join(offlineIn, ", ")
	}
	return mc
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
			mv.AlarmClass = classAlarm
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
