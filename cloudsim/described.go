package cloudsim

import (
	"math"
	"strconv"
	"strings"
)

// statusInvisible is the INVISIBLE flag in the status word of a setting
// (bit 7 of P6.s<n>, per the settings' definitions).
const statusInvisible = 0x80

// addDescribedParams adds the registers of the module's described symbols
// (its profile) ahead of the anonymous ones, so a small ParamsPerModule
// still carries named parameters. Values start inside each definition's
// range; enums on labelled values. It returns the families ("P4.7") it
// used, which the anonymous filler skips.
func (c *Cloud) addDescribedParams(m *module, add func(*param) bool, ts func() int64) map[string]bool {
	used := map[string]bool{}
	for _, tok := range m.profile.symbols {
		s := symbolByToken(tok)
		idx := strconv.Itoa(s.index)
		used[s.pool+"."+idx] = true
		fixed, isFixed := m.profile.fixed[tok]
		switch {
		case s.status:
			add(&param{pool: s.pool, key: "s" + idx, value: fixed, form: formBare})
		case s.wide:
			used[s.pool+"."+strconv.Itoa(s.index+1)] = true
			if c.opts.ParamsPerModule-len(m.params) < 2 {
				continue
			}
			lo, hi := splitWide(fixed)
			hiP := &param{pool: s.pool, key: "v" + strconv.Itoa(s.index+1), value: hi, form: formObject, storable: true, updatedAt: ts()}
			add(&param{pool: s.pool, key: "v" + idx, value: lo, form: formObject, storable: true, updatedAt: ts(), drift: driftWide, hi: hiP})
			add(hiP)
		default:
			var v any
			drift := s.drift
			switch {
			case isFixed:
				v, drift = fixed, driftNone
			case s.float:
				v = round1(s.initLo + c.rng.Float64()*(s.initHi-s.initLo))
			default:
				v = int(s.initLo) + c.rng.IntN(int(s.initHi-s.initLo)+1)
			}
			add(&param{pool: s.pool, key: "v" + idx, value: v, form: formObject, storable: true, updatedAt: ts(),
				drift: drift, min: float64(s.lo), max: float64(s.hi)})
			if !s.noUChan {
				add(&param{pool: s.pool, key: "u" + idx, value: s.unit, form: formObject})
			}
			add(&param{pool: s.pool, key: "n" + idx, value: s.lo, form: formBare})
			add(&param{pool: s.pool, key: "x" + idx, value: s.hi, form: formBare})
			if s.setting {
				word := 0
				if s.hidden {
					word = statusInvisible
				}
				add(&param{pool: s.pool, key: "s" + idx, value: word, form: formBare})
			}
		}
	}
	return used
}

// splitWide spells a 32-bit counter as the cloud does: the low word as a
// signed 16-bit number, then the high word.
func splitWide(total int) (lo, hi int) {
	return int(int16(uint16(total & 0xffff))), total >> 16
}

// wideTotal is the inverse of splitWide.
func wideTotal(lo, hi any) int {
	return toInt(lo)&0xffff + toInt(hi)<<16
}

func toInt(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case float64:
		return int(math.Round(x))
	}
	return 0
}

// driftWideLocked advances a two-word counter and records the words that
// changed in the pool's delta.
func (c *Cloud) driftWideLocked(p *param, delta map[string]any, ts int64) {
	lo, hi := splitWide(wideTotal(p.value, p.hi.value) + 1 + c.rng.IntN(3))
	p.value, p.updatedAt = lo, ts
	delta[p.key] = map[string]any{"value": lo, "updatedAt": ts}
	if toInt(p.hi.value) != hi {
		p.hi.value, p.hi.updatedAt = hi, ts
		delta[p.hi.key] = map[string]any{"value": hi, "updatedAt": ts}
	}
}

// DescribedParam is what the simulated web app's assets say about one
// register of a module, as that module's own menu and permissions show it:
// the expectation an asset catalog built from them must meet.
type DescribedParam struct {
	Symbol  string   // "PARAM_P4_7"
	Address string   // primary register: "P4.v7"; a STATUS_* symbol's status word "P5.s0"
	Parts   []string // a multi-register value's words, low first ("P5.v40","P5.v41"); nil when single
	Name    string   // label in the requested language
	Unit    string   // unit as displayed ("°C", "kW", "%"); "" for none and for enums
	Menu    []string // panel path in the requested language, e.g. ["Service parameters","Burner"]
	Section string   // menu section first listing it: read, write, status or special
	// Enum labels raw register values (enum units); States labels the
	// computed states of a rule-valued STATUS_* symbol ("ALARM" → "Alarm").
	Enum   map[int]string
	States map[string]string
	// RawMin and RawMax are the range the definition points at (its n and
	// x channels), in raw units; HasRange is false for status words and
	// counters.
	RawMin, RawMax int
	HasRange       bool
	Hidden         bool // the INVISIBLE bit of its status word is set: the app hides it
	unit           *unitDesc
}

