package jsval

import (
	"strings"
	"unicode/utf8"
)

// DecodeString converts the text of a string literal, quotes included, to
// its value (docs/spec.md ). Malformed escapes never fail: the backslash
// is dropped and the rest is kept as written.
func DecodeString(lit string) string {
	if len(lit) >= 2 && (lit[0] == '\'' || lit[0] == '"' || lit[0] == '`') && lit[len(lit)-1] == lit[0] {
		lit = lit[1 : len(lit)-1]
	}
	return decodeEscapes(lit)
}

var simpleEscapes = [256]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'f': '\f', 'v': '\v'}

func decodeEscapes(s string) string {
	if !strings.Contains(s, `\`) {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	var b strings.Builder
	b.Grow(len(s))
	pendingHigh := -1 // a high surrogate from \uD8xx waiting for its low half
	flushHigh := func() {
		if pendingHigh >= 0 {
			b.WriteRune(utf8.RuneError)
			pendingHigh = -1
		}
	}
	writeUnit := func(u int) {
		switch {
		case u >= 0xD800 && u <= 0xDBFF:
			flushHigh()
			pendingHigh = u
		case u >= 0xDC00 && u <= 0xDFFF:
			if pendingHigh >= 0 {
				b.WriteRune(rune((pendingHigh-0xD800)<<10 + (u - 0xDC00) + 0x10000))
				pendingHigh = -1
			} else {
				b.WriteRune(utf8.RuneError)
			}
		default:
			flushHigh()
			b.WriteRune(rune(u))
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			flushHigh()
			r, size := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r) // invalid bytes become U+FFFD
			i += size
			continue
		}
		if i+1 >= len(s) { // a trailing backslash stays
			flushHigh()
			b.WriteByte('\\')
			break
		}
		i++
		c = s[i]
		switch c {
		case 'n', 'r', 't', 'b', 'f', 'v':
			flushHigh()
			b.WriteByte(simpleEscapes[c])
			i++
		case '0':
			flushHigh()
			if i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
				b.WriteByte('0') // "\01" is "01", not NUL then "1"
			} else {
				b.WriteByte(0)
			}
			i++
		case '\n': // line continuation
			i++
		case '\r': // line continuation, CR or CRLF
			i++
			if i < len(s) && s[i] == '\n' {
				i++
			}
		case 'x':
			if u, ok := hexN(s[i+1:], 2); ok {
				writeUnit(u)
				i += 3
			} else {
				flushHigh()
				b.WriteByte('x')
				i++
			}
		case 'u':
			i += decodeU(s[i:], writeUnit, &b, flushHigh)
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			if r == '\u2028' || r == '\u2029' {
				continue // line continuation
			}
			flushHigh()
			b.WriteRune(r) // unknown escape: the backslash is dropped
		}
	}
	flushHigh()
	return b.String()
}

// decodeU decodes s = "u…" after a backslash and returns the bytes used.
func decodeU(s string, writeUnit func(int), b *strings.Builder, flushHigh func()) int {
	if len(s) > 1 && s[1] == '{' {
		end := strings.IndexByte(s, '}')
		if end > 2 && end <= 2+8 {
			if u, ok := hexN(s[2:end], end-2); ok {
				if u > 0x10FFFF {
					flushHigh()
					b.WriteRune(utf8.RuneError)
				} else {
					writeUnit(u)
				}
				return end + 1
			}
		}
		flushHigh()
		b.WriteByte('u')
		return 1
	}
	if u, ok := hexN(s[1:], 4); ok {
		writeUnit(u)
		return 5
	}
	flushHigh()
	b.WriteByte('u')
	return 1
}

func hexN(s string, n int) (int, bool) {
	if len(s) < n || n == 0 {
		return 0, false
	}
	u := 0
	for i := 0; i < n; i++ {
		c := s[i]
		var d int
		switch {
		case c >= '0' && c <= '9':
			d = int(c - '0')
		case c >= 'a' && c <= 'f':
			d = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = int(c-'A') + 10
		default:
			return 0, false
		}
		u = u<<4 | d
	}
	return u, true
}
