package catalog

import (
	"errors"
	"fmt"
	"math"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// Param is one described parameter of one module.
type Param struct {
	Symbol  string    // "PARAM_P4_7"
	Address Address   // primary register (docs/spec.md A-4.5a), e.g. P4.v7
	Parts   []Address // the words of a composed value (docs/spec.md ); empty when single
	// ComputedPrimary is, for a STATUS_P… symbol whose definition points at
	// another register, that register (docs/spec.md A-4.5c); zero otherwise.
	// The value is still read at Address.
	ComputedPrimary Address
	Name            string         // translated label (docs/spec.md ); the symbol when the assets carry none
	Unit            string         // as displayed: "°C", "kW", "" (docs/spec.md ), for the load-time unit code
	Menu            []string       // panel path, translated (docs/spec.md)
	Enum            map[int]string // value labels (docs/spec.md) of the load-time unit, nil when not an enum
	Min, Max        *float64       // limits in display units (docs/spec.md) at load time; see Range for live ones
	Writable        bool           // listed in a write section of the menu, or carrying command rules
	// Computed says the value comes from the definition's rules (docs/spec.md A-4.10a).
	Computed bool
	// Role says what the register is for (fuel level, fuel burned, …),
	// identified from language-independent facts (see identifyRole) or set
	// by an override; RoleNone for most.
	Role Role

	def      *definition
	key      string // Address's channel and index, "v7": read on every display
	units    *unitTable
	ctx      *ruleContext
	unitCode string // the load-time unit code
	unitReg  selector
	hasUReg  bool
	minReg   []selector
	maxReg   []selector
	override *override
}

// unitAt is the unit the value is shown in now: the definition's unit
// register, else the family's u channel, else the definition's scalar code
// (docs/spec.md ); the load-time code when no register can be read.
func (p *Param) unitAt(r store.Reader) *unit {
	if p.hasUReg && r != nil {
		if v, ok := p.unitReg.raw(r); ok {
			if u := p.units.getNum(v); u != nil {
				return u
			}
		}
	}
	return p.units.get(p.unitCode)
}

// UnitFor is the unit as displayed for the live unit register ("" none).
func (p *Param) UnitFor(r store.Reader) string {
	if p.override != nil && p.override.unit != nil {
		return *p.override.unit
	}
	if u := p.unitAt(r); u != nil {
		return u.symbol
	}
	return ""
}

// readsDefinition says whether the value is read through the definition's
// own value selectors: false for a STATUS_P… symbol whose definition points
// at another register, read at its status register instead (docs/spec.md A-4.5c).
func (p *Param) readsDefinition() bool { return p.ComputedPrimary.IsZero() }

// rawValue reads the register value: composed from its words when the
// definition composes (docs/spec.md ), else the primary register as is.
func (p *Param) rawValue(r store.Reader) (float64, bool) {
	if r == nil {
		return 0, false
	}
	if !p.readsDefinition() {
		return read(r, p.Address, p.key)
	}
	if p.def.composes() {
		return compose(p.def.values, r)
	}
	if len(p.def.values) == 1 {
		return p.def.values[0].bitValue(r)
	}
	return read(r, p.Address, p.key)
}

// compose is docs/spec.md: Σ word × times, a word masked to 16 bits when its
// selector converts. Every word must be present: a value missing a word is
// not shown (the reference client adds the words it has, which shows a wrong
// value while one is missing).
func compose(sels []selector, r store.Reader) (float64, bool) {
	sum := 0.0
	for i := range sels {
		v, ok := sels[i].raw(r)
		if !ok || math.IsNaN(v) {
			return 0, false
		}
		if sels[i].convert {
			v = float64(int64(v) & 0xFFFF)
		}
		sum += v * sels[i].times
	}
	return sum, len(sels) > 0
}

// Display is the value as the app displays it: a computed value evaluated
// (docs/spec.md A-4.10a), a composed value (docs/spec.md) or the
// register, through the unit's transform (docs/spec.md A-4.7.3a), with its enum
// label (docs/spec.md ). value is NaN when the display value is not a
// number (a computed state or a time of day); the label then says it. ok is
// false when nothing can be shown (missing values, or no rule applies).
func (p *Param) Display(r store.Reader) (value float64, label string, ok bool) {
	// A parameter shows a value only while its primary register holds one,
	// on every surface (the exporter's series are keyed by that register);
	// a computed value's rule inputs alone do not make it current.
	if _, held := read(r, p.Address, p.key); !held {
		return 0, "", false
	}
	if p.override != nil && p.override.scale != nil {
		raw, ok := p.rawValue(r)
		if !ok {
			return 0, "", false
		}
		return raw * *p.override.scale, "", true
	}
	u := p.unitAt(r)
	if p.def.computed() {
		if res, ok := p.def.computedValue(r, p.ctx); ok {
			return presentComputed(res, u)
		}
		// No rule applied: a plain value selector is still read directly.
		if len(p.def.values) != 1 {
			return 0, "", false
		}
	}
	raw, ok := p.rawValue(r)
	if !ok {
		return 0, "", false
	}
	v, label := u.present(raw)
	return v, label, true
}

func presentComputed(res jsval.Value, u *unit) (float64, string, bool) {
	v := math.NaN()
	switch x := res.(type) {
	case float64:
		v = x
	case string:
		if f, ok := jsval.ParseNumber(x); ok {
			v = f
		}
	}
	label, ok := u.label(res)
	if !ok {
		if s, isText := jsval.Text(res); isText {
			label = s
		}
	}
	return v, label, true
}

// Visible says whether the app shows the parameter now (docs/spec.md ); hidden
// parameters are still exported raw.
func (p *Param) Visible(r store.Reader) bool {
	v, _ := p.def.visibility(r, p.ctx)
	return v
}

// Range gives the limits in display units now (docs/spec.md ): the definition's
// limit registers, else the family's n and x channels, transformed; else
// the definition's static limits.
func (p *Param) Range(r store.Reader) (min, max *float64) {
	u := p.unitAt(r)
	read := func(sels []selector, static *float64) *float64 {
		for i := range sels {
			if v, ok := sels[i].raw(r); ok && !math.IsNaN(v) {
				if u != nil && !u.timeOfDay {
					v = u.transform.apply(v)
				}
				return &v
			}
		}
		return static
	}
	return read(p.minReg, p.def.limMin), read(p.maxReg, p.def.limMax)
}

// Errors of RawFromDisplay, RawFromClock and CheckRaw.
var (
	ErrNotWritable = errors.New("catalog: the value of this parameter is not a register value")
	ErrOutOfRange  = errors.New("catalog: value outside the parameter's limits")
	ErrNoTransform = errors.New("catalog: the unit's value function is not recognised, so it cannot be inverted")
	ErrNotClock    = errors.New("catalog: the parameter does not show a time of day")
	ErrBadClock    = errors.New("catalog: not a time of day")
	ErrOffStep     = errors.New("catalog: value between two steps of the register")
)

// StepError is ErrOffStep for one write: the raw value it would need and
// the raw values next to it that the register can hold within the limits
// (none, one or two, in ascending order).
type StepError struct {
	Raw     float64
	Nearest []float64
}

func (e *StepError) Error() string {
	return fmt.Sprintf("%v: raw %s is not a whole number", ErrOffStep, jsval.FormatNumber(e.Raw))
}

func (e *StepError) Unwrap() error { return ErrOffStep }

// registerValued says whether the parameter's value is its primary
// register's whole value, the only kind a register write sets: not
// computed by rules, not composed of several words, not a bit or a mask of
// a word (writing the word would set its other bits too).
func (p *Param) registerValued() bool {
	if p.def.computed() {
		return false
	}
	if !p.readsDefinition() {
		return true
	}
	if p.def.composes() {
		return false
	}
	if len(p.def.values) == 1 {
		s := p.def.values[0]
		return s.bit < 0 && s.mask == 0
	}
	return true
}

// checkStep refuses a raw value between two whole numbers: a controller's
// setting register holds whole numbers (the app's sliders, switches, lists
// and clocks all land on a raw integer), whatever value it holds now. The
// StepError names the neighbours within the limits.
func (p *Param) checkStep(raw float64, r store.Reader) error {
	if raw == math.Trunc(raw) {
		return nil
	}
	e := &StepError{Raw: raw}
	for _, n := range []float64{math.Floor(raw), math.Ceil(raw)} {
		if p.checkRange(n, r) == nil {
			e.Nearest = append(e.Nearest, n)
		}
	}
	return e
}

// checkRange refuses a raw value whose display value is outside the limits
// (Range with r; the static Min/Max when r is nil). A time of day's limits
// are register values.
func (p *Param) checkRange(raw float64, r store.Reader) error {
	lo, hi := p.Min, p.Max
	if r != nil {
		lo, hi = p.Range(r)
	}
	v := raw
	if !p.ShowsClock(r) {
		var err error
		if v, err = p.scale(raw, r); err != nil {
			return err
		}
	}
	if (lo != nil && v < *lo) || (hi != nil && v > *hi) {
		return fmt.Errorf("%w: %v not in [%s, %s]", ErrOutOfRange, v, limitText(lo), limitText(hi))
	}
	return nil
}

// scale is the display number of a raw value through the override's scale
// or the unit's transform.
func (p *Param) scale(raw float64, r store.Reader) (float64, error) {
	if p.override != nil && p.override.scale != nil {
		return raw * *p.override.scale, nil
	}
	u := p.unitAt(r)
	switch {
	case u == nil:
		return raw, nil
	case u.timeOfDay || !u.known:
		return 0, ErrNoTransform
	}
	return u.transform.apply(raw), nil
}

// CheckRaw checks a raw register value for a write of the register itself
// (P6.v8=200): the parameter's value must be the register's whole value
// (ErrNotWritable), the value must land on the register's step (a
// *StepError, ErrOffStep) and its display value within the limits
// (ErrOutOfRange); a unit whose value function is not recognised leaves
// the limits unchecked (ErrNoTransform). r is the module's live values.
func (p *Param) CheckRaw(raw float64, r store.Reader) error {
	if math.IsNaN(raw) || math.IsInf(raw, 0) {
		return fmt.Errorf("catalog: %v is not a value", raw)
	}
	if !p.registerValued() {
		return ErrNotWritable
	}
	if err := p.checkRange(raw, r); err != nil {
		return err
	}
	return p.checkStep(raw, r)
}

// DisplayRaw is what the app would display were the register to hold raw
// (see Display): what a write of raw means.
func (p *Param) DisplayRaw(raw float64, r store.Reader) (value float64, label string, ok bool) {
	a, key := p.Address, p.key
	return p.Display(func(pool, chanIdx string) (float64, bool) {
		if pool == a.Pool && chanIdx == key {
			return raw, true
		}
		if r == nil {
			return 0, false
		}
		return r(pool, chanIdx)
	})
}

// ShowsClock says whether the parameter's value shows as a time of day
// (HH:MM) for the live unit register.
func (p *Param) ShowsClock(r store.Reader) bool {
	if p.override != nil && (p.override.scale != nil || p.override.unit != nil) {
		return false
	}
	u := p.unitAt(r)
	return u != nil && u.timeOfDay
}

// RawFromClock converts a time of day to the raw register value of a
// parameter that shows one (docs/spec.md A-4.7.3b: raw n shows
// (n−1)×10 minutes after midnight), for a write. The time must fall on the
// register's 10-minute steps; the raw value is refused outside the limits,
// which for this unit are register values.
func (p *Param) RawFromClock(text string, r store.Reader) (float64, error) {
	if !p.ShowsClock(r) {
		return 0, ErrNotClock
	}
	if !p.registerValued() {
		return 0, ErrNotWritable
	}
	raw, err := rawFromClock(text)
	if err != nil {
		return 0, err
	}
	lo, hi := p.Min, p.Max
	if r != nil {
		lo, hi = p.Range(r)
	}
	if (lo != nil && raw < *lo) || (hi != nil && raw > *hi) {
		return 0, fmt.Errorf("%w: %s is register value %v, not in [%s, %s]", ErrOutOfRange, text, raw, limitText(lo), limitText(hi))
	}
	return raw, nil
}

// RawFromDisplay converts a display value back to the register's raw value
// (the inverse of the transform) for a write; it refuses values outside the
// limits (Range with r; the static Min/Max when r is nil) and values that
// fall between the register's steps (a *StepError): the write is refused,
// never rounded.
func (p *Param) RawFromDisplay(v float64, r store.Reader) (float64, error) {
	raw, err := p.invert(v, r)
	if err != nil {
		return 0, err
	}
	return raw, p.checkStep(raw, r)
}

// invert is RawFromDisplay without the step check.
func (p *Param) invert(v float64, r store.Reader) (float64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("catalog: %v is not a value", v)
	}
	if !p.registerValued() {
		return 0, ErrNotWritable
	}
	lo, hi := p.Min, p.Max
	if r != nil {
		lo, hi = p.Range(r)
	}
	if (lo != nil && v < *lo) || (hi != nil && v > *hi) {
		return 0, fmt.Errorf("%w: %v not in [%s, %s]", ErrOutOfRange, v, limitText(lo), limitText(hi))
	}
	if p.override != nil && p.override.scale != nil {
		return (linearTransform{mul: *p.override.scale, div: 1, digits: -1}).invert(v)
	}
	u := p.unitAt(r)
	if u == nil {
		return v, nil
	}
	if u.timeOfDay || !u.known {
		return 0, ErrNoTransform
	}
	return u.transform.invert(v)
}

func limitText(f *float64) string {
	if f == nil {
		return "…"
	}
	return jsval.FormatNumber(*f)
}
