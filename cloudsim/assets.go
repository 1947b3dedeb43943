package cloudsim

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// bundleLocked is the cloud's current deployment.
func (c *Cloud) bundleLocked() *webapp.Deployment {
	if c.assets == nil {
		c.assets = webapp.Deploy(0)
	}
	return c.assets
}

// IndexAsset is the file name of the entry bundle the cloud serves now.
func (c *Cloud) IndexAsset() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bundleLocked().Index
}

// AssetFiles lists the file names under /assets/ the cloud serves now.
func (c *Cloud) AssetFiles() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.bundleLocked().Files))
}

// AssetFile names the served file of one asset: a definition chunk by its
// symbol ("PARAM_P4_7"), the menu a consumer must pick for a deviceMenu
// ("menu/153"), one menu variant ("menu/101"), a translation chunk
// ("i18n/pl/parameters"), "enums", "css" or "index". "" when unknown.
func (c *Cloud) AssetFile(ref string) string {
	if ref == "index" {
		return c.IndexAsset()
	}
	return webapp.FileName(ref)
}

// RotateIndex deploys a new build: the entry bundle gets a new hash (its old
// name answers 404 from now on), the page and listing name the new one and
// GET /v1/system/version reports a new version. The chunks stay. It returns
// the new index file name.
func (c *Cloud) RotateIndex() string {
	c.mu.Lock()
	b := webapp.Deploy(c.bundleLocked().Generation + 1)
	c.assets = b
	c.mu.Unlock()
	c.log.Info("cloudsim: web app redeployed", "index", b.Index, "version", b.Version)
	return b.Index
}

func (c *Cloud) assetVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bundleLocked().Version
}

// assetFaultLocked finds (and consumes one use of) an active asset fault of
// kind that applies to file ("" = a page, not a file).
func (c *Cloud) assetFaultLocked(kind FaultKind, file *webapp.File) (Fault, bool) {
	for _, af := range c.faults {
		if af.f.Kind != kind {
			continue
		}
		if kind == FaultAssetBroken {
			ref := strings.TrimPrefix(af.f.Path, "/assets/")
			if file == nil || (ref != file.Name && ref != file.Base) {
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
	page := b.Page
	if r.URL.Path != "/" {
		page = b.Listing
	}
	page.Serve(w, r, "no-cache")
}

// asset serves one file of the current deployment.
func (c *Cloud) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	c.mu.Lock()
	file := c.bundleLocked().Files[name]
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
			body = append(append([]byte(nil), file.Body[:len(file.Body)/2]...), "\x00\xff\xfe{[}"...)
		}
		w.Header().Set("Content-Type", file.ContentType)
		w.Header().Set("ETag", `"broken-`+strings.Trim(file.ETag, `"`)+`"`)
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	default:
		file.Serve(w, r, "public, max-age=31536000, immutable")
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
		writeJSON(w, http.StatusOK, map[string]any{"index": b.Index, "version": b.Version, "files": slices.Sorted(maps.Keys(b.Files))})
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
