package catalog

import (
	"path"
	"regexp"
	"strconv"
	"strings"
)

// The index scans of docs/spec.md A-1.4a to A-1.4c read the bundle as text:
// they still work when the file does not parse.

// assetRef is one hashed file named in the index (docs/spec.md A-1.4a).
type assetRef struct {
	path string // on the assets origin, "/assets/PARAM_66-Ab12.js"
	base string // "PARAM_66"
	hash string // "Ab12"
}

// assetTable maps a base to every file found under it, in order met.
type assetTable struct {
	byBase map[string][]assetRef
	byName map[string]assetRef // "base-hash" and the file name without .js
}

// assetRE is the pattern of docs/spec.md A-1.4a: a lazy base (".", "/", "-"
// allowed) and a hash (which may hold or end with "-"). The trailing \b is an
// addition: it keeps "diode-state.json" from reading as "diode-state.js". Scans use
// forEachAssetName, which finds the same names faster; the pattern stays as
// the definition the fuzz test holds it to.
var assetRE = regexp.MustCompile(`([A-Za-z0-9._/-]+?)-([A-Za-z0-9_-]+)\.js\b`)

// scanAssets builds the asset table from the whole text (one pass: the
// reference client's two-part scan could lose a name straddling its cut).
// Lookup by base returns the last file found (docs/spec.md A-1.4a).
func scanAssets(text, indexPath string) *assetTable {
	t := &assetTable{byBase: map[string][]assetRef{}, byName: map[string]assetRef{}}
	forEachAssetName(text, func(raw, base, hash string) {
		if i := strings.LastIndexByte(base, '/'); i >= 0 {
			base = base[i+1:]
		}
		if base == "" || base == "." || base == ".." {
			return
		}
		ref := assetRef{path: joinAsset(indexPath, raw), base: base, hash: hash}
		for _, r := range t.byBase[base] {
			if r.hash == ref.hash && r.path == ref.path {
				return
			}
		}
		t.byBase[base] = append(t.byBase[base], ref)
		t.byName[base+"-"+hash] = ref
		t.byName[strings.TrimSuffix(path.Base(ref.path), ".js")] = ref
	})
	return t
}

// maxAssetName bounds the length of one asset name.
const maxAssetName = 512

// forEachAssetName finds what assetRE finds, in the same order, without
// running the regular expression over the whole bundle (a lazy group over
// megabytes is the slowest part of a load): every ".js" ending a word is
// matched backwards over the name characters, no further back than the end
// of the previous name.
func forEachAssetName(text string, fn func(raw, base, hash string)) {
	lastEnd := 0
	for off := 0; ; {
		i := strings.Index(text[off:], ".js")
		if i < 0 {
			return
		}
		dot := off + i
		end := dot + 3
		off = end
		if end < len(text) && isWordByte(text[end]) {
			continue // ".json", ".jsx": not a chunk
		}
		start := dot
		for start > lastEnd && dot-start < maxAssetName && isNameByte(text[start-1]) {
			start--
		}
		// The base is lazy: it ends at the first "-" after which only hash
		// characters follow up to ".js".
		for j := start + 1; j < dot-1; j++ {
			if text[j] != '-' || !allHashBytes(text[j+1:dot]) {
				continue
			}
			fn(text[start:end], text[start:j], text[j+1:dot])
			lastEnd = end
			break
		}
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isNameByte(c byte) bool { return isWordByte(c) || c == '.' || c == '/' || c == '-' }

func allHashBytes(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) && s[i] != '-' {
			return false
		}
	}
	return s != ""
}

// scanAround runs re only on windows around each occurrence of needle (a
// literal every match contains), so that a pattern with long alternatives
// costs little on a large bundle; each match is reported once, in order.
func scanAround(text, needle string, re *regexp.Regexp, before, after int, fn func(m []string)) {
	lastStart := -1
	for off := 0; ; {
		i := strings.Index(text[off:], needle)
		if i < 0 {
			return
		}
		at := off + i
		off = at + len(needle)
		lo, hi := max(0, at-before), min(len(text), at+after)
		for _, loc := range re.FindAllStringSubmatchIndex(text[lo:hi], -1) {
			if lo+loc[0] > at || lo+loc[1] < at || lo+loc[0] <= lastStart {
				continue
			}
			lastStart = lo + loc[0]
			m := make([]string, len(loc)/2)
			for k := range m {
				if loc[2*k] >= 0 {
					m[k] = text[lo+loc[2*k] : lo+loc[2*k+1]]
				}
			}
			fn(m)
		}
	}
}

// lookup returns the newest file of a base.
func (t *assetTable) lookup(base string) (assetRef, bool) {
	refs := t.byBase[base]
	if len(refs) == 0 {
		return assetRef{}, false
	}
	return refs[len(refs)-1], true
}

