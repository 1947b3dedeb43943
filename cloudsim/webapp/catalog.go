package webapp

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// This file holds the simulated web app's parameter catalogue: unit
// descriptors, the symbols and the registers behind them, device menus with
// their permission gates, translations and alarm names. The asset files
// (minified.go) and the simulated modules' registers (Profiles, which
// cloudsim's world reports) are both built from these tables, so what the
// assets say always matches what the modules report.

// Unit codes of the index's unit descriptor table: the value a parameter's
// u channel (or its definition's scalar unit) carries. They are a different
// numbering space from the keys of the units translation namespace.
const (
	unitNone      = 0x0    // text units.0, a blank
	unitCelsius   = 0x1    // text units.1, °C
	unitPercent   = 0x2    // text units.5, %
	unitKilogram  = 0x3    // text units.9, kg
	unitSecond    = 0x4    // text units.13, s
	unitSeason    = 0x8    // enum units.18.*
	unitOnOff     = 0x9    // enum units.17.*
	unitMinutesX6 = 0xa    // ×6, text units.12 (min)
	unitValveMode = 0xb    // enum units.19.*
	unitOffset127 = 0x2f   // −127, text units.1 (°C)
	unitTenthKW   = 0x31   // ×0.1 to one decimal, text units.31 (kW)
	unitHalfC     = 0x32   // ×0.5 to one decimal, text units.1 (°C)
	unitCurve     = 0x33   // (raw−10)×0.1 to one decimal, text units.0
	unitBar       = 0x34   // ÷10, text units.33 (bar)
	unitTimeOfDay = 0x42   // 66: 0 = off, n = (n−1)×10 minutes after midnight
	unitDiode     = 0x270c // 9996: enum of computed on/off states
	unitBoilerSt  = 0x270e // 9998: enum of computed boiler states
	// unitBarePct is deliberately absent from the table: a consumer
	// synthesises {text: "units.5"} for it, which is "%".
	unitBarePct = 5
)

// unitOption is one enum entry of a unit descriptor.
type unitOption struct {
	key   string // JavaScript key text: "0x1", "[kn.ON]", "\"BoilerState['STOP']\""
	raw   int    // register value it labels; -1 for options keyed by a computed state name
	state string // computed state name for raw == -1 ("ON", "STOP")
	token string // i18n token of the label
}

