package cloudsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// assetsModTime is the Last-Modified of the first deployment's files: a fixed
// instant, so conditional requests behave the same across restarts, like a
// deployed build. Deployment n is n minutes later.
var assetsModTime = time.Date(2025, 1, 31, 6, 30, 0, 0, time.UTC)

// assetFile is one served file.
type assetFile struct {
	name string // "PARAM_P4_7-Ab12Cd34.js"
	base string // the name before the hash: "PARAM_P4_7", "parameters", "index"
	body []byte
	etag string
	ct   string
	mod  time.Time
}

func newAssetFile(name, base, ct string, body []byte, mod time.Time) *assetFile {
	sum := sha256.Sum256(body)
	return &assetFile{name: name, base: base, body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ct: ct, mod: mod}
}

// assetHash is a Vite-style 8-character file hash of body. want, when set,
// picks a hash shape (a hyphen inside, a trailing hyphen) that the live
// bundle has and consumers must survive; the salt only varies the name.
func assetHash(body []byte, want func(string) bool) string {
	for salt := 0; ; salt++ {
		h := sha256.New()
		if salt > 0 {
			fmt.Fprintf(h, "%d\x00", salt)
		}
		h.Write(body)
		s := base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:8]
		ok := !strings.HasPrefix(s, "-") && !strings.Contains(s, "--")
		if want != nil {
			ok = ok && want(s)
		}
		if ok {
			return s
		}
	}
}

func hyphenInside(s string) bool {
	i := strings.IndexByte(s, '-')
	return i > 0 && i < len(s)-1
}

func hyphenLast(s string) bool { return strings.HasSuffix(s, "-") && strings.Count(s, "-") == 1 }

// assetChunks are the files every deployment shares: everything but the
// index, its page and the asset listing.
type assetChunks struct {
	names *assetNames
	files []*assetFile
	refs  map[string]string // "PARAM_P4_7", "menu/153", "i18n/pl/units", "enums", "css" → file name
}

var (
	chunksOnce   sync.Once
	sharedChunks *assetChunks
)

func buildChunks() *assetChunks {
	ch := &assetChunks{refs: map[string]string{}}
	n := &assetNames{params: map[string]string{}, menus: map[*simMenu]string{}, i18n: map[string]string{}}
	ch.names = n
	add := func(ref, base, ct string, body []byte, want func(string) bool) string {
		ext := ".js"
		if ct == "text/css" {
			ext = ".css"
		}
		name := base + "-" + assetHash(body, want) + ext
		ch.files = append(ch.files, newAssetFile(name, base, ct, body, assetsModTime))
		ch.refs[ref] = name
		return name
	}
	const js = "application/javascript"
	n.enums = add("enums", "enums", js, []byte(enumsJS()), nil)
	n.preload = append(n.preload, n.enums)
	for _, s := range simSymbols {
		if s.form.inChunk() {
			f := add(s.token, s.token, js, []byte(definitionChunkJS(s, n)), nil)
			n.params[s.token] = f
			n.preload = append(n.preload, f)
		}
	}
	for _, m := range simMenus {
		var want func(string) bool
		if m.variant == "101" {
			want = hyphenInside
		}
		f := add("menu/"+m.variant, m.variant, js, []byte(menuChunkJS(m, n)), want)
		n.menus[m] = f
		n.preload = append(n.preload, f)
	}
	for _, m := range simMenus {
		ch.refs["menu/"+strconv.Itoa(m.deviceMenu)] = n.menus[menuFor(m.deviceMenu)]
	}
	for _, lang := range simLanguages {
		ns := translations(lang)
		for _, name := range slices.Sorted(maps.Keys(ns)) {
			var want func(string) bool
			switch {
			case lang == "en" && name == "units":
				want = hyphenLast
			case lang == "pl" && name == "parameters":
				want = hyphenInside
			}
			n.i18n[lang+"/"+name] = add("i18n/"+lang+"/"+name, name, js, []byte(i18nChunkJS(lang, name, ns[name])), want)
		}
	}
	n.css = add("css", "index", "text/css", []byte("#app{min-height:100vh;font-family:Roboto,sans-serif}.v-application{background:#f5f5f5}\n"), nil)
	return ch
}

func chunks() *assetChunks {
	chunksOnce.Do(func() { sharedChunks = buildChunks() })
	return sharedChunks
}

// assetBundle is one deployment of the web app: the shared chunks plus the
// index, the page naming it and the /assets/ listing.
type assetBundle struct {
	gen     int
	version string // what GET /v1/system/version reports for this deployment
	index   string // "index-Ab12Cd34.js"
	page    *assetFile
	listing *assetFile
	files   map[string]*assetFile
}

