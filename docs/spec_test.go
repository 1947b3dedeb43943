package docs

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The table lives beside this test; the repository root is one level up.
const (
	specFile = "spec.md"
	repoRoot = ".."
)

// rootPackage is how a test of the repository's root directory is named in
// the table ("main.TestX"): the root holds package main.
const rootPackage = "main"

// TestSpecTable keeps docs/spec.md true: every file, symbol and test a row
// names exists, every row without code or test is listed as a gap, every
// "docs/spec.md <ID>" citation in a Go comment names an existing row, and no
// Go comment cites the interface documents themselves.
func TestSpecTable(t *testing.T) {
	text, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	tbl, problems := parseSpec(string(text))
	if len(tbl.rows) < 100 {
		problems = append(problems, fmt.Sprintf("%s: only %d rows parsed; is the table format broken?", specFile, len(tbl.rows)))
	}
	problems = append(problems, checkSpec(repoRoot, tbl)...)
	problems = append(problems, checkCitations(repoRoot, tbl)...)
	problems = append(problems, checkNoDocumentCitations(repoRoot, pendingCitationPaths)...)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) == 0 {
		counts := map[byte]int{}
		for _, r := range tbl.rows {
			counts[r.id[0]]++
		}
		t.Logf("%d rows (cloud-interface %d, cloud-wire-facts %d, assets-catalog %d), %d gaps",
			len(tbl.rows), counts['I'], counts['W'], counts['A'], len(tbl.gaps))
	}
}

// row is one rule of the table.
type row struct {
	line  int // line in spec.md, for messages
	id    string
	rule  string
	code  []string // "path" or "path#Symbol" or "path#Type.Method"
	tests []string // "dir.TestName" ("main.TestName" for the root)
}

type specTable struct {
	rows []row
	byID map[string]*row
	gaps map[string]int // row ID → line of its entry in the Gaps section
}

var (
	idRE   = regexp.MustCompile(`^[IWA]-\d+(\.\d+)*[a-z]?$`)
	tickRE = regexp.MustCompile("`([^`]+)`")
	// A gap entry: "- `W-7.14`: why".
	gapRE = regexp.MustCompile("^- `([IWA]-[0-9.]+[a-z]?)`")
)

// parseSpec reads the rows of every table whose first column is a row ID,
// and the entries of the "## Gaps" section.
func parseSpec(text string) (specTable, []string) {
	tbl := specTable{byID: map[string]*row{}, gaps: map[string]int{}}
	var problems []string
	inGaps := false
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if strings.HasPrefix(line, "## ") {
			inGaps = strings.TrimSpace(line) == "## Gaps"
			continue
		}
		if inGaps {
			if m := gapRE.FindStringSubmatch(line); m != nil {
				tbl.gaps[m[1]] = n
			}
			continue
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := splitRow(line)
		if len(cells) == 0 {
			continue
		}
		id := strings.Trim(cells[0], "` ")
		if !idRE.MatchString(id) {
			continue // header, separator, or another table
		}
		if len(cells) != 4 {
			problems = append(problems, fmt.Sprintf("%s:%d row %s: want 4 cells (ID | rule | code | tests), got %d", specFile, n, id, len(cells)))
			continue
		}
		r := row{line: n, id: id, rule: strings.TrimSpace(cells[1]),
			code: cellItems(cells[2]), tests: cellItems(cells[3])}
		if r.rule == "" {
			problems = append(problems, fmt.Sprintf("%s:%d row %s: the rule text is empty", specFile, n, id))
		}
		if prev, dup := tbl.byID[id]; dup {
			problems = append(problems, fmt.Sprintf("%s:%d row %s: duplicate ID (first at line %d)", specFile, n, id, prev.line))
			continue
		}
		tbl.rows = append(tbl.rows, r)
		tbl.byID[id] = &tbl.rows[len(tbl.rows)-1]
	}
	// Pointers into a growing slice are stale; rebuild the index.
	for i := range tbl.rows {
		tbl.byID[tbl.rows[i].id] = &tbl.rows[i]
	}
	return tbl, problems
}

