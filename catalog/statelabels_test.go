package catalog

import (
	"slices"
	"testing"
)

func TestStateLabelsIncludeComputedStates(t *testing.T) {
	units := &unitTable{memo: map[string]*unit{
		"9998": {code: "9998", options: []option{{key: "BoilerState['STOP']", norm: "STOP", label: "Stopped"}, {key: "BoilerState['WORK']", norm: "WORK", label: "Working"}}},
		"9":    {code: "9", options: []option{{key: "0", norm: "0", label: "Off"}, {key: "1", norm: "1", label: "On"}}, enum: map[int]string{0: "Off", 1: "On"}},
		"1":    {code: "1", symbol: "°C"},
	}, frozen: true}
	scale := 0.5
	for _, tc := range []struct {
		p    *Param
		want []string
	}{
		{&Param{units: units, unitCode: "9998"}, []string{"Stopped", "Working"}},
		{&Param{units: units, unitCode: "9"}, []string{"Off", "On"}},
		{&Param{units: units, unitCode: "1"}, nil},
		{&Param{units: units, unitCode: "9", override: &override{scale: &scale}}, nil},
		{&Param{}, nil},
	} {
		if got := tc.p.StateLabels(); !slices.Equal(got, tc.want) {
			t.Errorf("unit %q: %v, want %v", tc.p.unitCode, got, tc.want)
		}
	}
}
