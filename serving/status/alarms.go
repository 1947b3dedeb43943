package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

// AlarmNamer translates a boiler alarm (its code and the cloud's symbol)
// where the parameter catalog has a name for it. CatalogParams is one.
type AlarmNamer interface {
	AlarmName(code, symbol string) (string, bool)
}

// headlineAlarms bounds how many alarms a card names.
const headlineAlarms = 3

// activeAlarm is one active boiler alarm of a module, or (Unnamed) the
// alarms a module counts before their list was read.
type activeAlarm struct {
	Code, Symbol string
	Since        time.Time // zero when unknown
	Module       string    // the module's name, else its devid
	Link         string    // to the module's page
	Object       string    // the object's name; "" in the Other section
	Unnamed      int       // > 0: this many alarms whose names are not read yet
}

// moduleAlarms are the active alarms of one module: its alarm list once
// read, else the count of the cloud's alarm quantity. known is false while
// neither was received.
func moduleAlarms(m collector.ModuleState) (out []activeAlarm, known bool) {
	name := strings.TrimSpace(m.Name)
	if name == "" {
		name = m.Devid
	}
	switch {
	case m.ActiveAlarmsKnown:
		for _, a := range m.ActiveAlarms {
			out = append(out, activeAlarm{Code: a.Code, Symbol: a.Symbol, Since: a.Since, Module: name, Link: moduleLink(m.Devid)})
		}
		return out, true
	case m.AlarmsKnown:
		if m.Alarms > 0 {
			out = append(out, activeAlarm{Module: name, Link: moduleLink(m.Devid), Unnamed: m.Alarms})
		}
		return out, true
	}
	return nil, false
}

// count is how many alarms the entries stand for.
func alarmCount(as []activeAlarm) int {
	n := 0
	for _, a := range as {
		n += max(1, a.Unnamed)
	}
	return n
}

// sortAlarms puts the oldest first (an unknown start last), then by
// module and code.
func sortAlarms(as []activeAlarm) {
	slices.SortStableFunc(as, func(a, b activeAlarm) int {
		if a.Since.IsZero() != b.Since.IsZero() {
			if a.Since.IsZero() {
				return 1
			}
			return -1
		}
		return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.Object, b.Object), cmp.Compare(a.Module, b.Module), cmp.Compare(a.Code, b.Code))
	})
}

// alarmTitle is how a page names an alarm: its translation where the
// catalog has one; else the cloud's symbol (or the code) saying that it is
// untranslated and in which language: "ERROR_MODUL_ROZSZERZEN (code 91, no
// translation in en)".
func alarmTitle(n AlarmNamer, code, symbol string) string {
	name, note := alarmName(n, code, symbol)
	if note == "" {
		return name
	}
	return clean(name+" ("+note+")", maxShown*2)
}

// alarmName is an alarm's name and, when it is not a translation, the note
// that says so ("code 91, no translation in en"); the name is what the
// exporter's alarm series call it (translation, else symbol, else code).
func alarmName(n AlarmNamer, code, symbol string) (name, note string) {
	if n != nil {
		if t, ok := n.AlarmName(code, symbol); ok && strings.TrimSpace(t) != "" {
			return clean(t, maxShown), ""
		}
	}
	language := ""
	if l, ok := n.(interface{ Language() string }); ok {
		language = l.Language()
	}
	switch {
	case symbol != "" && code != "":
		return clean(symbol, maxShown), "code " + clean(code, maxShown) + ", " + collector.Untranslated(language)
	case symbol != "":
		return clean(symbol, maxShown), collector.Untranslated(language)
	case code != "":
		return "alarm code " + clean(code, maxShown), collector.Untranslated(language)
	}
	return "alarm", collector.Untranslated(language)
}

// describe words one entry for a card: "Out of fuel · Boiler room 1 ·
// Home · since 2h05m".
func (a activeAlarm) describe(n AlarmNamer, now time.Time, withObject bool) string {
	var what string
	if a.Unnamed > 0 {
		what = plural(a.Unnamed, "alarm", "alarms") + " (names not read yet)"
	} else {
		what = alarmTitle(n, a.Code, a.Symbol)
	}
	parts := []string{what, clean(a.Module, maxShown)}
	if withObject && a.Object != "" {
		parts = append(parts, a.Object)
	}
	if !a.Since.IsZero() {
		parts = append(parts, "since "+fmtDuration(now.Sub(a.Since)))
	}
	return strings.Join(parts, " · ")
}

// alarmsCard is the card of a set of alarms: how many, the first few by
// name, module (and object) and since when.
func alarmsCard(label string, as []activeAlarm, known bool, n AlarmNamer, now time.Time, withObject bool) card {
	c := card{Label: label}
	count := alarmCount(as)
	switch {
	case count > 0:
		c.State, c.Class = plural(count, "ACTIVE", "ACTIVE"), classAlarm
	case known:
		c.State, c.Class = "NONE", classOK
		return c
	default:
		c.State, c.Class, c.Detail = "UNKNOWN", classUnknown, "not read yet"
		return c
	}
	var named []string
	for _, a := range as[:min(len(as), headlineAlarms)] {
		named = append(named, a.describe(n, now, withObject))
	}
	c.Detail = strings.Join(named, "; ")
	if more := len(as) - headlineAlarms; more > 0 {
		c.Detail += fmt.Sprintf("; and %d more", more)
	}
	return c
}
