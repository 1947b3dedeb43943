package catalog

import (
	"strings"
)

// Role says what a register is for where a rule, an alert or a dashboard
// needs one particular register of a module whatever its address, symbol or
// translated name: the fuel level, the fuel burned, the operating hours, the
// ignitions. "" for every other register.
type Role string

// The roles. Their values are label values of bragerone_parameter_role and
// of the overrides file's role key; alert rules and dashboards select on
// them.
const (
	RoleNone           Role = ""
	RoleFuelLevel      Role = "fuel_level"      // fuel in the hopper, %
	RoleFuelBurned     Role = "fuel_burned"     // fuel burned since the count began, kg; only grows
	RoleOperatingHours Role = "operating_hours" // hours the burner or boiler worked; only grows
	RoleIgnitions      Role = "ignitions"       // ignitions counted; only grows
)

// Roles lists every role in a fixed order.
var Roles = []Role{RoleFuelLevel, RoleFuelBurned, RoleOperatingHours, RoleIgnitions}

// ParseRole reads a role name of the overrides file; "none" is RoleNone
// (an override that takes a wrongly identified role away).
func ParseRole(s string) (Role, bool) {
	if s == "none" {
		return RoleNone, true
	}
	for _, r := range Roles {
		if string(r) == s {
			return r, true
		}
	}
	return RoleNone, false
}

// Counts says whether the role's register only grows (a counter that
// rate() and increase() are for).
func (r Role) Counts() bool {
	return r == RoleFuelBurned || r == RoleOperatingHours || r == RoleIgnitions
}

// roleFacts are the facts about a parameter role identification reads.
// None of them depends on the display language: the symbol and the name's
// i18n key are identifiers of the web app's code (the assets spell them in
// English or in Polish without diacritics, as the alarm codes are:
// ERROR_BRAK_PALIWA), the icon is a member of the app's icon enum, and the
// unit symbols compared are the SI spellings every translation keeps.
type roleFacts struct {
	symbol   string // "PARAM_P4_9"
	nameKey  string // the last segment of the name's i18n token: "FUEL_LEVEL"
	icon     string // "FUEL"
	unit     string // as displayed at load time: "%", "kg", "h", ""
	enum     bool   // the value is an enum state
	writable bool   // a setting, never a measurement or a counter
}

// Words of the identifiers, upper case, matched as word prefixes.
var (
	fuelWords     = []string{"FUEL", "PALIW", "PELLET", "PELET", "OPAL"}
	levelWords    = []string{"LEVEL", "POZIOM", "STAN"}
	burnedWords   = []string{"BURN", "CONSUM", "USED", "ZUZYC", "ZUZYT", "SPALON"}
	hourWords     = []string{"HOUR", "GODZIN", "MOTOGODZIN", "OPERATING", "RUNTIME", "WORKTIME"}
	ignitionWords = []string{"IGNIT", "ROZPAL", "ZAPLON", "ZAPAL"}
)

// Unit spellings by dimension.
var (
	percentUnits = map[string]bool{"%": true}
	massUnits    = map[string]bool{"kg": true, "t": true}
	hourUnits    = map[string]bool{"h": true}
)

// identifyRole decides a parameter's role from its facts. Settings are
// never a role (a fuel-level alarm threshold in % is a setting). The
// identifiers must name the quantity and the unit must fit it: a fuel word
// (or the FUEL icon) with % is the level; a fuel or a burned word with a
// mass is the fuel burned (a boiler burns nothing else by the kilogram);
// an hours word with hours is the operating hours; an ignition word with
// no unit and no enum is the ignitions. A fuel level named by
// its key (FUEL_LEVEL) is recognised before the unit register was read.
func identifyRole(f roleFacts) Role {
	if f.writable {
		return RoleNone
	}
	words := identifierWords(f.symbol, f.nameKey)
	fuel := hasWord(words, fuelWords) || strings.EqualFold(f.icon, "FUEL")
	switch {
	case fuel && percentUnits[f.unit]:
		return RoleFuelLevel
	case fuel && f.unit == "" && hasWord(words, fuelWords) && hasWord(words, levelWords):
		return RoleFuelLevel
	case (fuel || hasWord(words, burnedWords)) && massUnits[f.unit] && !f.enum:
		return RoleFuelBurned
	case hourUnits[f.unit] && hasWord(words, hourWords) && !f.enum:
		return RoleOperatingHours
	case f.unit == "" && !f.enum && hasWord(words, ignitionWords):
		return RoleIgnitions
	}
	return RoleNone
}

// identifierWords splits identifiers into upper-case words at every
// character that is not a letter or a digit.
func identifierWords(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, strings.FieldsFunc(strings.ToUpper(id), func(r rune) bool {
			return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		})...)
	}
	return out
}

func hasWord(words, prefixes []string) bool {
	for _, w := range words {
		for _, p := range prefixes {
			if strings.HasPrefix(w, p) {
				return true
			}
		}
	}
	return false
}

// nameKey is the last dotted segment of an i18n token.
func nameKey(token string) string {
	if i := strings.LastIndexByte(token, '.'); i >= 0 {
		return token[i+1:]
	}
	return token
}

// identify sets p.Role from what the catalog knows of p; an override's
// role wins.
func (p *Param) identify() {
	if p.override != nil && p.override.role != nil {
		p.Role = *p.override.role
		return
	}
	f := roleFacts{symbol: p.Symbol, unit: p.Unit, enum: len(p.Enum) > 0, writable: p.Writable}
	if p.def != nil {
		f.nameKey = nameKey(p.def.nameToken)
		if p.def.raw != nil {
			f.icon, _ = p.def.raw.Value("icon").(string)
		}
	}
	p.Role = identifyRole(f)
}

// ByRole returns the module's parameters of a role, in menu order.
func (m *Module) ByRole(r Role) []*Param {
	var out []*Param
	for _, p := range m.params {
		if r != RoleNone && p.Role == r {
			out = append(out, p)
		}
	}
	return out
}
