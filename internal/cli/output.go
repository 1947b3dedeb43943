package cli

// How the command-line tools (check, modules, params, watch, set, catalog,
// history) print: a table or JSON in one vocabulary, and values, times and
// states in one spelling; parseValue reads a value given on the command
// line in that spelling.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
)

// outputFlag selects how a tool prints its result.
type outputFlag struct {
	Output string `name:"output" short:"o" default:"table" enum:"table,json" help:"Output format: table or json."`
}

func (o outputFlag) json() bool { return o.Output == "json" }

// The tools' vocabulary: every JSON key a tool prints is defined here, once.
// A table's column is the JSON key holding the same value, in capitals with
// spaces for underscores (connected_at is CONNECTED AT), so a table and its
// JSON read alike. Keys are snake_case, as Prometheus labels are, and name
// what the exporter's metrics and pages name: a register is P4.v8 (the
// pool and param labels joined), raw is what the module stores in it, value
// is what the app shows (a number in unit, or the text of a state or a time
// of day). A record always carries all its keys; one with nothing to say is
// null. The exception is meta, which holds the cloud's own members of a
// register as the cloud names them.
var vocabulary = map[string]bool{}

// word adds a key to the vocabulary.
func word(key string) string {
	vocabulary[key] = true
	return key
}

// A parameter.
var (
	keyDevid    = word("devid")
	keyRegister = word("register") // P4.v8
	keyRaw      = word("raw")      // the register's stored value, as the cloud sent it
	keySymbol   = word("symbol")   // PARAM_P4_8
	keyName     = word("name")
	keyValue    = word("value") // as the app shows it: a number in unit, or text
	keyUnit     = word("unit")
	keyMenu     = word("menu")
	keyParts    = word("parts") // the registers a composed value is made of
	// keyComputedPrimary is the register a status symbol's definition
	// points at when that is not its status register, where it is read.
	keyComputedPrimary = word("computed_primary")
	keyMin             = word("min")
	keyMax             = word("max")
	keyVisible         = word("visible")
	keyWritable        = word("writable")
	keyMeta            = word("meta") // the cloud's own members, under its names
	// keyStale marks a value that is not current: its module is offline,
	// so it is the last the module sent (the table shows "offline").
	keyStale = word("stale")
	// keyAsOf is when the values were read: the prime's time.
	keyAsOf = word("as_of")
)

// Modules, documents and events.
var (
	keyObjectID         = word("object_id")
	keyObjectName       = word("object_name") // the object's name in the account
	keyModules          = word("modules")
	keyParams           = word("params")
	keyID               = word("id")
	keyTitle            = word("title")
	keyVersion          = word("version")
	keyState            = word("state") // of a module, the session or live push
	keyConnectedAt      = word("connected_at")
	keyGatewayAddress   = word("gateway_address")
	keyGatewayInterface = word("gateway_interface")
	keyGatewayVersion   = word("gateway_version")
	keyNullLeftOut      = word("null_left_out") // registers without a value not listed
	keyIndexAsset       = word("index_asset")
	keyLanguage         = word("language")
	keyTime             = word("time")
	keyEvent            = word("event")
	keyReason           = word("reason")
	keyDownSeconds      = word("down_seconds")
	keyHysteresis       = word("hysteresis_seconds")
	keyStaleSeconds     = word("stale_seconds")
	keyParameters       = word("parameters") // a count
	keyCount            = word("count")
)

// The past: a module's changes and alarms (history).
var (
	keyChanges  = word("changes")
	keyAlarms   = word("alarms")
	keyOldRaw   = word("old_raw")   // the register's value before a change, as the cloud sent it
	keyNewRaw   = word("new_raw")   // and after it
	keyOldValue = word("old_value") // as the app shows it: a number in unit, or text
	keyNewValue = word("new_value")
	keyUser     = word("user") // who made a change, as the cloud names them
	keyCode     = word("code") // an alarm's type code
	// keyUntranslated says an alarm's name is not a translation ("no
	// translation in en"); null when it is one.
	keyUntranslated    = word("untranslated")
	keyFrom            = word("from")
	keyTo              = word("to")
	keyDurationSeconds = word("duration_seconds")
	keyRowsLeftOut     = word("rows_left_out") // rows the cloud sent that cannot be used
)

