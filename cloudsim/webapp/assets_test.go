package webapp

import (
	"flag"
	"fmt"
	"maps"
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

// site reads a deployment's static site as the simulated cloud serves it:
// the page at "/", the listing at "/assets/", the files under /assets/.
type site struct{ d *Deployment }

func (s site) get(t *testing.T, path string) []byte {
	t.Helper()
	switch path {
	case "/":
		return s.d.Page.Body
	case "/assets/":
		return s.d.Listing.Body
	}
	f := s.d.Files[strings.TrimPrefix(path, "/assets/")]
	if f == nil || !strings.HasPrefix(path, "/assets/") {
		t.Fatalf("%s is not served", path)
	}
	return f.Body
}

func (s site) IndexAsset() string   { return s.d.Index }
func (s site) AssetFiles() []string { return slices.Sorted(maps.Keys(s.d.Files)) }
func (s site) AssetFile(ref string) string {
	if ref == "index" {
		return s.d.Index
	}
	return FileName(ref)
}

func TestAssetsDiscoverableBySpecRules(t *testing.T) {
	c := site{Deploy(0)}
	// docs/spec.md A-1.2a: the page and the listing both name exactly the served index.
	for _, page := range []string{"/", "/assets/"} {
		var found []string
		for _, m := range specIndexRE.FindAllSubmatch(c.get(t, page), -1) {
			if !slices.Contains(found, string(m[1])) {
				found = append(found, string(m[1]))
			}
		}
		if len(found) != 1 || found[0] != c.IndexAsset() {
			t.Fatalf("%s names index candidates %v, want [%s]", page, found, c.IndexAsset())
		}
	}
	index := c.get(t, "/assets/"+c.IndexAsset())

	// docs/spec.md A-1.4a: every hit of the asset table is a served JavaScript file,
	// and every served chunk is in the table.
	table := assetTable(index)
	var bases []string
	for base, paths := range table {
		bases = append(bases, base)
		for _, p := range paths {
			if err := parseJS(c.get(t, p)); err != nil {
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
		body := c.get(t, "/assets/"+want)
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
			if err := parseJS(c.get(t, "/assets/"+file)); err != nil {
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
	for gen := range 2 {
		c := site{Deploy(gen)}
		n := 0
		for _, f := range c.AssetFiles() {
			if !strings.HasSuffix(f, ".js") {
				continue
			}
			n++
			if err := parseJS(c.get(t, "/assets/"+f)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		if n < 20 {
			t.Errorf("deployment %d: only %d JavaScript assets served", gen, n)
		}
	}
	// The parser is not lenient: a broken chunk fails.
	if err := parseJS([]byte("export default{[}")); err == nil {
		t.Fatal("the parser accepted broken JavaScript")
	}
}

// TestIndexCarriesTheSpecParts checks the parts of the index a catalog
// extracts (docs/spec.md A-1.4d to A-1.4f) and the live bundle's spellings
// (docs/spec.md) are present.
func TestIndexCarriesTheSpecParts(t *testing.T) {
	index := string(Deploy(0).Files[IndexName()].Body)
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
	pl := string(Deploy(0).Files[FileName("i18n/pl/parameters")].Body)
	if !strings.Contains(pl, `kot\u0142a`) {
		t.Errorf("pl parameters chunk without \\u escapes: %.200s", pl)
	}
	if routes := string(Deploy(0).Files[FileName("i18n/pl/routes")].Body); !strings.Contains(routes, "Kocioł") {
		t.Errorf("pl routes chunk without raw UTF-8: %s", routes)
	}
}

var update = flag.Bool("update", false, "rewrite "+describedFile+" from the catalogue")

// describedFile holds the table of the modules and symbols the web app
// describes.
const describedFile = "testdata/described.txt"

// TestDescribedTableIsCurrent keeps the table of the modules and symbols
// the web app describes true of the catalogue: it is where end-to-end
// expectations are read from. go test -run TestDescribedTableIsCurrent
// -update rewrites it.
func TestDescribedTableIsCurrent(t *testing.T) {
	want := describedTable()
	if *update {
		if err := os.WriteFile(describedFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(describedFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s line %d is\n\t%s\nwant\n\t%s\n(go test -run TestDescribedTableIsCurrent -update rewrites it)", describedFile, i+1, g, w)
			}
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

// describedTable is the table of describedFile, generated from the
// catalogue.
func describedTable() string {
	lines := []string{
		"# The modules and symbols the simulated web app describes, generated from its catalogue",
		"# (go test ./cloudsim/webapp -run TestDescribedTableIsCurrent -update).",
		"#",
		"# Module i of a simulated cloud gets profile i mod 3. What each module's menu shows under",
		"# its permissions, with the chunk stem of its menu:",
		"",
	}
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
		for _, d := range Describe(p.deviceMenu, p.permissions, "en") {
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
		pl := Describe(all.deviceMenu, all.permissions, "pl")
		for i, d := range Describe(all.deviceMenu, all.permissions, "en") {
			every[d.Symbol] = [2]DescribedParam{d, pl[i]}
			m := strings.Join(d.Menu, "/")
			if !slices.Contains(menus[d.Symbol], m) {
				menus[d.Symbol] = append(menus[d.Symbol], m)
			}
		}
	}
	lines = append(lines, "",
		"# Symbols: register, unit as displayed, en / pl label, panel per device menu, and where",
		"# the unit code sits (PARAM_P4_22 and PARAM_P6_22 need DISPLAY_PARAMETER_LEVEL_2, which",
		"# no profile has):",
		"")
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
		if en.Elsewhere != "" {
			line += "; its definition reads " + en.Elsewhere + ", no module reports " + addr
		}
		lines = append(lines, line)
	}
	// Every alarm type: its names as the app shows them and where the
	// translations file them.
	lines = append(lines, "", "# Alarms: type id, symbol, en / pl name as the app shows it, where the translations file it.")
	for _, al := range simAlarms {
		a := al.export()
		if a.EN == "" {
			lines = append(lines, fmt.Sprintf("%-3d %-26s no name anywhere", a.ID, a.Code))
			continue
		}
		lines = append(lines, fmt.Sprintf("%-3d %-26s %q / %q; %s", a.ID, a.Code, a.EN, a.PL, a.Where))
	}
	return strings.Join(lines, "\n") + "\n"
}
