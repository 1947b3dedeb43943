package cloudsim

import "testing"

// fuelOf reads a module's fuel level (P4.v9) and fuel burned (P5.v40 low
// word, P5.v41 high word) as the catalog composes them.
func fuelOf(t *testing.T, c *Cloud, devid string) (level, burned int) {
	t.Helper()
	p := c.Params(devid)
	if p["P4.v9"] == nil || p["P5.v40"] == nil || p["P5.v41"] == nil {
		t.Fatalf("%s carries no fuel level or fuel burned: %v %v %v", devid, p["P4.v9"], p["P5.v40"], p["P5.v41"])
	}
	return toInt(p["P4.v9"]), wideTotal(p["P5.v40"], p["P5.v41"])
}

// The working boiler's hopper empties one point every FuelStepsPerPoint
// drift steps, its fuel-burned counter climbing FuelKgPerPoint with each
// point and never on its own; nearly empty, it is refilled, which burns
// nothing. The boiler stopped out of fuel keeps its level.
func TestFuelLevelFallsAndIsRefilled(t *testing.T) {
	c := New(Options{Modules: 2, ParamsPerModule: 300})
	defer c.Close()
	d := c.Devids()
	stoppedLevel, _ := fuelOf(t, c, d[0])
	level, burned := fuelOf(t, c, d[1])
	if level <= FuelRefillAt || level > 100 {
		t.Fatalf("initial level %d", level)
	}
	for i := 1; i < FuelStepsPerPoint; i++ {
		c.Drift()
		if l, b := fuelOf(t, c, d[1]); l != level || b != burned {
			t.Fatalf("step %d: level %d burned %d, want %d %d until the point is burned", i, l, b, level, burned)
		}
	}
	c.Drift()
	if l, b := fuelOf(t, c, d[1]); l != level-1 || b != burned+FuelKgPerPoint {
		t.Fatalf("after %d steps: level %d burned %d, want %d %d", FuelStepsPerPoint, l, b, level-1, burned+FuelKgPerPoint)
	}

	c.SetParam(d[1], "P4.v9", FuelRefillAt+1)
	_, burned = fuelOf(t, c, d[1])
	for i := 0; i < FuelStepsPerPoint; i++ {
		c.Drift()
	}
	if l, b := fuelOf(t, c, d[1]); l != FuelRefillAt || b != burned+FuelKgPerPoint {
		t.Fatalf("level %d burned %d, want %d %d", l, b, FuelRefillAt, burned+FuelKgPerPoint)
	}
	for i := 0; i < FuelStepsPerPoint; i++ {
		c.Drift()
	}
	if l, b := fuelOf(t, c, d[1]); l != FuelRefillTo || b != burned+FuelKgPerPoint {
		t.Fatalf("after the refill: level %d burned %d, want %d %d", l, b, FuelRefillTo, burned+FuelKgPerPoint)
	}
	if l, _ := fuelOf(t, c, d[0]); l != stoppedLevel {
		t.Fatalf("the stopped boiler's level moved: %d → %d", stoppedLevel, l)
	}
}
