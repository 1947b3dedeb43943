package collector

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var (
	// hostileLong are two 10 kB devids that differ only at the end: cutting
	// them to the length bound must not merge them into one series.
	hostileLongA = strings.Repeat("A", 10*1024) + "-1"
	hostileLongB = strings.Repeat("A", 10*1024) + "-2"
	hostileQuote = "evil\"} 1\nbragerone_session_up 0\n# \\ <script>alert(1)</script>"
	hostileUTF8A = "bad\xffutf8"
	hostileUTF8B = "bad\xfeutf8"
)

func hostileSnapshot() Snapshot {
	s := healthySnapshot()
	mods := []ModuleState{}
	for _, devid := range []string{hostileQuote, hostileLongA, hostileLongB, hostileUTF8A, hostileUTF8B, hostileQuote} {
		m := onlineModule(devid, "name \"with\" quotes\nand newline")
		m.Version = "\xc3\x28" // invalid two-byte sequence
		m.OutagesByReason = map[string]uint64{"weird\nreason": 1}
		mods = append(mods, m)
	}
	s.Modules = mods
	// An object whose name needs escaping and repairing, listed twice, with
	// events under names outside the vocabulary (counted as other).
	h := home(&s)
	h.Name = hostileQuote + "\xff"
	h.Events["EventKind(1000)"] = 5
	h.Events[hostileQuote] = 2
	h.Session.OutagesByReason["weird\nreason"] = 1
	s.Objects = append(s.Objects, ObjectState{ID: homeID, Name: "the same id again"})
	return s
}

func hostileParams() paramList {
	return paramList{
		num(hostileQuote, "P4.v1", 1), num(hostileLongA, "P4.v1", 2), num(hostileLongB, "P4.v1", 3),
		num(hostileUTF8A, "P4.v1", 4), num(hostileUTF8B, "P4.v1", 5),
		{devid: hostileQuote, pool: "P4\n\"", param: strings.Repeat("v", 500), value: 6, numeric: true},
	}
}

func TestLabelValue(t *testing.T) {
	for _, ok := range []string{"", "MOD1", "P4", "v8", "zażółć", strings.Repeat("x", MaxLabelValueLen), hostileQuote} {
		if got := LabelValue(ok); got != ok {
			t.Errorf("LabelValue(%q) = %q, want it unchanged", ok, got)
		}
	}
	seen := map[string]string{}
	for _, bad := range []string{hostileLongA, hostileLongB, hostileUTF8A, hostileUTF8B, strings.Repeat("ż", 200), "\xff"} {
		got := LabelValue(bad)
		if !utf8.ValidString(got) {
			t.Errorf("LabelValue(%.20q) = %q: not valid UTF-8", bad, got)
		}
		if len(got) > MaxLabelValueLen {
			t.Errorf("LabelValue(%.20q) is %d bytes, want at most %d", bad, len(got), MaxLabelValueLen)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%.20q and %.20q both become %q", bad, other, got)
		}
		seen[got] = bad
		if LabelValue(bad) != got {
			t.Errorf("LabelValue(%.20q) is not stable", bad)
		}
	}
	if got := LabelValue(hostileUTF8A); !strings.HasPrefix(got, "bad\uFFFDutf8~") {
		t.Errorf("LabelValue(%q) = %q, want the bad byte replaced and a hash suffix", hostileUTF8A, got)
	}
}

func TestLabelValueDoesNotAllocateForSafeValues(t *testing.T) {
	s := strings.Repeat("P4", 10)
	if n := fewestAllocs(5, func() { _ = LabelValue(s) }); n != 0 {
		t.Fatalf("LabelValue allocates %v times for a safe value", n)
	}
}

func TestHostileLabelsKeepExpositionValid(t *testing.T) {
	c := newTestCollector(t, hostileSnapshot(), hostileParams(), Options{})
	out, err := expose(c)
	if err != nil {
		t.Fatalf("scrape failed: %v", err)
	}
	if !utf8.Valid(out) {
		t.Error("exposition is not valid UTF-8")
	}
	// The injected line must stay inside a quoted, escaped label value.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "bragerone_session_up 0") {
			t.Errorf("label value broke out of its quotes: %q", line)
		}
		if len(line) > 4096 {
			t.Errorf("line of %d bytes: label values are not bounded", len(line))
		}
	}
	g := gather(t, c)
	// Five distinct devids (one listed twice): five modules, five parameters
	// of P4.v1 plus the hostile key.
	if n := len(g["bragerone_module_info"]); n != 5 {
		t.Errorf("module_info series = %d, want 5", n)
	}
	// Two distinct object ids (one listed twice): two objects, each with
	// the fixed event names and nothing else.
	if n := len(g["bragerone_object_info"]); n != 2 {
		t.Errorf("object_info series = %d, want 2", n)
	}
	if n := len(g["bragerone_realtime_events_total"]); n != 2*len(Events) {
		t.Errorf("event series = %d, want %d", n, 2*len(Events))
	}
	if n := len(g["bragerone_parameter_value"]); n != 6 {
		t.Errorf("parameter series = %d, want 6", n)
	}
	if c.Skipped() != 0 {
		t.Errorf("skipped %d series", c.Skipped())
	}
}
