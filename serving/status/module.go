package status

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// ModulePath is where the per-module pages live: ModulePath + devid. The
// module rows of /status link there.
const ModulePath = "/status/modules/"

// ParamSource describes the parameters of one module for its page.
type ParamSource interface {
	// ModuleParams returns the module's parameters as the parameter catalog
	// describes them, in menu order, with their values now. ok is false
	// when no catalog is in use (not loaded yet, or switched off).
	ModuleParams(devid string) (params []Param, ok bool)
	// AlarmName translates an alarm (its code and the cloud's symbol) where
	// the catalog has a name for it.
	AlarmName(code, symbol string) (string, bool)
}

// Param is one parameter as the per-module page shows it.
type Param struct {
	Menu        string // panel path in the controller's app, "Boiler/Settings"
	Name        string // "Boiler temperature"
	Symbol      string // "PARAM_P4_1"
	Unit        string // "°C", "" when none
	Pool, Param string // the register: "P4", "v1"

	// Value is the value as the app displays it, Label the state of a
	// parameter that takes named states; HasValue is false when the module
	// has not reported the register.
	Value    float64
	Label    string
	HasValue bool
	// Hidden: the app's visibility rules hide the parameter now.
	Hidden bool
	// UpdatedAt is when the register's value last arrived (prime or live);
	// zero when unknown.
	UpdatedAt time.Time
}

type modulePage struct {
	Title, StatusTitle, Heading string
	RefreshSec                  int
	Now                         string
	Back                        string

	Module moduleView

	// Object names the module's object and links to its section of
	// /status; Session is that object's session card (the module's values
	// arrive through it).
	Object  moduleObject
	Session card

	Alarms     []alarmView
	AlarmState string
	AlarmClass string

	CatalogState, CatalogClass, CatalogDetail string

	// History is the module's past as the exporter read it: its recent
	// changes and its alarm occurrences, newest first, at most
	// maxHistoryShown of each; HistoryNote says why there is none.
	HistoryKnown bool
	HistoryNote  string
	Changes      []changeView
	PastAlarms   []pastAlarmView

	Menus    []menuView
	NoParams string
	// StaleNote says why the values shown are not current ("" when they
	// are): the module is offline, or its object's stream is not live.
	StaleNote string
}

// maxHistoryShown bounds each history table of a module page.
const maxHistoryShown = 20

// changeView is one change of the activity log as the page shows it.
type changeView struct {
	When, Name, Register, Symbol, Old, New, User, State string
	Class                                               string // the outcome's card class
}

// pastAlarmView is one alarm occurrence as the page shows it.
type pastAlarmView struct {
	Name, Note, Code, From, To, Duration string
	Active                               bool
}

// RawDisplayer is a ParamSource that can also show a raw value of a
// register as the app would display it, for the old and new values of a
// change.
type RawDisplayer interface {
	// DisplayRaw is raw shown as the app shows the register's value, with
	// its unit ("55 °C", "Summer"); ok is false when the catalog cannot
	// show it.
	DisplayRaw(devid, register string, raw float64) (shown string, ok bool)
}

// moduleObject is the object a module page names.
type moduleObject struct {
	Name, IDText string
	Link         string // to the object's section of /status
	Watched      bool   // false: the module's object is not among the watched ones
}

type alarmView struct {
	Name, Code, Since string
	// Note says the name is not a translation ("code 91, no translation in
	// en"); Title is the name with its note, for one-line places.
	Note, Title string
}

// namerOf is params as an AlarmNamer; nil stays nil (an interface holding
// a nil ParamSource would not be).
func namerOf(params ParamSource) AlarmNamer {
	if params == nil {
		return nil
	}
	return params
}

type menuView struct {
	Title  string
	Params []paramView
}

type paramView struct {
	Name, Symbol, Value, Unit, Register string
	Hidden                              bool
	// Age is how long ago the value arrived ("" when unknown); Stale marks
	// a value of an offline module, or one older than
	// store.StaleValueAfter that its object's live stream does not vouch
	// for.
	Age   string
	Stale bool

	updated time.Time
}

// moduleLink is the relative link from /status to a module's page; relative
// so that it holds behind a reverse proxy that adds a path prefix.
func moduleLink(devid string) string {
	return strings.TrimPrefix(ModulePath, "/") + url.PathEscape(devid)
}

