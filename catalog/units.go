package catalog

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

// unit is a unit descriptor resolved for one language (docs/spec.md ).
type unit struct {
	code      string
	symbol    string          // the unit as displayed: "°C", "kW", ""
	transform linearTransform // identity when the descriptor has no value function
	known     bool            // the value function (if any) was recognised
	timeOfDay bool            // unit 66's HH:MM formatter
	offLabel  string          // its label for raw 0
	options   []option        // enum table, in order
	enum      map[int]string
}

// option is one enum entry: raw key, its normalised form and its label.
type option struct {
	key, norm, label string
}

// unitTable resolves unit codes against the index's descriptor table.
type unitTable struct {
	desc   map[string]*jsval.Object
	tr     translations
	memo   map[string]*unit // filled during Load only
	frozen bool             // set when Load ends: memo is read-only from then on
	byNum  map[float64]*unit
}

// freeze ends Load's writes: from then on the table is only read, by any
// number of goroutines.
func (t *unitTable) freeze() {
	t.byNum = make(map[float64]*unit, len(t.memo))
	for code, u := range t.memo {
		if f, ok := jsval.ParseNumber(code); ok {
			t.byNum[f] = u
		}
	}
	t.frozen = true
}

// getNum is get for a code read from a register, without allocating for
// the codes Load met.
func (t *unitTable) getNum(v float64) *unit {
	if u, ok := t.byNum[v]; ok {
		return u
	}
	return t.get(jsval.FormatNumber(v))
}

// get returns the unit of a code: the descriptor of the code (its key
// normalised to an integer text), or, for an integer code the table lacks,
// a synthesised {text: "units.<code>"}; a non-numeric code has none
// (docs/spec.md ).
func (t *unitTable) get(code string) *unit {
	if code == "" {
		return nil
	}
	if u, ok := t.memo[code]; ok {
		return u
	}
	u := t.build(code)
	if !t.frozen {
		t.memo[code] = u
	}
	return u
}

func (t *unitTable) build(code string) *unit {
	key := unitKey(code)
	if key == "" {
		return nil
	}
	desc := t.desc[key]
	if desc == nil {
		desc = jsval.NewObject()
		desc.Set("text", "units."+key)
	}
	u := &unit{code: key, transform: identity, known: true}
	// The unit shown: the descriptor's text resolved (the token itself when
	// it does not resolve, a blank translation stays blank); no text: an
	// enum unit, shown without a symbol.
	if text, ok := desc.Value("text").(string); ok && strings.TrimSpace(text) != "" {
		if s, ok := t.tr.resolve(text); ok {
			u.symbol = normalizeUnitLabel(s)
		} else {
			u.symbol = strings.TrimSpace(text)
		}
	}
	if src, ok := jsval.Text(desc.Value("value")); ok {
		switch {
		case isTimeOfDay(src):
			u.timeOfDay = true
			u.offLabel = "units.202.0"
			if s, ok := t.tr.resolve(u.offLabel); ok {
				u.offLabel = strings.TrimSpace(s)
			}
		default:
			u.transform, u.known = recogniseTransform(src)
			if !u.known {
				u.transform = identity
			}
		}
	}
	// The enum table (docs/spec.md ): options; none when the descriptor is a
	// plain unit; else the descriptor itself.
	var table *jsval.Object
	if o, ok := desc.Value("options").(*jsval.Object); ok {
		table = o
	} else if !desc.Has("text") && !desc.Has("value") && !desc.Has("valuePrepare") && !desc.Has("colors") {
		table = desc
	}
	for _, k := range table.Keys() {
		tok, ok := jsval.Text(table.Value(k))
		if !ok {
			continue
		}
		label := strings.TrimSpace(tok)
		if s, ok := t.tr.resolve(tok); ok {
			label = strings.TrimSpace(s)
		}
		u.options = append(u.options, option{key: k, norm: optionNorm(k), label: label})
		if f, ok := jsval.ParseNumber(strings.TrimSpace(k)); ok && f == math.Trunc(f) && math.Abs(f) < 1<<31 {
			if u.enum == nil {
				u.enum = map[int]string{}
			}
			u.enum[int(f)] = label
		}
	}
	return u
}