// unitDesc is one entry of the index's unit descriptor table.
type unitDesc struct {
	code    int
	text    string // i18n token of the displayed unit; "" for enums
	value   string // raw → display transform body; %[1]s is the parameter name
	prepare string // display → raw transform body
	options []unitOption
	colors  bool                      // carries a (ignored) colour table
	display func(raw float64) float64 // the transform in Go; nil = identity
	note    string                    // the transform in words (documentation)
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

var simUnits = []*unitDesc{
	{code: unitNone, text: "units.0"},
	{code: unitCelsius, text: "units.1"},
	{code: unitPercent, text: "units.5"},
	{code: unitKilogram, text: "units.9"},
	{code: unitSecond, text: "units.13"},
	{code: unitSeason, options: []unitOption{
		{key: "0x0", raw: 0, token: "units.18.0"}, {key: "0x1", raw: 1, token: "units.18.1"},
		{key: "0x2", raw: 2, token: "units.18.2"}, {key: "0x3", raw: 3, token: "units.18.3"}}},
	{code: unitOnOff, options: []unitOption{
		{key: "0x0", raw: 0, token: "units.17.0"}, {key: "0x1", raw: 1, token: "units.17.1"}}},
	{code: unitMinutesX6, note: "raw × 6", text: "units.12", value: "%[1]s*0x6", prepare: "%[1]s/0x6",
		display: func(r float64) float64 { return r * 6 }},
	{code: unitValveMode, options: []unitOption{
		{key: "'0'", raw: 0, token: "units.19.0"}, {key: "'1'", raw: 1, token: "units.19.1"},
		{key: "'2'", raw: 2, token: "units.19.2"}, {key: "'3'", raw: 3, token: "units.19.3"}}},
	{code: unitOffset127, note: "raw − 127", text: "units.1", value: "%[1]s-0x7f", prepare: "%[1]s+0x7f",
		display: func(r float64) float64 { return r - 127 }},
	{code: unitTenthKW, note: "raw × 0.1, one decimal", text: "units.31", value: "Number(%[1]s*0.1)['toFixed'](0x1)", prepare: "%[1]s/0.1",
		display: func(r float64) float64 { return round1(r * 0.1) }},
	{code: unitHalfC, note: "raw × 0.5, one decimal", text: "units.1", value: "Number((%[1]s*.5)['toFixed'](0x1))", prepare: "%[1]s/.5",
		display: func(r float64) float64 { return round1(r * 0.5) }},
	{code: unitCurve, note: "(raw − 10) × 0.1, one decimal", text: "units.0", value: "Number(((%[1]s-0xa)*0.1)['toFixed'](0x1))", prepare: "%[1]s/0.1+0xa",
		display: func(r float64) float64 { return round1((r - 10) * 0.1) }},
	{code: unitBar, note: "raw ÷ 10", text: "units.33", value: "%[1]s/0xa", prepare: "%[1]s*0xa",
		display: func(r float64) float64 { return r / 10 }},
	{code: unitTimeOfDay, note: "time of day: 0 off, n → (n − 1) × 10 min", text: "units.0",
		value: "{if(%[1]s===0x0)return'units.202.0';const _0x2b7e=(%[1]s-0x1)*0xa;" +
			"return String(Math['floor'](_0x2b7e/0x3c))['padStart'](0x2,'0')+':'+String(_0x2b7e%%0x3c)['padStart'](0x2,'0');}",
		prepare: "{if(%[1]s==='units.202.0')return 0x0;const _0x4c1d=%[1]s['split'](':');return Number(_0x4c1d[0x0])*0x6+Math['floor'](Number(_0x4c1d[0x1])/0xa)+0x1;}"},
	{code: unitDiode, colors: true, options: []unitOption{
		{key: "[kn.ON]", raw: -1, state: "ON", token: "app.one.diodeState.on"},
		{key: "[kn.OFF]", raw: -1, state: "OFF", token: "app.one.diodeState.off"}}},
	{code: unitBoilerSt, options: []unitOption{
		{key: `"BoilerState['STOP']"`, raw: -1, state: "STOP", token: "app.one.burnerState.0"},
		{key: `"BoilerState['WORK']"`, raw: -1, state: "WORK", token: "app.one.burnerState.1"},
		{key: `"BoilerState['FIRING_UP']"`, raw: -1, state: "FIRING_UP", token: "app.one.burnerState.2"},
		{key: `"BoilerState['ALARM']"`, raw: -1, state: "ALARM", token: "app.one.burnerState.3"},
		{key: `"BoilerState['STANDBY']"`, raw: -1, state: "STANDBY", token: "app.one.burnerState.4"}}},
}

// unitNote says where a symbol's unit code sits and what it does, in words.
func unitNote(s *simSymbol) string {
	where := "u channel"
	if s.noUChan {
		where = "definition unit"
	}
	u := unitByCode(s.unit)
	switch {
	case u == nil:
		return fmt.Sprintf("%s %#x, not in the unit table (text units.%d)", where, s.unit, s.unit)
	case u.note != "":
		return fmt.Sprintf("%s %#x: %s", where, s.unit, u.note)
	case len(u.options) > 0 && s.status:
		return fmt.Sprintf("%s %#x: computed state", where, s.unit)
	case len(u.options) > 0:
		return fmt.Sprintf("%s %#x: enum", where, s.unit)
	}
	return fmt.Sprintf("%s %#x", where, s.unit)
}

func unitByCode(code int) *unitDesc {
	for _, u := range simUnits {
		if u.code == code {
			return u
		}
	}
	return nil
}

// defForm says where and how a symbol's definition is written.
type defForm uint8

const (
	defP4              defForm = iota // index: pool-4 measurement builder
	defP6                             // index: pool-6 setting builder (writable, INVISIBLE bit 7 of P6.s<n>)
	defClassic                        // index: builder of classic PARAM_<n> settings in pool 6
	defDiode                          // index: STATUS_P5_<n> on/off builder, bit 0 of P5.s<n>
	defBoilerState                    // index: STATUS_P5_0 written out as a rule list over bits of P5.s0
	defStatusElsewhere                // index: a STATUS_P5_<n> written out with a value selector naming another register (reads)
	defChunkDefault                   // own chunk: export default {…}
	defChunkNamed                     // own chunk: const x={…}; export{x as default}
	defChunkTable                     // own chunk: {TOKEN:{…}} bound to a name; export default name
)

func (f defForm) inChunk() bool { return f >= defChunkDefault }

// simSymbol is one parameter symbol: its definition in the assets and the
// register family it describes.
type simSymbol struct {
	token string // "PARAM_P4_7"
	pool  string // "P4"
	index int
	form  defForm
	id    int    // the web app's internal id
	icon  string // member of the icon enum
	comp  string // useComponent
	name  string // i18n token of the label when not "parameters.<token>"
	chain string // parameters.<token> holds this i18n token instead of the label

	unit    int  // unit code: in the u channel, or the definition's scalar unit when noUChan
	noUChan bool // the family has no u channel; the definition carries a scalar unit
	status  bool // the value is the status word P<pool>.s<index> (STATUS_* symbols)
	// reads is the register a defStatusElsewhere definition's value
	// selector names ("P4.v21"): the status symbol is still described at
	// its status word, which the modules showing it do not report.
	reads   string
	wide    bool // 32-bit value over v<index> (low word, signed 16-bit) and v<index+1> (high word)
	setting bool // writable; has an s channel whose bit 7 is the INVISIBLE flag
	hidden  bool // the INVISIBLE flag is set: the app hides the parameter

	lo, hi         int     // raw range, served in the n and x channels (not for status/wide)
	initLo, initHi float64 // initial raw value drawn from this range (equal = fixed)
	float          bool    // raw value is a float with one decimal
	drift          Drift

	en, pl string // label
}

var simSymbols = []*simSymbol{
	// Boiler controller (deviceMenu 153).
	{token: "PARAM_P4_1", pool: "P4", index: 1, form: defP4, id: 0x2f41, icon: "TEMPERATURE", unit: unitCelsius,
		lo: 0, hi: 90, initLo: 52, initHi: 68, float: true, drift: DriftTemp, en: "Boiler temperature", pl: "Temperatura kotła"},
	{token: "PARAM_P4_2", pool: "P4", index: 2, form: defP4, id: 0x2f42, icon: "TEMPERATURE", unit: unitCelsius,
		lo: 0, hi: 400, initLo: 120, initHi: 180, drift: DriftPercent, en: "Flue gas temperature", pl: "Temperatura spalin"},
	{token: "PARAM_P4_3", pool: "P4", index: 3, form: defP4, id: 0x2f43, icon: "DHW", unit: unitCelsius,
		lo: 0, hi: 90, initLo: 44, initHi: 52, float: true, drift: DriftTemp, en: "Hot water temperature", pl: "Temperatura ciepłej wody"},
	{token: "PARAM_P4_4", pool: "P4", index: 4, form: defP4, id: 0x2f44, icon: "OUTDOOR", unit: unitOffset127,
		lo: 97, hi: 177, initLo: 120, initHi: 140, drift: DriftPercent, en: "Outdoor temperature", pl: "Temperatura zewnętrzna"},
	{token: "PARAM_P4_5", pool: "P4", index: 5, form: defP4, id: 0x2f45, icon: "FAN", unit: unitBarePct,
		lo: 0, hi: 100, initLo: 30, initHi: 60, drift: DriftPercent, en: "Fan power", pl: "Moc dmuchawy"},
	{token: "PARAM_P4_6", pool: "P4", index: 6, form: defP4, id: 0x2f46, icon: "TEMPERATURE", unit: unitCelsius,
		lo: 0, hi: 90, initLo: 24, initHi: 34, float: true, drift: DriftTemp, en: "Feeder temperature", pl: "Temperatura podajnika"},
	{token: "PARAM_P4_7", pool: "P4", index: 7, form: defChunkDefault, id: 0x2f47, icon: "POWER", comp: "TEXT", unit: unitTenthKW,
		lo: 0, hi: 250, initLo: 80, initHi: 200, drift: DriftPercent, en: "Boiler power", pl: "Moc kotła"},
	{token: "PARAM_P4_8", pool: "P4", index: 8, form: defP4, id: 0x2f48, icon: "PRESSURE", unit: unitBar,
		lo: 0, hi: 40, initLo: 12, initHi: 20, en: "Water pressure", pl: "Ciśnienie wody"},
	{token: "PARAM_P4_9", pool: "P4", index: 9, form: defP4, id: 0x2f49, icon: "FUEL", unit: unitPercent, name: "app.one.parameters.FUEL_LEVEL",
		lo: 0, hi: 100, initLo: 25, initHi: 90, drift: DriftFuel, en: "Fuel level", pl: "Poziom paliwa"},
	{token: "STATUS_P5_0", pool: "P5", index: 0, form: defBoilerState, id: 0x3100, icon: "FLAME", comp: "STATUS", name: "app.one.boilerStatus.name",
		unit: unitBoilerSt, noUChan: true, status: true, en: "Boiler state", pl: "Stan kotła"},
	{token: "STATUS_P5_1", pool: "P5", index: 1, form: defDiode, id: 0x3101, unit: unitDiode, noUChan: true, status: true,
		en: "Central heating pump", pl: "Pompa CO"},
	{token: "STATUS_P5_2", pool: "P5", index: 2, form: defDiode, id: 0x3102, unit: unitDiode, noUChan: true, status: true,
		en: "Hot water pump", pl: "Pompa CWU"},
	{token: "STATUS_P5_3", pool: "P5", index: 3, form: defDiode, id: 0x3103, unit: unitDiode, noUChan: true, status: true,
		en: "Alarm indicator", pl: "Sygnalizacja alarmu"},
	{token: "PARAM_P5_40", pool: "P5", index: 40, form: defChunkTable, id: 0x3140, icon: "FUEL", comp: "TEXT", unit: unitKilogram, noUChan: true,
		wide: true, drift: DriftWide, en: "Fuel burned", pl: "Zużyte paliwo"},
	{token: "PARAM_P6_1", pool: "P6", index: 1, form: defP6, id: 0x4101, comp: "SLIDER", unit: unitCelsius, setting: true,
		lo: 45, hi: 85, initLo: 60, initHi: 75, en: "Boiler set temperature", pl: "Temperatura zadana kotła"},
	{token: "PARAM_P6_2", pool: "P6", index: 2, form: defP6, id: 0x4102, comp: "SLIDER", unit: unitCelsius, setting: true,
		lo: 35, hi: 65, initLo: 45, initHi: 55, en: "Hot water set temperature", pl: "Temperatura zadana ciepłej wody"},
	{token: "PARAM_P6_4", pool: "P6", index: 4, form: defChunkNamed, id: 0x4104, icon: "PUMP", comp: "SWITCH", unit: unitOnOff, setting: true,
		lo: 0, hi: 1, initLo: 1, initHi: 1, en: "Hot water priority", pl: "Priorytet ciepłej wody"},
	{token: "PARAM_P6_5", pool: "P6", index: 5, form: defP6, id: 0x4105, comp: "SELECT", unit: unitSeason, setting: true,
		lo: 0, hi: 3, initLo: 2, initHi: 2, en: "Operating mode", pl: "Tryb pracy"},
	{token: "PARAM_P6_6", pool: "P6", index: 6, form: defP6, id: 0x4106, comp: "SLIDER", unit: unitMinutesX6, setting: true,
		lo: 0, hi: 10, initLo: 3, initHi: 3, en: "Pump run-on time", pl: "Czas wybiegu pompy"},
	{token: "PARAM_P6_7", pool: "P6", index: 7, form: defP6, id: 0x4107, comp: "TIME", unit: unitTimeOfDay, setting: true,
		lo: 0, hi: 144, initLo: 133, initHi: 133, en: "Night setback start", pl: "Początek obniżenia nocnego"},
	{token: "PARAM_P6_8", pool: "P6", index: 8, form: defP6, id: 0x4108, comp: "SLIDER", unit: unitTenthKW, setting: true,
		lo: 50, hi: 250, initLo: 240, initHi: 240, en: "Maximum boiler power", pl: "Maksymalna moc kotła"},
	{token: "PARAM_P6_9", pool: "P6", index: 9, form: defP6, id: 0x4109, comp: "SLIDER", unit: unitCelsius, setting: true,
		lo: 0, hi: 10, initLo: 5, initHi: 5, hidden: true, en: "Frost protection temperature", pl: "Temperatura ochrony przed zamarzaniem"},
	{token: "PARAM_45", pool: "P6", index: 45, form: defClassic, id: 0x412d, unit: unitSecond, setting: true,
		lo: 5, hi: 120, initLo: 30, initHi: 30, en: "Feeder cycle time", pl: "Czas cyklu podajnika"},
	{token: "PARAM_34", pool: "P6", index: 34, form: defClassic, id: 0x4122, unit: unitCelsius, setting: true, chain: "app.one.parameters.HISTERESIS",
		lo: 1, hi: 10, initLo: 3, initHi: 3, en: "Boiler hysteresis", pl: "Histereza kotła"},

	// Mixing-valve controller (deviceMenu 2190).
	{token: "PARAM_P4_20", pool: "P4", index: 20, form: defP4, id: 0x2f60, icon: "VALVE", unit: unitCelsius,
		lo: 0, hi: 90, initLo: 35, initHi: 48, float: true, drift: DriftTemp, en: "Valve 1 temperature", pl: "Temperatura zaworu 1"},
	{token: "PARAM_P4_21", pool: "P4", index: 21, form: defP4, id: 0x2f61, icon: "THERMOSTAT", unit: unitCelsius,
		lo: 5, hi: 35, initLo: 19, initHi: 23, float: true, drift: DriftTemp, en: "Room temperature", pl: "Temperatura pokojowa"},
	{token: "PARAM_P4_22", pool: "P4", index: 22, form: defP4, id: 0x2f62, icon: "VALVE", unit: unitPercent,
		lo: 0, hi: 100, initLo: 20, initHi: 80, drift: DriftPercent, en: "Valve 1 opening", pl: "Otwarcie zaworu 1"},
	{token: "STATUS_P5_20", pool: "P5", index: 20, form: defDiode, id: 0x3120, unit: unitDiode, noUChan: true, status: true,
		en: "Valve 1 pump", pl: "Pompa zaworu 1"},
	// As seen in the field: a status symbol whose definition reads another
	// register, on a menu whose modules report no P5.s21.
	{token: "STATUS_P5_21", pool: "P5", index: 21, form: defStatusElsewhere, id: 0x3121, icon: "THERMOSTAT", unit: unitCelsius,
		noUChan: true, status: true, reads: "P4.v21", en: "Thermostat reading", pl: "Odczyt termostatu"},
	{token: "PARAM_P6_20", pool: "P6", index: 20, form: defP6, id: 0x4120, comp: "SLIDER", unit: unitCelsius, setting: true,
		lo: 20, hi: 70, initLo: 40, initHi: 50, en: "Valve 1 set temperature", pl: "Temperatura zadana zaworu 1"},
	{token: "PARAM_P6_21", pool: "P6", index: 21, form: defChunkDefault, id: 0x4121, icon: "THERMOSTAT", comp: "SLIDER", unit: unitHalfC, setting: true,
		lo: 30, hi: 60, initLo: 40, initHi: 44, en: "Room set temperature", pl: "Temperatura zadana pokojowa"},
	{token: "PARAM_P6_22", pool: "P6", index: 22, form: defP6, id: 0x4222, comp: "CURVE", unit: unitCurve, setting: true,
		lo: 10, hi: 40, initLo: 22, initHi: 22, en: "Heating curve", pl: "Krzywa grzewcza"},
	{token: "PARAM_P6_23", pool: "P6", index: 23, form: defP6, id: 0x4223, comp: "SELECT", unit: unitValveMode, setting: true,
		lo: 0, hi: 3, initLo: 1, initHi: 1, en: "Valve 1 mode", pl: "Tryb pracy zaworu 1"},
}

func symbolByToken(token string) *simSymbol {
	for _, s := range simSymbols {
		if s.token == token {
			return s
		}
	}
	return nil
}

// address is the symbol's primary register, "P4.v7" or "P5.s0".
func (s *simSymbol) address() string {
	ch := "v"
	if s.status {
		ch = "s"
	}
	return s.pool + "." + ch + strconv.Itoa(s.index)
}

// labelToken is the i18n token the definition's name carries.
func (s *simSymbol) labelToken() string {
	if s.name != "" {
		return s.name
	}
	return "parameters." + s.token
}

// Boiler state words of P5.s0: bit 0 fan, 1 feeder, 2 igniter, 3 CH pump,
// 4 DHW pump, 5 stopped, 6 alarm. Each is matched by exactly one rule of
// STATUS_P5_0.
const (
	boilerStandby  = 0x00
	boilerFiringUp = 0x05 // fan + igniter
	boilerWork     = 0x0b // fan + feeder + CH pump
	boilerStop     = 0x20
	boilerAlarm    = 0x60 // stopped + alarm
)

// simAlarm is one alarm type. Its name lives in the translations where
// place says; an alarm without a label is one the web app does not know, and
// one without a Polish label is shown in the app's fallback language (en).
type simAlarm struct {
	id     int
	code   string
	en, pl string
	place  alarmPlace
}

// alarmPlace is where the translations file an alarm's name.
type alarmPlace uint8

const (
	alarmInNamespace alarmPlace = iota // "alarms" namespace, under the code (the symbol)
	alarmByToken                       // "alarms" namespace, under the code, a token of app.one.alarms.<id>
	alarmInApp                         // app.alarms, under the type id; nothing in the alarms namespace
)

var simAlarms = []simAlarm{
	{12, "ERROR_CZUJNIK_CO", "Boiler temperature sensor fault", "Uszkodzony czujnik temperatury kotła", alarmInNamespace},
	{14, "ERROR_CZUJNIK_CWU", "Hot water sensor fault", "", alarmInNamespace}, // English only
	{21, "ERROR_PRZEGRZANIE_KOTLA", "Boiler overheated", "Przegrzanie kotła", alarmByToken},
	{38, "ERROR_BRAK_PALIWA", "Out of fuel", "Brak paliwa", alarmInNamespace},
	{57, "ERROR_NIEUDANE_ROZPALANIE", "Ignition failed", "Nieudana próba rozpalenia", alarmInApp},
	{91, "ERROR_MODUL_ROZSZERZEN", "", "", alarmInNamespace}, // newer firmware than the web app: no label
}

// label is the alarm's name as the app shows it in lang: the Polish label,
// else the English one (the app's fallbackLocale); "" when it has none.
func (a simAlarm) label(lang string) string {
	if lang == "pl" && a.pl != "" {
		return a.pl
	}
	return a.en
}

func alarmByCode(code string) simAlarm {
	for _, a := range simAlarms {
		if a.code == code {
			return a
		}
	}
	return simAlarm{}
}

// simProfile is a kind of module: its menu, permissions, registers and
// state. Module i of the world gets simProfiles[i % len(simProfiles)].
type simProfile struct {
	key         string
	deviceMenu  int
	permissions []string
	symbols     []string       // tokens whose registers the module carries, in prime order
	fixed       map[string]int // raw values that do not drift (status words, stopped outputs)
	alarms      []string       // codes of active alarms
}

var boilerTokens = []string{
	"PARAM_P4_1", "PARAM_P4_7", "PARAM_P4_4", "STATUS_P5_0", "PARAM_P6_1", "PARAM_P4_2", "PARAM_P4_3", "PARAM_P4_5",
	"PARAM_P4_6", "PARAM_P4_8", "PARAM_P4_9", "STATUS_P5_1", "STATUS_P5_2", "STATUS_P5_3", "PARAM_P5_40", "PARAM_P6_2",
	"PARAM_P6_4", "PARAM_P6_5", "PARAM_P6_6", "PARAM_P6_7", "PARAM_P6_8", "PARAM_P6_9", "PARAM_45", "PARAM_34",
}

var valveTokens = []string{
	"PARAM_P4_20", "PARAM_P4_21", "PARAM_P4_4", "PARAM_P4_22", "STATUS_P5_20", "PARAM_P6_20", "PARAM_P6_21",
	"PARAM_P6_22", "PARAM_P6_23",
}

var simProfiles = []*simProfile{
	{
		key: "boiler-installer", deviceMenu: 153,
		permissions: []string{"DISPLAY_MENU_BOILER", "DISPLAY_MENU_DHW", "DISPLAY_MENU_SERVICE", "DISPLAY_MENU_INFO",
			"DISPLAY_PARAMETER_LEVEL_1", "DISPLAY_PARAMETER_LEVEL_2", "DISPLAY_PARAMETER_LEVEL_MAX", "MODULE_COMMAND_SEND"},
		symbols: boilerTokens,
		// Out of fuel: stopped with an alarm, outputs off.
		fixed: map[string]int{"STATUS_P5_0": boilerAlarm, "STATUS_P5_1": 0, "STATUS_P5_2": 0, "STATUS_P5_3": 1,
			"PARAM_P4_2": 45, "PARAM_P4_5": 0, "PARAM_P4_7": 0, "PARAM_P4_9": 2, "PARAM_P5_40": 38063},
		alarms: []string{"ERROR_BRAK_PALIWA"},
	},
	{
		key: "boiler-user", deviceMenu: 153,
		permissions: []string{"DISPLAY_MENU_BOILER", "DISPLAY_PARAMETER_LEVEL_1", "MODULE_COMMAND_SEND"},
		symbols:     boilerTokens,
		fixed: map[string]int{"STATUS_P5_0": boilerWork, "STATUS_P5_1": 1, "STATUS_P5_2": 0, "STATUS_P5_3": 0,
			"PARAM_P5_40": 103500},
	},
	{
		key: "valve", deviceMenu: 2190,
		permissions: []string{"DISPLAY_MENU_VALVE", "DISPLAY_MENU_THERMOSTAT", "DISPLAY_PARAMETER_LEVEL_1", "MODULE_COMMAND_SEND"},
		symbols:     valveTokens,
		fixed:       map[string]int{"STATUS_P5_20": 1},
		alarms:      []string{"ERROR_MODUL_ROZSZERZEN"},
	},
}

// Permission names gating menu routes and entries.
const (
	permLevel1  = "DISPLAY_PARAMETER_LEVEL_1"
	permLevel2  = "DISPLAY_PARAMETER_LEVEL_2"
	permLevelMx = "DISPLAY_PARAMETER_LEVEL_MAX"
)

// permStyle is how a permission is spelled in a menu chunk.
type permStyle uint8

const (
	permSubscript permStyle = iota // _0x5c2f['DISPLAY_MENU_BOILER']
	permMember                     // R.DISPLAY_MENU_DHW
	permString                     // 'DISPLAY_MENU_INFO'
)

// menuEntry is one parameter entry of a route section.
type menuEntry struct {
	section string // read, write, status, special
	perm    string // required permission; "" = a bare string entry
	token   string
}

// menuRoute is one route of a device menu.
type menuRoute struct {
	path, name, display, icon string
	perm                      string
	style                     permStyle
	onRoute                   bool        // entries sit in the route-level parameters (older shape) and perm on the route
	readable                  bool        // entries use the readable helper E(A.READ,'TOKEN') and R.<perm>
	entries                   []menuEntry // in section order
	mapWrite                  []string    // the write section, generated by ['map'] with mapPerm
	mapPerm                   string
	children                  []*menuRoute
	redirectTo                string // a redirect-only node (no name): pruned by consumers
}

// simMenu is one device menu chunk.
type simMenu struct {
	deviceMenu int
	variant    string // stem of the route file and of the chunk: "0", "101", "module.menu", "1"
	routes     []*menuRoute
}

func e(section, perm, token string) menuEntry { return menuEntry{section, perm, token} }

var simMenus = []*simMenu{
	// deviceMenu 153 lists a language variant first; the variant "0" is the menu.
	{deviceMenu: 153, variant: "101", routes: []*menuRoute{
		{path: "boiler", name: "modules.menu.boiler", display: "routes.modules.menu.boiler", icon: "a.boiler",
			perm: "DISPLAY_MENU_BOILER", style: permMember, readable: true,
			entries: []menuEntry{e("read", permLevel1, "PARAM_P4_1"), e("write", permLevel1, "PARAM_P6_1")}},
	}},
	{deviceMenu: 153, variant: "0", routes: []*menuRoute{
		{path: "boiler", name: "modules.menu.boiler", display: "routes.modules.menu.boiler", icon: "a.boiler",
			perm: "DISPLAY_MENU_BOILER", style: permSubscript,
			entries: []menuEntry{
				e("read", permLevel1, "PARAM_P4_1"), e("read", permLevel2, "PARAM_P4_2"), e("read", permLevel1, "PARAM_P4_4"),
				e("read", permLevel2, "PARAM_P4_5"), e("read", permLevelMx, "PARAM_P4_6"), e("read", permLevel1, "PARAM_P4_7"),
				e("read", permLevel1, "PARAM_P4_9"), e("read", permLevel2, "PARAM_P5_40"),
				e("write", permLevel1, "PARAM_P6_1"), e("write", permLevel1, "PARAM_P6_5"), e("write", permLevel2, "PARAM_P6_7"),
				e("write", permLevel1, "PARAM_P6_9"),
				e("status", permLevel1, "STATUS_P5_0"), e("status", permLevel1, "STATUS_P5_1"), e("status", permLevel1, "STATUS_P5_3"),
			}},
		{path: "dhw", name: "modules.menu.dhw", display: "MAINMENU_USTAWIENIA_CWU", icon: "a.dhw",
			perm: "DISPLAY_MENU_DHW", style: permMember,
			entries: []menuEntry{
				e("read", permLevel1, "PARAM_P4_3"), e("write", permLevel1, "PARAM_P6_2"), e("write", permLevel1, "PARAM_P6_4"),
				e("status", permLevel1, "STATUS_P5_2"),
			}},
		{path: "service", name: "MENUSERWIS_PARAMETRY", display: "MENUSERWIS_PARAMETRY", icon: "a.service",
			perm: "DISPLAY_MENU_SERVICE", style: permSubscript,
			children: []*menuRoute{
				{path: "burner", name: "modules.menu.burner", display: "routes.modules.menu.burner", icon: "a.burner",
					perm: "DISPLAY_MENU_SERVICE", style: permSubscript,
					mapWrite: []string{"PARAM_45", "PARAM_34", "PARAM_P6_6", "PARAM_P6_8"}, mapPerm: permLevelMx},
			}},
		{path: "info", name: "modules.menu.info", display: "routes.modules.menu.info", icon: "a.info",
			perm: "DISPLAY_MENU_INFO", style: permString, onRoute: true,
			entries: []menuEntry{e("read", "", "PARAM_P4_8"), e("read", permLevel2, "PARAM_P4_2")}},
		{path: "", redirectTo: "modules.menu.boiler"},
	}},
	{deviceMenu: 2190, variant: "module.menu", routes: []*menuRoute{
		{path: "valve1", name: "modules.menu.valve1", display: "routes.modules.menu.valve1", icon: "a.valve",
			perm: "DISPLAY_MENU_VALVE", style: permSubscript,
			entries: []menuEntry{
				e("read", permLevel1, "PARAM_P4_20"), e("read", permLevel1, "PARAM_P4_4"), e("read", permLevel2, "PARAM_P4_22"),
				e("status", permLevel1, "STATUS_P5_20"), e("special", permLevel2, "PARAM_P6_22"),
			},
			mapWrite: []string{"PARAM_P6_20", "PARAM_P6_23"}, mapPerm: permLevel1},
		{path: "thermostats", name: "modules.menu.thermostats", display: "routes.modules.menu.thermostats", icon: "a.thermostat",
			perm: "DISPLAY_MENU_THERMOSTAT", style: permMember, readable: true,
			entries: []menuEntry{e("read", permLevel1, "PARAM_P4_21"), e("write", permLevel1, "PARAM_P6_21"), e("status", permLevel1, "STATUS_P5_21")}},
	}},
	{deviceMenu: 1, variant: "1", routes: []*menuRoute{
		{path: "info", name: "modules.menu.info", display: "routes.modules.menu.info", icon: "a.info",
			perm: "DISPLAY_MENU_INFO", style: permMember, readable: true,
			entries: []menuEntry{e("read", permLevel1, "PARAM_P4_1")}},
	}},
}

// menuFor is the menu a consumer must pick for a deviceMenu: the variant
// "0" when there is one, else the first.
func menuFor(deviceMenu int) *simMenu {
	var first *simMenu
	for _, m := range simMenus {
		if m.deviceMenu != deviceMenu {
			continue
		}
		if m.variant == "0" {
			return m
		}
		if first == nil {
			first = m
		}
	}
	return first
}

// visibleTokens applies the permission rules of the asset spec (docs/spec.md A-4.3b) to a
// menu: entries whose permission the module lacks are dropped; a route whose
// own permission fails survives only with children or with route-level
// entries left. Tokens come back in menu order, each once, with the chain of
// routes (outermost first) of the first route listing it.
func visibleTokens(m *simMenu, perms []string) (tokens []string, routeOf map[string][]*menuRoute) {
	has := map[string]bool{}
	for _, p := range perms {
		has[p] = true
	}
	routeOf = map[string][]*menuRoute{}
	var walk func(rs []*menuRoute, parents []*menuRoute)
	walk = func(rs []*menuRoute, parents []*menuRoute) {
		for _, r := range rs {
			if r.name == "" || r.path == "" {
				continue
			}
			var kept []string
			for _, sec := range []string{"read", "write", "status", "special"} {
				for _, en := range r.entries {
					if en.section == sec && (en.perm == "" || has[en.perm]) {
						kept = append(kept, en.token)
					}
				}
				if sec == "write" && (r.mapPerm == "" || has[r.mapPerm]) {
					kept = append(kept, r.mapWrite...)
				}
			}
			if r.perm != "" && !has[r.perm] && len(r.children) == 0 && !(r.onRoute && len(kept) > 0) {
				continue
			}
			chain := append(append([]*menuRoute(nil), parents...), r)
			for _, t := range kept {
				if _, dup := routeOf[t]; !dup {
					tokens = append(tokens, t)
					routeOf[t] = chain
				}
			}
			walk(r.children, chain)
		}
	}
	walk(m.routes, nil)
	return tokens, routeOf
}

// i18nTree is one translation namespace: string leaves, nested objects.
type i18nTree map[string]any

func (t i18nTree) set(path, v string) {
	parts := strings.Split(path, ".")
	cur := t
	for _, p := range parts[:len(parts)-1] {
		next, _ := cur[p].(i18nTree)
		if next == nil {
			next = i18nTree{}
			cur[p] = next
		}
		cur = next
	}
	cur[parts[len(parts)-1]] = v
}

func (t i18nTree) keys() []string {
	out := make([]string, 0, len(t))
	for k := range t {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, aErr := strconv.Atoi(out[i])
		b, bErr := strconv.Atoi(out[j])
		if aErr == nil && bErr == nil {
			return a < b
		}
		if (aErr == nil) != (bErr == nil) {
			return aErr == nil
		}
		return out[i] < out[j]
	})
	return out
}

