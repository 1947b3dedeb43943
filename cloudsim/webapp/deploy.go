package webapp

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

// File is one file of the static site, with its validators.
type File struct {
	Name        string // "PARAM_P4_7-Ab12Cd34.js"; "" for the listing
	Base        string // the name before the hash: "PARAM_P4_7", "parameters", "index"
	Body        []byte
	ETag        string // quoted, from the body
	ContentType string
	Modified    time.Time // Last-Modified
}

func newFile(name, base, ct string, body []byte, mod time.Time) *File {
	sum := sha256.Sum256(body)
	return &File{Name: name, Base: base, Body: body, ETag: `"` + hex.EncodeToString(sum[:8]) + `"`, ContentType: ct, Modified: mod}
}

// Serve answers a request for f with its ETag and Last-Modified;
// conditional requests get 304.
func (f *File) Serve(w http.ResponseWriter, r *http.Request, cacheControl string) {
	w.Header().Set("Content-Type", f.ContentType)
	w.Header().Set("ETag", f.ETag)
	w.Header().Set("Cache-Control", cacheControl)
	http.ServeContent(w, r, f.Name, f.Modified, bytes.NewReader(f.Body))
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
	files []*File
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
		ch.files = append(ch.files, newFile(name, base, ct, body, assetsModTime))
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

// Deployment is one build of the web app: the chunks every build shares
// plus its index, the page naming it and the /assets/ listing.
type Deployment struct {
	Generation int
	Version    string           // what GET /v1/system/version reports for this deployment
	Index      string           // "index-Ab12Cd34.js"
	Page       *File            // the app page at "/"
	Listing    *File            // the autoindex listing at "/assets/"
	Files      map[string]*File // by name, under /assets/
}

var (
	bundlesMu sync.Mutex
	bundles   = map[int]*Deployment{}
)

// Deploy returns deployment gen (built once; shared, never changed).
// Deployment 0 is the first; each later one has a new index, page and
// version and the same chunks.
func Deploy(gen int) *Deployment {
	bundlesMu.Lock()
	defer bundlesMu.Unlock()
	if b := bundles[gen]; b != nil {
		return b
	}
	ch := chunks()
	mod := assetsModTime.Add(time.Duration(gen) * time.Minute)
	b := &Deployment{Generation: gen, Version: "1.0." + mod.Format("0601021504"), Files: map[string]*File{}}
	for _, f := range ch.files {
		b.Files[f.Name] = f
	}
	body := []byte(indexJS(ch.names, gen, b.Version))
	b.Index = "index-" + assetHash(body, nil) + ".js"
	b.Files[b.Index] = newFile(b.Index, "index", "application/javascript", body, mod)

	page := `<!DOCTYPE html>
<html lang="pl">
  <head>
    <meta charset="UTF-8" />
    <link rel="icon" href="/favicon.ico" />
    <meta name="viewport" content="width=device-width, initial-scale=1.0" />
    <title>BragerOne</title>
    <script type="module" crossorigin src="/assets/` + b.Index + `"></script>
    <link rel="stylesheet" crossorigin href="/assets/` + ch.names.css + `">
  </head>
  <body>
    <div id="app"></div>
  </body>
</html>
`
	b.Page = newFile("index.html", "", "text/html; charset=utf-8", []byte(page), mod)

	// The /assets/ listing, autoindex-style with absolute links.
	var l strings.Builder
	l.WriteString("<html>\r\n<head><title>Index of /assets/</title></head>\r\n<body>\r\n<h1>Index of /assets/</h1><hr><pre><a href=\"../\">../</a>\r\n")
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		f := b.Files[name]
		fmt.Fprintf(&l, "<a href=\"/assets/%s\">%s</a>%s %s %8d\r\n", html.EscapeString(name), html.EscapeString(name),
			strings.Repeat(" ", max(1, 50-len(name))), f.Modified.Format("02-Jan-2006 15:04"), len(f.Body))
	}
	l.WriteString("</pre><hr></body>\r\n</html>\r\n")
	b.Listing = newFile("", "", "text/html", []byte(l.String()), mod)
	bundles[gen] = b
	return b
}

// IndexName is the hashed name of the first deployment's entry bundle,
// e.g. "index-Ab12Cd3-.js".
func IndexName() string { return Deploy(0).Index }

// FileName names the file of one asset every deployment shares: a
// definition chunk by its symbol ("PARAM_P4_7"), the menu a consumer must
// pick for a deviceMenu ("menu/153"), one menu variant ("menu/101"), a
// translation chunk ("i18n/pl/parameters"), "enums" or "css". "" when
// unknown.
func FileName(ref string) string { return chunks().refs[ref] }
