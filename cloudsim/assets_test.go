package cloudsim

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// docs/spec.md A-1.2a: the index bundle named by the page and the listing.
var specIndexRE = regexp.MustCompile(`/assets/(index-[A-Za-z0-9_-]+\.js)`)

func parseJS(body []byte) error {
	_, err := js.Parse(parse.NewInputBytes(body), js.Options{})
	return err
}

// get fetches a path of the static site and fails on anything but 200.
func get(t *testing.T, c *Cloud, path string) resp {
	t.Helper()
	r := call(t, c, "GET", path, "", nil)
	if r.status != 200 {
		t.Fatalf("GET %s = %d", path, r.status)
	}
	return r
}

func TestAssetsConditionalGET(t *testing.T) {
	c := startCloud(t, Options{})
	for _, p := range []string{"/", "/assets/", "/assets/" + c.IndexAsset(), "/assets/" + c.AssetFile("PARAM_P4_7"),
		"/assets/" + c.AssetFile("menu/153"), "/assets/" + c.AssetFile("i18n/en/units")} {
		first := get(t, c, p)
		etag, lm := first.header.Get("ETag"), first.header.Get("Last-Modified")
		if etag == "" || lm == "" {
			t.Fatalf("%s: ETag %q Last-Modified %q", p, etag, lm)
		}
		for h, v := range map[string]string{"If-None-Match": etag, "If-Modified-Since": lm} {
			req, _ := http.NewRequest("GET", c.URL()+p, nil)
			req.Header.Set(h, v)
			res, err := testHTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusNotModified {
				t.Errorf("%s with %s = %d, want 304", p, h, res.StatusCode)
			}
		}
		req, _ := http.NewRequest("GET", c.URL()+p, nil)
		req.Header.Set("If-None-Match", `"elsewhere"`)
		res, err := testHTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("%s with another ETag = %d, want 200", p, res.StatusCode)
		}
	}
}

// TestDescribedRegistersStayCoherent drifts a world of every profile for
// many ticks: raw values stay within the range the definitions point at,
// enums on labelled values, status words on meaningful bit patterns, the
// two-word counter climbs.
func TestDescribedRegistersStayCoherent(t *testing.T) {
	c := New(Options{Modules: 6, Seed: 3})
	defer c.Close()
	lastTotal := map[string]int{}
	moved := map[string]bool{}
	start := map[string]map[string]any{}
	for _, d := range c.Devids() {
		start[d] = c.Params(d)
	}
	check := func(tick int) {
		for i, d := range c.Devids() {
			prof := webapp.Profiles()[i%len(webapp.Profiles())]
			ps := c.Params(d)
			for _, s := range prof.Registers {
				tok, addr := s.Symbol, s.Address
				raw, ok := ps[addr]
				if !ok {
					t.Fatalf("tick %d: %s %s has no %s", tick, d, tok, addr)
				}
				switch {
				case len(s.Words) > 0:
					if !slices.Contains(s.Words, toInt(raw)) {
						t.Fatalf("%s %s = %#x matches no rule of %s", d, addr, raw, tok)
					}
				case s.Status:
					if w := toInt(raw); w != 0 && w != 1 {
						t.Fatalf("%s %s = %v, only bit 0 is defined", d, addr, raw)
					}
				case s.Wide:
					hi := ps[s.HighWord()]
					lo := toInt(raw)
					if lo < math.MinInt16 || lo > math.MaxInt16 || toInt(hi) < 0 {
						t.Fatalf("%s %s words %v %v", d, tok, raw, hi)
					}
					total := wideTotal(raw, hi)
					if total < lastTotal[d] {
						t.Fatalf("%s %s went back: %d after %d", d, tok, total, lastTotal[d])
					}
					lastTotal[d] = total
				default:
					f, isFloat := raw.(float64)
					if !isFloat {
						f = float64(raw.(int))
					}
					if isFloat != s.Float {
						t.Fatalf("%s %s = %T", d, addr, raw)
					}
					n, x := toInt(ps[s.Pool+".n"+strconv.Itoa(s.Index)]), toInt(ps[s.Pool+".x"+strconv.Itoa(s.Index)])
					if n != s.Min || x != s.Max || f < float64(n) || f > float64(x) {
						t.Fatalf("tick %d: %s %s = %v outside [%d, %d]", tick, d, addr, raw, n, x)
					}
					if len(s.Labelled) > 0 && !slices.Contains(s.Labelled, int(f)) {
						t.Fatalf("%s enum %s = %v has no label", d, addr, raw)
					}
					if s.Setting {
						want := 0
						if s.Hidden {
							want = webapp.StatusInvisible
						}
						if w := ps[s.Pool+".s"+strconv.Itoa(s.Index)]; toInt(w) != want {
							t.Fatalf("%s status word of %s = %v, want %#x", d, tok, w, want)
						}
					}
					if fmt.Sprint(raw) != fmt.Sprint(start[d][addr]) {
						moved[tok] = true
					}
				}
			}
		}
	}
	check(0)
	for tick := 1; tick <= 4000; tick++ {
		c.Drift()
		if tick%40 == 0 {
			check(tick)
		}
	}
	for _, tok := range []string{"PARAM_P4_1", "PARAM_P4_2", "PARAM_P4_4", "PARAM_P4_7", "PARAM_P4_20", "PARAM_P4_21", "PARAM_P4_22"} {
		if !moved[tok] {
			t.Errorf("%s never drifted", tok)
		}
	}
	if lastTotal[c.Devids()[0]] <= 38063 {
		t.Errorf("the fuel counter did not climb: %d", lastTotal[c.Devids()[0]])
	}
}

