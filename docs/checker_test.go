package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree lays files out under a temporary root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, src := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeTree is a small repository: a package with code and tests, a root
// test, and a moved symbol and test the hints must find.
var fakeTree = map[string]string{
	"pkg/a.go":        "package pkg\n\nconst (\n\tDefaultLimit = 3\n\tOther, Second = 1, 2\n)\n\nvar Pause = 1\n\ntype Machine struct{}\n\nfunc (m *Machine) Step() {}\n\nfunc Decide() {}\n",
	"pkg/a_test.go":   "package pkg\n\nfunc TestDecide(t *testing.T) {}\n\nfunc FuzzDecide(f *testing.F) {}\n",
	"main_test.go":    "package main\n\nfunc TestRoot(t *testing.T) {}\n",
	"moved/b.go":      "package moved\n\nfunc Gone() {}\n",
	"moved/b_test.go": "package moved\n\nfunc TestGone(t *testing.T) {}\n",
	"pkg/cite.go":     "package pkg\n\n// Decide follows docs/spec.md I-3.1a and W-7.99; see also docs/spec.md A-4.7.3, I-9.9z.\n// Rows docs/spec.md I-3.1a to W-8.1 and docs/spec.md I-3.1a–A-9.1.\nfunc Cited() {}\n",
}

func TestCheckerAcceptsAGoodTable(t *testing.T) {
	root := writeTree(t, map[string]string{
		"pkg/a.go":      fakeTree["pkg/a.go"],
		"pkg/a_test.go": fakeTree["pkg/a_test.go"],
		"main_test.go":  fakeTree["main_test.go"],
		"pkg/cite.go":   "package pkg\n\n// See docs/spec.md I-3.1a, A-4.7.3 and W-7.3; docs/spec.md I-3.1a to A-4.7.3.\nfunc Cited() {}\n",
	})
	spec := strings.Join([]string{
		"| ID | Rule | Code | Tests |",
		"|---|---|---|---|",
		"| `I-3.1a` | a rule | `pkg/a.go#Decide`, `pkg/a.go#Machine.Step` | `pkg.TestDecide`, `pkg.FuzzDecide` |",
		"| `A-4.7.3` | consts | `pkg/a.go#DefaultLimit`, `pkg/a.go#Second`, `pkg/a.go#Pause`, `pkg/a.go#Machine` | `main.TestRoot` |",
		"| `W-7.3` | a gap: `x|y` stays in one cell | — | — |",
		"",
		"## Gaps",
		"",
		"- `W-7.3`: not built yet.",
	}, "\n")
	tbl, problems := parseSpec(spec)
	problems = append(problems, checkSpec(root, tbl)...)
	problems = append(problems, checkCitations(root, tbl)...)
	if len(problems) != 0 {
		t.Fatalf("a correct table was rejected:\n%s", strings.Join(problems, "\n"))
	}
	if len(tbl.rows) != 3 || len(tbl.byID["I-3.1a"].code) != 2 || len(tbl.byID["W-7.3"].code) != 0 {
		t.Fatalf("parsed rows wrong: %+v", tbl.rows)
	}
}

