package cloudsim

import (
	"math"
	"strconv"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// addDescribedParams adds the registers of the module's described symbols
// (its profile) ahead of the anonymous ones, so a small ParamsPerModule
// still carries named parameters. Values start inside each definition's
// range; enums on labelled values. It returns the families ("P4.7") it
// used, which the anonymous filler skips.
func (c *Cloud) addDescribedParams(m *module, add func(*param) bool, ts func() int64) map[string]bool {
	used := map[string]bool{}
	for _, r := range m.profile.Registers {
		idx := strconv.Itoa(r.Index)
		used[r.Pool+"."+idx] = true
		switch {
		case r.Status:
			add(&param{pool: r.Pool, key: "s" + idx, value: r.Fixed, form: formBare})
		case r.Wide:
			used[r.Pool+"."+strconv.Itoa(r.Index+1)] = true
			if c.opts.ParamsPerModule-len(m.params) < 2 {
				continue
			}
			lo, hi := splitWide(r.Fixed)
			hiP := &param{pool: r.Pool, key: "v" + strconv.Itoa(r.Index+1), value: hi, form: formObject, storable: true, updatedAt: ts()}
			loP := &param{pool: r.Pool, key: "v" + idx, value: lo, form: formObject, storable: true, updatedAt: ts(), drift: driftWide, hi: hiP}
			if m.fuel != nil && m.fuelBurned == nil {
				// The module burns what its level loses (burnFuelLocked).
				loP.drift, m.fuelBurned = driftFuel, loP
			}
			add(loP)
			add(hiP)
		default:
			var v any
			drift := driftOf(r.Drift)
			switch {
			case r.IsFixed:
				v, drift = r.Fixed, driftNone
			case r.Float:
				v = math.Round((r.InitLo+c.rng.Float64()*(r.InitHi-r.InitLo))*10) / 10
			default:
				v = int(r.InitLo) + c.rng.IntN(int(r.InitHi-r.InitLo)+1)
			}
			p := &param{pool: r.Pool, key: "v" + idx, value: v, form: formObject, storable: true, updatedAt: ts(),
				drift: drift, min: float64(r.Min), max: float64(r.Max)}
			if add(p) && drift == driftFuel {
				m.fuel = p
			}
			if r.UChan {
				add(&param{pool: r.Pool, key: "u" + idx, value: r.Unit, form: formObject})
			}
			add(&param{pool: r.Pool, key: "n" + idx, value: r.Min, form: formBare})
			add(&param{pool: r.Pool, key: "x" + idx, value: r.Max, form: formBare})
			if r.Setting {
				word := 0
				if r.Hidden {
					word = webapp.StatusInvisible
				}
				add(&param{pool: r.Pool, key: "s" + idx, value: word, form: formBare})
			}
		}
	}
	return used
}

// driftOf is how the world moves a described value.
func driftOf(d webapp.Drift) driftKind {
	switch d {
	case webapp.DriftTemp:
		return driftTemp
	case webapp.DriftPercent:
		return driftPercent
	case webapp.DriftWide:
		return driftWide
	case webapp.DriftFuel:
		return driftFuel
	}
	return driftNone
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

// The simulated hopper: the level falls one point every FuelStepsPerPoint
// drift steps (a minute at DefaultDriftInterval), is refilled to
// FuelRefillTo once it is down to FuelRefillAt, and every point burned adds
// FuelKgPerPoint to the fuel-burned counter. So --simulate shows the level
// falling, the forecast of when it is empty, the low-fuel alert (the level
// spends 12 minutes at or below 15 %) and a refill.
const (
	FuelStepsPerPoint = 30
	FuelRefillAt      = 3
	FuelRefillTo      = 100
	FuelKgPerPoint    = 2
)

// burnFuelLocked moves the module's fuel level and fuel-burned counter by
// one drift step, recording what changed in the pools of the step's delta.
func (c *Cloud) burnFuelLocked(m *module, pools map[string]any, ts int64) {
	if m.fuel == nil {
		return
	}
	if m.fuelSteps++; m.fuelSteps < FuelStepsPerPoint {
		return
	}
	m.fuelSteps = 0
	pool := func(name string) map[string]any {
		pm, _ := pools[name].(map[string]any)
		if pm == nil {
			pm = map[string]any{}
			pools[name] = pm
		}
		return pm
	}
	level := toInt(m.fuel.value)
	if level <= FuelRefillAt {
		level = FuelRefillTo
	} else {
		level--
		if b := m.fuelBurned; b != nil {
			lo, hi := splitWide(wideTotal(b.value, b.hi.value) + FuelKgPerPoint)
			b.value, b.updatedAt = lo, ts
			pool(b.pool)[b.key] = map[string]any{"value": lo, "updatedAt": ts}
			if toInt(b.hi.value) != hi {
				b.hi.value, b.hi.updatedAt = hi, ts
				pool(b.pool)[b.hi.key] = map[string]any{"value": hi, "updatedAt": ts}
			}
		}
	}
	m.fuel.value, m.fuel.updatedAt = level, ts
	pool(m.fuel.pool)[m.fuel.key] = map[string]any{"value": level, "updatedAt": ts}
}

// Described lists what the assets describe for one module in one language
// ("en" or "pl"), in menu order: the symbols its deviceMenu's menu shows
// under its permissions, with their registers, labels, units and panels.
// Nil for an unknown module or language.
func (c *Cloud) Described(devid, lang string) []webapp.DescribedParam {
	c.mu.Lock()
	m := c.byDevid[devid]
	c.mu.Unlock()
	if m == nil {
		return nil
	}
	return webapp.Describe(m.profile.DeviceMenu, m.profile.Permissions, lang)
}

// DescribedAlarms lists a module's active alarms as the assets name them.
func (c *Cloud) DescribedAlarms(devid, lang string) []webapp.DescribedAlarm {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byDevid[devid]
	if m == nil {
		return nil
	}
	var out []webapp.DescribedAlarm
	for _, row := range m.alarms {
		code, _ := row["name"].(string)
		a := webapp.AlarmByCode(code)
		name := a.EN
		if lang == "pl" {
			name = a.PL
		}
		out = append(out, webapp.DescribedAlarm{ID: a.ID, Code: code, Name: name})
	}
	return out
}