// ModuleHandler serves the per-module pages under ModulePath for GET and
// HEAD: one module's link state, its active alarms by name, and its
// parameters grouped by menu with names, units and displayed values. An
// unknown devid is a 404. params may be nil (no catalog wired).
func ModuleHandler(src collector.SnapshotSource, params ParamSource, opts Options) http.Handler {
	opts = opts.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !getOrHead(w, r) {
			return
		}
		// One escaped path segment: a devid may hold any character, "/" too.
		seg, ok := strings.CutPrefix(r.URL.EscapedPath(), ModulePath)
		devid, err := url.PathUnescape(seg)
		if !ok || err != nil || devid == "" || strings.Contains(seg, "/") {
			http.NotFound(w, r)
			return
		}
		var buf bytes.Buffer
		found, err := RenderModule(&buf, src.Snapshot(), params, devid, opts)
		if !found {
			http.Error(w, "no module "+strconv.Quote(clean(devid, maxShown))+" on this exporter", http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, "rendering the module page failed", http.StatusInternalServerError)
			return
		}
		writePage(w, r, buf.Bytes())
	})
}

// RenderModule writes the page of one module; found is false when the
// snapshot has no module devid (nothing is written then).
func RenderModule(w interface{ Write([]byte) (int, error) }, s collector.Snapshot, params ParamSource, devid string, opts Options) (found bool, err error) {
	opts = opts.withDefaults()
	p, found := buildModulePage(s, params, devid, opts)
	if !found {
		return false, nil
	}
	return true, pageTemplate.ExecuteTemplate(w, "module", p)
}

func buildModulePage(s collector.Snapshot, params ParamSource, devid string, o Options) (modulePage, bool) {
	var m *collector.ModuleState
	for i := range s.Modules {
		if s.Modules[i].Devid == devid {
			m = &s.Modules[i]
			break
		}
	}
	if m == nil {
		return modulePage{}, false
	}
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	mv := module(*m, now, o.Location)
	heading := mv.Name
	if heading == "" {
		heading = mv.Devid
	}
	p := modulePage{
		Title:       heading + " · " + o.Title,
		StatusTitle: o.Title,
		Heading:     heading,
		Now:         fmtTime(now, o.Location),
		Back:        strings.Repeat("../", strings.Count(strings.TrimPrefix(ModulePath, "/"), "/")) + "status",
		Module:      mv,
	}
	if o.Refresh > 0 {
		p.RefreshSec = max(1, int(o.Refresh/time.Second))
	}
	p.Object, p.Session = moduleObjectOf(s, m.ObjectID, p.Back, now, o.Location)

	p.AlarmState, p.AlarmClass = "unknown", classUnknown
	if m.AlarmsKnown {
		p.AlarmState, p.AlarmClass = strconv.Itoa(m.Alarms), classOK
		if m.Alarms > 0 {
			p.AlarmClass = classAlarm
		}
	}
	for _, a := range m.ActiveAlarms {
		av := alarmView{Code: clean(strings.TrimSpace(a.Symbol+" "+a.Code), maxShown), Since: "—"}
		av.Name, av.Note = alarmName(namerOf(params), a.Code, a.Symbol)
		av.Title = alarmTitle(namerOf(params), a.Code, a.Symbol)
		if !a.Since.IsZero() {
			av.Since = fmtAge(a.Since, now, o.Location)
		}
		p.Alarms = append(p.Alarms, av)
	}
	if m.ActiveAlarmsKnown {
		p.AlarmState, p.AlarmClass = strconv.Itoa(len(p.Alarms)), classOK
		if len(p.Alarms) > 0 {
			p.AlarmClass = classAlarm
		}
	}

	var ps []Param
	loaded := false
	if params != nil {
		ps, loaded = params.ModuleParams(devid)
	}
	off := false
	if o, ok := params.(interface{ CatalogOff() bool }); ok {
		off = o.CatalogOff()
	}
	switch {
	case !loaded && off:
		p.CatalogState, p.CatalogClass = "off", classUnknown
		p.CatalogDetail = "the parameter catalog is switched off (--catalog.disable)"
		p.NoParams = "The parameter catalog is switched off (--catalog.disable), so the parameters have no names. " +
			"/metrics carries every register."
	case !loaded:
		p.CatalogState, p.CatalogClass = "unnamed", classUnknown
		p.CatalogDetail = "no parameter catalog is in use yet"
		p.NoParams = "No parameter catalog is in use, so the parameters have no names yet: it loads from the cloud's web app " +
			"shortly after the start, unless switched off (--catalog.disable). /metrics carries every register meanwhile."
	case len(ps) == 0:
		p.CatalogState, p.CatalogClass = "none described", classWarn
		p.CatalogDetail = "the catalog describes none of this module's parameters"
		p.NoParams = "The parameter catalog describes none of this module's parameters (its menu or permissions show none). " +
			"/metrics carries every register."
	default:
		p.CatalogState, p.CatalogClass = strconv.Itoa(len(ps))+" named", classOK
		p.CatalogDetail = strconv.Itoa(m.Params) + " registers stored"
	}
	p.Menus = groupByMenu(ps)
	p.ages(s, m, now, o.Location)
	p.history(m, ps, params, now, o.Location)
	return p, true
}