// Display is the value the app shows for raw: the unit's transform applied.
// ok is false where the shown value is not a number (time of day, computed
// states).
func (p DescribedParam) Display(raw float64) (value float64, ok bool) {
	switch {
	case len(p.States) > 0:
		return 0, false
	case p.unit == nil || p.unit.display == nil:
		return raw, p.unit == nil || p.unit.code != unitTimeOfDay
	}
	return p.unit.display(raw), true
}

// Described lists what the assets describe for one module in one language
// ("en" or "pl"), in menu order: the symbols its deviceMenu's menu shows
// under its permissions, with their registers, labels, units and panels.
// Nil for an unknown module or language.
func (c *Cloud) Described(devid, lang string) []DescribedParam {
	c.mu.Lock()
	m := c.byDevid[devid]
	c.mu.Unlock()
	if m == nil || (lang != "en" && lang != "pl") {
		return nil
	}
	return describeProfile(m.profile, lang)
}

func describeProfile(p *simProfile, lang string) []DescribedParam {
	menu := menuFor(p.deviceMenu)
	tokens, routes := visibleTokens(menu, p.permissions)
	ns := translations(lang)
	lookup := func(token string) string {
		for hop := 0; hop < 5; hop++ {
			space, path, _ := strings.Cut(token, ".")
			cur := any(ns[space])
			for _, part := range strings.Split(path, ".") {
				t, _ := cur.(i18nTree)
				cur = t[part]
			}
			s, ok := cur.(string)
			if !ok {
				return token
			}
			if !strings.HasPrefix(s, "app.") {
				return s
			}
			token = s
		}
		return token
	}
	var out []DescribedParam
	for _, tok := range tokens {
		s := symbolByToken(tok)
		u := unitByCode(s.unit)
		d := DescribedParam{Symbol: tok, Address: s.address(), Name: lookup(s.labelToken()), unit: u, Hidden: s.hidden,
			RawMin: s.lo, RawMax: s.hi, HasRange: !s.status && !s.wide}
		if s.wide {
			d.Parts = []string{s.address(), s.pool + ".v" + strconv.Itoa(s.index+1)}
		}
		switch {
		case u == nil:
			d.Unit = lookup("units." + strconv.Itoa(s.unit))
		case u.text != "":
			d.Unit = strings.TrimSpace(lookup(u.text))
		}
		for _, o := range u.optionsOrNone() {
			if o.raw >= 0 {
				if d.Enum == nil {
					d.Enum = map[int]string{}
				}
				d.Enum[o.raw] = lookup(o.token)
			} else if s.status {
				if d.States == nil {
					d.States = map[string]string{}
				}
				d.States[o.state] = lookup(o.token)
			}
		}
		for _, r := range routes[tok] {
			d.Menu = append(d.Menu, routeTitle(r, lang))
		}
		d.Section = sectionOf(routes[tok][len(routes[tok])-1], tok)
		out = append(out, d)
	}
	return out
}

func (u *unitDesc) optionsOrNone() []unitOption {
	if u == nil {
		return nil
	}
	return u.options
}

func sectionOf(r *menuRoute, token string) string {
	for _, en := range r.entries {
		if en.token == token {
			return en.section
		}
	}
	return "write" // generated by ['map'] into the write section
}

// DescribedAlarm is one active alarm of a module with its label.
type DescribedAlarm struct {
	ID   int    // alarm row "id", the alarm type
	Code string // alarm row "name", the key of the label in the "alarms" namespace
	Name string // label in the requested language; "" when the assets have none
}

// DescribedAlarms lists a module's active alarms as the assets name them.
func (c *Cloud) DescribedAlarms(devid, lang string) []DescribedAlarm {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byDevid[devid]
	if m == nil {
		return nil
	}
	var out []DescribedAlarm
	for _, row := range m.alarms {
		code, _ := row["name"].(string)
		a := alarmByCode(code)
		name := a.en
		if lang == "pl" {
			name = a.pl
		}
		out = append(out, DescribedAlarm{ID: a.id, Code: code, Name: name})
	}
	return out
}