// The account and its objects, as check sees them.
var (
	keyObjects        = word("objects")
	keyCity           = word("city")
	keyWatched        = word("watched")      // whether the exporter would watch the object
	keyModuleCount    = word("module_count") // the modules an object lists
	keyOnline         = word("online")       // how many of them are online
	keyResult         = word("result")       // of a check: ok or failed
	keyURL            = word("url")
	keyPlatform       = word("platform")
	keyUserID         = word("user_id")
	keyTokenExpiresAt = word("token_expires_at")
)

// heading is the table column of a key: connected_at is CONNECTED AT.
func heading(key string) string {
	return strings.ToUpper(strings.ReplaceAll(key, "_", " "))
}

// eventTimeLayout is how a tool stamps what it saw: RFC 3339 in local time,
// to the millisecond.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// orNull is s, or null when empty: a record never holds an empty string.
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// formatEpoch renders a connectedAt-style epoch (seconds) as a local time
// with its offset; 0 (offline) is "-".
func formatEpoch(sec int64) string {
	if sec == 0 {
		return "-"
	}
	return time.Unix(sec, 0).Format(time.RFC3339)
}

func onlineWord(online bool) string {
	if online {
		return "online"
	}
	return "offline"
}

// dash stands in for an empty table cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatValue renders a parameter value compactly: numbers without trailing
// zeros or exponent noise, strings bare unless they contain spaces (or are
// empty, or would be mistaken for another type), objects as compact JSON.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return formatFloat(x)
	case json.Number:
		return x.String()
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case string:
		if needsQuotes(x) {
			return strconv.Quote(x)
		}
		return x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

func formatFloat(f float64) string {
	if abs := math.Abs(f); abs != 0 && (abs >= 1e21 || abs < 1e-6) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func needsQuotes(s string) bool {
	if s == "" || s == "-" || s == "null" || s == "true" || s == "false" {
		return true
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return true // "21.5" the string, not 21.5 the number
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '"' || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}

// parseValue reads a value given on the command line: a JSON number (kept
// exactly as written) or boolean, a JSON string literal ("21" sends the
// string 21), and anything else is sent as the plain string.
func parseValue(s string) any {
	t := strings.TrimSpace(s)
	if t == "true" || t == "false" {
		return t == "true"
	}
	if strings.HasPrefix(t, `"`) {
		var str string
		if json.Unmarshal([]byte(t), &str) == nil {
			return str
		}
		return s
	}
	if t != "" && (t[0] == '-' || t[0] >= '0' && t[0] <= '9') && json.Valid([]byte(t)) {
		return json.Number(t)
	}
	return s
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// writeTable prints rows as a table of the columns keys, each cell as
// cellText renders the row's member.
func writeTable(w io.Writer, keys []string, rows []orderedObject) error {
	tw := newTable(w)
	cells := make([]string, len(keys))
	for i, k := range keys {
		cells[i] = heading(k)
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t"))
	for _, r := range rows {
		for i, k := range keys {
			cells[i] = cellText(k, r.get(k))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// cellText renders a member of a record in a table cell: null is "-", a
// raw value keeps its type visible (formatValue), a menu is its path.
func cellText(key string, v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if key == keyRaw {
			return formatValue(x)
		}
		return dash(x)
	case []string:
		return dash(strings.Join(x, "/"))
	case bool:
		if key == keyRaw {
			return formatValue(x)
		}
		if x {
			return "yes"
		}
		return "no"
	}
	return formatValue(v)
}

// writeJSON prints v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonLine is v as one line of JSON, with its final newline.
func jsonLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}

// orderedObject is a JSON object whose members keep their order: a record
// of a tool's output, its keys from the vocabulary.
type orderedObject []orderedMember

type orderedMember struct {
	Key   string
	Value any
}

// get is the member of key; nil when there is none.
func (o orderedObject) get(key string) any {
	for _, m := range o {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// with is o with the member of key set to v (added at the end when new); o
// is not changed.
func (o orderedObject) with(key string, v any) orderedObject {
	out := append(orderedObject{}, o...)
	for i := range out {
		if out[i].Key == key {
			out[i].Value = v
			return out
		}
	}
	return append(out, orderedMember{key, v})
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