func TestWideCounterWords(t *testing.T) {
	// The spec's example (docs/spec.md ): P4.v59 = -27473, P4.v60 = 0 → 38063.
	if lo, hi := splitWide(38063); lo != -27473 || hi != 0 || wideTotal(lo, hi) != 38063 {
		t.Fatalf("38063 → %d %d", lo, hi)
	}
	for _, n := range []int{0, 1, 32767, 32768, 65535, 65536, 103500, 1 << 30} {
		if lo, hi := splitWide(n); wideTotal(lo, hi) != n || lo < math.MinInt16 || lo > math.MaxInt16 {
			t.Errorf("%d → %d %d → %d", n, lo, hi, wideTotal(lo, hi))
		}
	}
}

func TestModuleRowsSelectMenusAndPermissions(t *testing.T) {
	c := startCloud(t, Options{Modules: 3, ParamsPerModule: DefaultParamsPerModule})
	tok := login(t, c)
	var body struct {
		Data []struct {
			Devid       string   `json:"devid"`
			DeviceMenu  int      `json:"deviceMenu"`
			Permissions []string `json:"permissions"`
		} `json:"data"`
	}
	r := call(t, c, "GET", "/v1/modules", tok, nil)
	if err := jsonUnmarshal(r.body, &body); err != nil || len(body.Data) != 3 {
		t.Fatalf("modules: %v %s", err, r.body)
	}
	a, b, v := body.Data[0], body.Data[1], body.Data[2]
	if a.DeviceMenu != b.DeviceMenu || slices.Equal(a.Permissions, b.Permissions) || v.DeviceMenu == a.DeviceMenu {
		t.Fatalf("rows: %+v", body.Data)
	}
	symbols := func(described []webapp.DescribedParam) []string {
		var out []string
		for _, d := range described {
			out = append(out, d.Symbol)
		}
		return out
	}
	addresses := map[string]string{}
	for _, d := range c.Described(a.Devid, "en") {
		addresses[d.Symbol] = d.Address
	}
	// The same menu shows the first module a register it hides from the
	// second, though both modules carry it.
	sa, sb := symbols(c.Described(a.Devid, "en")), symbols(c.Described(b.Devid, "en"))
	hidden := 0
	for _, s := range sa {
		if !slices.Contains(sb, s) {
			hidden++
			addr := addresses[s]
			if _, ok := c.Params(b.Devid)[addr]; !ok {
				t.Errorf("%s hides %s but does not carry %s", b.Devid, s, addr)
			}
		}
	}
	if hidden == 0 || len(sb) == 0 {
		t.Fatalf("same deviceMenu, different permissions, same symbols: %v / %v", sa, sb)
	}
	// Route-level entries keep a route whose own permission fails (docs/spec.md A-4.3b).
	if !slices.Contains(sb, "PARAM_P4_8") || slices.Contains(b.Permissions, "DISPLAY_MENU_INFO") {
		t.Errorf("%s should see PARAM_P4_8 through the info route's route-level entries: %v", b.Devid, sb)
	}
	// The permissions come from the row: the row's list, not the profile,
	// decides what the menu shows.
	if got := symbols(webapp.Describe(a.DeviceMenu, a.Permissions, "en")); !slices.Equal(got, sa) {
		t.Errorf("row permissions show %v, Described says %v", got, sa)
	}
	// Every shown symbol has a definition (inline or a chunk) and a label.
	index := string(get(t, c, "/assets/"+c.IndexAsset()).body)
	for _, d := range []string{a.Devid, b.Devid, v.Devid} {
		for _, p := range c.Described(d, "pl") {
			if c.AssetFile(p.Symbol) == "" && !strings.Contains(index, "'"+p.Symbol+"':") {
				t.Errorf("%s has no definition", p.Symbol)
			}
			if p.Name == "" || strings.Contains(p.Name, ".") || len(p.Menu) == 0 {
				t.Errorf("%s: name %q menu %q", p.Symbol, p.Name, p.Menu)
			}
			_, carried := c.Params(d)[p.Address]
			switch {
			case p.Elsewhere == "" && !carried:
				t.Errorf("%s carries no %s for %s", d, p.Address, p.Symbol)
			case p.Elsewhere != "" && carried:
				t.Errorf("%s carries %s, which %s's definition does not read", d, p.Address, p.Symbol)
			case p.Elsewhere != "":
				if _, ok := c.Params(d)[p.Elsewhere]; !ok {
					t.Errorf("%s carries no %s, which %s's definition reads", d, p.Elsewhere, p.Symbol)
				}
			}
		}
	}
}

