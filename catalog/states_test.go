package catalog

import (
	"slices"
	"testing"
)

// States lists a unit's options in table order, each label once, whether
// keyed by raw value or by a computed state's name; none without options.
func TestStates(t *testing.T) {
	units := testUnits(t, `{0x9:{'options':{0x0:'units.17.0',0x1:'units.17.1',0x2:'units.17.1'}},
		0x270e:{'options':{"BoilerState['STOP']":'app.one.burnerState.0',"BoilerState['WORK']":'app.one.burnerState.1'}},
		0x270a:{'options':{'[kn.ON]':'app.one.diodeState.on','[kn.OFF]':'app.one.diodeState.off'},'colors':{}},
		0x31:{'text':'units.31','value':k=>Number(k*0.1)['toFixed'](0x1)}}`, enUnits(t))
	for code, want := range map[string][]string{
		"9":    {"Off", "On"},
		"9998": {"Stop", "Work"},
		"9994": {"On", "Off"},
		"49":   nil,
		"4242": nil,
	} {
		p := &Param{units: units, unitCode: code}
		if got := p.States(); !slices.Equal(got, want) {
			t.Errorf("unit %s: States() = %q, want %q", code, got, want)
		}
	}
}
