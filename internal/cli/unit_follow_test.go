package cli

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// TestServeUnitFollowsTheUnitRegister: a parameter whose unit comes from
// its u channel is labelled with the unit the module reports now: when
// the module changes the unit code (seconds to minutes), parameter_info's
// unit label follows, as the spec takes the unit from the u channel.
func TestServeUnitFollowsTheUnitRegister(t *testing.T) {
	sim := startNamedCloud(t)
	d := sim.Devids()[0]
	// Feeder cycle time (P6.v45) is in seconds; the pump run-on time's
	// unit code is minutes'.
	var reg, minutes webapp.Register
	for _, r := range webapp.Profiles()[0].Registers {
		switch r.Symbol {
		case "PARAM_45":
			reg = r
		case "PARAM_P6_6":
			minutes = r
		}
	}
	if !reg.UChan || !minutes.UChan {
		t.Fatalf("the simulated profile's PARAM_45 %+v or PARAM_P6_6 %+v has no u channel", reg, minutes)
	}
	pool, chanIdx, _ := strings.Cut(reg.Address, ".")
	unitKey := pool + ".u" + chanIdx[1:]
	r := startServeRun(t, append([]string{"--cloud.url=" + sim.URL(), "--cloud.email=demo@example.com"}, fastServeFlags...)...)
	unitOf := func(mfs map[string]*dto.MetricFamily) string {
		s := series(mfs, "bragerone_parameter_info", map[string]string{"devid": d, "pool": pool, "param": chanIdx})
		if len(s) != 1 {
			return ""
		}
		return labelsOf(s[0])["unit"]
	}
	r.waitServe(reg.Symbol+" in seconds", func(mfs map[string]*dto.MetricFamily) bool { return unitOf(mfs) == "s" })
	sim.SetParam(d, unitKey, float64(minutes.Unit))
	r.waitServe(reg.Symbol+" in minutes after "+unitKey+" changed", func(mfs map[string]*dto.MetricFamily) bool {
		return unitOf(mfs) == "min"
	})
	sim.SetParam(d, unitKey, float64(reg.Unit))
	r.waitServe(reg.Symbol+" back in seconds", func(mfs map[string]*dto.MetricFamily) bool { return unitOf(mfs) == "s" })
}
