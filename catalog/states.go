package catalog

// States are the labels of every option of the parameter's unit, in the
// order of the unit table, each once: the states an enum-valued parameter
// (an operating mode) or a computed state (a boiler's stop and work, a
// pump's on and off) can be in. Display's label is one of them. Nil when
// the unit has no options. Unlike Enum, which keys labels by raw value,
// States also holds the options keyed by a state's name (BoilerState['STOP'],
// [kn.ON]), which computed values take.
func (p *Param) States() []string {
	u := p.unitAt(nil)
	if u == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, o := range u.options {
		if o.label != "" && !seen[o.label] {
			seen[o.label] = true
			out = append(out, o.label)
		}
	}
	return out
}
