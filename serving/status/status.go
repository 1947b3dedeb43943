// Package status serves /status: a server-rendered HTML page (no JavaScript)
// showing the exporter's health at a glance for the whole account: how many
// objects (installations) and realtime sessions it holds and why, headline
// cards naming the objects in trouble, and one section per object with its
// own session and outages, live push health, recovery ladder and one row
// per module (modules of no watched object under "Other modules"), then a
// timeline of recent outage episodes drawn as inline SVG and a list of them,
// each naming its object. Each module row links to the module's own page
// (ModuleHandler): its object and that object's session state, its link
// state, its active alarms by name, and its parameters grouped by the menus
// of the controller's app, with names, units and displayed values.
//
// Everything on the page comes from one collector.Snapshot per request (its
// Objects, never the deprecated single-session fields) and is escaped by
// html/template; values from the cloud are additionally cleaned of control
// characters and shortened for display.
package status

import (
	"bytes"
	"embed"
	"html/template"
	"io"
	"net/http"
	"time"

	"github.com/bragerone/bragerone_exporter/collector"
)

// Options configures the page.
type Options struct {
	// Window is the span of the episode timeline, ending at the snapshot's
	// Now. Default 6 h.
	Window time.Duration
	// Refresh makes the browser reload the page (a meta refresh, no script).
	// Default 30 s; negative disables it.
	Refresh time.Duration
	// Location is the time zone of displayed times. Default UTC.
	Location *time.Location
	// Title heads the page. Default "bragerone_exporter status".
	Title string
	// DiagnosticsLink, when set, is where the page links the diagnostics
	// bundle (the exporter's /debug/diagnostics).
	DiagnosticsLink string
}

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = 6 * time.Hour
	}
	if o.Refresh == 0 {
		o.Refresh = 30 * time.Second
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	if o.Title == "" {
		o.Title = "bragerone_exporter status"
	}
	return o
}

// The pages: "status", "module" (one module's parameters) and the "style"
// they share.
//
//go:embed *.html.tmpl
var pageSources embed.FS

var pageTemplate = template.Must(template.New("pages").Funcs(template.FuncMap{
	"sub": func(a, b int) int { return a - b },
}).ParseFS(pageSources, "*.html.tmpl"))

// getOrHead reports whether r is a GET or HEAD, the only methods the pages
// answer; anything else is refused with 405 and the Allow header.
func getOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// Handler serves the status page for GET and HEAD.
func Handler(src collector.SnapshotSource, opts Options) http.Handler {
	opts = opts.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !getOrHead(w, r) {
			return
		}
		// Rendered whole before anything is written, so a failure is a clean 500.
		var buf bytes.Buffer
		if err := Render(&buf, src.Snapshot(), opts); err != nil {
			http.Error(w, "rendering the status page failed", http.StatusInternalServerError)
			return
		}
		writePage(w, r, buf.Bytes())
	})
}

// writePage sends a rendered page with the headers every page carries: no
// caching, no sniffing, and a policy that allows nothing but inline styles.
func writePage(w http.ResponseWriter, r *http.Request, page []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(page)
}

// Render writes the page for one snapshot.
func Render(w io.Writer, s collector.Snapshot, opts Options) error {
	return pageTemplate.ExecuteTemplate(w, "status", buildPage(s, opts.withDefaults()))
}
