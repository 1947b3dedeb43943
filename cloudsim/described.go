package cloudsim

import (
	"math"
	"strconv"
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
