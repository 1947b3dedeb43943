package e2e

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// The README's example queries are run as the README prints them: the test
// reads every fenced promql block of README.md, and the sentence before a
// block says what its queries return. Each sentence has a claim below that
// checks exactly that on a real Prometheus scraping the exporter and a
// simulated cloud: a query edited in the README is the query tested, and a
// block whose sentence has no claim (or a claim whose sentence is gone) fails
// the test. Queries of one block are separated by a blank line.

const readmeFile = "../README.md"

// readmeBlock is one fenced promql block of README.md.
type readmeBlock struct {
	about   string   // the paragraph before the block, on one line
	queries []string // the block's queries, in order
	line    int      // of the opening fence
}

// readmeBlocks reads every promql block of the README with the paragraph
// before it.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	f, err := os.Open(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out       []readmeBlock
		paragraph []string // the last paragraph of text
		blank     bool     // the line before was blank
		inBlock   *readmeBlock
		inOther   bool
		query     []string
		n         int
	)
	endQuery := func() {
		if q := strings.TrimSpace(strings.Join(query, "\n")); q != "" {
			inBlock.queries = append(inBlock.queries, q)
		}
		query = nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case inBlock != nil && trimmed == "```":
			endQuery()
			out = append(out, *inBlock)
			inBlock, paragraph = nil, nil
		case inBlock != nil && trimmed == "":
			endQuery()
		case inBlock != nil:
			query = append(query, line)
		case inOther:
			inOther = trimmed != "```"
		case trimmed == "```promql":
			inBlock = &readmeBlock{about: strings.Join(paragraph, " "), line: n}
		case strings.HasPrefix(trimmed, "```"):
			inOther, paragraph = true, nil
		case trimmed == "":
			blank = true
		default:
			if blank {
				paragraph = nil
			}
			paragraph, blank = append(paragraph, trimmed), false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inBlock != nil {
		t.Fatalf("%s:%d: promql block not closed", readmeFile, inBlock.line)
	}
	return out
}

// queryEnv is what the claims check against.
type queryEnv struct {
	prom   *prometheus
	exp    *exporter
	ctl    control         // of the simulated cloud
	devids []string        // its modules
	twin   *cloudsim.Cloud // a never-started copy of it: what its assets describe
	devid  string          // the module the README's queries name
}

// result is one query's answer at one evaluation time.
type result []promSample

func (r result) String() string {
	var parts []string
	for _, s := range r {
		var labels []string
		for k, v := range s.Metric {
			if k != "job" && k != "instance" {
				labels = append(labels, k+"="+strconv.Quote(v))
			}
		}
		sort.Strings(labels)
		parts = append(parts, "{"+strings.Join(labels, ", ")+"} "+s.value())
	}
	return fmt.Sprintf("%d series: %s", len(r), strings.Join(parts, "; "))
}

// queryAt runs an instant query evaluated at time at (Unix seconds).
func (p *prometheus) queryAt(q string, at float64) (result, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	path := "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatFloat(at, 'f', 3, 64)
	if err := p.api(path, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("result type %s, want vector", data.ResultType)
	}
	return data.Result, nil
}

// mustQueryAt is queryAt for the claims' own reference queries.
func (e *queryEnv) mustQueryAt(t *testing.T, q string, at float64) result {
	t.Helper()
	r, err := e.prom.queryAt(q, at)
	if err != nil {
		t.Fatalf("reference query %s: %v", q, err)
	}
	return r
}

// A check says whether the results of a block's queries, all evaluated at
// time at, are what the README says; seen explains what it found.
type check func(t *testing.T, e *queryEnv, at float64, res []result) (ok bool, seen string)

// readmeClaim is what one README sentence says of its block: the number of
// queries, what they return while everything is healthy, and (for the
// queries that watch for trouble) what they return while the fault switched
// on by fault is active.
type readmeClaim struct {
	queries int
	healthy check
	fault   func(t *testing.T, e *queryEnv) (clear func())
	faulty  check
}

