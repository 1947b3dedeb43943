package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// waitModulesListed waits until /status lists every module of the
// simulated cloud (the first module-list poll is done).
func waitModulesListed(t *testing.T, exp *exporter) {
	t.Helper()
	waitFor(t, 30*time.Second, "/status lists every module", func() (bool, string) {
		code, body := httpGet(t, nil, exp.url+"/status")
		if code != http.StatusOK {
			return false, fmt.Sprintf("HTTP %d", code)
		}
		for _, d := range exp.devids {
			if !strings.Contains(body, ">"+d+"<") {
				return false, "missing " + d
			}
		}
		return true, ""
	})
}

// TestStatusPageInBrowser loads /status from `serve --simulate` in chromium
// and reads the module table and the health cards as rendered.
func TestStatusPageInBrowser(t *testing.T) {
	t.Parallel()
	exp := startServeSimulate(t)
	waitModulesListed(t, exp)

	b := newBrowser(t)
	b.open("status", exp.url+"/status")

	if got := b.texts("h1"); !slices.Equal(got, []string{"bragerone_exporter status"}) {
		t.Errorf("heading %q", got)
	}
	devids := b.texts("#modules tr.module td.devid")
	slices.Sort(devids)
	if !slices.Equal(devids, exp.devids) {
		t.Errorf("module rows show devids %q, want %q", devids, exp.devids)
	}
	names := b.texts("#modules tr.module td:nth-child(2)")
	for i := range exp.devids {
		want := fmt.Sprintf("Boiler room %d", i+1)
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, want) }) {
			t.Errorf("no module row named %q; names %q", want, names)
		}
	}
	labels := b.texts("#cards .card .label")
	for _, want := range []string{"cloud session", "live push", "modules", "recovery"} {
		if !slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, want) }) {
			t.Errorf("no %q card; cards %q", want, labels)
		}
	}
	b.noConsoleErrors()
}

// noFavicon keeps the browser from asking the fixture server for
// /favicon.ico, whose 404 would be a console error of its own.
const noFavicon = `<link rel="icon" href="data:,">`

// TestBrowserReportsConsoleErrors proves the console check can fail: a page
// that logs an error and throws is reported, one that does neither is not.
func TestBrowserReportsConsoleErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/bad":
			fmt.Fprint(w, `<!DOCTYPE html><title>bad</title>`+noFavicon+`<p>bad</p>`+
				`<script>console.error("broken widget"); null.boom;</script>`)
		case "/good":
			fmt.Fprint(w, `<!DOCTYPE html><title>good</title>`+noFavicon+`<p>fine</p><script>console.log("hello")</script>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	b := newBrowser(t)
	b.open("bad", srv.URL+"/bad")
	problems := b.consoleProblems()
	if len(problems) != 2 || !strings.Contains(problems[0], "broken widget") || !strings.Contains(problems[1], "null") {
		t.Errorf("console problems of a broken page = %q, want the error and the exception", problems)
	}
	b.open("good", srv.URL+"/good")
	if problems := b.consoleProblems(); len(problems) != 0 {
		t.Errorf("console problems of a clean page = %q, want none", problems)
	}
}

// A missing browser is an error naming what to install, so the browser
// tests fail rather than skip.
func TestMissingChromiumIsAnError(t *testing.T) {
	t.Setenv(chromiumEnv, "/nonexistent/chromium")
	if _, err := chromiumPath(); err == nil {
		t.Fatal("a browser path that does not exist was accepted")
	}
	t.Setenv(chromiumEnv, "")
	t.Setenv("PATH", t.TempDir())
	_, err := chromiumPath()
	if err == nil || !strings.Contains(err.Error(), `Debian package "chromium"`) {
		t.Fatalf("err = %v, want one naming the Debian package", err)
	}
}
