package cloudsim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tdewolff/parse/v2"
	"github.com/tdewolff/parse/v2/js"
)

// Discovery facts of the asset spec (docs/spec.md A-1.2a, A-1.4a to A-1.4c),
// copied as written.
var (
	// docs/spec.md A-1.2a: the index bundle named by the page and the listing.
	specIndexRE = regexp.MustCompile(`/assets/(index-[A-Za-z0-9_-]+\.js)`)
	// docs/spec.md A-1.4a: the asset table, a lazy base and a hash.
	specAssetRE = regexp.MustCompile(`([A-Za-z0-9._/-]+?)-([A-Za-z0-9_-]+)\.js`)
	// docs/spec.md A-1.4b: the device-menu router map.
	specMenuRE = regexp.MustCompile(`['"](?:(?:\.\./)+config/router|/src/config/router)/deviceMenu/(\d+)/([A-Za-z0-9_.-]+)\.ts['"]` +
		`\s*:\s*\(\)\s*=>\s*[A-Za-z_$][\w$]*\s*\(\s*\(\)\s*=>\s*import\s*\(\s*['"]\./([A-Za-z0-9_.-]+-[A-Za-z0-9_-]+)\.js['"]\s*\)`)
)

// docs/spec.md A-1.4c: the i18n import map of one language.
func specI18nRE(lang string) *regexp.Regexp {
	return regexp.MustCompile(`["']\.\./\.\./resources/languages/` + regexp.QuoteMeta(lang) +
		`/([^"']+)\.json["']:\s*\(\)\s*=>\s*\w+\s*\(\s*\(\)\s*=>\s*import\s*\(\s*["']\./([^"']+\.js)["']`)
}

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

// assetTable applies docs/spec.md A-1.4a, A-1.5 to an index: base → file paths on
// the site, in first-seen order.
func assetTable(index []byte) map[string][]string {
	table := map[string][]string{}
	for _, m := range specAssetRE.FindAllSubmatch(index, -1) {
		raw := string(m[1]) + "-" + string(m[2]) + ".js"
		raw = strings.TrimPrefix(strings.TrimPrefix(raw, "./"), "assets/")
		base := string(m[1])
		if i := strings.LastIndexByte(base, '/'); i >= 0 {
			base = base[i+1:]
		}
		if !slices.Contains(table[base], "/assets/"+raw) {
			table[base] = append(table[base], "/assets/"+raw)
		}
	}
	return table
}

