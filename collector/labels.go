package collector

import (
	"hash/fnv"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxLabelValueLen bounds the length in bytes of every label value that comes
// from the cloud (devid, module metadata, parameter keys, reasons).
const MaxLabelValueLen = 128

// labelHashLen is the length of the hash suffix added to a value that had to
// be shortened or repaired: "~" and 16 hex digits.
const labelHashLen = 17

// LabelValue returns s as a safe Prometheus label value: valid UTF-8 and at
// most MaxLabelValueLen bytes. Values already safe are returned unchanged
// without allocating. A value that is too long or not valid UTF-8 is repaired
// (invalid bytes become U+FFFD, the value is cut on a rune boundary) and gets
// a suffix "~<hash of the original bytes>", so that two different hostile
// values never collapse into one series (which would fail the scrape).
// Quotes, backslashes and newlines need no treatment here: the exposition
// encoder escapes them.
func LabelValue(s string) string {
	if len(s) <= MaxLabelValueLen && utf8.ValidString(s) {
		return s
	}
	h := fnv.New64a()
	h.Write([]byte(s))
	sum := h.Sum64()

	fixed := strings.ToValidUTF8(s, "\uFFFD")
	limit := MaxLabelValueLen - labelHashLen
	if len(fixed) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(fixed[cut]) {
			cut--
		}
		fixed = fixed[:cut]
	}
	suffix := strconv.FormatUint(sum, 16)
	return fixed + "~" + strings.Repeat("0", 16-len(suffix)) + suffix
}