// value parses a sample value ("NaN" parses to NaN).
func value(s promSample) float64 {
	v, err := strconv.ParseFloat(s.value(), 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

func isEmpty(r result) (bool, string) { return len(r) == 0, r.String() }

func finiteAtLeast(r result, min float64) (bool, string) {
	for _, s := range r {
		if v := value(s); math.IsNaN(v) || math.IsInf(v, 0) || v < min {
			return false, fmt.Sprintf("value %s below %g or not a number: %v", s.value(), min, r)
		}
	}
	return true, r.String()
}

// byLabel indexes the samples of r by one label; repeated values fail.
func byLabel(r result, label string) (map[string]promSample, bool) {
	out := map[string]promSample{}
	for _, s := range r {
		if _, dup := out[s.Metric[label]]; dup {
			return nil, false
		}
		out[s.Metric[label]] = s
	}
	return out, true
}

// sameKeys says whether a result indexed by a label covers exactly want.
func sameKeys[V any](got map[string]V, want []string) bool {
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want = slices.Clone(want)
	sort.Strings(want)
	return slices.Equal(keys, want)
}

// activeEndpoints are the endpoints of a counter with a request in the last
// 5 minutes, as the README's REST queries count them.
func (e *queryEnv) activeEndpoints(t *testing.T, counter string, at float64) []string {
	var out []string
	for _, s := range e.mustQueryAt(t, "sum by (endpoint) (rate("+counter+"[5m])) > 0", at) {
		out = append(out, s.Metric["endpoint"])
	}
	return out
}

// rawValues are the module's raw registers at time at, by "P4.v8".
func (e *queryEnv) rawValues(t *testing.T, devid string, at float64) map[string]float64 {
	out := map[string]float64{}
	for _, s := range e.mustQueryAt(t, fmt.Sprintf("bragerone_parameter_value{devid=%q}", devid), at) {
		out[s.Metric["pool"]+"."+s.Metric["param"]] = value(s)
	}
	return out
}

// clock is how the app shows a time-of-day register: raw n is (n−1)×10
// minutes after midnight.
func clock(raw float64) string {
	m := (int(raw) - 1) * 10
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

func optionLabels(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// shownAsTheAppShows checks one row of the "every parameter" query against
// what the simulated app shows for the register: enum options and states in
// the text label, a time of day as HH:MM, numbers as the displayed number.
func shownAsTheAppShows(s promSample, d webapp.DescribedParam, raw float64, stored bool) (bool, string) {
	l := s.Metric
	what := fmt.Sprintf("%s (%s): %v", d.Name, d.Address, result{s})
	if l["name"] != d.Name || l["unit"] != d.Unit {
		return false, what + fmt.Sprintf(": want name %q unit %q", d.Name, d.Unit)
	}
	_, numeric := d.Display(raw)
	switch {
	case len(d.States) > 0:
		if !slices.Contains(optionLabels(d.States), l["text"]) || s.value() != "1" {
			return false, what + fmt.Sprintf(": want value 1 and the text of one of the states %v", d.States)
		}
	case d.Enum != nil:
		if want, ok := d.Enum[int(raw)]; !stored || !ok || l["text"] != want || s.value() != "1" {
			return false, what + fmt.Sprintf(": raw %v, want value 1 and text %q", raw, want)
		}
	case !numeric:
		want := clock(raw)
		if raw == 0 {
			want = l["text"] // the app's "off" label
		}
		if !stored || l["text"] == "" || l["text"] != want || s.value() != "1" {
			return false, what + fmt.Sprintf(": raw %v, want value 1 and text %q", raw, want)
		}
	default:
		if _, has := l["text"]; has {
			return false, what + ": a number with a text label"
		}
		v := value(s)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false, what + ": not a number"
		}
		// A value composed of two words is the twin's to compose; its
		// primary register alone is not it.
		if want, _ := d.Display(raw); len(d.Parts) == 0 && (!stored || math.Abs(v-want) > 1e-9) {
			return false, what + fmt.Sprintf(": raw %v shows %v", raw, want)
		}
	}
	return true, what
}

// readmeClaims are the README's sentences, verbatim, with what each says.
var readmeClaims = map[string]readmeClaim{
	"Every parameter of a module that the app shows, with its name, unit and menu, as the app shows it: " +
		"one series per parameter. The value is the number the app shows (scaled, composed or computed); where " +
		"the app shows a word or a time instead (an operating mode such as `Automatic`, a pump's `On`/`Off`, " +
		"the boiler state, a time of day such as `22:00`), the `text` label holds it and the value is 1:": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			var shown []webapp.DescribedParam
			for _, d := range e.twin.Described(e.devid, "en") {
				if !d.Hidden {
					shown = append(shown, d)
				}
			}
			rows := res[0]
			// What the module's menu shows, as the catalog and as the
			// simulated app's assets have it.
			visible := e.mustQueryAt(t, fmt.Sprintf(`count(bragerone_parameter_info{devid=%q, visible="true"})`, e.devid), at)
			if len(visible) != 1 || visible[0].value() != strconv.Itoa(len(shown)) {
				return false, fmt.Sprintf("the app shows %d parameters, bragerone_parameter_info: %v", len(shown), visible)
			}
			if len(rows) != len(shown) {
				return false, fmt.Sprintf("the app shows %d parameters; %v", len(shown), rows)
			}
			raw := e.rawValues(t, e.devid, at)
			kinds := map[string]int{}
			for _, s := range rows {
				addr := s.Metric["pool"] + "." + s.Metric["param"]
				i := slices.IndexFunc(shown, func(d webapp.DescribedParam) bool { return d.Address == addr })
				if s.Metric["devid"] != e.devid || s.Metric["menu"] == "" || i < 0 {
					return false, fmt.Sprintf("%v is not a parameter the app shows", result{s})
				}
				v, stored := raw[addr]
				if ok, seen := shownAsTheAppShows(s, shown[i], v, stored); !ok {
					return false, seen
				}
				shown = slices.Delete(shown, i, i+1)
				if _, text := s.Metric["text"]; text {
					kinds["text"]++
				} else {
					kinds["number"]++
				}
			}
			// The module of the README shows enums, computed states and a
			// time of day: the check saw text as well as numbers.
			return kinds["text"] > 0 && kinds["number"] > 0, fmt.Sprintf("%v; %v", kinds, rows)
		},
	},
	"One parameter by its name, on every module that has it, in its unit:": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			const name = "Boiler power"
			rows, ok := byLabel(res[0], "devid")
			if !ok {
				return false, "a module twice: " + res[0].String()
			}
			var want []string
			for _, devid := range e.twin.Devids() {
				raw := e.rawValues(t, devid, at)
				for _, d := range e.twin.Described(devid, "en") {
					if d.Name != name {
						continue
					}
					want = append(want, devid)
					s, has := rows[devid]
					shown, _ := d.Display(raw[d.Address])
					if !has || s.Metric["unit"] != d.Unit || math.Abs(value(s)-shown) > 1e-9 {
						return false, fmt.Sprintf("%s of %s: raw %v shows %v %s; got %v", name, devid, raw[d.Address], shown, d.Unit, res[0])
					}
				}
			}
			return len(want) > 0 && sameKeys(rows, want), fmt.Sprintf("modules with %s: %v; got %v", name, want, res[0])
		},
	},
	"The current label of every enum parameter, with its name:": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			want := map[string]webapp.DescribedParam{}
			for _, devid := range e.twin.Devids() {
				for _, d := range e.twin.Described(devid, "en") {
					if len(d.States) > 0 || d.Enum != nil {
						want[devid+" "+d.Address] = d
					}
				}
			}
			got := map[string]bool{}
			for _, s := range res[0] {
				key := s.Metric["devid"] + " " + s.Metric["pool"] + "." + s.Metric["param"]
				d, ok := want[key]
				labels := optionLabels(d.States)
				for _, l := range d.Enum {
					labels = append(labels, l)
				}
				if !ok || got[key] || s.Metric["name"] != d.Name || !slices.Contains(labels, s.Metric["state"]) || s.value() != "1" {
					return false, fmt.Sprintf("%v: not the one current label of an enum %s (%v)", result{s}, d.Name, labels)
				}
				got[key] = true
			}
			return len(want) > 0 && len(got) == len(want), fmt.Sprintf("%d enum parameters; %v", len(want), res[0])
		},
	},
	"Modules offline now, with their names and their objects' names (nothing while every module is online):": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) { return isEmpty(res[0]) },
		fault: func(t *testing.T, e *queryEnv) func() {
			e.ctl.module(t, e.offline(), "offline")
			return func() { e.ctl.module(t, e.offline(), "online") }
		},
		faulty: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			info := e.mustQueryAt(t, fmt.Sprintf("bragerone_module_info{devid=%q}", e.offline()), at)
			if len(info) != 1 || info[0].Metric["name"] == "" {
				return false, fmt.Sprintf("module info %v", info)
			}
			object, ok := e.objectNames(t, at)[info[0].Metric["object_id"]]
			if !ok {
				return false, fmt.Sprintf("module info %v names no object of bragerone_object_info", info)
			}
			r := res[0]
			return len(r) == 1 && r[0].Metric["devid"] == e.offline() && r[0].Metric["name"] == info[0].Metric["name"] &&
					r[0].Metric["object"] == object && r[0].value() == "0",
				fmt.Sprintf("want %s (%s of %s) with value 0: %v", e.offline(), info[0].Metric["name"], object, r)
		},
	},
	"Session availability of each object over the last 24 hours, with the object's name (1 = always up):": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			return oneForEachObject(t, e, at, res[0], "1")
		},
	},
	"Zombie detection: an object's session is up, but its live updates have stopped (nothing while live " +
		"updates arrive):": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) { return isEmpty(res[0]) },
		fault: func(t *testing.T, e *queryEnv) func() {
			id := e.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
			return func() { e.ctl.clear(t, id) }
		},
		faulty: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			r := res[0]
			objects := e.objectNames(t, at)
			for _, s := range r {
				if _, ok := objects[s.Metric["object_id"]]; !ok || s.Metric["job"] != "bragerone" || s.Metric["instance"] != e.exp.addr || s.value() != "0" {
					return false, fmt.Sprintf("%v is not a zombie object of %v", result{s}, objects)
				}
			}
			return len(r) > 0, r.String()
		},
	},
	"Objects whose session is down now, with their names, and whether every object of the exporter is down " +
		"at once (the cloud or the exporter's network rather than one installation; nothing while a session is " +
		"up):": {
		queries: 2,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			if ok, seen := isEmpty(res[0]); !ok {
				return false, seen
			}
			return isEmpty(res[1])
		},
		// Every object's session dropped, and its reconnects held: the
		// cloud's realtime service gone.
		fault: func(t *testing.T, e *queryEnv) func() {
			stall := e.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultStallHandshake})
			e.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
			return func() { e.ctl.clear(t, stall) }
		},
		faulty: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			if ok, seen := oneForEachObject(t, e, at, res[0], "0"); !ok {
				return false, seen
			}
			r := res[1]
			return len(r) == 1 && r[0].Metric["job"] == "bragerone" && r[0].Metric["instance"] == e.exp.addr && r[0].value() == "0",
				"every object down: " + r.String()
		},
	},
	"Share of REST requests to the cloud that failed (non-2xx or transport error), by endpoint: 0 for an " +
		"endpoint whose requests all succeeded; endpoints without a request in the last 5 minutes are left out:": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			rows, ok := byLabel(res[0], "endpoint")
			want := e.activeEndpoints(t, "bragerone_http_requests_total", at)
			if !ok || len(want) == 0 || !sameKeys(rows, want) {
				return false, fmt.Sprintf("endpoints called in the last 5 minutes %v; %v", want, res[0])
			}
			for _, s := range res[0] {
				if s.value() != "0" {
					return false, fmt.Sprintf("want 0 for every endpoint: %v", res[0])
				}
			}
			return true, res[0].String()
		},
		fault: func(t *testing.T, e *queryEnv) func() {
			id := e.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "GET /v1/modules", Status: 503})
			return func() { e.ctl.clear(t, id) }
		},
		faulty: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			rows, _ := byLabel(res[0], "endpoint")
			s, ok := rows["GET /v1/modules"]
			return ok && value(s) > 0 && value(s) <= 1, "want a share in (0, 1] for GET /v1/modules: " + res[0].String()
		},
	},
	"95th percentile REST latency by endpoint, for the endpoints called in the last 5 minutes (`>= 0` drops " +
		"the others, whose quantile is NaN):": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			rows, ok := byLabel(res[0], "endpoint")
			want := e.activeEndpoints(t, "bragerone_http_request_duration_seconds_count", at)
			if !ok || len(want) == 0 || !sameKeys(rows, want) {
				return false, fmt.Sprintf("endpoints called in the last 5 minutes %v; %v", want, res[0])
			}
			return finiteAtLeast(res[0], 0)
		},
	},
	"One parameter of one boiler by its register, raw (the register of a name is in `bragerone_parameter_info`; " +
		"for a register the catalog does not describe, `bragerone_exporter watch` shows which one moves when you " +
		"change it on the panel):": {
		queries: 1,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			r := res[0]
			if len(r) != 1 || r[0].Metric["devid"] != e.devid {
				return false, r.String()
			}
			return finiteAtLeast(r, math.Inf(-1))
		},
	},
	"Active alarms with their names, and how long each has been on:": {
		queries: 2,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			var want, wantSince []string
			for _, devid := range e.twin.Devids() {
				for _, a := range e.twin.DescribedAlarms(devid, "en") {
					name := a.Name
					if name == "" {
						name = a.Code // no translation: the cloud's symbol
					}
					want = append(want, fmt.Sprintf("%s %d %s", devid, a.ID, name))
					wantSince = append(wantSince, fmt.Sprintf("%s %d", devid, a.ID))
				}
			}
			got, gotSince := map[string]bool{}, map[string]bool{}
			for _, s := range res[0] {
				got[s.Metric["devid"]+" "+s.Metric["code"]+" "+s.Metric["name"]] = true
			}
			for _, s := range res[1] {
				gotSince[s.Metric["devid"]+" "+s.Metric["code"]] = true
			}
			if len(want) == 0 || len(got) != len(res[0]) || !sameKeys(got, want) || !sameKeys(gotSince, wantSince) {
				return false, fmt.Sprintf("want alarms %v; got %v and %v", want, res[0], res[1])
			}
			return finiteAtLeast(res[1], 0)
		},
	},
	"Seconds since each object's last live update, and module data older than 15 minutes (nothing while " +
		"data is fresh):": {
		queries: 2,
		healthy: func(t *testing.T, e *queryEnv, at float64, res []result) (bool, string) {
			rows, ok := byLabel(res[0], "object_id")
			objects := e.objectNames(t, at)
			if !ok || len(objects) == 0 || !sameKeys(rows, slices.Collect(maps.Keys(objects))) {
				return false, fmt.Sprintf("want one age per object of %v: %v", objects, res[0])
			}
			if ok, seen := finiteAtLeast(res[0], 0); !ok || slices.ContainsFunc(res[0], func(s promSample) bool { return value(s) > 60 }) {
				return false, seen
			}
			return isEmpty(res[1])
		},
	},
}

