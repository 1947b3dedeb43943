package alerts

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/bragerone/bragerone_exporter/alerts/metricref"
	"github.com/bragerone/bragerone_exporter/collector"
)

// exporterWideAlerts read the series of every object's session but speak of
// the exporter as a whole, on purpose: they aggregate object_id away.
var exporterWideAlerts = []string{"BragerOneAllSessionsDown"}

// TestAlertsOnObjectSeriesNameTheObject: every alert whose expression reads
// a series that carries object_id in METRICS.md keeps object_id and names
// the object (label object), as its firing cases in the unit tests show,
// unless it is one of the exporter-wide alerts.
func TestAlertsOnObjectSeriesNameTheObject(t *testing.T) {
	labels, err := metricref.ContractLabels(readFile(t, metricsMDPath))
	if err != nil {
		t.Fatal(err)
	}
	firing := firingLabels(t)
	checked := 0
	for _, r := range alertRules(t) {
		var perObject []string
		for _, n := range metricref.InExpr(r.Expr) {
			if slices.Contains(labels[n], "object_id") {
				perObject = append(perObject, n)
			}
		}
		if len(perObject) == 0 {
			continue
		}
		checked++
		carries := slices.Contains(firing[r.Alert], "object_id") && slices.Contains(firing[r.Alert], "object")
		switch wide := slices.Contains(exporterWideAlerts, r.Alert); {
		case wide && slices.Contains(firing[r.Alert], "object_id"):
			t.Errorf("%s: exporter-wide, yet it fires with object_id", r.Alert)
		case !wide && !carries:
			t.Errorf("%s reads %q, which carry object_id, but fires with the labels %q: it must keep object_id and name the object",
				r.Alert, perObject, firing[r.Alert])
		}
	}
	if checked == 0 {
		t.Error("no alert reads a series that carries object_id in METRICS.md")
	}
}

// seriesLabel is one label of an input series of a promtool unit test.
var seriesLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// inputSeries splits an input series of a promtool unit test into its
// metric name and labels.
func inputSeries(s string) (string, map[string]string) {
	name, rest, _ := strings.Cut(s, "{")
	ls := map[string]string{}
	for _, m := range seriesLabel.FindAllStringSubmatch(rest, -1) {
		ls[m[1]] = m[2]
	}
	return strings.TrimSpace(name), ls
}

// expectedObject is how an alert must name an object of a unit test's
// input: the name its bragerone_object_info gives it, or its id when it has
// no info series or an empty name.
func expectedObject(info map[string]string, id string) string {
	if n := info[id]; n != "" {
		return n
	}
	return id
}

// TestSessionAlertsHaveANearMissOnAnotherObject: every alert on one
// object's session (it fires with object_id and without devid) has a unit
// test where objects of one exporter carry its series, one of them fires and
// another stays silent at or after the for: duration, and the firing alert
// names its own object, in its object label and in its summary, as the
// object's info series names it.
func TestSessionAlertsHaveANearMissOnAnotherObject(t *testing.T) {
	firing := firingLabels(t)
	rules := map[string]rule{}
	var sessionAlerts []string
	for _, r := range alertRules(t) {
		rules[r.Alert] = r
		if l := firing[r.Alert]; slices.Contains(l, "object_id") && !slices.Contains(l, "devid") {
			sessionAlerts = append(sessionAlerts, r.Alert)
		}
	}
	if len(sessionAlerts) == 0 {
		t.Fatal("no alert fires per object in the unit tests")
	}
	covered := map[string]bool{}
	files, _ := filepath.Glob("tests/*.yml")
	for _, file := range files {
		var ut unitTests
		if err := yaml.Unmarshal(readFile(t, file), &ut); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for gi, tg := range ut.Tests {
			names := map[string]map[string]string{} // instance -> object_id -> name
			type key struct{ instance, objectID string }
			carriers := map[string]map[key]bool{} // metric -> objects whose series the test has
			for _, in := range tg.InputSeries {
				metric, ls := inputSeries(in.Series)
				id, ok := ls["object_id"]
				if !ok {
					continue
				}
				if metric == "bragerone_object_info" {
					if names[ls["instance"]] == nil {
						names[ls["instance"]] = map[string]string{}
					}
					names[ls["instance"]][id] = ls["name"]
				}
				if carriers[metric] == nil {
					carriers[metric] = map[key]bool{}
				}
				carriers[metric][key{ls["instance"], id}] = true
			}
			for _, at := range tg.AlertRuleTest {
				r := rules[at.Alertname]
				if !slices.Contains(sessionAlerts, at.Alertname) || len(at.ExpAlerts) == 0 {
					continue
				}
				evalTime, _ := model.ParseDuration(at.EvalTime)
				forDur, _ := model.ParseDuration(r.For)
				if time.Duration(evalTime) < time.Duration(forDur) {
					continue
				}
				// The objects of the test that carry a series the alert reads.
				objects := map[key]bool{}
				for _, n := range metricref.InExpr(r.Expr) {
					maps.Copy(objects, carriers[n])
				}
				fired := map[key]bool{}
				for _, ea := range at.ExpAlerts {
					k := key{ea.ExpLabels["instance"], ea.ExpLabels["object_id"]}
					fired[k] = true
					want := expectedObject(names[k.instance], k.objectID)
					if got := ea.ExpLabels["object"]; got != want {
						t.Errorf("%s: test %d: %s at %s: object %s is named %q, its info series says %q",
							file, gi+1, at.Alertname, at.EvalTime, k.objectID, got, want)
					}
					if !strings.Contains(ea.ExpAnnotations["summary"], want) {
						t.Errorf("%s: test %d: %s at %s: the summary %q does not name object %q",
							file, gi+1, at.Alertname, at.EvalTime, ea.ExpAnnotations["summary"], want)
					}
				}
				for k := range objects {
					if fired[k] {
						continue
					}
					for f := range fired {
						if f.instance == k.instance {
							covered[at.Alertname] = true
						}
					}
				}
			}
		}
	}
	for _, a := range sessionAlerts {
		if !covered[a] {
			t.Errorf("%s: no unit test where one object of an exporter fires and another object of the same exporter, carrying the series the alert reads, stays silent after the for: duration", a)
		}
	}
}

// TestObjectDepartedSaysEachReason: BragerOneObjectDeparted's description
// tells the departure reasons apart, each a reason the exporter exports:
// the reasons it names are the exporter's, and every reason but the one its
// default wording speaks of (unlisted) is named.
func TestObjectDepartedSaysEachReason(t *testing.T) {
	named := regexp.MustCompile(`eq \$labels\.reason "([^"]*)"`)
	for _, r := range alertRules(t) {
		if r.Alert != "BragerOneObjectDeparted" {
			continue
		}
		var got []string
		for _, m := range named.FindAllStringSubmatch(r.Annotations["description"], -1) {
			got = append(got, m[1])
		}
		reasons := collector.DepartureReasons()
		for _, v := range got {
			if !slices.Contains(reasons, v) {
				t.Errorf("the description names reason %q, which the exporter never exports (it has %q)", v, reasons)
			}
		}
		for _, v := range reasons {
			if v != collector.DepartureUnlisted && !slices.Contains(got, v) {
				t.Errorf("the description does not word reason %q (it names %q)", v, got)
			}
		}
		return
	}
	t.Fatal("no BragerOneObjectDeparted")
}