// TestCheckerCatchesBrokenRows feeds the checker a table with every kind of
// mistake and requires one message per mistake, naming its row.
func TestCheckerCatchesBrokenRows(t *testing.T) {
	root := writeTree(t, fakeTree)
	spec := strings.Join([]string{
		"| ID | Rule | Code | Tests |",
		"|---|---|---|---|",
		"| `I-3.1a` | missing file | `pkg/nothere.go` | `pkg.TestDecide` |",
		"| `I-3.1b` | missing symbol | `pkg/a.go#Vanished` | `pkg.TestDecide` |",
		"| `I-3.1c` | moved symbol | `pkg/a.go#Gone` | `pkg.TestDecide` |",
		"| `I-3.1d` | missing method | `pkg/a.go#Machine.Run` | `pkg.TestDecide` |",
		"| `I-3.1e` | moved file | `pkg/b.go` | `pkg.TestDecide` |",
		"| `W-7.1` | missing test | `pkg/a.go` | `pkg.TestNever` |",
		"| `W-7.2` | moved test | `pkg/a.go` | `pkg.TestGone` |",
		"| `W-7.3` | missing package dir | `pkg/a.go` | `nowhere.TestDecide` |",
		"| `W-7.4` | not a test name | `pkg/a.go` | `pkg.Decide` |",
		"| `W-7.5` | no test, no gap entry | `pkg/a.go` | — |",
		"| `W-7.6` | listed as gap with both | `pkg/a.go` | `pkg.TestDecide` |",
		"| `W-7.6` | duplicate | `pkg/a.go` | `pkg.TestDecide` |",
		"| `A-1.2` | three cells | `pkg/a.go` |",
		"| `A-1.3` |  | `pkg/a.go` | `pkg.TestDecide` |",
		"| `A-1.4` | absolute path | `/etc/passwd.go` | `pkg.TestDecide` |",
		"",
		"## Gaps",
		"",
		"- `W-7.6`: listed although complete.",
		"- `W-9.9`: a gap without a row.",
	}, "\n")
	tbl, problems := parseSpec(spec)
	problems = append(problems, checkSpec(root, tbl)...)
	problems = append(problems, checkCitations(root, tbl)...)
	all := strings.Join(problems, "\n")

	want := []struct{ row, says string }{
		{"row I-3.1a", "file pkg/nothere.go does not exist (no file of that name in the tree)"},
		{"row I-3.1e", "file pkg/b.go does not exist (files of that name: moved/b.go)"},
		{"row I-3.1b", "pkg/a.go defines no Vanished (found nowhere in the tree)"},
		{"row I-3.1c", "pkg/a.go defines no Gone (now defined in moved/b.go)"},
		{"row I-3.1d", "pkg/a.go defines no Machine.Run"},
		{"row W-7.1", "no func TestNever( in a _test.go file of pkg (found nowhere in the tree)"},
		{"row W-7.2", "no func TestGone( in a _test.go file of pkg (now found in moved/b_test.go)"},
		{"row W-7.3", "package directory nowhere has no _test.go file"},
		{"row W-7.4", "is not a Test/Fuzz/Benchmark/Example name"},
		{"row W-7.5", "has no code or no test but is not listed"},
		{"row W-7.6", "is listed under \"## Gaps\""},
		{"row W-7.6", "duplicate ID"},
		{"row A-1.2", "want 4 cells"},
		{"row A-1.3", "the rule text is empty"},
		{"row A-1.4", "want a repository-relative .go path"},
		{"gap W-9.9", "no such row"},
		{"pkg/cite.go:3", "cites docs/spec.md W-7.99: no such row"},
		{"pkg/cite.go:3", "cites docs/spec.md A-4.7.3: no such row"},
		{"pkg/cite.go:3", "cites docs/spec.md I-9.9z: no such row"},
		{"pkg/cite.go:4", "cites docs/spec.md W-8.1: no such row"},
		{"pkg/cite.go:4", "cites docs/spec.md A-9.1: no such row"},
	}
	for _, w := range want {
		found := false
		for _, p := range problems {
			if strings.Contains(p, w.row) && strings.Contains(p, w.says) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no message for %s saying %q; got:\n%s", w.row, w.says, all)
		}
	}
	// I-3.1a exists in the table, so its citation is fine.
	if strings.Contains(all, "cites docs/spec.md I-3.1a") {
		t.Errorf("an existing row was reported as a bad citation:\n%s", all)
	}
	if len(problems) != len(want) {
		t.Errorf("want exactly %d problems, got %d:\n%s", len(want), len(problems), all)
	}
}

func TestDefinesSymbol(t *testing.T) {
	src := fakeTree["pkg/a.go"] + "\nfunc (c Cfg[T]) Get() {}\nvar Table = map[string]int{}\n\tField string\n"
	for sym, want := range map[string]bool{
		"Decide": true, "Machine": true, "Machine.Step": true, "DefaultLimit": true,
		"Other": true, "Second": true, "Pause": true, "Table": true, "Cfg.Get": true,
		"Field": false, "Decid": false, "Machine.Ste": false, "Step": true,
	} {
		if got := definesSymbol(src, sym); got != want {
			t.Errorf("definesSymbol(%q) = %v, want %v", sym, got, want)
		}
	}
}

// TestCheckerCatchesDocumentCitations requires one message per comment line
// that cites an interface document or a bare section, in line and block
// comments alike, and none for strings, row citations or pending paths.
func TestCheckerCatchesDocumentCitations(t *testing.T) {
	root := writeTree(t, map[string]string{
		"pkg/old.go": "package pkg\n\n" +
			"// Decide follows cloud-wire-facts.md §7.3 and the\n" +
			"// ladder (cloud-interface.md, \"Zombie recovery ladder\").\n" +
			"func Decide() {}\n\n" +
			"/* Units follow\n   assets-catalog.md. */\n" +
			"var unit = 1 // bare section: §4.4 step 3\n",
		"pkg/new.go": "package pkg\n\n" +
			"// Cited follows docs/spec.md W-7.3, A-4.4b.\n" +
			"var cited = \"cloud-wire-facts.md §7.3 in a string is not a comment\"\n",
		"pending/a.go":   "package pending\n\n// Still cites cloud-interface.md.\nfunc A() {}\n",
		"one/pending.go": "package one\n\n// Still cites §4.7.\nfunc B() {}\n",
		"one/done.go":    "package one\n\n// Cites §4.7 though its neighbour is pending.\nfunc C() {}\n",
	})
	got := checkNoDocumentCitations(root, []string{"pending/", "one/pending.go"})
	want := []string{
		`pkg/old.go:3 comment cites "cloud-wire-facts"`,
		`pkg/old.go:4 comment cites "cloud-interface"`,
		`pkg/old.go:8 comment cites "assets-catalog"`,
		`pkg/old.go:9 comment cites "§"`,
		`one/done.go:3 comment cites "§"`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w+":")
		}
		if !found {
			t.Errorf("no problem %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