// objectNames are the watched objects at time at, by object_id, as
// bragerone_object_info names them.
func (e *queryEnv) objectNames(t *testing.T, at float64) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, s := range e.mustQueryAt(t, "bragerone_object_info", at) {
		out[s.Metric["object_id"]] = s.Metric["name"]
	}
	return out
}

// oneForEachObject checks a per-object result joined with the objects'
// names: one series for each watched object, named as
// bragerone_object_info names it, each of value want.
func oneForEachObject(t *testing.T, e *queryEnv, at float64, r result, want string) (bool, string) {
	objects := e.objectNames(t, at)
	rows, ok := byLabel(r, "object_id")
	if !ok || len(objects) == 0 || !sameKeys(rows, slices.Collect(maps.Keys(objects))) {
		return false, fmt.Sprintf("want one series for each object of %v: %v", objects, r)
	}
	for id, s := range rows {
		if s.Metric["name"] != objects[id] || s.value() != want {
			return false, fmt.Sprintf("want object %s named %q with value %s: %v", id, objects[id], want, r)
		}
	}
	return true, r.String()
}

// offline is the module taken offline for the offline-modules query: not
// the README's own module.
func (e *queryEnv) offline() string { return e.devids[len(e.devids)-1] }

// evaluate runs a block's queries at one time.
func (e *queryEnv) evaluate(b readmeBlock) (float64, []result, error) {
	at := float64(time.Now().UnixMilli()) / 1000
	res := make([]result, len(b.queries))
	for i, q := range b.queries {
		r, err := e.prom.queryAt(q, at)
		if err != nil {
			return at, nil, fmt.Errorf("%s:%d: query %d: %w", readmeFile, b.line, i+1, err)
		}
		res[i] = r
	}
	return at, res, nil
}

