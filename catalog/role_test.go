package catalog

import "testing"

// Roles are identified from identifiers and units only: the same register
// under another firmware's symbol, a Polish identifier, the icon alone, and
// no role for settings, lookalikes and units that do not fit.
func TestIdentifyRole(t *testing.T) {
	for _, c := range []struct {
		name string
		f    roleFacts
		want Role
	}{
		{"name key and %", roleFacts{symbol: "PARAM_P4_9", nameKey: "FUEL_LEVEL", icon: "FUEL", unit: "%"}, RoleFuelLevel},
		{"name key before the unit register is read", roleFacts{symbol: "PARAM_P4_9", nameKey: "FUEL_LEVEL"}, RoleFuelLevel},
		{"another firmware's symbol, Polish key", roleFacts{symbol: "PARAM_P11_3", nameKey: "POZIOM_PALIWA", unit: "%"}, RoleFuelLevel},
		{"legacy symbol", roleFacts{symbol: "STAN_PALIWA_ZASOBNIK", nameKey: "STAN_PALIWA_ZASOBNIK", unit: "%"}, RoleFuelLevel},
		{"icon and % only", roleFacts{symbol: "PARAM_P4_59", nameKey: "PARAM_P4_59", icon: "FUEL", unit: "%"}, RoleFuelLevel},
		{"icon and kg", roleFacts{symbol: "PARAM_P5_40", nameKey: "PARAM_P5_40", icon: "FUEL", unit: "kg"}, RoleFuelBurned},
		{"Polish burned key in tonnes", roleFacts{symbol: "PARAM_P7_2", nameKey: "ZUZYCIE_PALIWA", unit: "t"}, RoleFuelBurned},
		{"burned word alone in kg", roleFacts{symbol: "PARAM_P5_41", nameKey: "TOTAL_CONSUMPTION", unit: "kg"}, RoleFuelBurned},
		{"operating hours", roleFacts{symbol: "PARAM_P5_50", nameKey: "BURNER_OPERATING_HOURS", unit: "h"}, RoleOperatingHours},
		{"Polish hours", roleFacts{symbol: "PARAM_P5_51", nameKey: "MOTOGODZINY_PALNIKA", unit: "h"}, RoleOperatingHours},
		{"ignitions", roleFacts{symbol: "PARAM_P5_52", nameKey: "IGNITION_COUNT"}, RoleIgnitions},
		{"Polish ignitions", roleFacts{symbol: "PARAM_P5_53", nameKey: "LICZBA_ROZPALEN"}, RoleIgnitions},

		{"fuel level alarm threshold is a setting", roleFacts{symbol: "PARAM_P6_30", nameKey: "FUEL_LEVEL_MIN", icon: "FUEL", unit: "%", writable: true}, RoleNone},
		{"fan % is no fuel", roleFacts{symbol: "PARAM_P4_5", nameKey: "PARAM_P4_5", icon: "FAN", unit: "%"}, RoleNone},
		{"fuel word in °C", roleFacts{symbol: "PARAM_P4_6", nameKey: "FUEL_FEEDER_TEMP", unit: "°C"}, RoleNone},
		{"fuel without a unit or a level word", roleFacts{symbol: "PARAM_P4_60", nameKey: "FUEL_TYPE", icon: "FUEL"}, RoleNone},
		{"mass without a fuel or burned word", roleFacts{symbol: "PARAM_P5_42", nameKey: "ASH_BOX_CAPACITY", unit: "kg"}, RoleNone},
		{"burned as an enum", roleFacts{symbol: "PARAM_P4_61", icon: "FUEL", unit: "kg", enum: true}, RoleNone},
		{"hours unit without an hours word", roleFacts{symbol: "PARAM_P5_54", nameKey: "SERVICE_DELAY", unit: "h"}, RoleNone},
		{"hours word in minutes", roleFacts{symbol: "PARAM_P5_55", nameKey: "OPERATING_TIME", unit: "min"}, RoleNone},
		{"ignition as an on/off state", roleFacts{symbol: "STATUS_P5_7", nameKey: "IGNITER", enum: true}, RoleNone},
		{"word inside another word is no match", roleFacts{symbol: "PARAM_P4_62", nameKey: "REFUEL", unit: "%"}, RoleNone},
	} {
		if got := identifyRole(c.f); got != c.want {
			t.Errorf("%s: %+v → %q, want %q", c.name, c.f, got, c.want)
		}
	}
}

func TestParseOverridesRole(t *testing.T) {
	o, err := ParseOverrides([]byte("P4.v12: {role: fuel_level}\nPARAM_P4_9: {role: none}\n"))
	if err != nil || o.Len() != 2 {
		t.Fatalf("%v %v", o, err)
	}
	if r := o.byRegister[Address{Pool: "P4", Chan: 'v', Index: 12}].role; r == nil || *r != RoleFuelLevel {
		t.Fatalf("register role %v", r)
	}
	if r := o.bySymbol["PARAM_P4_9"].role; r == nil || *r != RoleNone {
		t.Fatalf("none: %v", r)
	}
	if _, err := ParseOverrides([]byte("P4.v12: {role: fuel}\n")); err == nil || err.Error() != `catalog overrides: "P4.v12": role "fuel" is none of fuel_level, fuel_burned, operating_hours, ignitions, none` {
		t.Fatalf("unknown role: %v", err)
	}
}
