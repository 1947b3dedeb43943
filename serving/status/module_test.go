package status

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// catalogFixture describes MOD1 in two menus: a scaled value, a setpoint, a
// computed state with no numeric value but a label, an enum, a hidden
// setting, and a register the module has not reported.
func catalogFixture() *collector.CatalogState {
	tenth := func(pool, param string) func(store.Reader) (float64, string, bool) {
		return func(r store.Reader) (float64, string, bool) {
			v, ok := r(pool, param)
			return v / 10, "", ok
		}
	}
	return &collector.CatalogState{
		Loaded: true, Language: "en",
		Modules: map[string]*collector.ModuleCatalog{
			"MOD1": {Symbols: 7, Params: []collector.ParamDescription{
				{Pool: "P4", Param: "v1", Symbol: "PARAM_P4_1", Name: "Boiler temperature", Unit: "°C", Menu: "Boiler"},
				{Pool: "P4", Param: "v7", Symbol: "PARAM_P4_7", Name: "Boiler power", Unit: "kW", Menu: "Boiler", Display: tenth("P4", "v7")},
				{Pool: "P5", Param: "s0", Symbol: "STATUS_P5_0", Name: "Boiler state", Menu: "Boiler", States: []string{"Stop", "Work"},
					Display: func(r store.Reader) (float64, string, bool) {
						if v, ok := r("P5", "s0"); ok && v == 11 {
							return 0, "Work", false
						}
						return 0, "", false
					}},
				{Pool: "P6", Param: "v1", Symbol: "PARAM_P6_1", Name: "Boiler set temperature", Unit: "°C", Menu: "Boiler"},
				{Pool: "P6", Param: "v5", Symbol: "PARAM_P6_5", Name: "Operating mode", Menu: "Service/Burner", States: []string{"Winter", "Summer"},
					Display: func(r store.Reader) (float64, string, bool) {
						v, ok := r("P6", "v5")
						return v, map[float64]string{0: "Winter", 1: "Summer"}[v], ok
					}},
				{Pool: "P6", Param: "v9", Symbol: "PARAM_P6_9", Name: "Frost protection temperature", Unit: "°C", Menu: "Service/Burner",
					Visible: func(store.Reader) bool { return false }},
				{Pool: "P6", Param: "v45", Symbol: "PARAM_45", Name: "Feeder cycle time", Unit: "s", Menu: "Service/Burner"},
			}},
		},
		AlarmName: func(code, symbol string) (string, bool) {
			if symbol == "ERROR_BRAK_PALIWA" {
				return "Out of fuel", true
			}
			return "", false
		},
	}
}

var fixtureValues = map[string]float64{"P4.v1": 61.5, "P4.v7": 53, "P5.s0": 11, "P6.v1": 70, "P6.v5": 1, "P6.v9": 5}

func fixtureParams(cs *collector.CatalogState) CatalogParams {
	return CatalogParams{
		Catalog: collector.CatalogSourceFunc(func() *collector.CatalogState { return cs }),
		Values: func(devid string) store.Reader {
			return func(pool, param string) (float64, bool) {
				if devid != "MOD1" {
					return 0, false
				}
				v, ok := fixtureValues[pool+"."+param]
				return v, ok
			}
		},
	}
}

func moduleScenario() collector.Snapshot {
	s := scenario()
	for i := range s.Modules {
		if s.Modules[i].Devid == "MOD1" {
			s.Modules[i].ActiveAlarmsKnown = true
			s.Modules[i].ActiveAlarms = []collector.Alarm{
				{Code: "38", Symbol: "ERROR_BRAK_PALIWA", Since: t0.Add(-90 * time.Minute)},
				{Code: "91", Symbol: "ERROR_MODUL_ROZSZERZEN"},
			}
		}
	}
	return s
}

