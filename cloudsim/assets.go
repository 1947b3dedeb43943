package cloudsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// assetsModTime is the Last-Modified of every asset: a fixed instant, so
// conditional requests behave the same across restarts, like a deployed build.
var assetsModTime = time.Date(2026, 1, 31, 6, 30, 0, 0, time.UTC)

type assetFile struct {
	body []byte
	etag string
	ct   string
}

// assetBundle is the single-page application's build: an index page and
// hashed JavaScript chunks.
type assetBundle struct {
	index []byte
	files map[string]assetFile
}

func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:8]
}

func newAssetBundle() *assetBundle {
	chunks := map[string]string{
		"module.menu": `export default{menu:[{id:"boiler",parameters:["PARAM_66","PARAM_1"]}]};`,
		"PARAM_66":    `export default{name:"PARAM_66",pool:"P4",chan:"v",index:1,unit:1};`,
		"i18n-en":     `export default{"parameters.PARAM_66":"Boiler temperature","module.connection.connected":"Connected"};`,
	}
	b := &assetBundle{files: map[string]assetFile{}}
	var imports []string
	for _, name := range sortedKeys(chunks) {
		body := []byte(chunks[name])
		file := name + "-" + contentHash(body) + ".js"
		b.files[file] = assetFile{body: body, etag: `"` + contentHash(body) + `"`, ct: "application/javascript"}
		imports = append(imports, fmt.Sprintf("import(\"/assets/%s\");", file))
	}
	indexJS := []byte(strings.Join(imports, "\n") + "\nconsole.log(\"BragerOne\");\n")
	indexName := "index-" + contentHash(indexJS) + ".js"
	b.files[indexName] = assetFile{body: indexJS, etag: `"` + contentHash(indexJS) + `"`, ct: "application/javascript"}
	b.index = []byte(`<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8"><title>BragerOne</title>` +
		`<script type="module" crossorigin src="/assets/` + indexName + `"></script></head>` +
		`<body><div id="app"></div></body></html>`)
	return b
}

var bundle = newAssetBundle()

// AssetIndexName is the hashed name of the entry bundle, e.g. "index-1a2b3c4d.js".
func AssetIndexName() string {
	for name := range bundle.files {
		if strings.HasPrefix(name, "index-") {
			return name
		}
	}
	return ""
}

func (c *Cloud) assetIndex(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("ETag", `"`+contentHash(bundle.index)+`"`)
	http.ServeContent(w, r, "index.html", assetsModTime, bytes.NewReader(bundle.index))
}

// asset serves one bundle file; http.ServeContent answers If-None-Match and
// If-Modified-Since with 304.
func (c *Cloud) asset(w http.ResponseWriter, r *http.Request) {
	f, ok := bundle.files[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.ct)
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Cache-Control", "public, max-age=0")
	http.ServeContent(w, r, r.PathValue("name"), assetsModTime, bytes.NewReader(f.body))
}