// waitClaim waits until check holds for the block's queries and logs what
// they returned then.
func (e *queryEnv) waitClaim(t *testing.T, b readmeBlock, what string, c check) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("%s:%d %s: %q", readmeFile, b.line, what, b.about), func() (bool, string) {
		at, res, err := e.evaluate(b)
		if err != nil {
			t.Fatal(err)
		}
		ok, seen := c(t, e, at, res)
		if ok {
			for i, q := range b.queries {
				t.Logf("README.md:%d (%s) %s\n%s\n→ %v", b.line, what, b.about, q, res[i])
			}
		}
		return ok, seen
	})
}

// TestReadmeQueries runs every query of README.md on a real Prometheus that
// scrapes `serve` against a simulated cloud every second, and checks that
// each returns what its sentence says: first while everything is healthy,
// then, for the queries that watch for trouble, with that trouble switched
// on in the simulated cloud.
func TestReadmeQueries(t *testing.T) {
	t.Parallel()
	tool(t, "prometheus")
	blocks := readmeBlocks(t)
	if len(blocks) == 0 {
		t.Fatal("README.md has no promql block")
	}
	for _, b := range blocks {
		c, ok := readmeClaims[b.about]
		switch {
		case !ok:
			t.Errorf("%s:%d: no claim for the queries after %q", readmeFile, b.line, b.about)
		case c.queries != len(b.queries):
			t.Errorf("%s:%d: %d queries after %q, the claim checks %d", readmeFile, b.line, len(b.queries), b.about, c.queries)
		}
	}
	for about := range readmeClaims {
		if !slices.ContainsFunc(blocks, func(b readmeBlock) bool { return b.about == about }) {
			t.Errorf("README.md no longer says %q before a promql block", about)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Live updates every 200 ms against a 3 s staleness threshold, and a
	// zombie that is only primed (the ladder never restarts the session).
	sim := startSimulate(t, "--drift-interval=200ms")
	exp := startServe(t, demoEnv, "--cloud.url="+sim.url, "--poll.interval=200ms", "--session.supervisor-interval=200ms",
		"--session.down-hysteresis=1s", "--push.stale-after=3s", "--recovery.zombie-primes=0")
	// The simulator's defaults (3 modules of 800 parameters, seed 1).
	twin := cloudsim.New(cloudsim.Options{Modules: 3, ParamsPerModule: 800, Seed: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if got := twin.Devids(); !slices.Equal(got, sim.devids) {
		t.Fatalf("the twin of the simulated cloud has modules %v, the simulator %v", got, sim.devids)
	}
	env := &queryEnv{exp: exp, ctl: sim.ctl, devids: sim.devids, twin: twin, devid: readmeDevid(t, blocks)}
	if !slices.Contains(sim.devids, env.devid) {
		t.Fatalf("the README's queries name module %s, the simulated cloud has %v", env.devid, sim.devids)
	}
	exp.waitFullScrape(t, sim.devids, 30*time.Second)
	env.prom = scrapeEverySecond(t, exp.addr)
	// rate() needs two samples of a counter that moved between them.
	waitFor(t, 20*time.Second, "three scrapes and REST traffic between them", func() (bool, string) {
		r, err := env.prom.query(`count_over_time(up{job="bragerone"}[5m]) >= 3 and on () sum(rate(bragerone_http_requests_total[5m])) > 0`)
		if err != nil {
			return false, err.Error()
		}
		return len(r) == 1, result(r).String()
	})

	for _, b := range blocks {
		env.waitClaim(t, b, "healthy", readmeClaims[b.about].healthy)
	}
	// METRICS.md's table of example queries says less of each: every one
	// evaluates, and none answers NaN.
	for _, q := range metricsExampleQueries(t) {
		r, err := env.prom.query(q)
		if err != nil {
			t.Errorf("METRICS.md example query %s: %v", q, err)
		}
		if slices.ContainsFunc(r, func(s promSample) bool { return math.IsNaN(value(s)) }) {
			t.Errorf("METRICS.md example query %s answers NaN: %v", q, result(r))
		}
	}
	// The troubles one after the other: each is cleared before the next.
	for _, b := range blocks {
		c := readmeClaims[b.about]
		if c.fault == nil {
			continue
		}
		clear := c.fault(t, env)
		env.waitClaim(t, b, "in trouble", c.faulty)
		clear()
	}
}

// readmeDevid is the module the README's queries name.
func readmeDevid(t *testing.T, blocks []readmeBlock) string {
	t.Helper()
	re := regexp.MustCompile(`devid="([A-Z0-9]+)"`)
	devid := ""
	for _, b := range blocks {
		for _, q := range b.queries {
			for _, m := range re.FindAllStringSubmatch(q, -1) {
				if devid != "" && m[1] != devid {
					t.Fatalf("the README's queries name modules %s and %s; the test knows one", devid, m[1])
				}
				devid = m[1]
			}
		}
	}
	if devid == "" {
		t.Fatal("no README query names a module")
	}
	return devid
}

// metricsExampleQueries are the queries of METRICS.md's table of example
// queries.
func metricsExampleQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../METRICS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(raw), "\n## Example queries\n")
	if !ok {
		t.Fatal("METRICS.md has no section \"Example queries\"")
	}
	row := regexp.MustCompile("^\\| [^|]+ \\| `([^`]+)` \\|$")
	var out []string
	for _, line := range strings.Split(table, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d example queries in METRICS.md; is the table intact?", len(out))
	}
	return out
}
