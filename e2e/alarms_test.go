package e2e

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// boilerAlarm is an active alarm of a simulated module, as the alert names it.
type boilerAlarm struct {
	devid, code, name, module string
	// title is how the alert's summary names it: the name, and for a name
	// that is no translation, the code and the language it lacks.
	title string
}

// simulatedAlarms are the boiler alarms `serve --simulate` reports: its
// embedded cloud is built with the default modules and seed, so an identical
// cloud built here (never started) holds the same modules and alarms. The
// module names come from Prometheus (bragerone_module_info).
func simulatedAlarms(t *testing.T, exp *exporter, prom *prometheus) []boilerAlarm {
	t.Helper()
	twin := cloudsim.New(cloudsim.Options{Modules: 3, ParamsPerModule: 800, Seed: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if got := twin.Devids(); !slices.Equal(got, exp.devids) {
		t.Fatalf("the twin of the embedded cloud has modules %v, the exporter %v", got, exp.devids)
	}
	info, err := prom.query("bragerone_module_info")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, s := range info {
		names[s.Metric["devid"]] = s.Metric["name"]
	}
	var out []boilerAlarm
	for _, d := range exp.devids {
		for _, a := range twin.DescribedAlarms(d, "en") {
			name, title := a.Name, a.Name
			if name == "" {
				name = a.Code // no translation: the alarm's symbol
				title = fmt.Sprintf("%s (code %d, no translation in en)", a.Code, a.ID)
			}
			out = append(out, boilerAlarm{devid: d, code: fmt.Sprint(a.ID), name: name, module: names[d], title: title})
		}
	}
	if len(out) == 0 {
		t.Fatal("the simulated modules report no alarm: nothing to check BragerOneModuleAlarm against")
	}
	return out
}

// checkAlarmAlerts compares the BragerOneModuleAlarm alerts of one state
// ("pending" from the shipped rules, "firing" from their for: 0s copy) with
// the simulated alarms: one each, named after the alarm and the module.
func checkAlarmAlerts(as []promAlert, want []boilerAlarm, copied bool, state string) (bool, string) {
	var seen []string
	found := 0
	for _, a := range as {
		if a.Labels["alertname"] != "BragerOneModuleAlarm" || (a.Labels[copyMarker] != "") != copied || a.State != state {
			continue
		}
		i := slices.IndexFunc(want, func(w boilerAlarm) bool { return w.devid == a.Labels["devid"] && w.code == a.Labels["code"] })
		if i < 0 {
			return false, "an alarm alert for no simulated alarm: " + showAlerts([]promAlert{a})
		}
		w := want[i]
		if a.Labels["name"] != w.name || a.Labels["module"] != w.module || a.Labels["severity"] != "critical" ||
			a.Annotations["summary"] != "Boiler alarm "+w.title+" on module "+w.module+"." ||
			!strings.Contains(a.Annotations["description"], "since ") {
			return false, fmt.Sprintf("alert %v %v, want alarm %q on module %q, critical, with its start", a.Labels, a.Annotations, w.name, w.module)
		}
		found++
		seen = append(seen, w.devid+"/"+w.code)
	}
	return found == len(want), fmt.Sprintf("%s alarm alerts for %v, want %d", state, seen, len(want))
}

// onlyAlarmAlerts says whether every alert is one of the simulated alarms'
// (a boiler alarm, or the low fuel of a boiler out of fuel).
func onlyAlarmAlerts(as []promAlert, want []boilerAlarm) bool {
	for _, a := range as {
		// A boiler out of fuel (alarm code 38, ERROR_BRAK_PALIWA) is low
		// on fuel too: the simulated world's one fuel alert.
		if a.Labels["alertname"] == "BragerOneFuelLow" &&
			slices.ContainsFunc(want, func(w boilerAlarm) bool { return w.devid == a.Labels["devid"] && w.code == "38" }) {
			continue
		}
		if a.Labels["alertname"] != "BragerOneModuleAlarm" ||
			!slices.ContainsFunc(want, func(w boilerAlarm) bool { return w.devid == a.Labels["devid"] && w.code == a.Labels["code"] }) {
			return false
		}
	}
	return true
}
