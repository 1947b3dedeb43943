package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// labelsOf is the label map of one series.
func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// series lists the series of a family whose labels include want.
func series(mfs map[string]*dto.MetricFamily, name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
next:
	for _, m := range mfs[name].GetMetric() {
		l := labelsOf(m)
		for k, v := range want {
			if l[k] != v {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// `serve --simulate` shows named, scaled parameters, enum states and named
// alarms out of the box; the raw family stays as it is.
func TestServeSimulateShowsNamedParameters(t *testing.T) {
	r := startServeRun(t, append([]string{"--simulate", "--simulate.objects=1", "--simulate.params-per-module=120"}, fastServeFlags...)...)
	var power *dto.Metric
	r.waitServe("Boiler power described", func(mfs map[string]*dto.MetricFamily) bool {
		s := series(mfs, "bragerone_parameter_info", map[string]string{"name": "Boiler power", "pool": "P4", "param": "v7"})
		if len(s) == 0 {
			return false
		}
		power = s[0]
		return true
	})
	l := labelsOf(power)
	if l["unit"] != "kW" || l["symbol"] != "PARAM_P4_7" || l["visible"] != "true" || l["menu"] == "" {
		t.Errorf("Boiler power info: %v", l)
	}
	mfs, body, err := r.scrape()
	if err != nil {
		t.Fatal(err)
	}
	devid := l["devid"]
	at := map[string]string{"devid": devid, "pool": "P4", "param": "v7"}
	raw, okRaw := gaugeValue(mfs, "bragerone_parameter_value", at)
	shown, okShown := gaugeValue(mfs, "bragerone_parameter_display_value", at)
	if !okRaw || !okShown || math.Abs(shown-math.Round(raw)/10) > 1e-9 {
		t.Errorf("P4.v7 of %s: raw %v (%v), display %v (%v); want raw × 0.1", devid, raw, okRaw, shown, okShown)
	}
	temp := series(mfs, "bragerone_parameter_info", map[string]string{"devid": devid, "pool": "P4", "param": "v1"})
	if len(temp) != 1 || labelsOf(temp[0])["name"] != "Boiler temperature" || labelsOf(temp[0])["unit"] != "°C" {
		t.Errorf("P4.v1 info: %v", temp)
	}

	// Every enum has exactly one state at 1 (the simulated values are
	// options of their enums).
	current := map[string]int{}
	for _, m := range mfs["bragerone_parameter_state"].GetMetric() {
		l := labelsOf(m)
		if m.GetGauge().GetValue() == 1 {
			current[l["devid"]+" "+l["pool"]+"."+l["param"]]++
		} else {
			current[l["devid"]+" "+l["pool"]+"."+l["param"]] += 0
		}
	}
	if len(current) == 0 {
		t.Errorf("no enum state series:\n%s", tailLines(string(body), 20))
	}
	// The boiler state is computed from status bits; its options are keyed
	// by state names.
	if n := len(series(mfs, "bragerone_parameter_state", map[string]string{"devid": devid, "pool": "P5", "param": "s0"})); n < 2 {
		t.Errorf("the computed boiler state of %s has %d state series", devid, n)
	}
	for p, n := range current {
		if n != 1 {
			t.Errorf("%s has %d current states, want 1", p, n)
		}
	}

	alarms := mfs["bragerone_module_alarm_active"].GetMetric()
	if len(alarms) == 0 {
		t.Fatal("no active alarm series against the simulated cloud")
	}
	for _, m := range alarms {
		l := labelsOf(m)
		if l["code"] == "38" && l["name"] != "Out of fuel" {
			t.Errorf("alarm 38 named %q, want the catalog's \"Out of fuel\"", l["name"])
		}
		if _, ok := gaugeValue(mfs, "bragerone_module_alarm_since_timestamp_seconds", map[string]string{"devid": l["devid"], "code": l["code"]}); !ok {
			t.Errorf("alarm %v has no start", l)
		}
	}
	for _, name := range []string{"bragerone_catalog_loaded", "bragerone_catalog_assets_up"} {
		if v, _ := gaugeValue(mfs, name, nil); v != 1 {
			t.Errorf("%s = %v, want 1", name, v)
		}
	}
	if n := len(mfs["bragerone_catalog_symbols"].GetMetric()); n != 3 {
		t.Errorf("symbols described for %d modules, want 3", n)
	}
}

// An unreachable assets site is the catalog's own signal: the exporter is
// ready, the session and the modules are healthy and raw values flow; when
// the site comes back the catalog loads, and when it goes again the last
// good catalog stays.
func TestServeUnreachableAssetsAreTheirOwnSignal(t *testing.T) {
	sim := startToolCloud(t)
	fault := sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAssetsUnreachable})
	r := startServeRun(t, append([]string{"--cloud.url=" + sim.URL(), "--cloud.email=demo@example.com", "--catalog.refresh-interval=300ms"}, fastServeFlags...)...)
	healthy := func(mfs map[string]*dto.MetricFamily) bool {
		up, _ := gaugeValue(mfs, "bragerone_session_up", nil)
		for _, d := range sim.Devids() {
			if v, ok := gaugeValue(mfs, "bragerone_module_online", map[string]string{"devid": d}); !ok || v != 1 {
				return false
			}
		}
		return up == 1 && len(mfs["bragerone_parameter_value"].GetMetric()) > 0
	}
	r.waitServe("healthy without assets", func(mfs map[string]*dto.MetricFamily) bool {
		assetsUp, known := gaugeValue(mfs, "bragerone_catalog_assets_up", nil)
		return healthy(mfs) && known && assetsUp == 0
	})
	mfs, _, _ := r.scrape()
	if v, _ := gaugeValue(mfs, "bragerone_catalog_loaded", nil); v != 0 || len(mfs["bragerone_parameter_info"].GetMetric()) != 0 {
		t.Errorf("catalog loaded %v with %d info series while the assets site is down", v, len(mfs["bragerone_parameter_info"].GetMetric()))
	}
	if code, _, err := r.get("/-/ready"); err != nil || code != 200 {
		t.Errorf("/-/ready = %d, %v while only the assets site is down", code, err)
	}

	sim.Clear(fault)
	r.waitServe("catalog loaded once the site is back", func(mfs map[string]*dto.MetricFamily) bool {
		v, _ := gaugeValue(mfs, "bragerone_catalog_loaded", nil)
		return v == 1 && len(mfs["bragerone_parameter_info"].GetMetric()) > 0
	})
	mfs, _, _ = r.scrape()
	infos := len(mfs["bragerone_parameter_info"].GetMetric())

	sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultAssetsUnreachable})
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last state: %s", last)
		}
	}()
	r.waitServe("the site down again, the last good catalog kept", func(mfs map[string]*dto.MetricFamily) bool {
		assetsUp, _ := gaugeValue(mfs, "bragerone_catalog_assets_up", nil)
		loaded, _ := gaugeValue(mfs, "bragerone_catalog_loaded", nil)
		n := len(mfs["bragerone_parameter_info"].GetMetric())
		last = fmt.Sprintf("assets_up %v, loaded %v, %d info series (want %d), healthy %v", assetsUp, loaded, n, infos, healthy(mfs))
		return assetsUp == 0 && loaded == 1 && n == infos && healthy(mfs)
	})
}

