package collector

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// docMetric is one row of METRICS.md's summary table.
type docMetric struct {
	typ    string
	labels []string // sorted
}

var docRow = regexp.MustCompile("^\\| `(bragerone_[a-z0-9_]+)` \\| (gauge|counter|histogram|summary) \\|([a-z0-9_, ]*)\\|")

func readMetricsDoc(t *testing.T) (map[string]docMetric, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "METRICS.md"))
	if err != nil {
		t.Fatalf("METRICS.md: %v", err)
	}
	out := map[string]docMetric{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		m := docRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var labels []string
		for l := range strings.SplitSeq(m[3], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		if _, dup := out[m[1]]; dup {
			t.Errorf("METRICS.md lists %s twice", m[1])
		}
		out[m[1]] = docMetric{typ: m[2], labels: labels}
	}
	if len(out) < 20 {
		t.Fatalf("found only %d metric rows in METRICS.md; is the table format intact?", len(out))
	}
	return out, string(raw)
}

// goldenFamilies reads every testdata/*.prom and returns what they emit:
// type and label names per family (histogram series labels without "le").
func goldenFamilies(t *testing.T) map[string]docMetric {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.prom"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	out := map[string]docMetric{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for name, mf := range fams {
			labels := map[string]bool{}
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					labels[lp.GetName()] = true
				}
			}
			got := docMetric{typ: strings.ToLower(mf.GetType().String()), labels: slices.Sorted(maps.Keys(labels))}
			if prev, ok := out[name]; ok {
				// Label sets must agree between files; union them in case a
				// file has no series with some label (it never should).
				got.labels = slices.Compact(slices.Sorted(slices.Values(append(prev.labels, got.labels...))))
			}
			out[name] = got
		}
	}
	return out
}

// TestMetricsDocMatchesCode keeps METRICS.md and the code in step: every
// metric of the table is emitted in some golden file with the documented
// type and labels, every emitted metric is in the table, and every metric
// has its reference section.
func TestMetricsDocMatchesCode(t *testing.T) {
	doc, raw := readMetricsDoc(t)
	emitted := goldenFamilies(t)
	for name, d := range doc {
		e, ok := emitted[name]
		if !ok {
			t.Errorf("%s is in METRICS.md but in no golden file (testdata/*.prom)", name)
			continue
		}
		if e.typ != d.typ {
			t.Errorf("%s: METRICS.md says %s, code emits %s", name, d.typ, e.typ)
		}
		if !slices.Equal(e.labels, d.labels) {
			t.Errorf("%s: METRICS.md labels %v, code emits %v", name, d.labels, e.labels)
		}
		if !strings.Contains(raw, "#### `"+name+"`") {
			t.Errorf("%s has no reference section (#### `%s`) in METRICS.md", name, name)
		}
	}
	for name := range emitted {
		if _, ok := doc[name]; !ok {
			t.Errorf("%s is emitted but not listed in METRICS.md", name)
		}
	}
}

// TestDescribeMatchesDoc checks that the collector and the instrumentation
// describe exactly the families of the table, independently of the fixtures.
func TestDescribeMatchesDoc(t *testing.T) {
	doc, _ := readMetricsDoc(t)
	c := newTestCollector(t, healthySnapshot(), nil, Options{})
	reg := prometheus.NewPedanticRegistry()
	in, err := NewInstrumentation(reg, InstrumentationOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 128)
	c.Describe(ch)
	for _, col := range []prometheus.Collector{in.requests, in.duration, in.logins, in.buildInfo} {
		col.Describe(ch)
	}
	close(ch)
	described := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read name of %s", d)
		}
		described[m[1]] = true
	}
	for name := range doc {
		if !described[name] {
			t.Errorf("%s is in METRICS.md but not described by the code", name)
		}
	}
	for name := range described {
		if _, ok := doc[name]; !ok {
			t.Errorf("%s is described by the code but not in METRICS.md", name)
		}
	}
}

// fullExpositions are every family between them: the collector in a state
// where all optional series of a session that is up are present, one where it
// is down (live_stale_seconds and session_outage_seconds exclude each
// other), each with the instrumentation; the account is logged in in the
// first and throttled, its login failing, in the second.
func fullExpositions(t *testing.T) [][]byte {
	t.Helper()
	up := moduleOfflineSnapshot()
	q := quarantineSnapshot()
	home(&up).Push, home(&up).Recovery = home(&q).Push, home(&q).Recovery
	up.Modules[1] = onlineModule("MOD2", "Garage")
	up.Modules[0].ActiveAlarms, up.Modules[0].ActiveAlarmsKnown = catalogSnapshot().Modules[0].ActiveAlarms, true
	up.Modules[0].History = mod1History()
	up.Account = accountOKSnapshot().Account
	down := sessionDownSnapshot()
	down.Account = accountThrottledSnapshot().Account
	gone := departedSnapshot()
	down.DepartedObjects, down.DepartedModules = gone.DepartedObjects, gone.DepartedModules

	var outs [][]byte
	for _, s := range []Snapshot{up, down} {
		reg, _ := instrumentationFixture(t)
		reg.MustRegister(newTestCollector(t, s, catalogParams(), catalogOpts(testCatalog())))
		out, err := exposeGatherer(reg)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
	}
	return outs
}

// TestPromtoolCheckMetrics runs the Prometheus project's own linter on full
// expositions, as CI does.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install the Debian package `prometheus` (apt-get install --no-install-recommends prometheus)")
	}
	doc, _ := readMetricsDoc(t)
	seen := map[string]bool{}
	for i, out := range fullExpositions(t) {
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		for name := range fams {
			seen[name] = true
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(out)
		res, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool check metrics (exposition %d): %v\n%s", i, err, res)
		}
	}
	// Every family of the table must be in one of them, or the check would
	// miss some.
	for name := range doc {
		if !seen[name] {
			t.Errorf("full expositions lack %s", name)
		}
	}
}

// TestREADMEMetricsTableNamesEveryFamily: the README's short table of
// metrics names every family of METRICS.md, so that "in short" never
// leaves one out silently.
func TestREADMEMetricsTableNamesEveryFamily(t *testing.T) {
	doc, _ := readMetricsDoc(t)
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	start, end := strings.Index(readme, "\n## Metrics\n"), strings.Index(readme, "\n### Parameter names\n")
	if start < 0 || end < start {
		t.Fatal("README.md has no Metrics section before Parameter names")
	}
	table := readme[start:end]
	for name := range doc {
		if !strings.Contains(table, "`"+name+"`") && !strings.Contains(table, "`"+name+"{") {
			t.Errorf("README.md's metrics table leaves out %s", name)
		}
	}
}