// label looks a display value up in the enum table (docs/spec.md ): the trimmed
// text, its integer form (true is 1), then the normalised forms of keys and
// value ([kn.ON] matches e.ON, BoilerState['STOP'] matches STOP).
func (u *unit) label(v jsval.Value) (string, bool) {
	if u == nil || len(u.options) == 0 {
		return "", false
	}
	var buf [2]string // candidates, without a heap slice for the usual one or two
	cands := buf[:0]
	switch v := v.(type) {
	case float64:
		cands = append(cands, jsval.FormatNumber(v))
	case bool:
		if v {
			cands = append(cands, "1", "true")
		} else {
			cands = append(cands, "0", "false")
		}
	case string:
		s := strings.TrimSpace(v)
		cands = append(cands, s)
		if f, ok := jsval.ParseNumber(s); ok && f == math.Trunc(f) {
			cands = append(cands, jsval.FormatNumber(f))
		}
	case jsval.Source:
		cands = append(cands, strings.TrimSpace(string(v)))
	default:
		return "", false
	}
	for _, c := range cands {
		for _, o := range u.options {
			if o.key == c {
				return o.label, true
			}
		}
	}
	for _, c := range cands {
		n := optionNorm(c)
		for _, o := range u.options {
			if o.norm == n {
				return o.label, true
			}
		}
	}
	return "", false
}

// optionNorm is the normalised form of an enum key or value: brackets
// stripped, X['M'] → M, otherwise everything up to the first "." dropped.
func optionNorm(s string) string {
	s = strings.TrimSpace(s)
	for len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	if m := memberName(s); m != s {
		return m
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return s[i+1:]
	}
	return s
}

var (
	allDigitsRE = regexp.MustCompile(`^\d+$`)
	wnRE        = regexp.MustCompile(`^wn\.\d+$`)
)

// normalizeUnitLabel cleans a unit text (docs/spec.md ): trimmed, CR/LF as spaces;
// empty, all-digit and wn.<digits> texts are no unit; C/degC is °C, F/degF
// is °F.
func normalizeUnitLabel(s string) string {
	s = strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ").Replace(s))
	switch {
	case s == "" || allDigitsRE.MatchString(s) || wnRE.MatchString(s):
		return ""
	case s == "C" || s == "degC":
		return "°C"
	case s == "F" || s == "degF":
		return "°F"
	}
	return s
}

// present turns a raw (or composed) register value into the display value
// and its label: the transform, then the enum label of the display value;
// a time-of-day unit gives only a label.
func (u *unit) present(raw float64) (float64, string) {
	if u == nil {
		return raw, ""
	}
	if u.timeOfDay {
		if raw == 0 {
			return math.NaN(), u.offLabel
		}
		return math.NaN(), timeOfDay(raw)
	}
	v := u.transform.apply(raw)
	label, _ := u.label(v)
	return v, label
}

// enumCopy returns the integer enum labels, nil when the unit has none.
func (u *unit) enumCopy() map[int]string {
	if u == nil || len(u.enum) == 0 {
		return nil
	}
	out := make(map[int]string, len(u.enum))
	for k, v := range u.enum {
		out[k] = v
	}
	return out
}

// fingerprint renders what a unit decides about display.
func (u *unit) fingerprint(b *strings.Builder) {
	if u == nil {
		b.WriteString("-")
		return
	}
	b.WriteString(u.code + "|" + u.symbol + "|" + strconv.FormatFloat(u.transform.add, 'g', -1, 64) + "|" +
		strconv.FormatFloat(u.transform.mul, 'g', -1, 64) + "|" + strconv.FormatFloat(u.transform.div, 'g', -1, 64) + "|" +
		strconv.Itoa(u.transform.digits) + "|" + strconv.FormatBool(u.timeOfDay) + "|" + u.offLabel)
	for _, o := range u.options {
		b.WriteString("|" + o.key + "=" + o.label)
	}
}

func sortedInts(m map[int]string) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