// lookupName finds a file by "base-hash" or by its file name without ".js".
func (t *assetTable) lookupName(name string) (assetRef, bool) {
	r, ok := t.byName[strings.TrimSuffix(name, ".js")]
	return r, ok
}

func (t *assetTable) size() int { return len(t.byBase) }

// joinAsset resolves a file name met in the index against the index's path
// (docs/spec.md ): a relative join, except that a leading "assets/" is dropped when
// the index already sits under /assets/ (Vite's preload lists spell files
// that way). Paths never climb above the origin's root.
func joinAsset(indexPath, raw string) string {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "//") { // protocol-relative: keep the path part
		if i := strings.IndexByte(raw[2:], '/'); i >= 0 {
			raw = raw[2+i:]
		}
	}
	if strings.HasPrefix(raw, "/") {
		return path.Clean(raw)
	}
	if strings.HasPrefix(raw, "assets/") && strings.Contains(indexPath, "/assets/") {
		raw = strings.TrimPrefix(raw, "assets/")
	}
	return path.Join(path.Dir(indexPath), raw)
}

// menuMapRE is the pattern of docs/spec.md A-1.4b: a router entry importing a
// device menu.
var menuMapRE = regexp.MustCompile(`['"](?:(?:\.\./)+config/router|/src/config/router)/deviceMenu/(\d+)/([A-Za-z0-9_.-]+)\.ts['"]` +
	`\s*:\s*\(\)\s*=>\s*[A-Za-z_$][\w$]*\s*\(\s*\(\)\s*=>\s*import\s*\(\s*['"]\./([A-Za-z0-9_.-]+-[A-Za-z0-9_-]+)\.js['"]\s*\)`)

// scanMenuMap maps each deviceMenu number to its chunk stem ("0-Zz99"): the
// variant whose stem is "0" wins, else the first met (docs/spec.md A-1.4b).
func scanMenuMap(text string) map[int]string {
	out := map[int]string{}
	zero := map[int]bool{}
	scanAround(text, "/deviceMenu/", menuMapRE, 256, 1024, func(m []string) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return
		}
		switch _, seen := out[n]; {
		case m[2] == "0" && !zero[n]:
			out[n], zero[n] = m[3], true
		case !seen:
			out[n] = m[3]
		}
	})
	return out
}

// i18nRE is the pattern of docs/spec.md A-1.4c for every language at once. It
// also accepts any number of "../" (or /src/) before resources/ and a "$" in the helper
// name, which the reference client's pattern rejects for no reason of the
// format.
var i18nRE = regexp.MustCompile(`["'](?:(?:\.\./)+|/src/)resources/languages/([^/"']+)/([^"']+)\.json["']\s*:\s*\(\)\s*=>\s*[A-Za-z_$][\w$]*\s*\(\s*\(\)\s*=>\s*import\s*\(\s*["']\./([^"']+\.js)["']`)

// i18nImport is one translation namespace file of one language.
type i18nImport struct {
	namespace string // as spelled in the JSON path ("diodeState")
	file      string // "units-K9p-.js"
}

// scanI18nMap maps language (lower case) → namespace (lower case) → file.
func scanI18nMap(text string) map[string]map[string]i18nImport {
	out := map[string]map[string]i18nImport{}
	scanAround(text, "resources/languages/", i18nRE, 256, 1024, func(m []string) {
		lang := strings.ToLower(m[1])
		if out[lang] == nil {
			out[lang] = map[string]i18nImport{}
		}
		ns := strings.ToLower(m[2])
		if _, seen := out[lang][ns]; !seen {
			out[lang][ns] = i18nImport{namespace: m[2], file: m[3]}
		}
	})
	return out
}

// i18nPath resolves a translation file to a path (docs/spec.md A-1.4c): the asset table
// entry with that full name; else the entry under base = namespace whose
// hash is what follows "<namespace>-" in the file name (the hash may hold
// "-"; an unhashed file accepts any entry of its base); else the file joined
// onto the index path.
func i18nPath(t *assetTable, indexPath string, imp i18nImport) string {
	stem := strings.TrimSuffix(imp.file, ".js")
	if r, ok := t.lookupName(stem); ok {
		return r.path
	}
	base, hash := stem, ""
	if strings.HasPrefix(strings.ToLower(stem), strings.ToLower(imp.namespace)+"-") {
		base, hash = stem[:len(imp.namespace)], stem[len(imp.namespace)+1:]
	} else if strings.EqualFold(stem, imp.namespace) {
		base = stem
	}
	for _, b := range []string{base, imp.namespace} {
		refs := t.byBase[b]
		for i := len(refs) - 1; i >= 0; i-- {
			if hash == "" || refs[i].hash == hash {
				return refs[i].path
			}
		}
	}
	return joinAsset(indexPath, "./"+imp.file)
}

// indexCandidateRE finds index bundles named by an HTML page (docs/spec.md A-1.2a).
var indexCandidateRE = regexp.MustCompile(`/assets/(index-[A-Za-z0-9_-]+\.js)`)