// A language the web app does not offer stops serve at start with exit
// code 2 and the offered languages.
func TestServeUnknownLanguageExitsTwo(t *testing.T) {
	r := startServeRun(t, "--simulate", "--simulate.params-per-module=50", "--catalog.language=xx")
	select {
	case code := <-r.done:
		r.done <- code
		if code != exitUsage {
			t.Errorf("exit code %d, want %d", code, exitUsage)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve kept running with a language the web app does not offer")
	}
	stderr := r.stderr.String()
	if !strings.Contains(stderr, `"xx"`) || !strings.Contains(stderr, "en, pl") {
		t.Errorf("stderr does not name the language and the offered ones: %q", stderr)
	}
}

// Catalog flags that cannot work are refused before anything starts.
func TestServeCatalogFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("P4.v7:\n  colour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--catalog.language=e"}, "--catalog.language"},
		{[]string{"--catalog.language=e n"}, "--catalog.language"},
		{[]string{"--catalog.refresh-interval=0s"}, "--catalog.refresh-interval"},
		{[]string{"--catalog.overrides-file=" + filepath.Join(dir, "missing.yml")}, "catalog.overrides-file"},
		{[]string{"--catalog.overrides-file=" + bad}, "colour"},
	} {
		code, _, stderr := runArgs(t, append([]string{"serve", "--simulate"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d naming %s", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

// With the catalog off nothing of it is exported; alarms keep the cloud's
// symbols.
func TestServeCatalogDisabled(t *testing.T) {
	r := startServeRun(t, append([]string{"--simulate", "--simulate.params-per-module=50", "--catalog.disable"}, fastServeFlags...)...)
	r.waitServe("alarms read", func(mfs map[string]*dto.MetricFamily) bool {
		return len(mfs["bragerone_module_alarm_active"].GetMetric()) > 0 && len(mfs["bragerone_parameter_value"].GetMetric()) > 0
	})
	mfs, _, _ := r.scrape()
	for name := range mfs {
		if strings.HasPrefix(name, "bragerone_catalog_") || name == "bragerone_parameter_info" || name == "bragerone_parameter_display_value" || name == "bragerone_parameter_state" || name == "bragerone_parameter_display_text" {
			t.Errorf("%s exported with --catalog.disable", name)
		}
	}
	for _, m := range mfs["bragerone_module_alarm_active"].GetMetric() {
		if l := labelsOf(m); l["code"] == "38" && l["name"] != "ERROR_BRAK_PALIWA" {
			t.Errorf("alarm 38 named %q without a catalog, want the cloud's symbol", l["name"])
		}
	}
}

// The catalog flags come from the environment and the configuration file
// like every other flag.
func TestCatalogFlagsFromEnvironmentAndFile(t *testing.T) {
	cfg := writeConfig(t, "catalog:\n  language: pl\n  refresh-interval: 2h\n")
	t.Setenv("BRAGERONE_CATALOG_DISABLE", "true")
	cli, err := parseForTest(t, "serve", "--config.file="+cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := cli.Serve.catalogFlags
	if c.Language != "pl" || c.RefreshInterval != 2*time.Hour || !c.Disable {
		t.Errorf("catalog flags %+v, want pl, 2h and disabled", c)
	}
	cli, err = parseForTest(t, "serve")
	if err != nil {
		t.Fatal(err)
	}
	if c := cli.Serve.catalogFlags; c.Language != "en" || c.RefreshInterval != 6*time.Hour {
		t.Errorf("defaults %+v, want en and 6h", c)
	}
}