func TestAlarmsNamedByTheTranslations(t *testing.T) {
	c := startCloud(t, Options{Modules: 3})
	tok := login(t, c)
	d := c.Devids()
	body := map[string]any{"modules": d}
	q := call(t, c, "POST", "/v1/modules/alarms/quantity", tok, body).json(t)["alarmsQuantity"].(map[string]any)
	rows := call(t, c, "POST", "/v1/modules/alarms", tok, body).json(t)["alarms"].([]any)
	perModule := map[string]int{}
	named := 0
	chunk := map[string]string{}
	for _, lang := range webapp.Languages() {
		chunk[lang] = string(get(t, c, "/assets/"+c.AssetFile("i18n/"+lang+"/alarms")).body)
	}
	for _, row := range rows {
		r := row.(map[string]any)
		perModule[r["devid"].(string)]++
		code := r["name"].(string)
		a := webapp.AlarmByCode(code)
		if a.Code == "" || float64(a.ID) != r["id"].(float64) {
			t.Fatalf("alarm row %v is not in the alarm table", r)
		}
		for _, lang := range webapp.Languages() {
			// Only an alarm filed in the alarms namespace is keyed there.
			inNamespace := strings.HasPrefix(a.Where, "alarms.") && (lang == "en" || !strings.Contains(a.Where, "English only"))
			if has := strings.Contains(chunk[lang], "'"+code+"':"); has != (a.EN != "" && inNamespace) {
				t.Errorf("%s alarms chunk names %s: %v (%s)", lang, code, has, a.Where)
			}
		}
		if a.EN != "" {
			named++
		}
	}
	if named == 0 || named == len(rows) {
		t.Errorf("want active alarms with and without a label, got %d named of %d", named, len(rows))
	}
	for _, dev := range d {
		if int(q[dev].(float64)) != perModule[dev] || len(c.DescribedAlarms(dev, "pl")) != perModule[dev] {
			t.Errorf("%s: quantity %v, rows %d", dev, q[dev], perModule[dev])
		}
	}
	if al := c.DescribedAlarms(d[0], "pl"); len(al) != 1 || al[0].Code != "ERROR_BRAK_PALIWA" || al[0].Name != "Brak paliwa" {
		t.Errorf("first module's alarms %+v", al)
	}
}

