package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

func TestParseAndFormatValue(t *testing.T) {
	for in, want := range map[string]any{
		"21.5": json.Number("21.5"), "-3": json.Number("-3"), "1e3": json.Number("1e3"), " 7 ": json.Number("7"),
		"true": true, "false": false, `"21"`: "21", "ON": "ON", "01": "01", "0x10": "0x10", "": "",
		"null": "null", "[1]": "[1]", `"unterminated`: `"unterminated`,
	} {
		if got := parseValue(in); got != want {
			t.Errorf("parseValue(%q) = %#v, want %#v", in, got, want)
		}
	}
	for want, in := range map[string]any{
		"21.5": 21.5, "20": 20.0, "-0.25": -0.25, "1e+21": 1e21, "1e-07": 1e-7, "100000": 1e5,
		"true": true, "null": nil, "ON": "ON", `"two words"`: "two words", `""`: "",
		`"21"`: "21", `"true"`: "true", `{"a":1}`: map[string]any{"a": 1.0}, "7": json.Number("7"),
	} {
		if got := formatValue(in); got != want {
			t.Errorf("formatValue(%#v) = %q, want %q", in, got, want)
		}
	}
}

// The JSON kinds of the vocabulary's keys, written out apart from the code:
// numbers are JSON numbers, flags booleans, and every other key text (an
// empty one is null).
var (
	numberKeys = []string{"id", "object_id", "min", "max", "null_left_out", "parameters", "count",
		"down_seconds", "hysteresis_seconds", "stale_seconds", "user_id", "module_count", "online",
		"code", "duration_seconds", "rows_left_out"}
	boolKeys   = []string{"visible", "writable", "watched", "stale"}
	listKeys   = []string{"menu", "parts", "modules", "params", "objects", "changes", "alarms"}
	objectKeys = []string{"meta"} // the cloud's own members, under its names
	anyKeys    = []string{"raw", "value", "old_raw", "new_raw", "old_value", "new_value"}
	rawKeys    = []string{"raw", "old_raw", "new_raw"}       // as the cloud sent them: any kind
	shownKeys  = []string{"value", "old_value", "new_value"} // a number or the text of a state
	timeKeys   = []string{"time", "connected_at", "token_expires_at", "from", "to", "as_of"}
	snakeCase  = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
)

// checkJSONStyle walks a tool's JSON and returns its keys, failing on a key
// outside the vocabulary or not snake_case, and on a member of the wrong
// kind for its key.
func checkJSONStyle(t *testing.T, what string, data []byte, seen map[string]bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		var doc any
		if err := dec.Decode(&doc); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, data)
		}
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch x := v.(type) {
			case []any:
				for i, e := range x {
					walk(fmt.Sprintf("%s[%d]", path, i), e)
				}
			case map[string]any:
				for k, m := range x {
					at := path + "." + k
					seen[k] = true
					if !snakeCase.MatchString(k) || !vocabulary[k] {
						t.Errorf("%s: %s: key %q is not a snake_case word of the vocabulary", what, at, k)
					}
					if !kindFits(k, m) {
						t.Errorf("%s: %s = %#v: not what %q holds", what, at, m, k)
					}
					if !slices.Contains(objectKeys, k) {
						walk(at, m)
					}
				}
			}
		}
		walk("", doc)
	}
}

func kindFits(key string, v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case json.Number:
		return slices.Contains(numberKeys, key) || slices.Contains(anyKeys, key)
	case bool:
		return slices.Contains(boolKeys, key) || slices.Contains(rawKeys, key)
	case []any:
		return slices.Contains(listKeys, key) || slices.Contains(rawKeys, key)
	case map[string]any:
		return slices.Contains(objectKeys, key) || slices.Contains(rawKeys, key)
	case string:
		switch {
		case slices.Contains(rawKeys, key):
			return true
		case slices.Contains(shownKeys, key):
			_, err := strconv.ParseFloat(x, 64)
			return x != "" && err != nil // a number the app shows is a JSON number
		case slices.Contains(timeKeys, key):
			_, err := time.Parse(time.RFC3339Nano, x)
			return err == nil
		}
		return x != "" && !slices.Contains(numberKeys, key) && !slices.Contains(boolKeys, key) &&
			!slices.Contains(listKeys, key) && !slices.Contains(objectKeys, key)
	}
	return false
}

// checkTableHeader fails on a column that is not the heading of a key the
// same command's JSON carries.
func checkTableHeader(t *testing.T, what, out string, jsonKeys map[string]bool) {
	t.Helper()
	header, _ := table(t, out)
	for _, h := range header {
		key := strings.ToLower(strings.ReplaceAll(h, " ", "_"))
		if !vocabulary[key] || heading(key) != h || !jsonKeys[key] {
			t.Errorf("%s: column %q is not the heading of a key of its JSON (%q)", what, h, key)
		}
	}
}

