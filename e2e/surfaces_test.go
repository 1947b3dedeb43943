package e2e

import (
	"encoding/json"
	"html"
	"maps"
	"regexp"
	"slices"
	"testing"
	"time"
)

// paramRow is one parameter row of a module page: its symbol (the row's
// title) and the value cell.
var paramRow = regexp.MustCompile(`(?s)<tr class="param[^"]*" title="([^"]*)">.*?<td class="num value">([^<]*)</td>`)

// TestEverySurfaceShowsTheSameParameters runs `serve` on the embedded
// simulated cloud and the `catalog` tool against that same cloud, and checks
// that /metrics, the module pages and the tool show a value for the same
// parameters of every module. The valve's STATUS_P5_21, whose definition
// names another register than its status register, shows on none.
func TestEverySurfaceShowsTheSameParameters(t *testing.T) {
	t.Parallel()
	exp := startServeSimulate(t, "--simulate.objects=2")
	exp.waitFullScrape(t, exp.devids, 30*time.Second)
	// The catalog loads after the first prime: wait for its series.
	full := exp.waitMetric(t, 30*time.Second, "every module described", func(s scrape) (bool, string) {
		for _, d := range exp.devids {
			if len(s.series("bragerone_parameter_info", map[string]string{"devid": d})) == 0 {
				return false, "no bragerone_parameter_info of " + d
			}
		}
		return true, ""
	})

	p := startProc(t, "catalog", exporterBin, demoEnv, "catalog", "--cloud.url="+exp.sim.base, "-o", "json", "--log.format=json")
	if code := p.waitExit(t, 60*time.Second); code != 0 {
		t.Fatalf("catalog exited %d", code)
	}
	var doc struct {
		Modules []struct {
			Devid  string `json:"devid"`
			Params []struct {
				Symbol   string  `json:"symbol"`
				Register string  `json:"register"`
				Computed *string `json:"computed_primary"`
				Value    any     `json:"value"`
			} `json:"params"`
		} `json:"modules"`
	}
	if err := json.Unmarshal([]byte(p.stdout.String()), &doc); err != nil {
		t.Fatalf("catalog -o json: %v", err)
	}
	if len(doc.Modules) != len(exp.devids) {
		t.Fatalf("catalog describes %d modules, serve watches %v", len(doc.Modules), exp.devids)
	}
	elsewhere := 0
	for _, m := range doc.Modules {
		tool := map[string]bool{}
		for _, p := range m.Params {
			if p.Value != nil {
				tool[p.Symbol] = true
			}
			if p.Computed != nil {
				elsewhere++
				if p.Value != nil {
					t.Errorf("%s %s (definition names %s) shows %v; its status register %s is not reported", m.Devid, p.Symbol, *p.Computed, p.Value, p.Register)
				}
			}
		}
		metrics := map[string]bool{}
		for _, s := range full.series("bragerone_parameter_info", map[string]string{"devid": m.Devid}) {
			metrics[labelsOf(s)["symbol"]] = true
		}
		code, page := httpGet(t, nil, exp.url+"/status/modules/"+m.Devid)
		if code != 200 {
			t.Fatalf("module page of %s: HTTP %d", m.Devid, code)
		}
		pageShown := map[string]bool{}
		for _, row := range paramRow.FindAllStringSubmatch(page, -1) {
			if v := html.UnescapeString(row[2]); v != "—" {
				pageShown[html.UnescapeString(row[1])] = true
			}
		}
		if len(tool) == 0 {
			t.Fatalf("%s: the tool shows no value", m.Devid)
		}
		for what, got := range map[string]map[string]bool{"/metrics": metrics, "the module page": pageShown} {
			if !maps.Equal(got, tool) {
				t.Errorf("%s: %s shows %v, the catalog tool %v", m.Devid, what, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(tool)))
			}
		}
	}
	if elsewhere == 0 {
		t.Fatal("no module shows a status symbol whose definition names another register: the simulated valve should")
	}
}