func renderModule(t *testing.T, s collector.Snapshot, ps ParamSource, devid string) *node {
	t.Helper()
	var buf strings.Builder
	found, err := RenderModule(&buf, s, ps, devid, Options{})
	if err != nil || !found {
		t.Fatalf("RenderModule(%q) = %v, %v", devid, found, err)
	}
	if *writeHTML != "" {
		if err := os.WriteFile(*writeHTML, []byte(buf.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return parsePage(t, []byte(buf.String()))
}

// cells is the trimmed text of every td of a row.
func cells(row *node) []string {
	var out []string
	for _, td := range row.find(tagged("td")) {
		out = append(out, strings.Join(strings.Fields(td.Text), " "))
	}
	return out
}

func TestModulePageGroupsParametersByMenu(t *testing.T) {
	doc := renderModule(t, moduleScenario(), fixtureParams(catalogFixture()), "MOD1")

	if h := doc.find(tagged("h1")); len(h) != 1 || strings.TrimSpace(h[0].Text) != "Kitchen" {
		t.Errorf("heading %v, want the module's name", h)
	}
	sections := doc.find(func(n *node) bool { return n.Name == "section" })
	var titles []string
	for _, s := range sections {
		titles = append(titles, strings.TrimSpace(s.find(tagged("h2"))[0].Text))
	}
	if want := []string{"Boiler", "Service › Burner"}; !slices.Equal(titles, want) {
		t.Fatalf("menu sections %q, want %q (catalog order)", titles, want)
	}
	want := [][][]string{
		{
			{"Boiler temperature", "61.5", "°C", "—", "P4.v1"},
			{"Boiler power", "5.3", "kW", "—", "P4.v7"},
			{"Boiler state", "Work", "", "—", "P5.s0"},
			{"Boiler set temperature", "70", "°C", "—", "P6.v1"},
		},
		{
			{"Operating mode", "Summer", "", "—", "P6.v5"},
			{"Frost protection temperature (hidden in the app)", "5", "°C", "—", "P6.v9"},
			{"Feeder cycle time", "—", "s", "—", "P6.v45"},
		},
	}
	for i, s := range sections {
		rows := s.find(func(n *node) bool { return n.Name == "tr" && strings.HasPrefix(n.Attr["class"], "param") })
		var got [][]string
		for _, r := range rows {
			got = append(got, cells(r))
		}
		if !slices.EqualFunc(got, want[i], slices.Equal) {
			t.Errorf("section %q rows:\n got %q\nwant %q", titles[i], got, want[i])
		}
		for _, r := range rows {
			hidden := strings.Contains(r.Attr["class"], "hidden")
			if hidden != strings.Contains(r.Text, "Frost") {
				t.Errorf("row %q: class %q", cells(r), r.Attr["class"])
			}
			if r.Attr["title"] == "" {
				t.Errorf("row %q carries no symbol", cells(r))
			}
		}
	}

	alarms := doc.byID("alarms")
	if alarms == nil {
		t.Fatal("no alarm table")
	}
	var got [][]string
	for _, r := range alarms.find(func(n *node) bool { return n.Name == "tr" && strings.Contains(n.Attr["class"], "alarm") }) {
		got = append(got, cells(r)[:2])
	}
	if want := [][]string{{"Out of fuel", "ERROR_BRAK_PALIWA 38"}, {"ERROR_MODUL_ROZSZERZENcode 91, no translation in en", "ERROR_MODUL_ROZSZERZEN 91"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("alarms %q, want %q (translated where the catalog can, else the cloud's symbol)", got, want)
	}
	if back := doc.byID("back"); back == nil || back.Attr["href"] != "../../status" {
		t.Errorf("back link %v", back)
	}
}

func TestModulePageWithoutCatalog(t *testing.T) {
	for name, tc := range map[string]struct {
		ps   ParamSource
		want string
	}{
		"no catalog wired":   {nil, "No parameter catalog is in use"},
		"not loaded yet":     {fixtureParams(&collector.CatalogState{}), "No parameter catalog is in use"},
		"not loaded (nil)":   {fixtureParams(nil), "No parameter catalog is in use"},
		"switched off":       {CatalogParams{Values: fixtureParams(nil).Values}, "The parameter catalog is switched off (--catalog.disable)"},
		"module not in menu": {fixtureParams(&collector.CatalogState{Loaded: true}), "describes none of this module's parameters"},
	} {
		t.Run(name, func(t *testing.T) {
			doc := renderModule(t, moduleScenario(), tc.ps, "MOD1")
			p := doc.byID("noparams")
			if p == nil || !strings.Contains(p.Text, tc.want) {
				t.Fatalf("no-parameters note %v, want one saying %q", p, tc.want)
			}
			if len(doc.find(tagged("section"))) != 0 {
				t.Error("menu sections without a catalog")
			}
			// Untranslated alarms still show, by the cloud's symbol.
			if a := doc.byID("alarms"); a == nil || !strings.Contains(a.Text, "ERROR_BRAK_PALIWA") {
				t.Errorf("alarm table %v", a)
			}
		})
	}
}

// A module's name, menu titles, parameter names and units come from the
// cloud and its assets: they are escaped, and the page stays well-formed.
func TestModulePageEscapesHostileText(t *testing.T) {
	cs := &collector.CatalogState{Loaded: true, Modules: map[string]*collector.ModuleCatalog{
		hostileDevid: {Params: []collector.ParamDescription{
			{Pool: "P4", Param: "v1", Symbol: `"><script>`, Name: `<img src=x onerror=alert(1)>`, Unit: `</td>`, Menu: `<b>/<i>`},
		}},
	}}
	ps := CatalogParams{Catalog: collector.CatalogSourceFunc(func() *collector.CatalogState { return cs }),
		Values: func(string) store.Reader { return func(string, string) (float64, bool) { return 1, true } }}
	var buf strings.Builder
	if found, err := RenderModule(&buf, scenario(), ps, hostileDevid, Options{}); !found || err != nil {
		t.Fatalf("RenderModule = %v, %v", found, err)
	}
	page := buf.String()
	for _, bad := range []string{"<script>", "<img", "<b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q unescaped", bad)
		}
	}
	doc := parsePage(t, []byte(page))
	if s := doc.find(tagged("section")); len(s) != 1 || !strings.Contains(s[0].Text, "<b> › <i>") {
		t.Errorf("menu title not shown as text: %v", s)
	}
}

func TestModuleHandler(t *testing.T) {
	mux := http.NewServeMux()
	ps := fixtureParams(catalogFixture())
	mux.Handle("/status", Handler(collector.SnapshotFunc(moduleScenario), Options{}))
	mux.Handle(ModulePath, ModuleHandler(collector.SnapshotFunc(moduleScenario), ps, Options{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(u string) (int, http.Header, string) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}

	// Every module row of /status links to a page that shows that module,
	// the hostile devid included.
	_, _, page := get(srv.URL + "/status")
	doc := parsePage(t, []byte(page))
	base, _ := url.Parse(srv.URL + "/status")
	links := map[string]string{}
	for _, row := range doc.find(func(n *node) bool { return n.Name == "tr" && strings.HasPrefix(n.Attr["class"], "module") }) {
		as := row.find(tagged("a"))
		if len(as) != 2 || as[0].Attr["href"] != as[1].Attr["href"] {
			t.Fatalf("module row %q: links %v, want the devid and the name linked to one page", row.Attr["title"], as)
		}
		ref, err := url.Parse(as[0].Attr["href"])
		if err != nil {
			t.Fatal(err)
		}
		if ref.IsAbs() || strings.HasPrefix(ref.Path, "/") {
			t.Errorf("link %q is not relative (breaks behind a path prefix)", ref)
		}
		links[row.Attr["title"]] = base.ResolveReference(ref).String()
	}
	if len(links) != len(moduleScenario().Modules) {
		t.Fatalf("links for %d modules, want %d", len(links), len(moduleScenario().Modules))
	}
	for devid, u := range links {
		code, h, body := get(u)
		if code != http.StatusOK {
			t.Errorf("%s: GET %s = %d", devid, u, code)
			continue
		}
		if h.Get("Content-Security-Policy") == "" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", devid, h)
		}
		if p := parsePage(t, []byte(body)); !strings.Contains(p.find(tagged("div"))[1].Text, clean(devid, maxShown)) {
			t.Errorf("%s: the page at %s is about another module", devid, u)
		}
	}

	if code, _, _ := get(srv.URL + ModulePath + "NOSUCH"); code != http.StatusNotFound {
		t.Errorf("unknown devid: %d, want 404", code)
	}
	if code, _, _ := get(srv.URL + ModulePath + "MOD1/extra"); code != http.StatusNotFound {
		t.Errorf("path below a devid: %d, want 404", code)
	}
	resp, err := http.Post(srv.URL+ModulePath+"MOD1", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// TestModulePageNamesItsObject: a module's page names its object (name and
// id), links to that object's section of /status, and shows the state of
// the session the module's values arrive through: its own object's, never
// another's.
func TestModulePageNamesItsObject(t *testing.T) {
	for _, tc := range []struct {
		name, devid             string
		trouble                 func(*collector.ObjectState)
		object, id, link        string
		label, state, cardClass string
	}{
		{"healthy object beside a down one", "HOMEBOILER", sessionDown, "Home", "(object 1001)", "../../status#object-1001", "Session of Home", "UP", classOK},
		{"the down object", "COTTAGE1", sessionDown, "Cottage", "(object 1002)", "../../status#object-1002", "Session of Cottage", "DOWN", classBad},
		{"the silent object", "COTTAGE1", zombie, "Cottage", "(object 1002)", "../../status#object-1002", "Live push of Cottage", "UNHEALTHY", classBad},
		{"healthy object beside a silent one", "HOMEVALVE", zombie, "Home", "(object 1001)", "../../status#object-1001", "Session of Home", "UP", classOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := twoObjects(tc.trouble)
			doc := renderModule(t, s, nil, tc.devid)
			a := doc.byID("object")
			if a == nil || strings.TrimSpace(a.Text) != tc.object || a.Attr["href"] != tc.link {
				t.Fatalf("object link %v, want %q to %q", a, tc.object, tc.link)
			}
			if sub := doc.find(tagged("div"))[1].Text; !strings.Contains(sub, "of "+tc.object+" "+tc.id) {
				t.Errorf("subtitle %q does not name the object with its id", sub)
			}
			// The link leads to the object's section on /status.
			status := parsePage(t, render(t, s, Options{}))
			if sec := status.byID(strings.SplitN(tc.link, "#", 2)[1]); sec == nil || !strings.Contains(sec.Text, tc.devid) {
				t.Errorf("the section %s of /status does not list %s", tc.link, tc.devid)
			}
			c := doc.byID("objectsession")
			if c == nil {
				t.Fatal("no card of the object's session")
			}
			if got := strings.TrimSpace(c.byClass("label").Text); got != tc.label {
				t.Errorf("card label %q, want %q", got, tc.label)
			}
			if got := strings.TrimSpace(c.byClass("state").Text); got != tc.state || c.Attr["class"] != "card "+tc.cardClass {
				t.Errorf("card %q (%s), want %q (%s)", got, c.Attr["class"], tc.state, tc.cardClass)
			}
		})
	}
}

// TestModulePageOfNoWatchedObject: a module whose object is not watched
// names the object by its id and links to the Other section.
func TestModulePageOfNoWatchedObject(t *testing.T) {
	s := twoObjects(func(*collector.ObjectState) {})
	s.Modules = append(s.Modules, onlineModule("ORPHAN", 4242, "Barn"))
	doc := renderModule(t, s, nil, "ORPHAN")
	a := doc.byID("object")
	if a == nil || strings.TrimSpace(a.Text) != "object 4242" || a.Attr["href"] != "../../status#"+otherAnchor {
		t.Fatalf("object link %v", a)
	}
	if c := doc.byID("objectsession"); c == nil || c.Attr["class"] != "card "+classUnknown || !strings.Contains(c.Text, "not watched") {
		t.Errorf("session card %v", c)
	}
	if parsePage(t, render(t, s, Options{})).byID(otherAnchor) == nil {
		t.Error("the link's target is missing on /status")
	}
}