func TestRotateIndexRedeploys(t *testing.T) {
	c := startCloud(t, Options{})
	old := c.IndexAsset()
	oldPage := get(t, c, "/")
	oldVersion := call(t, c, "GET", "/v1/system/version", "", nil).json(t)["version"].(map[string]any)["version"]
	chunksBefore := c.AssetFiles()

	r := call(t, c, "POST", "/control/assets/rotate-index", "", nil)
	next, _ := r.json(t)["index"].(string)
	if r.status != 200 || next == "" || next == old || next != c.IndexAsset() {
		t.Fatalf("rotate = %d %s (old %s)", r.status, r.body, old)
	}
	if webapp.IndexName() != old {
		t.Errorf("webapp.IndexName moved to %s; it names the first deployment", webapp.IndexName())
	}
	if r := call(t, c, "GET", "/assets/"+old, "", nil); r.status != 404 {
		t.Errorf("the stale index answers %d, want 404", r.status)
	}
	for _, page := range []string{"/", "/assets/"} {
		m := specIndexRE.FindSubmatch(get(t, c, page).body)
		if m == nil || string(m[1]) != next {
			t.Errorf("%s names %q after the redeploy, want %s", page, m, next)
		}
	}
	if err := parseJS(get(t, c, "/assets/"+next).body); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", c.URL()+"/", nil)
	req.Header.Set("If-None-Match", oldPage.header.Get("ETag"))
	res, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("the page under its old ETag = %d, want 200", res.StatusCode)
	}
	if v := call(t, c, "GET", "/v1/system/version", "", nil).json(t)["version"].(map[string]any)["version"]; v == oldVersion {
		t.Errorf("system version still %v", v)
	}
	after := c.AssetFiles()
	for _, f := range chunksBefore {
		if f != old && !slices.Contains(after, f) {
			t.Errorf("chunk %s gone after the redeploy", f)
		}
	}
	st := call(t, c, "GET", "/control/assets", "", nil).json(t)
	if st["index"] != next || len(st["files"].([]any)) != len(after) {
		t.Errorf("control/assets = %v", st)
	}
	if again := c.RotateIndex(); again == next || again == old {
		t.Errorf("second redeploy gave %s", again)
	}
	// A fresh cloud starts at the first deployment again.
	if fresh := New(Options{ParamsPerModule: 5}); fresh.IndexAsset() != old {
		t.Errorf("a new cloud serves %s", fresh.IndexAsset())
	}
}

