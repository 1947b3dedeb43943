package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// contributingGuide is CONTRIBUTING.md's text.
func contributingGuide(t *testing.T) string {
	t.Helper()
	return string(readFile(t, filepath.Join(repoRoot, "CONTRIBUTING.md")))
}

// testFiles calls fn with the package directory ("." or "./x/y") and the
// text of every _test.go file of the repository.
func testFiles(t *testing.T, fn func(pkg, text string)) {
	t.Helper()
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repoRoot, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := "."
		if rel != "." {
			pkg = "./" + filepath.ToSlash(rel)
		}
		fn(pkg, string(text))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The fuzz table of CONTRIBUTING.md names every fuzz target of the
// repository in its package, and no other.
func TestContributingListsEveryFuzzTarget(t *testing.T) {
	listed := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `(\\.[a-z0-9/]*)` \\| (`Fuzz\\w+`(?:, `Fuzz\\w+`)*) \\|$")
	for _, m := range row.FindAllStringSubmatch(contributingGuide(t), -1) {
		for _, name := range regexp.MustCompile(`Fuzz\w+`).FindAllString(m[2], -1) {
			listed[m[1]+" "+name] = true
		}
	}
	if len(listed) == 0 {
		t.Fatal("CONTRIBUTING.md has no fuzz table rows (| `./pkg` | `FuzzX`, … |)")
	}
	declared := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
	testFiles(t, func(pkg, text string) {
		for _, m := range decl.FindAllStringSubmatch(text, -1) {
			declared[pkg+" "+m[1]] = true
		}
	})
	for k := range declared {
		if !listed[k] {
			t.Errorf("fuzz target %s is not in CONTRIBUTING.md's table", k)
		}
	}
	for k := range listed {
		if !declared[k] {
			t.Errorf("CONTRIBUTING.md lists fuzz target %s, which does not exist", k)
		}
	}
}

// Every package whose tests rewrite files with -update is named in
// CONTRIBUTING.md with the command that does it, and every such command
// names a package that has the flag.
func TestContributingListsEveryUpdateFlag(t *testing.T) {
	var withFlag []string
	testFiles(t, func(pkg, text string) {
		if strings.Contains(text, `flag.Bool("update"`) && !slices.Contains(withFlag, pkg) {
			withFlag = append(withFlag, pkg)
		}
	})
	if len(withFlag) == 0 {
		t.Fatal(`no package declares flag.Bool("update", …): has the golden-file flag been renamed?`)
	}
	var named []string
	for _, m := range regexp.MustCompile("`go test (\\.[a-z0-9/]*) [^`]*-update`").FindAllStringSubmatch(contributingGuide(t), -1) {
		named = append(named, m[1])
	}
	for _, pkg := range withFlag {
		if !slices.Contains(named, pkg) {
			t.Errorf("%s rewrites golden files with -update; CONTRIBUTING.md does not say so", pkg)
		}
	}
	for _, pkg := range named {
		if !slices.Contains(withFlag, pkg) {
			t.Errorf("CONTRIBUTING.md runs go test %s -update, but %s has no -update flag", pkg, pkg)
		}
	}
}

// The make targets and the repository paths CONTRIBUTING.md names exist.
func TestContributingNamesWhatExists(t *testing.T) {
	guide := contributingGuide(t)
	makefile := string(readFile(t, filepath.Join(repoRoot, "Makefile")))
	for _, m := range regexp.MustCompile("make ([a-z][a-z-]*)").FindAllStringSubmatch(guide, -1) {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).MatchString(makefile) {
			t.Errorf("CONTRIBUTING.md names make %s, which the Makefile lacks", m[1])
		}
	}
	// Inline code outside the fenced blocks that names a file or directory
	// of the repository; links too.
	prose := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(guide, "")
	var paths []string
	for _, m := range regexp.MustCompile("`([^`\\s]+)`").FindAllStringSubmatch(prose, -1) {
		p := m[1]
		if strings.ContainsAny(p, "<$='") || strings.HasPrefix(p, "-") || strings.HasPrefix(p, "/") ||
			strings.HasPrefix(p, "./") || strings.HasPrefix(p, "github.com/") {
			continue
		}
		if strings.Contains(p, "/") || strings.HasSuffix(p, ".md") {
			paths = append(paths, p)
		}
	}
	for _, m := range regexp.MustCompile(`\]\(([^)#:]+)\)`).FindAllStringSubmatch(prose, -1) {
		paths = append(paths, m[1])
	}
	if len(paths) < 5 {
		t.Fatalf("found only %d paths in CONTRIBUTING.md: %q", len(paths), paths)
	}
	for _, p := range paths {
		if matches, err := filepath.Glob(filepath.Join(repoRoot, filepath.FromSlash(p))); err != nil || len(matches) == 0 {
			t.Errorf("CONTRIBUTING.md names %s, which does not exist", p)
		}
	}
}
