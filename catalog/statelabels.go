package catalog

// StateLabels are the labels of every option of the parameter's enum unit
// (the unit at load time), in the unit's order. Unlike Enum, keyed by raw
// number, they include the options keyed by a computed state name
// (BoilerState['WORK'], [kn.ON]), whose labels Display gives for computed
// values. Nil when the unit is not an enum, or an override's scale replaced
// the unit.
func (p *Param) StateLabels() []string {
	if p.override != nil && p.override.scale != nil || p.units == nil {
		return nil
	}
	u := p.units.get(p.unitCode)
	if u == nil || len(u.options) == 0 {
		return nil
	}
	out := make([]string, 0, len(u.options))
	for _, o := range u.options {
		out = append(out, o.label)
	}
	return out
}