func TestAssetBrokenFault(t *testing.T) {
	c := startCloud(t, Options{})
	tok := login(t, c)
	file := c.AssetFile("PARAM_P4_7")
	good := get(t, c, "/assets/"+file)

	r := call(t, c, "POST", "/control/faults", "", Fault{Kind: FaultAssetBroken, Path: "/assets/PARAM_P4_7"})
	if r.status != 200 {
		t.Fatalf("inject = %d %s", r.status, r.body)
	}
	// Conditional or not, the garbage comes back, under another validator.
	req, _ := http.NewRequest("GET", c.URL()+"/assets/"+file, nil)
	req.Header.Set("If-None-Match", good.header.Get("ETag"))
	res, err := testHTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("ETag") == good.header.Get("ETag") {
		t.Fatalf("broken chunk revalidated: %d %s", res.StatusCode, res.Header.Get("ETag"))
	}
	bad := get(t, c, "/assets/"+file)
	if parseJS(bad.body) == nil {
		t.Fatalf("the broken chunk still parses: %s", bad.body)
	}
	// Only that chunk: the rest of the site, and REST, are fine.
	for _, other := range []string{c.AssetFile("PARAM_P6_4"), c.AssetFile("menu/153"), c.IndexAsset()} {
		if parseJS(get(t, c, "/assets/"+other).body) != nil {
			t.Errorf("%s broke too", other)
		}
	}
	if r := call(t, c, "GET", "/v1/user", tok, nil); r.status != 200 {
		t.Errorf("REST = %d", r.status)
	}
	c.ClearAll()
	if string(get(t, c, "/assets/"+file).body) != string(good.body) {
		t.Fatal("the chunk did not heal")
	}

	// By file name: one language only; with a status; counted.
	pl, en := c.AssetFile("i18n/pl/parameters"), c.AssetFile("i18n/en/parameters")
	c.Inject(Fault{Kind: FaultAssetBroken, Path: "/assets/" + pl, Status: 500, Count: 1})
	if r := call(t, c, "GET", "/assets/"+pl, "", nil); r.status != 500 || !strings.Contains(string(r.body), "<h1>500") {
		t.Errorf("pl parameters = %d %s", r.status, r.body)
	}
	get(t, c, "/assets/"+en)
	get(t, c, "/assets/"+pl) // the count is used up
	// By base: both languages.
	id := c.Inject(Fault{Kind: FaultAssetBroken, Path: "/assets/parameters", Body: "not javascript {"})
	for _, f := range []string{pl, en} {
		if string(get(t, c, "/assets/"+f).body) != "not javascript {" {
			t.Errorf("%s not broken by base", f)
		}
	}
	c.Clear(id)

	for _, f := range []Fault{{Kind: FaultAssetBroken}, {Kind: FaultAssetBroken, Path: "/assets/"},
		{Kind: FaultAssetBroken, Path: "/v1/modules"}, {Kind: FaultAssetsUnreachable, Status: 302}} {
		if _, err := c.InjectFault(f); err == nil {
			t.Errorf("%+v accepted", f)
		}
	}
}

func TestAssetsUnreachableLeavesRESTAndRealtime(t *testing.T) {
	c := startCloud(t, Options{Modules: 1})
	tok := login(t, c)
	ws := connected(t, c, tok)
	d := c.Devids()[0]
	// The cloud binds only a SID it already lists (a bind that races the
	// join binds nothing, as the real one does): bind again until it is.
	eventually(t, "the session bound to "+d, func() bool {
		bind(t, c, tok, "wsid", ws.SID(), []string{d})
		s, _ := sessionBySID(c, ws.SID())
		return slices.Contains(s.Bound, d)
	})

	r := call(t, c, "POST", "/control/faults", "", Fault{Kind: FaultAssetsUnreachable})
	if r.status != 200 {
		t.Fatalf("inject = %d %s", r.status, r.body)
	}
	for _, p := range []string{"/", "/assets/", "/assets/" + c.IndexAsset(), "/assets/" + c.AssetFile("menu/2190")} {
		if r := call(t, c, "GET", p, "", nil); r.status != 503 || !strings.Contains(string(r.body), "<h1>503") {
			t.Errorf("GET %s = %d %s, want 503", p, r.status, r.body)
		}
	}
	if r := call(t, c, "GET", "/v1/system/version", "", nil); r.status != 200 {
		t.Errorf("system version = %d", r.status)
	}
	if r := call(t, c, "POST", "/v1/modules/parameters", tok, map[string]any{"modules": []string{d}}); r.status != 200 {
		t.Errorf("prime = %d", r.status)
	}
	c.SetParam(d, "P4.v1", 61.5)
	if ev := ws.next(cloudapi.WireParamsChange); ev.payload[d] == nil {
		t.Errorf("live delta = %s", mustJSON(ev.payload))
	}
	c.ClearAll()
	c.Inject(Fault{Kind: FaultAssetsUnreachable, Status: 504})
	if r := call(t, c, "GET", "/", "", nil); r.status != 504 {
		t.Errorf("with status 504: %d", r.status)
	}
	c.ClearAll()
	get(t, c, "/")
	get(t, c, "/assets/"+c.IndexAsset())
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
