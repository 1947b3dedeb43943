package webapp

import (
	"strconv"
	"sync"
)

// Profile is a kind of module the web app describes: the menu its row
// selects, the permissions its row carries, the registers it reports and its
// active alarms. Module i of a simulated cloud is Profiles()[i % len].
type Profile struct {
	Key         string // "boiler-installer", "boiler-user", "valve"
	DeviceMenu  int
	Permissions []string
	Registers   []Register // the described symbols' registers, in prime order
	Alarms      []Alarm    // active alarms
}

// Register is the register family of one described symbol as a module of a
// profile reports it, and how its simulated value starts and moves.
type Register struct {
	Symbol  string // "PARAM_P4_7"
	Pool    string // "P4"
	Index   int
	Address string // the primary register: "P4.v7"; a status symbol's status word "P5.s0"
	Status  bool   // the value is the status word P<pool>.s<index>
	Wide    bool   // a 32-bit value over v<index> (low word, signed 16-bit) and v<index+1> (high word)
	Setting bool   // writable: an s channel whose bit 7 is the INVISIBLE flag
	Hidden  bool   // the INVISIBLE flag is set: the app hides it
	UChan   bool   // the family has a u channel, carrying Unit
	Unit    int    // unit code (in the u channel, or the definition's when !UChan)

	Min, Max       int     // raw range, served in the n and x channels (not for status words or wide values)
	InitLo, InitHi float64 // the initial raw value is drawn from this range
	Float          bool    // the raw value is a float with one decimal
	Drift          Drift
	Fixed          int  // the value, when IsFixed: it does not drift
	IsFixed        bool // (a status word or a wide value without one is 0)

	// Labelled are the raw values an enum unit labels; nil when the unit is
	// not an enum. Words are the status words the rules of a rule-valued
	// status symbol match (STATUS_P5_0's boiler states); nil for others.
	Labelled []int
	Words    []int
}

// Drift says how a described value moves in the simulated world.
type Drift uint8

// Drifts.
const (
	DriftNone    Drift = iota
	DriftTemp          // a temperature, by tenths
	DriftPercent       // a percentage, by whole points
	DriftWide          // a 32-bit counter over two words, climbing
	// DriftFuel is a hopper's fuel level, % by whole points: it falls, and
	// is refilled to 100 when nearly empty; the module's fuel-burned
	// counter (a DriftWide value) climbs with it instead of on its own.
	DriftFuel
)

// StatusInvisible is the INVISIBLE flag in the status word of a setting
// (bit 7 of P6.s<n>, per the settings' definitions).
const StatusInvisible = 0x80

// Alarm is one alarm type the web app may or may not name.
type Alarm struct {
	ID   int    // alarm row "id", the alarm type
	Code string // alarm row "name", the alarm's symbol
	// EN and PL are its names as the app shows them in each language: PL
	// is the English name where the Polish translations have none (the
	// app's fallbackLocale); "" when the web app does not know the alarm.
	EN, PL string
	// Where says where the translations file the name, in words.
	Where string
}

// AlarmByCode is the alarm type of code; the zero Alarm when unknown.
func AlarmByCode(code string) Alarm { return alarmByCode(code).export() }

func (a simAlarm) export() Alarm {
	if a.code == "" {
		return Alarm{}
	}
	where := map[alarmPlace]string{
		alarmInNamespace: "alarms." + a.code,
		alarmByToken:     "alarms." + a.code + " → app.one.alarms." + strconv.Itoa(a.id),
		alarmInApp:       "app.alarms." + strconv.Itoa(a.id),
	}[a.place]
	if a.pl == "" && a.en != "" {
		where += ", English only"
	}
	return Alarm{ID: a.id, Code: a.code, EN: a.label("en"), PL: a.label("pl"), Where: where}
}

// Languages are the languages the web app has translations for.
func Languages() []string { return append([]string(nil), simLanguages...) }

var (
	profilesOnce sync.Once
	profiles     []*Profile
)

// Profiles lists the kinds of module, shared and never changed.
func Profiles() []*Profile {
	profilesOnce.Do(func() {
		for _, p := range simProfiles {
			out := &Profile{Key: p.key, DeviceMenu: p.deviceMenu, Permissions: p.permissions}
			for _, tok := range p.symbols {
				out.Registers = append(out.Registers, register(symbolByToken(tok), p))
			}
			for _, code := range p.alarms {
				out.Alarms = append(out.Alarms, AlarmByCode(code))
			}
			profiles = append(profiles, out)
		}
	})
	return profiles
}

func register(s *simSymbol, p *simProfile) Register {
	r := Register{
		Symbol: s.token, Pool: s.pool, Index: s.index, Address: s.address(),
		Status: s.status, Wide: s.wide, Setting: s.setting, Hidden: s.hidden, UChan: !s.noUChan, Unit: s.unit,
		Min: s.lo, Max: s.hi, InitLo: s.initLo, InitHi: s.initHi, Float: s.float, Drift: s.drift,
	}
	r.Fixed, r.IsFixed = p.fixed[s.token]
	if u := unitByCode(s.unit); u != nil {
		for _, o := range u.options {
			if o.raw >= 0 {
				r.Labelled = append(r.Labelled, o.raw)
			}
		}
		if u.code == unitBoilerSt {
			r.Words = []int{boilerStandby, boilerFiringUp, boilerWork, boilerStop, boilerAlarm}
		}
	}
	return r
}

// HighWord is the address of a wide value's high word: "P5.v41".
func (r Register) HighWord() string { return r.Pool + ".v" + strconv.Itoa(r.Index+1) }

// AlarmByID returns the alarm with the given type code (the rows' id); the
// zero Alarm when the catalogue has none.
func AlarmByID(id int) Alarm {
	for _, a := range simAlarms {
		if a.id == id {
			return a.export()
		}
	}
	return Alarm{}
}
