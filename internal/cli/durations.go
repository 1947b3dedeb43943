package cli

// How a flag's default duration is printed in --help (and so in the README's
// flag reference): as its owner's spec states it.

import (
	"strconv"
	"strings"
	"time"
)

// seconds prints a duration the spec states in seconds as such (180s rather
// than 3m): the flag reference then reads like the spec's Limits table.
func seconds(d time.Duration) string {
	if d%time.Second != 0 {
		return d.String()
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// shortDuration prints 6h rather than 6h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
