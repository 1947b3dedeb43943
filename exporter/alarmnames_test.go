package exporter

import (
	"html"
	"strconv"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// TestAlarmNamesOnMetricsAndModulePage: the exporter names an alarm on
// /metrics and on the module page wherever the web app's translations carry
// a name for it (a token of another namespace, the app namespace by type id,
// the fallback language), in the catalog's language; an alarm the web app
// does not know keeps its symbol and is said to be untranslated.
func TestAlarmNamesOnMetricsAndModulePage(t *testing.T) {
	cfg := simulatedConfig(t)
	cfg.Catalog.Language = "pl"
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	devid := e.sim.Devids()[0]
	codes := []int{14, 21, 57, 91}
	for _, code := range codes {
		if err := e.sim.RaiseAlarm(devid, code); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveRun(t, e)

	want := map[int]string{}
	for _, code := range codes {
		a := webapp.AlarmByID(code)
		want[code] = a.PL
		if a.PL == "" {
			want[code] = a.Code
		}
	}
	series := func(code int) string {
		return `bragerone_module_alarm_active{code="` + strconv.Itoa(code) + `",devid="` + devid + `",name="` + want[code] + `"} 1`
	}
	var body string
	waitFor(t, "every raised alarm named on /metrics", func() bool {
		_, body = get(t, srv, "/metrics")
		for _, code := range codes {
			if !strings.Contains(body, series(code)) {
				return false
			}
		}
		return true
	})
	_, page := get(t, srv, "/status/modules/"+devid)
	page = html.UnescapeString(page)
	for _, code := range codes {
		if !strings.Contains(page, want[code]) {
			t.Errorf("the module page does not name alarm %d %q (%s)", code, want[code], webapp.AlarmByID(code).Where)
		}
	}
	if !strings.Contains(page, "no translation in pl") {
		t.Error("the module page does not say alarm 91 has no translation in pl")
	}
}
