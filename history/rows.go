package history

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Lists are the lists a module's rows come from, the list label values of
// the dropped-rows counter.
const (
	ListAlarmHistory = "alarm_history"
	ListActivity     = "activity"
)

// Lists returns the list names in a fixed order.
func Lists() []string { return []string{ListAlarmHistory, ListActivity} }

// Defaults of the trackers.
const (
	// DefaultRecent bounds the recent occurrences and changes kept for
	// display.
	DefaultRecent = 50
	// DefaultRemember bounds the occurrences and changes remembered to
	// recognise a row read again.
	DefaultRemember = 1024
	// DefaultFutureSkew is how far into the future (by our clock) a row's
	// time may lie before the row is refused as bad: the cloud's clock and
	// ours differ a little.
	DefaultFutureSkew = 5 * time.Minute
)

// Config bounds a tracker; zero members take the defaults.
type Config struct {
	Recent     int
	Remember   int
	FutureSkew time.Duration
}

func (c Config) withDefaults() Config {
	if c.Recent <= 0 {
		c.Recent = DefaultRecent
	}
	if c.Remember <= 0 {
		c.Remember = DefaultRemember
	}
	if c.FutureSkew <= 0 {
		c.FutureSkew = DefaultFutureSkew
	}
	return c
}

// watchStart is the instant rows are compared with: the cloud stamps rows
// to the second, so a row stamped in the second the watch began counts.
func watchStart(since time.Time) time.Time { return since.Truncate(time.Second) }

// timeLayouts are the forms of row times accepted: RFC 3339 (with or
// without fractions) and the SQL-like forms some endpoints use (UTC).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05"}

// rowTime reads a row's time: a string in one of timeLayouts, or epoch
// seconds as a number or numeric string. ok is false for anything else,
// including null and absent (present reports which).
func rowTime(v any) (t time.Time, present, ok bool) {
	switch x := v.(type) {
	case nil:
		return time.Time{}, false, false
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return time.Time{}, false, false
		}
		for _, l := range timeLayouts {
			if t, err := time.Parse(l, s); err == nil {
				return t, true, true
			}
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			return time.Unix(n, 0).UTC(), true, true
		}
		return time.Time{}, true, false
	case float64:
		if x > 0 && x < 1e11 && x == math.Trunc(x) {
			return time.Unix(int64(x), 0).UTC(), true, true
		}
		return time.Time{}, true, false
	default:
		return time.Time{}, true, false
	}
}

// rowInt reads an integral number (or a string holding one); ok is false
// for anything else.
func rowInt(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return n, err == nil
	default:
		return 0, false
	}
}

// text renders a scalar row value as the cloud gave it; objects and lists
// give "" (ok false).
func text(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", true
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	default:
		return "", false
	}
}
