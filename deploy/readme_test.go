package deploy

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the README's generated flag reference from the binary's --help")

const (
	flagsBegin = "<!-- BEGIN FLAGS: generated from the binary's --help by `go test ./deploy -run TestREADMEFlagReference -update`; do not edit -->"
	flagsEnd   = "<!-- END FLAGS -->"
)

// mdEscape keeps help text literal inside a Markdown table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "<", "&lt;").Replace(s)
}

func flagTable(b *strings.Builder, flags []helpFlag) {
	b.WriteString("| flag | default | environment | description |\n|---|---|---|---|\n")
	for _, f := range flags {
		def := "—"
		switch {
		case f.Bool:
			def = "`false`"
		case f.Default != "":
			def = "`" + f.Default + "`"
		}
		env := "—"
		if f.Env != "" {
			env = "`" + f.Env + "`"
		}
		name := "`--" + f.Name + "`"
		if f.Placeholder != "" {
			name = "`--" + f.Name + "=" + f.Placeholder + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, def, env, mdEscape(f.Help))
	}
	b.WriteString("\n")
}

// renderFlagReference builds the README's flag reference from the binary.
func renderFlagReference(t *testing.T) string {
	top := helpOf(t)
	global := map[string]bool{}
	var logging, general []helpFlag
	for _, f := range top.Flags {
		global[f.Name] = true
		switch {
		case f.Name == "help":
		case strings.HasPrefix(f.Name, "log."):
			logging = append(logging, f)
		default:
			general = append(general, f)
		}
	}
	var b strings.Builder
	b.WriteString(flagsBegin + "\n\n")
	b.WriteString("#### General (every command)\n\n")
	flagTable(&b, general)
	b.WriteString("#### Logging (every command)\n\n")
	flagTable(&b, logging)

	serve := helpOf(t, "serve")
	serveGroup := map[string]string{}
	var groups []string
	byGroup := map[string][]helpFlag{}
	for _, f := range serve.Flags {
		if global[f.Name] {
			continue
		}
		g := f.Group
		if g == "" || g == "Flags" {
			g = "Other"
		}
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], f)
		serveGroup[f.Name] = g
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "#### %s (serve)\n\n", g)
		flagTable(&b, byGroup[g])
	}
	for _, cmd := range top.Commands {
		if cmd == "serve" {
			continue
		}
		page := helpOf(t, cmd)
		var own []helpFlag
		shared := map[string]bool{}
		for _, f := range page.Flags {
			switch {
			case global[f.Name]:
			case serveGroup[f.Name] != "":
				shared[serveGroup[f.Name]] = true
			default:
				own = append(own, f)
			}
		}
		fmt.Fprintf(&b, "#### %s\n\n", cmd)
		if len(shared) > 0 {
			var gs []string
			for _, g := range groups {
				if shared[g] {
					gs = append(gs, g)
				}
			}
			list := strings.Join(gs, ", ")
			if len(gs) > 1 {
				list = strings.Join(gs[:len(gs)-1], ", ") + " and " + gs[len(gs)-1]
			}
			fmt.Fprintf(&b, "Takes the %s flags of serve", list)
			if len(own) > 0 {
				b.WriteString(", and:")
			} else {
				b.WriteString(".")
			}
			b.WriteString("\n\n")
		}
		if len(own) > 0 {
			flagTable(&b, own)
		} else if len(shared) == 0 {
			b.WriteString("No flags of its own.\n\n")
		}
	}
	b.WriteString(flagsEnd)
	return b.String()
}

func TestREADMEFlagReference(t *testing.T) {
	readmePath := filepath.Join(repoRoot, "README.md")
	readme := string(readFile(t, readmePath))
	begin := strings.Index(readme, flagsBegin)
	end := strings.Index(readme, flagsEnd)
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the generated flag reference markers")
	}
	want := renderFlagReference(t)
	got := readme[begin : end+len(flagsEnd)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(readme[:begin]+want+readme[end+len(flagsEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md flag reference rewritten")
		return
	}
	t.Errorf("README.md flag reference is out of date with --help: run go test ./deploy -run TestREADMEFlagReference -update")
}

// TestREADMEPromQLParses hands every line of the README's promql blocks to
// promtool as a recording rule, so an example query that does not parse fails.
func TestREADMEPromQLParses(t *testing.T) {
	readme := string(readFile(t, filepath.Join(repoRoot, "README.md")))
	blocks := regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(readme, -1)
	var rules []map[string]string
	// A block holds one query or several, each separated from the next by
	// a blank line; one query may span lines.
	for _, b := range blocks {
		for _, query := range regexp.MustCompile(`\n\s*\n`).Split(b[1], -1) {
			if query = strings.TrimSpace(query); query != "" {
				rules = append(rules, map[string]string{"record": fmt.Sprintf("readme:example_%d", len(rules)), "expr": query})
			}
		}
	}
	if len(rules) < 6 {
		t.Fatalf("found %d example queries in README.md", len(rules))
	}
	out, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "readme", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(tmpDir, "readme-promql.yml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool(t), "check", "rules", file).CombinedOutput(); err != nil {
		t.Errorf("README.md example queries: %v\n%s", err, out)
	}
}
