package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The pages the exporter serves are tested as a person sees them: Debian's
// chromium, headless, driven over the DevTools protocol, loads them from a
// running exporter, the test reads what the browser rendered, and every page
// it opens is kept as a full-page PNG screenshot.

const (
	// chromiumEnv names the browser binary when it is not `chromium` in PATH.
	chromiumEnv = "BRAGERONE_CHROMIUM"
	// artifactsEnv names the directory screenshots are written to; by
	// default testdata/artifacts/ of this package, which git ignores.
	artifactsEnv = "BRAGERONE_ARTIFACTS"
	// defaultArtifacts is that default, relative to the package directory.
	defaultArtifacts = "testdata/artifacts"

	browserStartTimeout  = 60 * time.Second // the machine may be busy
	browserActionTimeout = 30 * time.Second
)

// errNoChromium says what to install; a test that needs the browser fails
// with it instead of skipping.
var errNoChromium = errors.New(`chromium not found in PATH; install the Debian package "chromium" ` +
	`(apt-get install -y --no-install-recommends chromium) or name the binary in ` + chromiumEnv)

// chromiumPath finds the browser: the binary named by BRAGERONE_CHROMIUM,
// else chromium (Debian) or chromium-browser from PATH.
func chromiumPath() (string, error) {
	if p := os.Getenv(chromiumEnv); p != "" {
		found, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %w", chromiumEnv, p, err)
		}
		return found, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if found, err := exec.LookPath(name); err == nil {
			return found, nil
		}
	}
	return "", errNoChromium
}

// artifactsDir is where screenshots go, created if missing.
func artifactsDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(artifactsEnv)
	if dir == "" {
		dir = defaultArtifacts
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifacts directory: %v", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// browser is one headless chromium with one tab, closed when the test ends.
type browser struct {
	t   testing.TB
	tab context.Context

	mu       sync.Mutex
	console  []chromedp.ConsoleMessage // everything the tab wrote to its console, in order
	checked  int                       // console messages already judged by noConsoleErrors
	syncSeq  int
	shotSeen map[string]bool
}

// newBrowser starts chromium; a missing browser fails the test.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	path, err := chromiumPath()
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.WindowSize(1280, 900),
		chromedp.DisableGPU,
		// The browser must never reach beyond loopback.
		chromedp.Flag("proxy-server", "direct://"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	// One deadline bounds the browser's whole life, so a hung chromium
	// cannot outlive the test's timeout.
	life, cancelLife := context.WithTimeout(context.Background(), 10*time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(life, opts...)
	tab, cancelTab := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	b := &browser{t: t, tab: tab, shotSeen: map[string]bool{}}

	// The first action starts the browser, and must run on the tab's own
	// context: a derived context ending would end the browser with it.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tab) }()
	select {
	case err = <-started:
	case <-time.After(browserStartTimeout):
		err = fmt.Errorf("not started within %v", browserStartTimeout)
	}
	if err != nil {
		cancelTab()
		cancelAlloc()
		cancelLife()
		t.Fatalf("starting %s: %v", path, err)
	}

	messages := chromedp.Console(tab)
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelLife()
		<-collected
	})
	return b
}

// run runs one action on the tab under browserActionTimeout.
func runAction[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.tab, browserActionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

// open loads url, requires HTTP 200, and keeps a screenshot named name.
func (b *browser) open(name, url string) {
	b.t.Helper()
	resp := runAction(b, "open "+url, chromedp.NavigateResponse(url))
	if resp == nil || resp.Status != 200 {
		status := int64(0)
		if resp != nil {
			status = resp.Status
		}
		b.screenshot(name)
		b.t.Fatalf("browser: %s answered HTTP %d, want 200", url, status)
	}
	b.screenshot(name)
}

// click clicks the first element matching css and waits for the page it
// leads to, which is kept as a screenshot named name.
func (b *browser) click(name, css string) {
	b.t.Helper()
	runAction(b, "click "+css, chromedp.WaitEvent(page.LoadEventFired, nil,
		chromedp.Click(chromedp.CSS(css), chromedp.NodeVisible)))
	b.screenshot(name)
}

// location is the URL the tab shows.
func (b *browser) location() string {
	b.t.Helper()
	return runAction(b, "location", chromedp.Location())
}

// screenshot keeps the whole page as <artifacts>/<test>-<name>.png.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	png := runAction(b, "screenshot", chromedp.FullScreenshot(100))
	file := filepath.Join(artifactsDir(b.t), artifactName(b.t.Name(), name))
	if b.shotSeen[file] {
		b.t.Fatalf("screenshot %s taken twice in one test", file)
	}
	b.shotSeen[file] = true
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Fatalf("keeping the screenshot: %v", err)
	}
	b.t.Logf("screenshot: %s", file)
	return file
}

// artifactName makes a file name of a test name and a page name.
func artifactName(test, name string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
				return r
			}
			return '_'
		}, s)
	}
	return clean(test) + "-" + clean(name) + ".png"
}

// texts is the rendered text (innerText) of every element matching css, in
// document order.
func (b *browser) texts(css string) []string {
	b.t.Helper()
	sel, _ := json.Marshal(css)
	return runAction(b, "read "+css, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll(`+string(sel)+`), e => e.innerText.trim())`))
}

// attrs is the value of attribute attr of every element matching css.
func (b *browser) attrs(css, attr string) []string {
	b.t.Helper()
	sel, _ := json.Marshal(css)
	name, _ := json.Marshal(attr)
	return runAction(b, "read "+css+" @"+attr, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll(`+string(sel)+`), e => e.getAttribute(`+string(name)+`) ?? "")`))
}

// consoleProblems returns the errors and uncaught exceptions the tab wrote
// to its console since the last call. The messages are in the order the
// browser sent them, so a marker logged now and seen back proves every
// earlier message has been collected.
func (b *browser) consoleProblems() []string {
	b.t.Helper()
	b.mu.Lock()
	b.syncSeq++
	marker := fmt.Sprintf("bragerone-browser-sync-%d", b.syncSeq)
	b.mu.Unlock()
	runAction(b, "console marker", chromedp.Evaluate[chromedp.Void](`console.debug(`+`"`+marker+`"`+`)`))
	var problems []string
	waitFor(b.t, browserActionTimeout, "the console marker back from the browser", func() (bool, string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		for i := b.checked; i < len(b.console); i++ {
			m := b.console[i]
			if m.Type == chromedp.ConsoleDebug && m.Text == marker {
				for _, p := range b.console[b.checked:i] {
					if p.Type == chromedp.ConsoleError || p.IsException() {
						problems = append(problems, fmt.Sprintf("%s (%s:%d)", p, p.URL, p.Line))
					}
				}
				b.checked = i + 1
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d console messages", len(b.console))
	})
	return problems
}

// noConsoleErrors fails the test when the page wrote an error or threw.
func (b *browser) noConsoleErrors() {
	b.t.Helper()
	if p := b.consoleProblems(); len(p) > 0 {
		b.t.Errorf("browser console errors:\n  %s", strings.Join(p, "\n  "))
	}
}

// styles is the computed value of CSS property prop of every element
// matching css: what the browser draws.
func (b *browser) styles(css, prop string) []string {
	b.t.Helper()
	sel, _ := json.Marshal(css)
	name, _ := json.Marshal(prop)
	return runAction(b, "style "+css+" "+prop, chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll(`+string(sel)+`), e => getComputedStyle(e).getPropertyValue(`+string(name)+`))`))
}
