package docs

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// packagesFile is the map of the packages.
const packagesFile = "packages.md"

var update = flag.Bool("update", false, "rewrite the Lines column of "+packagesFile)

// sizeSlack is how far a package's stated size may drift from its real one
// before the map is stale: the larger of 30 % and 150 lines.
func sizeSlack(lines int) int { return max(150, lines*3/10) }

// mapRow is one package of packages.md.
type mapRow struct {
	line    int    // in packages.md
	layer   string // "1" … "5", or "–" for an artefact
	pkg     string // relative to the module: "collector", "." for the root
	lines   int
	imports []string
}

var (
	mapRowRE  = regexp.MustCompile("^\\| ([1-5–]) \\| `([^`]+)` \\| (\\d+) \\| [^|]+ \\| ([^|]*)\\|$")
	mapCodeRE = regexp.MustCompile("`([^`]+)`")
)

// TestPackageMap keeps docs/packages.md true: every package `go list ./...`
// lists has a row and every row names such a package; each row's imports are
// the package's imports of this repository; every import points to the same
// layer or a lower one, and none to an artefact; and each stated size is
// within sizeSlack of the package's lines of Go source.
func TestPackageMap(t *testing.T) {
	text, err := os.ReadFile(packagesFile)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]*mapRow{}
	for i, l := range strings.Split(string(text), "\n") {
		if !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "| Layer") {
			continue
		}
		m := mapRowRE.FindStringSubmatch(l)
		if m == nil {
			t.Errorf("%s:%d: not a row of the map: %s", packagesFile, i+1, l)
			continue
		}
		r := &mapRow{line: i + 1, layer: m[1], pkg: m[2]}
		r.lines, _ = strconv.Atoi(m[3])
		for _, c := range mapCodeRE.FindAllStringSubmatch(m[4], -1) {
			r.imports = append(r.imports, c[1])
		}
		if rows[r.pkg] != nil {
			t.Errorf("%s:%d: %s is listed twice", packagesFile, r.line, r.pkg)
		}
		rows[r.pkg] = r
	}
	real := listPackages(t)
	if len(real) < 20 {
		t.Fatalf("go list found only %d packages", len(real))
	}
	for pkg := range real {
		if rows[pkg] == nil {
			t.Errorf("%s has no row for the package %s", packagesFile, pkg)
		}
	}
	sizes := map[string]int{}
	for pkg, r := range rows {
		p, ok := real[pkg]
		if !ok {
			t.Errorf("%s:%d: %s is not a package of the module (go list ./...)", packagesFile, r.line, pkg)
			continue
		}
		if !slices.Equal(r.imports, p.imports) {
			t.Errorf("%s:%d: %s imports %v, the map says %v", packagesFile, r.line, pkg, p.imports, r.imports)
		}
		for _, imp := range p.imports {
			to := rows[imp]
			switch {
			case to == nil:
			case to.layer == "–":
				t.Errorf("%s (layer %s) imports the artefact package %s", pkg, r.layer, imp)
			case r.layer != "–" && to.layer > r.layer:
				t.Errorf("%s (layer %s) imports %s of the higher layer %s: imports point down", pkg, r.layer, imp, to.layer)
			}
		}
		sizes[pkg] = p.lines
		if d := p.lines - r.lines; !*update && (d > sizeSlack(p.lines) || -d > sizeSlack(p.lines)) {
			t.Errorf("%s:%d: %s has %d lines, the map says %d (go test ./docs -run TestPackageMap -update)", packagesFile, r.line, pkg, p.lines, r.lines)
		}
	}
	if *update {
		rewriteSizes(t, string(text), sizes)
	}
}

// pkgFacts is what go list says about one package.
type pkgFacts struct {
	lines   int      // lines of its non-test Go files
	imports []string // its imports of this module, relative, sorted
}

// listPackages lists the module's packages by their path relative to the
// module ("." for the root).
func listPackages(t *testing.T) map[string]pkgFacts {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{.Module.Path}}|{{.Dir}}|{{join .GoFiles \",\"}}|{{join .Imports \",\"}}", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := map[string]pkgFacts{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "|")
		if len(f) != 5 {
			t.Fatalf("go list: %q", l)
		}
		rel := func(path string) (string, bool) {
			if path == f[1] {
				return ".", true
			}
			r, ok := strings.CutPrefix(path, f[1]+"/")
			return r, ok
		}
		name, _ := rel(f[0])
		var facts pkgFacts
		for _, file := range strings.Split(f[3], ",") {
			if file == "" {
				continue
			}
			src, err := os.ReadFile(filepath.Join(f[2], file))
			if err != nil {
				t.Fatal(err)
			}
			facts.lines += strings.Count(string(src), "\n")
		}
		for _, imp := range strings.Split(f[4], ",") {
			if r, ok := rel(imp); ok {
				facts.imports = append(facts.imports, r)
			}
		}
		slices.Sort(facts.imports)
		pkgs[name] = facts
	}
	return pkgs
}

// rewriteSizes writes the real sizes into the Lines column.
func rewriteSizes(t *testing.T, text string, sizes map[string]int) {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		m := mapRowRE.FindStringSubmatchIndex(l)
		if m == nil {
			continue
		}
		if n, ok := sizes[l[m[4]:m[5]]]; ok {
			lines[i] = l[:m[6]] + fmt.Sprint(n) + l[m[7]:]
		}
	}
	if err := os.WriteFile(packagesFile, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
