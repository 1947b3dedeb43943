// Package metricref finds which metrics a PromQL expression reads and which
// series the metric contract (METRICS.md) promises, so that rule files and
// dashboards can be checked against the contract and against a real scrape.
package metricref

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// InExpr returns the metric names an expression reads, in order of first
// appearance and without duplicates. It recognises `up`, every `bragerone_*`
// identifier and every name with a colon (a recording rule) in metric-name
// position: not inside a label matcher `{…}`, a range `[…]` or a string, not
// a function name, and not in a by/without/on/ignoring/group_left/group_right
// label list. Grafana variables (`$job`, `${datasource}`, `$__rate_interval`)
// are skipped. It never fails: text it does not understand is passed over.
func InExpr(expr string) []string {
	var names []string
	seen := map[string]bool{}
	s := expr
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(s, i)
		case c == '{':
			i = skipBalanced(s, i, '{', '}')
		case c == '[':
			i = skipBalanced(s, i, '[', ']')
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '$':
			i++
			if i < len(s) && s[i] == '{' {
				i = skipBalanced(s, i, '{', '}')
			} else {
				for i < len(s) && isIdentChar(s[i]) {
					i++
				}
			}
		case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
			// Numbers and durations (0.95, 5m, 1e3): one token, never a name.
			for i < len(s) && (isIdentChar(s[i]) || s[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(s) && isIdentChar(s[i]) {
				i++
			}
			word := s[start:i]
			next := skipSpace(s, i)
			if labelListKeyword[word] {
				if next < len(s) && s[next] == '(' {
					i = skipBalanced(s, next, '(', ')')
				}
				continue
			}
			if next < len(s) && s[next] == '(' {
				continue // a function or aggregation
			}
			if isMetricName(word) && !seen[word] {
				seen[word] = true
				names = append(names, word)
			}
		default:
			i++
		}
	}
	return names
}

// labelListKeyword introduces a parenthesised list of label names.
var labelListKeyword = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

func isMetricName(w string) bool {
	return w == "up" || strings.HasPrefix(w, "bragerone_") || strings.Contains(w, ":")
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c == ':' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string literal starting at i
// (or the end of s when it is unterminated).
func skipString(s string, i int) int {
	q := s[i]
	i++
	for i < len(s) {
		switch {
		case s[i] == '\\' && q != '`':
			i += 2
		case s[i] == q:
			return i + 1
		default:
			i++
		}
	}
	return len(s)
}

// skipBalanced returns the index just past the bracket closing the one at i,
// skipping strings inside (or the end of s when it is unbalanced).
func skipBalanced(s string, i int, open, closing byte) int {
	depth := 0
	for i < len(s) {
		switch c := s[i]; {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(s, i)
			continue
		case c == open:
			depth++
		case c == closing:
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return len(s)
}

// Contract returns every series name the metric contract promises: the first
// column of the METRICS.md table whose header starts with "metric" (other
// tables, such as example queries, are ignored), with a histogram expanded to
// its _bucket, _sum and _count series and a summary to its own name plus _sum
// and _count.
func Contract(metricsMD []byte) (map[string]bool, error) {
	rows, _, err := contractTable(metricsMD)
	if err != nil {
		return nil, err
	}
	series := make(map[string]bool, len(rows))
	for _, r := range rows {
		for _, name := range r.series() {
			series[name] = true
		}
	}
	return series, nil
}

// ContractLabels returns the label names the metric contract gives each
// series: the "labels" column (the third) of the table Contract reads, names
// separated by commas, none for an empty cell. A histogram's series are listed
// as Contract lists them, with the table's labels (le is not repeated here).
func ContractLabels(metricsMD []byte) (map[string][]string, error) {
	rows, labelled, err := contractTable(metricsMD)
	if err != nil {
		return nil, err
	}
	if !labelled {
		return nil, fmt.Errorf("METRICS.md: the metric table has no labels column")
	}
	out := make(map[string][]string, len(rows))
	for _, r := range rows {
		for _, name := range r.series() {
			out[name] = r.labels
		}
	}
	return out, nil
}

// contractRow is one row of the metric table.
type contractRow struct {
	name, typ string
	labels    []string
}

// series returns the series names a row promises.
func (r contractRow) series() []string {
	switch r.typ {
	case "histogram":
		return []string{r.name + "_bucket", r.name + "_sum", r.name + "_count"}
	case "summary":
		return []string{r.name, r.name + "_sum", r.name + "_count"}
	}
	return []string{r.name}
}

// contractTable reads the metric table of METRICS.md, and whether its third
// column is "labels".
func contractTable(metricsMD []byte) (rows []contractRow, labelled bool, err error) {
	sc := bufio.NewScanner(bytes.NewReader(metricsMD))
	line := 0
	inTable := false
	for sc.Scan() {
		line++
		cells := strings.Split(strings.TrimSpace(sc.Text()), "|")
		if len(cells) < 4 || cells[0] != "" {
			if inTable {
				break // the contract table ended
			}
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		typ := strings.TrimSpace(cells[2])
		if !inTable {
			inTable = name == "metric" && typ == "type"
			labelled = inTable && strings.TrimSpace(cells[3]) == "labels"
			continue
		}
		if strings.Trim(name, "-: ") == "" {
			continue // separator row
		}
		if !strings.HasPrefix(name, "bragerone_") {
			return nil, false, fmt.Errorf("METRICS.md line %d: metric %q lacks the bragerone_ prefix", line, name)
		}
		switch typ {
		case "gauge", "counter", "histogram", "summary":
		default:
			return nil, false, fmt.Errorf("METRICS.md line %d: metric %q has unknown type %q", line, name, typ)
		}
		var labels []string
		for l := range strings.SplitSeq(cells[3], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" {
				labels = append(labels, l)
			}
		}
		rows = append(rows, contractRow{name: name, typ: typ, labels: labels})
	}
	if err := sc.Err(); err != nil {
		return nil, false, err
	}
	if len(rows) == 0 {
		return nil, false, fmt.Errorf("METRICS.md: no metric table (header | metric | type | ...) found")
	}
	return rows, labelled, nil
}