// checkIndentedTables checks each table check prints, indented under the
// line that introduces it, as checkTableHeader does; it returns how many
// it found.
func checkIndentedTables(t *testing.T, what, out string, jsonKeys map[string]bool) int {
	t.Helper()
	var block []string
	tables := 0
	flush := func() {
		if len(block) > 0 {
			checkTableHeader(t, what, strings.Join(block, "\n"), jsonKeys)
			tables++
		}
		block = nil
	}
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "  "); ok {
			block = append(block, rest)
			continue
		}
		flush()
	}
	flush()
	return tables
}

// Every command speaks one vocabulary: each table column is the heading of
// a key its JSON carries, every JSON key is a snake_case word of the
// vocabulary holding its kind of value (numbers as numbers, absent as
// null), and every word of the vocabulary is used.
func TestEveryToolSpeaksTheVocabulary(t *testing.T) {
	// Two objects: the object columns name more than one.
	sim := startToolCloud(t, func(o *cloudsim.Options) { o.ParamsPerModule, o.Objects = 400, 2 })
	d := sim.Devids()[0]
	sim.SetModuleOnline(sim.Devids()[1], false) // null connected_at
	sim.SetParam(d, "P7.v1", nil)               // a register without a value
	seen := map[string]bool{}

	for _, args := range [][]string{
		{"modules"},
		{"params"},
		{"params", d, "--include-null"},
		{"catalog"},
		{"history", d},
	} {
		what := strings.Join(args, " ")
		code, out, errOut := runArgs(t, toolArgs(sim, args[0], append(args[1:], "-o", "json")...)...)
		if code != exitOK {
			t.Fatalf("%s -o json: code=%d stderr=%q", what, code, errOut)
		}
		keys := map[string]bool{}
		checkJSONStyle(t, what+" -o json", []byte(out), keys)
		maps.Copy(seen, keys)
		code, out, errOut = runArgs(t, toolArgs(sim, args[0], args[1:]...)...)
		if code != exitOK {
			t.Fatalf("%s: code=%d stderr=%q", what, code, errOut)
		}
		checkTableHeader(t, what, out, keys)
		if _, second, ok := strings.Cut(out, "\n\n"); ok { // history's alarms
			checkTableHeader(t, what+" (second table)", second, keys)
		}
	}

	// check: its objects and modules tables under the lines that
	// introduce them.
	code, out, errOut := runArgs(t, toolArgs(sim, "check", "-o", "json")...)
	if code != exitOK {
		t.Fatalf("check -o json: code=%d stderr=%q", code, errOut)
	}
	keys := map[string]bool{}
	checkJSONStyle(t, "check -o json", []byte(out), keys)
	maps.Copy(seen, keys)
	code, out, errOut = runArgs(t, toolArgs(sim, "check")...)
	if n := checkIndentedTables(t, "check", out, keys); code != exitOK || n != 2 {
		t.Fatalf("check: code=%d, %d tables, want 2; stderr=%q\n%s", code, n, errOut, out)
	}

	// watch: a JSON object a line, for a live change named by the catalog
	// and the session's state.
	sim.SetModuleOnline(sim.Devids()[1], true)
	w := startWatch(t, toolArgs(sim, "watch", "--poll.interval=50ms", "--filter=P4.v7", "-o", "json")...)
	w.waitFor("the catalog read", func() bool { return strings.Contains(w.out.String(), `"event":"catalog"`) })
	sim.SetParam(d, "P4.v7", 123.0)
	w.waitFor("a named change", func() bool {
		return strings.Contains(w.out.String(), `"register":"P4.v7","raw":123,"symbol":"PARAM_P4_7","name":"Boiler power","value":12.3,"unit":"kW"}`)
	})
	w.cancel()
	<-w.done
	for _, l := range strings.Split(strings.TrimSpace(w.out.String()), "\n") {
		if !strings.HasPrefix(l, `{"time":"`) {
			t.Errorf("watch -o json: line %q is not a JSON object starting with its time", l)
		}
	}
	checkJSONStyle(t, "watch -o json", []byte(w.out.String()), seen)
	// The changes of state no simulated run shows at once.
	trackerEvents(t, func(_ trackerStep, _ time.Time, events []watchEvent) {
		for _, e := range events {
			checkJSONStyle(t, "watch -o json: "+e.kind, e.render(true), seen)
		}
	})
	checkJSONStyle(t, "watch -o json: dropped", stateEvent(trackerStart, eventDropped, "", orderedMember{keyCount, 1}).render(true), seen)

	for k := range vocabulary {
		if !seen[k] {
			t.Errorf("the vocabulary's %q is printed by no command", k)
		}
	}
}