var (
	bundlesMu sync.Mutex
	bundles   = map[int]*assetBundle{}
)

// bundleFor builds (once) deployment gen.
func bundleFor(gen int) *assetBundle {
	bundlesMu.Lock()
	defer bundlesMu.Unlock()
	if b := bundles[gen]; b != nil {
		return b
	}
	ch := chunks()
	mod := assetsModTime.Add(time.Duration(gen) * time.Minute)
	b := &assetBundle{gen: gen, version: "1.0." + mod.Format("0601021504"), files: map[string]*assetFile{}}
	for _, f := range ch.files {
		b.files[f.name] = f
	}
	body := []byte(indexJS(ch.names, gen, b.version))
	b.index = "index-" + assetHash(body, nil) + ".js"
	b.files[b.index] = newAssetFile(b.index, "index", "application/javascript", body, mod)

	page := `<!DOCTYPE html>
<html lang="pl">
  <head>
    <meta charset="UTF-8" />
    <link rel="icon" href="/favicon.ico" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0" />
    <title>BragerOne</title>
    <script type="module" crossorigin src="/assets/` + b.index + `"></script>
    <link rel="stylesheet" crossorigin href="/assets/` + ch.names.css + `">
  </head>
  <body>
    <div id="app"></div>
  </body>
</html>
`
	b.page = newAssetFile("index.html", "", "text/html; charset=utf-8", []byte(page), mod)

	// The /assets/ listing, autoindex-style with absolute links.
	var l strings.Builder
	l.WriteString("<html>\r\n<head><title>Index of /assets/</title></head>\r\n<body>\r\n<h1>Index of /assets/</h1><hr><pre><a href=\"../\">../</a>\r\n")
	for _, name := range slices.Sorted(maps.Keys(b.files)) {
		f := b.files[name]
		fmt.Fprintf(&l, "<a href=\"/assets/%s\">%s</a>%s %s %8d\r\n", html.EscapeString(name), html.EscapeString(name),
			strings.Repeat(" ", max(1, 50-len(name))), f.mod.Format("02-Jan-2006 15:04"), len(f.body))
	}
	l.WriteString("</pre><hr></body>\r\n</html>\r\n")
	b.listing = newAssetFile("", "", "text/html", []byte(l.String()), mod)
	bundles[gen] = b
	return b
}

// AssetIndexName is the hashed name of the first deployment's entry bundle,
// e.g. "index-Ab12Cd3-.js"; after RotateIndex a cloud serves another
// (Cloud.IndexAsset).
func AssetIndexName() string { return bundleFor(0).index }

// bundleLocked is the cloud's current deployment.
func (c *Cloud) bundleLocked() *assetBundle {
	if c.assets == nil {
		c.assets = bundleFor(0)
	}
	return c.assets
}

// IndexAsset is the file name of the entry bundle the cloud serves now.
func (c *Cloud) IndexAsset() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bundleLocked().index
}

// AssetFiles lists the file names under /assets/ the cloud serves now.
func (c *Cloud) AssetFiles() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.bundleLocked().files))
}

// AssetFile names the served file of one asset: a definition chunk by its
// symbol ("PARAM_P4_7"), the menu a consumer must pick for a deviceMenu
// ("menu/153"), one menu variant ("menu/101"), a translation chunk
// ("i18n/pl/parameters"), "enums", "css" or "index". "" when unknown.
func (c *Cloud) AssetFile(ref string) string {
	if ref == "index" {
		return c.IndexAsset()
	}
	return chunks().refs[ref]
}

// RotateIndex deploys a new build: the entry bundle gets a new hash (its old
// name answers 404 from now on), the page and listing name the new one and
// GET /v1/system/version reports a new version. The chunks stay. It returns
// the new index file name.
func (c *Cloud) RotateIndex() string {
	c.mu.Lock()
	b := bundleFor(c.bundleLocked().gen + 1)
	c.assets = b
	c.mu.Unlock()
	c.log.Info("cloudsim: web app redeployed", "index", b.index, "version", b.version)
	return b.index
}

func (c *Cloud) assetVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bundleLocked().version
}

// assetFaultLocked finds (and consumes one use of) an active asset fault of
// kind that applies to file ("" = a page, not a file).
func (c *Cloud) assetFaultLocked(kind FaultKind, file *assetFile) (Fault, bool) {
	for _, af := range c.faults {
		if af.f.Kind != kind {
			continue
		}
		if kind == FaultAssetBroken {
			ref := strings.TrimPrefix(af.f.Path, "/assets/")
			if file == nil || (ref != file.name && ref != file.base) {
				continue
			}
		}
		f := af.f
		c.consumeLocked(af)
		return f, true
	}
	return Fault{}, false
}

