package main

// How the command-line tools (check, modules, params, watch, set, catalog)
// print: a table or JSON, and values, times and states in one spelling;
// parseValue reads a value given on the command line in that spelling.

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
	if s == "" || s == "null" || s == "true" || s == "false" {
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

// writeJSON prints v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// orderedObject is a JSON object whose members keep their order.
type orderedObject []orderedMember

type orderedMember struct {
	Key   string
	Value any
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