// splitRow splits a Markdown table row into its cells; a "|" inside
// backticks is part of the cell.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	inTick := false
	for _, r := range line {
		switch {
		case r == '`':
			inTick = !inTick
			cur.WriteRune(r)
		case r == '|' && !inTick:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// cellItems returns the backticked items of a cell; a cell without any (the
// table writes "—") is empty, and such a row must be listed as a gap.
func cellItems(cell string) []string {
	var items []string
	for _, m := range tickRE.FindAllStringSubmatch(cell, -1) {
		items = append(items, strings.TrimSpace(m[1]))
	}
	return items
}

// checkSpec checks every row against the tree at root.
func checkSpec(root string, tbl specTable) []string {
	var problems []string
	bad := func(r row, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d row %s: ", specFile, r.line, r.id)+fmt.Sprintf(format, args...))
	}
	idx := newTreeIndex(root)
	for _, r := range tbl.rows {
		if (len(r.code) == 0 || len(r.tests) == 0) && tbl.gaps[r.id] == 0 {
			bad(r, "has no code or no test but is not listed under \"## Gaps\"")
		}
		if len(r.code) > 0 && len(r.tests) > 0 && tbl.gaps[r.id] != 0 {
			bad(r, "is listed under \"## Gaps\" (line %d) but names both code and tests", tbl.gaps[r.id])
		}
		for _, c := range r.code {
			path, sym, _ := strings.Cut(c, "#")
			if filepath.IsAbs(path) || strings.Contains(path, "..") || !strings.HasSuffix(path, ".go") {
				bad(r, "code %q: want a repository-relative .go path", c)
				continue
			}
			src, ok := idx.files[path]
			if !ok {
				hint := idx.sameName(path)
				if sym != "" {
					hint = idx.whereDefined(sym)
				}
				bad(r, "code %q: file %s does not exist%s", c, path, hint)
				continue
			}
			if sym != "" && !definesSymbol(src, sym) {
				bad(r, "code %q: %s defines no %s%s", c, path, sym, idx.whereDefined(sym))
			}
		}
		for _, tn := range r.tests {
			dot := strings.LastIndex(tn, ".")
			if dot <= 0 || dot == len(tn)-1 {
				bad(r, "test %q: want <package dir>.<TestName>", tn)
				continue
			}
			dir, name := tn[:dot], tn[dot+1:]
			if !testNameRE.MatchString(name) {
				bad(r, "test %q: %q is not a Test/Fuzz/Benchmark/Example name", tn, name)
				continue
			}
			fsDir := dir
			if dir == rootPackage {
				fsDir = "."
			}
			found, exists := idx.dirHasTest(fsDir, name)
			switch {
			case !exists:
				bad(r, "test %q: package directory %s has no _test.go file%s", tn, dir, idx.whereTest(name))
			case !found:
				bad(r, "test %q: no func %s( in a _test.go file of %s%s", tn, name, dir, idx.whereTest(name))
			}
		}
	}
	var orphans []string
	for id, line := range tbl.gaps {
		if tbl.byID[id] == nil {
			orphans = append(orphans, fmt.Sprintf("%s:%d gap %s: no such row", specFile, line, id))
		}
	}
	sort.Strings(orphans)
	return append(problems, orphans...)
}

var testNameRE = regexp.MustCompile(`^(Test|Fuzz|Benchmark|Example)[A-Za-z0-9_]*$`)

// definesSymbol reports whether Go source src declares sym: a function, a
// type, a method ("Type.Method"), or a const/var/field set with "=" or
// declared in a block.
func definesSymbol(src, sym string) bool {
	if typ, method, ok := strings.Cut(sym, "."); ok {
		re := regexp.MustCompile(`(?m)^func \(\s*\w*\s*\*?` + regexp.QuoteMeta(typ) + `(\[[^\]]*\])?\s*\)\s*` + regexp.QuoteMeta(method) + `\b`)
		return re.MatchString(src)
	}
	q := regexp.QuoteMeta(sym)
	re := regexp.MustCompile(`(?m)^(func\s+(\([^)]*\)\s*)?` + q + `\b|type\s+` + q + `\b|\s*(const|var)\s+` + q + `\b|\t(\w+\s*,\s*)*` + q + `(\s*,\s*\w+)*(\s+[\w.*\[\]]+)?\s*=)`)
	return re.MatchString(src)
}

// dirHasTest reports whether a _test.go file of dir (repository-relative)
// declares func name(, and whether dir has any _test.go file at all.
func (x *treeIndex) dirHasTest(dir, name string) (found, exists bool) {
	re := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(`)
	for _, src := range x.tests[filepath.ToSlash(filepath.Clean(dir))] {
		exists = true
		if re.MatchString(src) {
			return true, true
		}
	}
	return false, exists
}

// treeIndex finds where a missing symbol or test went, so a failure after a
// file is moved or renamed says where to point the row now.
type treeIndex struct {
	files map[string]string   // repository-relative path → source
	tests map[string][]string // package directory → sources of its _test.go files
}

func newTreeIndex(root string) *treeIndex {
	idx := &treeIndex{files: map[string]string{}, tests: map[string][]string{}}
	for _, p := range goFiles(root) {
		src, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			continue
		}
		p = filepath.ToSlash(p)
		idx.files[p] = string(src)
		if strings.HasSuffix(p, "_test.go") {
			dir := filepath.ToSlash(filepath.Dir(p))
			idx.tests[dir] = append(idx.tests[dir], string(src))
		}
	}
	return idx
}

func (x *treeIndex) whereDefined(sym string) string {
	var at []string
	for p, src := range x.files {
		if !strings.HasSuffix(p, "_test.go") && definesSymbol(src, sym) {
			at = append(at, p)
		}
	}
	return hint("defined in", at)
}

// sameName finds files with the base name of a missing one (a file moved to
// another package keeps its name).
func (x *treeIndex) sameName(path string) string {
	var at []string
	for p := range x.files {
		if filepath.Base(p) == filepath.Base(path) {
			at = append(at, p)
		}
	}
	if len(at) == 0 {
		return " (no file of that name in the tree)"
	}
	sort.Strings(at)
	return " (files of that name: " + strings.Join(at, ", ") + ")"
}

func (x *treeIndex) whereTest(name string) string {
	re := regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(`)
	var at []string
	for p, src := range x.files {
		if strings.HasSuffix(p, "_test.go") && re.MatchString(src) {
			at = append(at, p)
		}
	}
	return hint("found in", at)
}

func hint(verb string, at []string) string {
	if len(at) == 0 {
		return " (found nowhere in the tree)"
	}
	sort.Strings(at)
	return fmt.Sprintf(" (now %s %s)", verb, strings.Join(at, ", "))
}

// goFiles lists the repository's Go files (relative paths), skipping hidden
// directories, testdata and node_modules.
func goFiles(root string) []string {
	var out []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, p)
			if err == nil {
				out = append(out, rel)
			}
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// citeRE finds a citation of the table in a comment: "docs/spec.md" followed
// by one or more row IDs separated by commas, spaces, "and", or "to" / "–"
// for a range (whose two ends are checked).
var (
	citeRE   = regexp.MustCompile(`docs/spec\.md((?:[\s,–]+(?:(?:and|to)\s+)?[IWA]-\d+(?:\.\d+)*[a-z]?\b)+)`)
	citeIDRE = regexp.MustCompile(`[IWA]-\d+(?:\.\d+)*[a-z]?\b`)
)

// checkCitations checks that every row ID cited by a Go file of the tree
// exists in the table. This package's own files are skipped: their examples
// cite rows that do not exist on purpose.
func checkCitations(root string, tbl specTable) []string {
	var problems []string
	for _, p := range goFiles(root) {
		if filepath.ToSlash(filepath.Dir(p)) == "docs" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, m := range citeRE.FindAllStringSubmatch(line, -1) {
				for _, id := range citeIDRE.FindAllString(m[1], -1) {
					if tbl.byID[id] == nil {
						problems = append(problems, fmt.Sprintf("%s:%d cites docs/spec.md %s: no such row", filepath.ToSlash(p), i+1, id))
					}
				}
			}
		}
	}
	return problems
}

// pendingCitationPaths are files and directories (a trailing "/") whose
// comments may still cite the interface documents directly instead of rows
// of docs/spec.md: their rewrite is still to come. Each entry is removed once
// its comments cite rows; the list is meant to end empty.
var pendingCitationPaths = []string{}

// documentCiteRE finds a citation of an interface document in a comment: its
// name, or a section sign, whose document the reader would have to guess.
var documentCiteRE = regexp.MustCompile(`cloud-interface|cloud-wire-facts|wire-facts|assets-catalog|§`)

// checkNoDocumentCitations reports every Go comment of the tree at root that
// cites an interface document rather than a row of docs/spec.md: the
// documents are not in the repository, so such a citation cannot be
// followed or checked. Files under a pending path are skipped, and so is this
// package, which names the documents to describe the table.
func checkNoDocumentCitations(root string, pending []string) []string {
	var problems []string
	for _, p := range goFiles(root) {
		rel := filepath.ToSlash(p)
		if filepath.ToSlash(filepath.Dir(p)) == "docs" || isPendingCitationPath(rel, pending) {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		fset := token.NewFileSet()
		file := fset.AddFile(rel, -1, len(src))
		var s scanner.Scanner
		s.Init(file, src, nil, scanner.ScanComments)
		for {
			pos, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.COMMENT {
				continue
			}
			for i, line := range strings.Split(lit, "\n") {
				if m := documentCiteRE.FindString(line); m != "" {
					problems = append(problems, fmt.Sprintf("%s:%d comment cites %q: cite rows instead, as \"docs/spec.md <ID>\"",
						rel, fset.Position(pos).Line+i, m))
				}
			}
		}
	}
	return problems
}

// isPendingCitationPath reports whether the repository-relative path rel is,
// or lies under, an entry of pending.
func isPendingCitationPath(rel string, pending []string) bool {
	for _, p := range pending {
		if rel == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p)) {
			return true
		}
	}
	return false
}