// simLanguages are the languages with translation chunks.
var simLanguages = []string{"en", "pl"}

// titleNamespace is a namespace holding one menu title (a bare title token
// the routes and menu namespaces do not carry).
const titleNamespace = "MENUSERWIS_PARAMETRY"

// translations builds the i18n namespaces of one language.
func translations(lang string) map[string]i18nTree {
	pick := func(en, pl string) string {
		if lang == "pl" {
			return pl
		}
		return en
	}
	ns := map[string]i18nTree{
		"parameters": {}, "units": {}, "app": {}, "routes": {}, "menu": {}, "alarms": {},
	}
	for _, s := range simSymbols {
		label := pick(s.en, s.pl)
		tok := s.labelToken()
		if s.chain != "" {
			ns["parameters"].set(s.token, s.chain)
			tok = s.chain
		}
		space, path, _ := strings.Cut(tok, ".")
		ns[space].set(path, label)
	}
	// Labels of symbols no simulated module shows, as a real bundle has many.
	for tok, l := range map[string][2]string{
		"PARAM_66":     {"Boiler temperature setpoint", "Zadana temperatura kotła"},
		"PARAM_P4_10":  {"Return temperature", "Temperatura powrotu"},
		"STATUS_P5_10": {"Buffer pump", "Pompa bufora"},
	} {
		ns["parameters"].set(tok, pick(l[0], l[1]))
	}
	u := ns["units"]
	u.set("0", " ")
	u.set("1", "°C")
	u.set("5", "%")
	u.set("9", "kg")
	u.set("12", "min")
	u.set("13", "s")
	u.set("31", "kW")
	u.set("33", "bar")
	for i, l := range [][2]string{{"Off", "Wyłączony"}, {"On", "Włączony"}} {
		u.set("17."+strconv.Itoa(i), pick(l[0], l[1]))
	}
	for i, l := range [][2]string{{"Winter", "Zima"}, {"Summer", "Lato"}, {"Automatic", "Automatyczny"}, {"Off", "Wyłączony"}} {
		u.set("18."+strconv.Itoa(i), pick(l[0], l[1]))
	}
	for i, l := range [][2]string{{"Off", "Wyłączony"}, {"Radiators", "Grzejnikowy"}, {"Underfloor", "Podłogowy"}, {"Pump only", "Tylko pompa"}} {
		u.set("19."+strconv.Itoa(i), pick(l[0], l[1]))
	}
	u.set("202.0", pick("Off", "Wyłączone"))
	a := ns["app"]
	a.set("one.diodeState.on", pick("On", "Włączona"))
	a.set("one.diodeState.off", pick("Off", "Wyłączona"))
	for i, l := range [][2]string{{"Stop", "Stop"}, {"Work", "Praca"}, {"Firing up", "Rozpalanie"}, {"Alarm", "Alarm"}, {"Standby", "Czuwanie"}} {
		a.set("one.burnerState."+strconv.Itoa(i), pick(l[0], l[1]))
	}
	a.set("lang.en", pick("English", "Angielski"))
	a.set("lang.pl", pick("Polish", "Polski"))
	r := ns["routes"]
	for k, l := range map[string][2]string{
		"boiler": {"Boiler", "Kocioł"}, "burner": {"Burner", "Palnik"}, "info": {"Information", "Informacje"},
		"valve1": {"Valve 1", "Zawór 1"}, "thermostats": {"Thermostats", "Termostaty"},
	} {
		r.set("modules.menu."+k, pick(l[0], l[1]))
	}
	ns["menu"].set("MAINMENU_USTAWIENIA_CWU", pick("Hot water", "Ciepła woda użytkowa"))
	ns["menu"].set("MAINMENU_MENU_TERMOSTATU", pick("Thermostat menu", "Menu termostatów"))
	for _, al := range simAlarms {
		label := pick(al.en, al.pl)
		if label == "" {
			continue
		}
		id := strconv.Itoa(al.id)
		switch al.place {
		case alarmInNamespace:
			ns["alarms"].set(al.code, label)
		case alarmByToken:
			ns["alarms"].set(al.code, "app.one.alarms."+id)
			a.set("one.alarms."+id, label)
		case alarmInApp:
			a.set("alarms."+id, label)
		}
	}
	ns[titleNamespace] = i18nTree{titleNamespace: pick("Service parameters", "Parametry serwisowe")}
	return ns
}

// routeTitle is the translated title of a route in one language.
func routeTitle(r *menuRoute, lang string) string {
	ns := translations(lang)
	lookup := func(tree i18nTree, path string) string {
		cur := any(tree)
		for _, p := range strings.Split(path, ".") {
			m, ok := cur.(i18nTree)
			if !ok {
				return ""
			}
			cur = m[p]
		}
		s, _ := cur.(string)
		return s
	}
	if rest, ok := strings.CutPrefix(r.display, "routes."); ok {
		if s := lookup(ns["routes"], rest); s != "" {
			return s
		}
	}
	if s := lookup(ns["menu"], r.display); s != "" {
		return s
	}
	if t, ok := ns[r.display]; ok {
		return t[r.display].(string)
	}
	return r.display
}
