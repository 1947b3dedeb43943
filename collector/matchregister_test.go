package collector

import "testing"

// TestParameterPatternsMatchInAnyCase: --parameters.include/exclude match a
// register whatever the case of the pattern.
func TestParameterPatternsMatchInAnyCase(t *testing.T) {
	for _, tc := range []struct {
		pattern, register string
		want              bool
	}{
		{"P4.v8", "P4.v8", true}, {"p4.V8", "P4.v8", true}, {"P4.V*", "P4.v12", true}, {"p?.S1", "P5.s1", true},
		{"P4.v8", "P4.v80", false}, {"P9.*", "P4.v8", false},
	} {
		if got := MatchRegister(tc.pattern, tc.register); got != tc.want {
			t.Errorf("MatchRegister(%q, %q) = %v, want %v", tc.pattern, tc.register, got, tc.want)
		}
	}
	c := newTestCollector(t, healthySnapshot(), healthyParams(), Options{Include: []string{"p4.*"}, Exclude: []string{"*.S*"}})
	got := gather(t, c)["bragerone_parameter_value"]
	if len(got) == 0 {
		t.Fatal("include p4.* exported no parameter")
	}
	if _, ok := got["devid=MOD1,param=s40,pool=P4"]; ok {
		t.Error("exclude *.S* let P4.s40 through")
	}
	if _, ok := got["devid=MOD1,param=v8,pool=P4"]; !ok {
		t.Errorf("include p4.* left out P4.v8: %v", got)
	}
	if _, ok := got["devid=MOD1,param=v3,pool=P5"]; ok {
		t.Error("include p4.* let P5.v3 through")
	}
}