// history fills the page's change log and alarm history from the module's
// history records, the ones its metrics count: parameters by their
// catalog names, values as the app displays them where the catalog can,
// else raw; who made each change (shown here, never a label value).
func (p *modulePage) history(m *collector.ModuleState, ps []Param, params ParamSource, now time.Time, loc *time.Location) {
	h := m.History
	if h == nil {
		p.HistoryNote = "not read yet: the exporter reads the module's alarm history and activity log shortly after it starts watching it"
		return
	}
	p.HistoryKnown = true
	// One parameter per register where the catalog describes one only: a
	// register several parameters share names none of them (nil).
	byRegister := make(map[string]*Param, len(ps))
	bySymbol := make(map[string]*Param, len(ps))
	for i := range ps {
		reg := ps[i].Pool + "." + ps[i].Param
		if _, shared := byRegister[reg]; shared {
			byRegister[reg] = nil
		} else {
			byRegister[reg] = &ps[i]
		}
		bySymbol[ps[i].Symbol] = &ps[i]
	}
	shower, _ := params.(RawDisplayer)
	for _, c := range h.Changes[:min(len(h.Changes), maxHistoryShown)] {
		// Named by the parameter it was made through (the row's token),
		// else by the one parameter at its register, else by its register
		// plainly: never a guess among several.
		register := c.Register
		name := c.Symbol
		pr := bySymbol[c.Symbol]
		if pr == nil && c.Symbol == "" {
			pr = byRegister[register]
		}
		if pr != nil {
			name = pr.Name
			if register == "" {
				register = pr.Pool + "." + pr.Param
			}
		}
		if name == "" {
			name = register
		}
		show := func(raw string) string {
			if raw == "" {
				return "—"
			}
			if f, err := strconv.ParseFloat(raw, 64); err == nil && shower != nil && register != "" {
				if t, ok := shower.DisplayRaw(m.Devid, register, f); ok {
					return clean(t, maxShown)
				}
			}
			return clean(raw, maxShown)
		}
		cv := changeView{
			When: fmtAge(c.At, now, loc), Name: clean(orDash(name), maxShown), Register: clean(register, maxShown),
			Symbol: cleanTitle(c.Symbol), Old: show(c.Old), New: show(c.New),
			User: clean(orDash(c.User), maxShown), State: clean(orDash(c.State), maxShown), Class: classUnknown,
		}
		switch c.State {
		case "success":
			cv.Class = classOK
		case "":
		default:
			cv.Class = classBad
		}
		p.Changes = append(p.Changes, cv)
	}
	for _, a := range h.Alarms[:min(len(h.Alarms), maxHistoryShown)] {
		name, note := alarmName(namerOf(params), a.Code, a.Symbol)
		av := pastAlarmView{Name: name, Note: note, Code: clean(strings.TrimSpace(a.Symbol+" "+a.Code), maxShown),
			From: fmtTime(a.Start, loc), To: "active", Active: a.End.IsZero()}
		end := now
		if !av.Active {
			av.To, end = fmtTime(a.End, loc), a.End
		}
		av.Duration = fmtDuration(end.Sub(a.Start))
		if av.Active {
			av.Duration += " so far"
		}
		p.PastAlarms = append(p.PastAlarms, av)
	}
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

// moduleObjectOf names the module's object and the state of the session
// its values arrive through, as the object's section of /status shows it:
// the session while it is down, else live push while that is not healthy
// (a silent session delivers nothing either), else the session.
func moduleObjectOf(s collector.Snapshot, id int, status string, now time.Time, loc *time.Location) (moduleObject, card) {
	for _, obj := range s.Objects {
		if obj.ID != id {
			continue
		}
		mo := moduleObject{Name: objectName(obj), IDText: "object " + strconv.Itoa(id), Link: status + "#" + objectAnchor(id), Watched: true}
		var modules []collector.ModuleState
		for _, m := range s.Modules {
			if m.ObjectID == id {
				modules = append(modules, m)
			}
		}
		ov := objectSection(obj, modules, nil, now, loc)
		c := ov.Cards[cardSession]
		c.Label = "Session of " + mo.Name
		if pc := ov.Cards[cardPush]; c.Class == classOK && pc.Class != classOK {
			c = pc
			c.Label = "Live push of " + mo.Name
		}
		return mo, c
	}
	mo := moduleObject{Name: "object " + strconv.Itoa(id), IDText: "not watched", Link: status + "#" + otherAnchor}
	return mo, card{Label: "Cloud session", State: "NONE", Class: classUnknown, Detail: "the module's object is not watched"}
}

// ages gives every value its age, from when it last arrived, and marks the
// stale ones (store.Stale): all of an offline module's, and those older than
// store.StaleValueAfter while the object's session is down or its live push
// not healthy.
func (p *modulePage) ages(s collector.Snapshot, m *collector.ModuleState, now time.Time, loc *time.Location) {
	offline := m.OnlineKnown && !m.Online
	healthy := false
	for _, obj := range s.Objects {
		if obj.ID == m.ObjectID {
			healthy = obj.Session.Up && obj.Push.Known && obj.Push.Healthy
		}
	}
	stale := 0
	for i := range p.Menus {
		for j := range p.Menus[i].Params {
			pv := &p.Menus[i].Params[j]
			if pv.updated.IsZero() {
				continue
			}
			pv.Age = fmtDuration(now.Sub(pv.updated)) + " ago"
			if store.Stale(pv.updated, now, offline, healthy) {
				pv.Stale = true
				stale++
			}
		}
	}
	switch {
	case offline:
		p.StaleNote = "This module is offline: every value below is the last it sent, not current"
		if !m.LastUpdate.IsZero() {
			p.StaleNote += " (the newest arrived " + fmtAge(m.LastUpdate, now, loc) + ")"
		}
		p.StaleNote += "."
	case stale > 0:
		p.StaleNote = fmt.Sprintf("%s arrived over %s ago while the live stream of the module's object is not healthy: marked stale.",
			plural(stale, "value", "values"), fmtDuration(store.StaleValueAfter))
	}
}

// groupByMenu keeps the catalog's menu order: menus in order of their first
// parameter, parameters in order within each.
func groupByMenu(ps []Param) []menuView {
	var menus []menuView
	index := map[string]int{}
	for _, pr := range ps {
		i, ok := index[pr.Menu]
		if !ok {
			i = len(menus)
			index[pr.Menu] = i
			menus = append(menus, menuView{Title: menuTitle(pr.Menu)})
		}
		menus[i].Params = append(menus[i].Params, paramRow(pr))
	}
	return menus
}

// menuTitle shows a panel path as breadcrumbs.
func menuTitle(path string) string {
	if path == "" {
		return "Other parameters"
	}
	parts := strings.Split(path, "/")
	for i, s := range parts {
		parts[i] = clean(strings.TrimSpace(s), maxShown)
	}
	return strings.Join(parts, " › ")
}

func paramRow(pr Param) paramView {
	v := paramView{
		Name:     clean(pr.Name, maxShown),
		Symbol:   cleanTitle(pr.Symbol),
		Unit:     clean(pr.Unit, maxShown),
		Register: clean(pr.Pool+"."+pr.Param, maxShown),
		Value:    "—",
		Hidden:   pr.Hidden,
		updated:  pr.UpdatedAt,
	}
	if v.Name == "" {
		v.Name = clean(pr.Symbol, maxShown)
	}
	switch {
	case !pr.HasValue:
	case pr.Label != "":
		v.Value = clean(pr.Label, maxShown)
		v.Unit = ""
	case math.IsNaN(pr.Value) || math.IsInf(pr.Value, 0):
		// A computed value that is neither a number nor a label.
	default:
		v.Value = strconv.FormatFloat(pr.Value, 'f', -1, 64)
	}
	return v
}

// CatalogParams is the ParamSource of a running exporter: names, units,
// menus and display rules from the collector's catalog source, raw values
// from Values.
type CatalogParams struct {
	Catalog collector.CatalogSource
	// Values reads the raw stored values of one module.
	Values func(devid string) store.Reader
	// Times reads when each register of one module last received a value
	// (nil: ages unknown).
	Times func(devid string) func(pool, chanIdx string) (time.Time, bool)
}

// ModuleParams implements ParamSource.
func (c CatalogParams) ModuleParams(devid string) ([]Param, bool) {
	cs := c.state()
	if cs == nil || !cs.Loaded {
		return nil, false
	}
	mc := cs.Modules[devid]
	if mc == nil {
		return nil, true
	}
	read := c.Values(devid)
	var times func(pool, chanIdx string) (time.Time, bool)
	if c.Times != nil {
		times = c.Times(devid)
	}
	out := make([]Param, 0, len(mc.Params))
	for i := range mc.Params {
		d := &mc.Params[i]
		p := Param{Menu: d.Menu, Name: d.Name, Symbol: d.Symbol, Unit: d.Unit, Pool: d.Pool, Param: d.Param}
		if d.Display != nil {
			// A computed state may have a label and no number.
			var ok bool
			p.Value, p.Label, ok = d.Display(read)
			p.HasValue = ok || p.Label != ""
		} else {
			p.Value, p.HasValue = read(d.Pool, d.Param)
		}
		p.Hidden = d.Visible != nil && !d.Visible(read)
		if times != nil && p.HasValue {
			p.UpdatedAt, _ = times(d.Pool, d.Param)
		}
		out = append(out, p)
	}
	return out, true
}

// DisplayRaw implements RawDisplayer: raw in the register, the module's
// other registers (a unit register, say) as they are now.
func (c CatalogParams) DisplayRaw(devid, register string, raw float64) (string, bool) {
	cs := c.state()
	if cs == nil || !cs.Loaded || cs.Modules[devid] == nil {
		return "", false
	}
	read := c.Values(devid)
	for i := range cs.Modules[devid].Params {
		d := &cs.Modules[devid].Params[i]
		if d.Pool+"."+d.Param != register {
			continue
		}
		with := func(pool, param string) (float64, bool) {
			if pool == d.Pool && param == d.Param {
				return raw, true
			}
			return read(pool, param)
		}
		if d.Display == nil {
			return strings.TrimSpace(strconv.FormatFloat(raw, 'f', -1, 64) + " " + d.Unit), true
		}
		v, label, ok := d.Display(with)
		switch {
		case label != "":
			return label, true
		case !ok || math.IsNaN(v) || math.IsInf(v, 0):
			return "", false
		}
		return strings.TrimSpace(strconv.FormatFloat(v, 'f', -1, 64) + " " + d.Unit), true
	}
	return "", false
}

// CatalogOff reports whether no catalog is wired at all (--catalog.disable),
// as opposed to one not loaded yet.
func (c CatalogParams) CatalogOff() bool { return c.Catalog == nil }

// Language is the catalog's language, "" while no catalog is in use: the
// language an alarm without a name has no translation in.
func (c CatalogParams) Language() string {
	if cs := c.state(); cs != nil && cs.Loaded {
		return cs.Language
	}
	return ""
}

// AlarmName implements ParamSource.
func (c CatalogParams) AlarmName(code, symbol string) (string, bool) {
	cs := c.state()
	if cs == nil || cs.AlarmName == nil {
		return "", false
	}
	return cs.AlarmName(code, symbol)
}

func (c CatalogParams) state() *collector.CatalogState {
	if c.Catalog == nil {
		return nil
	}
	return c.Catalog.Catalog()
}