func TestAssetsDiscoverableBySpecRules(t *testing.T) {
	c := startCloud(t, Options{})
	// docs/spec.md A-1.2a: the page and the listing both name exactly the served index.
	for _, page := range []string{"/", "/assets/"} {
		var found []string
		for _, m := range specIndexRE.FindAllSubmatch(get(t, c, page).body, -1) {
			if !slices.Contains(found, string(m[1])) {
				found = append(found, string(m[1]))
			}
		}
		if len(found) != 1 || found[0] != c.IndexAsset() {
			t.Fatalf("%s names index candidates %v, want [%s]", page, found, c.IndexAsset())
		}
	}
	index := get(t, c, "/assets/"+c.IndexAsset()).body

	// docs/spec.md A-1.4a: every hit of the asset table is a served JavaScript file,
	// and every served chunk is in the table.
	table := assetTable(index)
	var bases []string
	for base, paths := range table {
		bases = append(bases, base)
		for _, p := range paths {
			if err := parseJS(get(t, c, p).body); err != nil {
				t.Errorf("%s (base %s) does not parse: %v", p, base, err)
			}
		}
	}
	for _, f := range c.AssetFiles() {
		if !strings.HasSuffix(f, ".js") || f == c.IndexAsset() {
			continue
		}
		found := false
		for _, paths := range table {
			found = found || slices.Contains(paths, "/assets/"+f)
		}
		if !found {
			t.Errorf("served chunk %s is not in the index's asset table (bases %v)", f, bases)
		}
	}
	// Lookup by base returns the last entry: the two languages' chunks of
	// one namespace share a base, so a consumer must resolve i18n chunks by
	// full name (docs/spec.md A-1.4c), which the hashes with hyphens below check.
	if len(table["parameters"]) != 2 || len(table["units"]) != 2 {
		t.Errorf("per-language chunks should share a base: parameters %v units %v", table["parameters"], table["units"])
	}

	// docs/spec.md A-1.4b: deviceMenu → menu chunk; the variant "0" wins, else the first.
	chosen := map[string]string{}
	var order []string
	for _, m := range specMenuRE.FindAllSubmatch(index, -1) {
		num, variant, stem := string(m[1]), string(m[2]), string(m[3])
		order = append(order, num+"/"+variant)
		if cur, ok := chosen[num]; !ok || (variant == "0" && !strings.HasPrefix(cur, "0-")) {
			chosen[num] = stem
		}
	}
	if len(order) < 2 || order[0] != "153/101" {
		t.Fatalf("router map entries %v: deviceMenu 153 should list its variant 101 before 0", order)
	}
	for _, dm := range []int{153, 2190, 1} {
		want := c.AssetFile("menu/" + strconv.Itoa(dm))
		if got := chosen[strconv.Itoa(dm)] + ".js"; got != want || want == ".js" {
			t.Errorf("deviceMenu %d → %s, want %s", dm, got, want)
		}
		body := get(t, c, "/assets/"+want).body
		if err := parseJS(body); err != nil {
			t.Errorf("menu %s: %v", want, err)
		}
		for _, r := range menuFor(dm).routes {
			for _, en := range r.entries {
				if !strings.Contains(string(body), "'"+en.token+"'") {
					t.Errorf("menu %s lacks %s", want, en.token)
				}
			}
		}
	}
	if !hyphenInside(strings.TrimSuffix(strings.TrimPrefix(c.AssetFile("menu/101"), "101-"), ".js")) {
		t.Errorf("the variant 101 chunk %s should have a hyphen inside its hash", c.AssetFile("menu/101"))
	}

	// docs/spec.md A-1.4c: every namespace of both languages, resolved by full name.
	wantNS := slices.Sorted(maps.Keys(translations("en")))
	for _, lang := range simLanguages {
		var got []string
		for _, m := range specI18nRE(lang).FindAllSubmatch(index, -1) {
			ns, file := string(m[1]), string(m[2])
			got = append(got, ns)
			stem := strings.TrimSuffix(file, ".js")
			if !slices.Contains(table[ns], "/assets/"+file) {
				t.Errorf("%s/%s: %s is not in the asset table under %q", lang, ns, file, ns)
			}
			if file != c.AssetFile("i18n/"+lang+"/"+ns) {
				t.Errorf("%s/%s → %s, want %s", lang, ns, file, c.AssetFile("i18n/"+lang+"/"+ns))
			}
			if err := parseJS(get(t, c, "/assets/"+file).body); err != nil {
				t.Errorf("%s: %v", file, err)
			}
			// The hash is split with the namespace (docs/spec.md A-1.4c); splitting at
			// the last hyphen goes wrong for these two, which is the point.
			if (lang == "en" && ns == "units") || (lang == "pl" && ns == "parameters") {
				if i := strings.LastIndexByte(stem, '-'); stem[:i] == ns {
					t.Errorf("%s: a hash with a hyphen is expected here", file)
				}
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, wantNS) {
			t.Errorf("%s namespaces %v, want %v", lang, got, wantNS)
		}
	}
}

func TestEveryServedAssetParsesAsJavaScript(t *testing.T) {
	c := startCloud(t, Options{})
	check := func() {
		n := 0
		for _, f := range c.AssetFiles() {
			if !strings.HasSuffix(f, ".js") {
				continue
			}
			n++
			if err := parseJS(get(t, c, "/assets/"+f).body); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		if n < 20 {
			t.Errorf("only %d JavaScript assets served", n)
		}
	}
	check()
	c.RotateIndex()
	check()
	// The parser is not lenient: a broken chunk fails.
	if err := parseJS([]byte("export default{[}")); err == nil {
		t.Fatal("the parser accepted broken JavaScript")
	}
}

// TestIndexCarriesTheSpecParts checks the parts of the index a catalog
// extracts (docs/spec.md A-1.4d to A-1.4f) and the live bundle's spellings
// (docs/spec.md) are present.
func TestIndexCarriesTheSpecParts(t *testing.T) {
	index := string(bundleFor(0).files[AssetIndexName()].body)
	for _, want := range []string{
		"'defaultTranslation':'pl'", "'translations':[", "{id:'EN',flag:'en'", "'dev':!0", // docs/spec.md A-1.4d
		"0x31:{'text':'units.31','value':", "['toFixed'](0x1)", "'padStart'](0x2,'0')", "[kn.ON]:", "\"BoilerState['STOP']\":", // docs/spec.md A-1.4e
		"??'parameters.PARAM_P4_'+", "!==void 0x0?", "`parameters.STATUS_P5_${", "...{[", // docs/spec.md A-1.4f builders
		"['map'](", "export{", " as default}", "void 0x0", "!0", "_0x", // docs/spec.md
	} {
		if !strings.Contains(index, want) {
			t.Errorf("index lacks %q", want)
		}
	}
	for _, s := range simSymbols {
		_, inChunk := chunks().names.params[s.token]
		inline := strings.Contains(index, "'"+s.token+"':")
		if inChunk == inline {
			t.Errorf("%s: defined in a chunk %v, inline %v; want exactly one", s.token, inChunk, inline)
		}
	}
	// Every unit transform is written in a form the spec recognises
	// (docs/spec.md A-4.7.3a, A-5.40): the register variable first, hex
	// literals, obfuscated name.
	for _, u := range simUnits {
		if u.display != nil && !regexp.MustCompile(`^(Number\(+)?%\[1\]s[*/+-]|^Number\(\(\(%\[1\]s-`).MatchString(u.value) {
			t.Errorf("unit %#x transform %q is not a recognised form", u.code, u.value)
		}
	}
}

func TestJSQuoteRoundTrip(t *testing.T) {
	surrogates := regexp.MustCompile(`\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})`)
	for _, s := range []string{"Moc kotła", "Zażółć gęślą jaźń", "°C", " ", "it's a\\b", "😀 Привет 中文", "line\nbreak"} {
		for _, escaped := range []bool{false, true} {
			lit := jsQuote(s, escaped)
			if escaped && strings.ContainsFunc(lit, func(r rune) bool { return r > 0x7e || r == ' ' }) {
				t.Errorf("%q escaped still holds a raw character: %s", s, lit)
			}
			// Into a Go literal: pair surrogates, unescape \', quote ".
			body := surrogates.ReplaceAllStringFunc(lit[1:len(lit)-1], func(m string) string {
				hi, _ := strconv.ParseUint(m[2:6], 16, 32)
				lo, _ := strconv.ParseUint(m[8:12], 16, 32)
				return fmt.Sprintf(`\U%08x`, 0x10000+(hi-0xd800)<<10+(lo-0xdc00))
			})
			body = jsEscapesAsGo(body)
			got, err := strconv.Unquote(`"` + body + `"`)
			if err != nil || got != s {
				t.Errorf("%q (escaped %v) → %s → %q, %v", s, escaped, lit, got, err)
			}
		}
	}
	// Polish labels reach the pl chunks both escaped and as UTF-8.
	pl := string(get(t, startCloud(t, Options{}), "/assets/"+chunks().refs["i18n/pl/parameters"]).body)
	if !strings.Contains(pl, `kot\u0142a`) {
		t.Errorf("pl parameters chunk without \\u escapes: %.200s", pl)
	}
	if routes := string(bundleFor(0).files[chunks().refs["i18n/pl/routes"]].body); !strings.Contains(routes, "Kocioł") {
		t.Errorf("pl routes chunk without raw UTF-8: %s", routes)
	}
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
	boilerWords := []int{boilerStandby, boilerFiringUp, boilerWork, boilerStop, boilerAlarm}
	lastTotal := map[string]int{}
	moved := map[string]bool{}
	start := map[string]map[string]any{}
	for _, d := range c.Devids() {
		start[d] = c.Params(d)
	}
	check := func(tick int) {
		for i, d := range c.Devids() {
			prof := simProfiles[i%len(simProfiles)]
			ps := c.Params(d)
			for _, tok := range prof.symbols {
				s := symbolByToken(tok)
				addr := s.address()
				raw, ok := ps[addr]
				if !ok {
					t.Fatalf("tick %d: %s %s has no %s", tick, d, tok, addr)
				}
				switch {
				case s.token == "STATUS_P5_0":
					if !slices.Contains(boilerWords, toInt(raw)) {
						t.Fatalf("%s %s = %#x matches no rule of %s", d, addr, raw, tok)
					}
				case s.status:
					if w := toInt(raw); w != 0 && w != 1 {
						t.Fatalf("%s %s = %v, only bit 0 is defined", d, addr, raw)
					}
				case s.wide:
					hi := ps[s.pool+".v"+strconv.Itoa(s.index+1)]
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
					if isFloat != s.float {
						t.Fatalf("%s %s = %T", d, addr, raw)
					}
					n, x := toInt(ps[s.pool+".n"+strconv.Itoa(s.index)]), toInt(ps[s.pool+".x"+strconv.Itoa(s.index)])
					if n != s.lo || x != s.hi || f < float64(n) || f > float64(x) {
						t.Fatalf("tick %d: %s %s = %v outside [%d, %d]", tick, d, addr, raw, n, x)
					}
					if u := unitByCode(s.unit); u != nil && len(u.options) > 0 {
						labelled := false
						for _, o := range u.options {
							labelled = labelled || o.raw == int(f)
						}
						if !labelled {
							t.Fatalf("%s enum %s = %v has no label", d, addr, raw)
						}
					}
					if s.setting {
						want := 0
						if s.hidden {
							want = statusInvisible
						}
						if w := ps[s.pool+".s"+strconv.Itoa(s.index)]; toInt(w) != want {
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
	symbols := func(devid string) []string {
		var out []string
		for _, d := range c.Described(devid, "en") {
			out = append(out, d.Symbol)
		}
		return out
	}
	// The same menu shows the first module a register it hides from the
	// second, though both modules carry it.
	sa, sb := symbols(a.Devid), symbols(b.Devid)
	hidden := 0
	for _, s := range sa {
		if !slices.Contains(sb, s) {
			hidden++
			addr := symbolByToken(s).address()
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
	if got, _ := visibleTokens(menuFor(a.DeviceMenu), a.Permissions); !slices.Equal(got, sa) {
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
			if _, ok := c.Params(d)[p.Address]; !ok {
				t.Errorf("%s carries no %s for %s", d, p.Address, p.Symbol)
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
	for _, lang := range simLanguages {
		chunk[lang] = string(get(t, c, "/assets/"+c.AssetFile("i18n/"+lang+"/alarms")).body)
	}
	for _, row := range rows {
		r := row.(map[string]any)
		perModule[r["devid"].(string)]++
		code := r["name"].(string)
		a := alarmByCode(code)
		if a.code == "" || float64(a.id) != r["id"].(float64) {
			t.Fatalf("alarm row %v is not in the alarm table", r)
		}
		for _, lang := range simLanguages {
			if has := strings.Contains(chunk[lang], "'"+code+"':"); has != (a.en != "") {
				t.Errorf("%s alarms chunk names %s: %v", lang, code, has)
			}
		}
		if a.en != "" {
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
	if AssetIndexName() != old {
		t.Errorf("AssetIndexName moved to %s; it names the first deployment", AssetIndexName())
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
	if ev := ws.next(EventParametersChange); ev.payload[d] == nil {
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

// TestDocDescribesTheAssets keeps the package documentation's table of
// modules and symbols true: it is where end-to-end expectations come from.
func TestDocDescribesTheAssets(t *testing.T) {
	doc := docText(t)
	for _, want := range docAssetLines() {
		if !strings.Contains(doc, want) {
			t.Errorf("doc.go lacks the line\n\t%s", want)
		}
	}
}

// jsEscapesAsGo rewrites the escapes of a JavaScript string body into a Go
// string body: \xNN is a code point in JavaScript, a byte in Go; \' needs
// no escape in Go, a bare " does.
func jsEscapesAsGo(body string) string {
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		switch {
		case body[i] == '"':
			b.WriteString(`\"`)
		case body[i] != '\\' || i+1 == len(body):
			b.WriteByte(body[i])
		case body[i+1] == 'x':
			b.WriteString(`\u00`)
			i++
		case body[i+1] == '\'':
			b.WriteByte('\'')
			i++
		default:
			b.WriteString(body[i : i+2])
			i++
		}
	}
	return b.String()
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// docText is the package comment of doc.go without comment markers.
func docText(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(l, "//"); ok {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(rest, " "), "\t"))
		}
	}
	return strings.Join(out, "\n")
}

// docAssetLines are the lines of the package documentation that describe
// the asset set, generated from the catalogue.
func docAssetLines() []string {
	var lines []string
	wrap := func(head string, words []string) {
		for len(words) > 0 {
			n := min(6, len(words))
			lines = append(lines, head+strings.Join(words[:n], " "))
			words, head = words[n:], strings.Repeat(" ", len(head))
		}
	}
	for i, p := range simProfiles {
		lines = append(lines, fmt.Sprintf("module %d, %d, …: %s, deviceMenu %d (%s)", i, i+len(simProfiles), p.key, p.deviceMenu, chunks().refs["menu/"+strconv.Itoa(p.deviceMenu)][:strings.LastIndexByte(chunks().refs["menu/"+strconv.Itoa(p.deviceMenu)], '-')]))
		wrap("  permissions ", p.permissions)
		var syms []string
		for _, d := range describeProfile(p, "en") {
			syms = append(syms, d.Symbol)
		}
		wrap("  shows ", syms)
		var al []string
		for _, code := range p.alarms {
			a := alarmByCode(code)
			label := "no label"
			if a.en != "" {
				label = fmt.Sprintf("%q / %q", a.en, a.pl)
			}
			al = append(al, fmt.Sprintf("%d %s (%s)", a.id, code, label))
		}
		if len(al) == 0 {
			al = []string{"none"}
		}
		lines = append(lines, "  active alarms: "+strings.Join(al, ", "))
	}
	// Every symbol as a module with every permission sees it, with its
	// panel in each device menu listing it.
	every := map[string][2]DescribedParam{}
	menus := map[string][]string{}
	for _, p := range simProfiles {
		all := *p
		all.permissions = []string{"DISPLAY_MENU_BOILER", "DISPLAY_MENU_DHW", "DISPLAY_MENU_SERVICE", "DISPLAY_MENU_INFO",
			"DISPLAY_MENU_VALVE", "DISPLAY_MENU_THERMOSTAT", permLevel1, permLevel2, permLevelMx}
		pl := describeProfile(&all, "pl")
		for i, d := range describeProfile(&all, "en") {
			every[d.Symbol] = [2]DescribedParam{d, pl[i]}
			m := strings.Join(d.Menu, "/")
			if !slices.Contains(menus[d.Symbol], m) {
				menus[d.Symbol] = append(menus[d.Symbol], m)
			}
		}
	}
	for _, s := range simSymbols {
		d, ok := every[s.token]
		if !ok {
			panic(s.token + " is in no menu")
		}
		en, pl := d[0], d[1]
		addr := en.Address
		if len(en.Parts) > 0 {
			addr = strings.Join(en.Parts, "+")
		}
		unit := en.Unit
		if unit == "" {
			unit = "-"
		}
		line := fmt.Sprintf("%-12s %-11s %-4s %q / %q; %s; %s", s.token, addr, unit, en.Name, pl.Name, strings.Join(menus[s.token], " | "), unitNote(s))
		if len(en.Enum) > 0 {
			var e []string
			for _, k := range slices.Sorted(maps.Keys(en.Enum)) {
				e = append(e, fmt.Sprintf("%d %s", k, en.Enum[k]))
			}
			line += "; " + strings.Join(e, ", ")
		}
		if s.hidden {
			line += "; hidden (INVISIBLE set)"
		}
		lines = append(lines, line)
	}
	return lines
}