// writeAssetStatus answers an asset request with an error page, as the
// static site's front end does.
func writeAssetStatus(w http.ResponseWriter, status int) {
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	writeHTMLStatus(w, status)
}

// serveAsset answers one file with ETag and Last-Modified; conditional
// requests get 304.
func serveAsset(w http.ResponseWriter, r *http.Request, f *assetFile, cacheControl string) {
	w.Header().Set("Content-Type", f.ct)
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Cache-Control", cacheControl)
	http.ServeContent(w, r, f.name, f.mod, bytes.NewReader(f.body))
}

// assetPage serves the site root ("/") and the /assets/ listing.
func (c *Cloud) assetPage(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	b := c.bundleLocked()
	f, down := c.assetFaultLocked(FaultAssetsUnreachable, nil)
	c.mu.Unlock()
	if down {
		writeAssetStatus(w, f.Status)
		return
	}
	page := b.page
	if r.URL.Path != "/" {
		page = b.listing
	}
	serveAsset(w, r, page, "no-cache")
}

// asset serves one file of the current deployment.
func (c *Cloud) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	c.mu.Lock()
	file := c.bundleLocked().files[name]
	f, down := c.assetFaultLocked(FaultAssetsUnreachable, nil)
	var broken Fault
	var isBroken bool
	if !down && file != nil {
		broken, isBroken = c.assetFaultLocked(FaultAssetBroken, file)
	}
	c.mu.Unlock()
	switch {
	case down:
		writeAssetStatus(w, f.Status)
	case file == nil:
		writeHTMLStatus(w, http.StatusNotFound)
	case isBroken && broken.Status != 0:
		writeAssetStatus(w, broken.Status)
	case isBroken:
		// A truncated, corrupted copy under its own validator: a
		// conditional request must not be answered 304 from the good one.
		body := []byte(broken.Body)
		if len(body) == 0 {
			body = append(append([]byte(nil), file.body[:len(file.body)/2]...), "\x00\xff\xfe{[}"...)
		}
		w.Header().Set("Content-Type", file.ct)
		w.Header().Set("ETag", `"broken-`+strings.Trim(file.etag, `"`)+`"`)
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	default:
		serveAsset(w, r, file, "public, max-age=31536000, immutable")
	}
}

// assetControlRoutes mounts the asset controls:
//
//	GET  /control/assets                -> {"index":…,"version":…,"files":[…]}
//	POST /control/assets/rotate-index   -> {"index":…,"version":…}
func (c *Cloud) assetControlRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /control/assets", c.control(func(w http.ResponseWriter, _ *http.Request) {
		c.mu.Lock()
		b := c.bundleLocked()
		c.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"index": b.index, "version": b.version, "files": slices.Sorted(maps.Keys(b.files))})
	}))
	mux.HandleFunc("POST /control/assets/rotate-index", c.control(func(w http.ResponseWriter, _ *http.Request) {
		idx := c.RotateIndex()
		writeJSON(w, http.StatusOK, map[string]any{"index": idx, "version": c.assetVersion()})
	}))
}

// Asset-site fault kinds. They act on the static site only: REST and the
// realtime channel stay healthy.
const (
	// FaultAssetBroken breaks the asset file Path selects: "/assets/<file>"
	// or "/assets/<base>" (every file with that name before the hash, e.g.
	// "/assets/PARAM_P4_7" or "/assets/parameters" for both languages). With
	// Status it answers that status; without, 200 with Body, or with a
	// truncated, corrupted copy when Body is empty.
	FaultAssetBroken FaultKind = "asset_broken"
	// FaultAssetsUnreachable answers every request to the static site (the
	// page, the /assets/ listing and every file) with Status, default 503.
	FaultAssetsUnreachable FaultKind = "assets_unreachable"
)

// validateAssetFault checks the fields of the asset fault kinds.
func validateAssetFault(f Fault) error {
	if f.Kind != FaultAssetBroken && f.Kind != FaultAssetsUnreachable {
		return nil
	}
	if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		return &FaultError{f, "status must be 4xx or 5xx"}
	}
	if f.Kind == FaultAssetBroken && (!strings.HasPrefix(f.Path, "/assets/") || len(f.Path) == len("/assets/")) {
		return &FaultError{f, "path must name an asset: \"/assets/<file>\" or \"/assets/<name before the hash>\""}
	}
	return nil
}
