package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

type dockerInstruction struct {
	Cmd  string // upper case
	Args string // continuation lines joined
}

func parseDockerfile(t *testing.T, data []byte) []dockerInstruction {
	t.Helper()
	var out []dockerInstruction
	var pending strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if pending.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			pending.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		pending.WriteString(trimmed)
		full := pending.String()
		pending.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		out = append(out, dockerInstruction{Cmd: strings.ToUpper(cmd), Args: strings.Join(strings.Fields(args), " ")})
	}
	if pending.Len() > 0 {
		t.Fatalf("Dockerfile ends inside a continued line")
	}
	return out
}

func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, readFile(t, filepath.Join(repoRoot, "Dockerfile")))
	args := map[string]string{}
	var froms []string
	var final []dockerInstruction // instructions of the last stage
	for _, in := range ins {
		switch in.Cmd {
		case "ARG":
			if k, v, ok := strings.Cut(in.Args, "="); ok && len(froms) == 0 {
				args[k] = v
			}
		case "FROM":
			image := in.Args
			fields := strings.Fields(image)
			for _, f := range fields {
				if !strings.HasPrefix(f, "--") {
					image = f
					break
				}
			}
			image = os.Expand(image, func(k string) string { return args[k] })
			froms = append(froms, image)
			final = nil
		}
		final = append(final, in)
	}
	if len(froms) != 2 || froms[0] != "golang:1.26" || froms[1] != "gcr.io/distroless/static-debian12:nonroot" {
		t.Fatalf("stages %v, want golang:1.26 then gcr.io/distroless/static-debian12:nonroot", froms)
	}

	var build string
	for _, in := range ins {
		if in.Cmd == "RUN" && strings.Contains(in.Args, "go build") {
			build = in.Args
		}
	}
	script := string(readFile(t, filepath.Join(repoRoot, "scripts", "build.sh")))
	// Both stamp github.com/prometheus/common/version, which --version and
	// bragerone_exporter_build_info read.
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "v=github.com/prometheus/common/version", `-ldflags "-s -w -X ${v}.Version=${`,
		` -X ${v}.Revision=${`, ` -X ${v}.Branch=${`, ` -X ${v}.BuildUser=${`, ` -X ${v}.BuildDate=${`, "-o "} {
		if !strings.Contains(build, want) {
			t.Errorf("Dockerfile go build lacks %q: %s", want, build)
		}
		if !strings.Contains(script, want) {
			t.Errorf("scripts/build.sh lacks %q", want)
		}
	}
	for _, stamp := range []string{"Version=${VERSION}", "Revision=${REVISION}", "Branch=${BRANCH}", "BuildUser=${BUILD_USER}", "BuildDate=${BUILD_DATE}"} {
		if !strings.Contains(build, "${v}."+stamp) {
			t.Errorf("the Dockerfile must stamp its build args: %s lacks ${v}.%s", build, stamp)
		}
	}

	labels := map[string]bool{}
	var user, expose, entrypoint, copied string
	for _, in := range final {
		switch in.Cmd {
		case "LABEL":
			for _, m := range regexp.MustCompile(`([a-z.]+)=`).FindAllStringSubmatch(in.Args, -1) {
				labels[m[1]] = true
			}
		case "USER":
			user = in.Args
		case "EXPOSE":
			expose = in.Args
		case "ENTRYPOINT":
			entrypoint = in.Args
		case "COPY":
			if strings.HasPrefix(in.Args, "--from=build ") {
				f := strings.Fields(in.Args)
				copied = f[len(f)-1]
			}
		}
	}
	for _, l := range []string{"title", "description", "source", "url", "documentation", "version", "revision"} {
		if !labels["org.opencontainers.image."+l] {
			t.Errorf("missing label org.opencontainers.image.%s", l)
		}
	}
	if user == "" || strings.HasPrefix(user, "root") || strings.HasPrefix(user, "0") {
		t.Errorf("USER %q: want a non-root user", user)
	}
	if expose != "9826" {
		t.Errorf("EXPOSE %q, want 9826", expose)
	}
	if entrypoint != fmt.Sprintf(`["%s"]`, copied) {
		t.Errorf("ENTRYPOINT %s does not run the copied binary %s", entrypoint, copied)
	}
}

// dockerignoreMatch reports whether a slash-separated path relative to the
// build context is excluded by one .dockerignore pattern (a pattern that
// names a directory excludes what is below it).
func dockerignoreMatch(pattern, p string) bool {
	pattern = strings.TrimPrefix(path.Clean(pattern), "/")
	segs := strings.Split(p, "/")
	if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
		for i := range segs {
			if dockerignoreMatch(rest, strings.Join(segs[i:], "/")) {
				return true
			}
		}
		return false
	}
	psegs := strings.Split(pattern, "/")
	if len(psegs) > len(segs) {
		return false
	}
	for i, ps := range psegs {
		if ok, _ := path.Match(ps, segs[i]); !ok {
			return false
		}
	}
	return true
}

func TestDockerignoreKeepsWhatTheBuildNeeds(t *testing.T) {
	var patterns []string
	for _, line := range strings.Split(string(readFile(t, filepath.Join(repoRoot, ".dockerignore"))), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "!") {
			t.Fatalf(".dockerignore exception %q: the matcher of this test does not model exceptions", line)
		}
		patterns = append(patterns, line)
	}
	excluded := func(p string) string {
		for _, pat := range patterns {
			if dockerignoreMatch(pat, p) {
				return pat
			}
		}
		return ""
	}
	// The matcher itself must exclude what the file says it excludes.
	for _, p := range []string{".git/HEAD", "bragerone_exporter", "realtime/testdata/nodeserver/node_modules/x/index.js", "deploy/docker-compose.yml"} {
		if excluded(p) == "" {
			t.Errorf("%s is not excluded by .dockerignore", p)
		}
	}

	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-C", root, "-deps", "-f", "{{if not .Standard}}{{.Dir}}|{{join .GoFiles \",\"}}|{{join .EmbedFiles \",\"}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	needed := []string{"go.mod", "go.sum"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if len(parts) != 3 || !strings.HasPrefix(parts[0], root) {
			continue // modules from the module cache
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(parts[0], root), "/")
		for _, list := range parts[1:] {
			for _, f := range strings.Split(list, ",") {
				if f != "" {
					needed = append(needed, path.Join(rel, f))
				}
			}
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, p := range needed {
		if pat := excluded(p); pat != "" {
			t.Errorf(".dockerignore pattern %q excludes %s, which go build needs", pat, p)
		}
	}
}
