package wire

import (
	"strconv"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects a payload may have:
// encoding/json's limit, so both accept the same texts.
const MaxDepth = 10000

// maxPlainDigits is the longest number without an exponent that certainly
// fits a float64 (the largest float64 has 309 integer digits).
const maxPlainDigits = 300

// Numbers says which JSON numbers a Scanner accepts.
type Numbers uint8

const (
	// AnyNumber accepts every number the JSON grammar allows, however large
	// (what json.Valid accepts).
	AnyNumber Numbers = iota
	// Float64Numbers refuses numbers beyond the float64 range, as
	// encoding/json does when it decodes into an interface.
	Float64Numbers
)

// SyntaxError says where (byte offset in the scanned text) and why a text is
// not JSON.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return e.Msg + " at offset " + strconv.Itoa(e.Offset) }

// Scanner reads JSON text in place, checking its syntax the way
// encoding/json does and building nothing unless asked: values are skipped
// (SkipValue) and their raw text is the span between two positions (Pos).
// Depths count the arrays and objects enclosing a value; a container opened
// at depth MaxDepth or deeper is refused.
type Scanner struct {
	data    []byte
	pos     int
	numbers Numbers
}

// NewScanner returns a scanner at the start of data.
func NewScanner(data []byte, numbers Numbers) Scanner {
	return Scanner{data: data, numbers: numbers}
}

// Pos is the offset of the next unread byte.
func (s *Scanner) Pos() int { return s.pos }

// Peek returns the next unread byte; ok is false at the end of the text.
func (s *Scanner) Peek() (c byte, ok bool) {
	if s.pos >= len(s.data) {
		return 0, false
	}
	return s.data[s.pos], true
}

func (s *Scanner) fail(msg string) error { return &SyntaxError{Offset: s.pos, Msg: msg} }

// SkipSpace moves past JSON whitespace.
func (s *Scanner) SkipSpace() {
	i := s.pos
	for i < len(s.data) {
		// Most bytes are not space: one comparison tells.
		if c := s.data[i]; c > ' ' || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		i++
	}
	s.pos = i
}

// atEnd reports whether only whitespace is left.
func (s *Scanner) atEnd() bool {
	s.SkipSpace()
	return s.pos == len(s.data)
}

// SkipValue checks the one JSON value at Pos and moves past it; depth counts
// the containers enclosing it.
func (s *Scanner) SkipValue(depth int) error {
	if s.pos >= len(s.data) {
		return s.fail("unexpected end")
	}
	switch c := s.data[s.pos]; {
	case c == '"':
		_, _, err := s.str()
		return err
	case c == '{':
		empty, err := s.openObject(depth)
		if err != nil || empty {
			return err
		}
		for {
			if _, _, err := s.key(); err != nil {
				return err
			}
			if err := s.SkipValue(depth + 1); err != nil {
				return err
			}
			if more, err := s.nextMember(); err != nil || !more {
				return err
			}
		}
	case c == '[':
		empty, err := s.OpenArray(depth)
		if err != nil || empty {
			return err
		}
		for {
			if err := s.SkipValue(depth + 1); err != nil {
				return err
			}
			if more, err := s.NextElement(); err != nil || !more {
				return err
			}
		}
	case c == 't' || c == 'f' || c == 'n':
		_, err := s.literal()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	default:
		return s.fail("invalid character")
	}
}

// OpenArray moves past the '[' at Pos (and any space after it); empty
// reports an array with no elements, whose ']' is consumed too. Otherwise
// Pos is at the first element.
func (s *Scanner) OpenArray(depth int) (empty bool, err error) { return s.open(depth, ']') }

// open moves past the opening bracket at Pos of a container that closer
// ends, and any space after it; empty reports a container with nothing in
// it, whose closer is consumed too.
func (s *Scanner) open(depth int, closer byte) (empty bool, err error) {
	if depth >= MaxDepth {
		return false, s.fail("nesting too deep")
	}
	s.pos++ // '[' or '{'
	s.SkipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == closer {
		s.pos++
		return true, nil
	}
	return false, nil
}

// NextElement moves past the separator after an array element: more is true
// at a ',' (Pos is then at the next element), false at the closing ']'.
func (s *Scanner) NextElement() (more bool, err error) { return s.next(']', "array") }

// next moves past the separator after an element of a container that closer
// ends (what names it in errors): more at a ',' (Pos is then at the next
// element), false at closer.
func (s *Scanner) next(closer byte, what string) (more bool, err error) {
	s.SkipSpace()
	if s.pos >= len(s.data) {
		return false, s.fail("unexpected end of " + what)
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		s.SkipSpace()
		return true, nil
	case closer:
		s.pos++
		return false, nil
	}
	return false, s.fail("expected ',' or '" + string(closer) + "' in " + what)
}

// openObject is OpenArray for an object.
func (s *Scanner) openObject(depth int) (empty bool, err error) { return s.open(depth, '}') }

// key reads a member's key and its ':', leaving Pos at the value. raw is the
// text between the quotes; esc reports that it needs unescaping.
func (s *Scanner) key() (raw []byte, esc bool, err error) {
	s.SkipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return nil, false, s.fail("expected a string key")
	}
	if raw, esc, err = s.str(); err != nil {
		return nil, false, err
	}
	s.SkipSpace()
	if s.pos >= len(s.data) || s.data[s.pos] != ':' {
		return nil, false, s.fail("expected ':' after a key")
	}
	s.pos++
	s.SkipSpace()
	return raw, esc, nil
}

// nextMember is NextElement for an object.
func (s *Scanner) nextMember() (more bool, err error) { return s.next('}', "object") }

// plainASCII marks the bytes a string holds as they are: printable ASCII
// other than the quote and the backslash.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads the string at Pos and returns its raw content; esc reports
// escapes or non-ASCII bytes (the content then needs unescaping or UTF-8
// repair).
func (s *Scanner) str() (raw []byte, esc bool, err error) {
	d := s.data
	start := s.pos + 1
	i := start
	for {
		for i < len(d) && plainASCII[d[i]] {
			i++
		}
		if i >= len(d) {
			break
		}
		switch c := d[i]; {
		case c == '"':
			s.pos = i + 1
			return d[start:i], esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(d) {
				s.pos = i
				return nil, false, s.fail("unexpected end of string")
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) || !isHex4(d[i+2:i+6]) {
					s.pos = i
					return nil, false, s.fail("invalid \\u escape")
				}
				i += 6
			default:
				s.pos = i
				return nil, false, s.fail("invalid escape")
			}
		case c < 0x20:
			s.pos = i
			return nil, false, s.fail("control character in string")
		default: // not ASCII
			esc = true
			i++
		}
	}
	s.pos = len(d)
	return nil, false, s.fail("unexpected end of string")
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// literal reads true, false or null.
func (s *Scanner) literal() (any, error) {
	rest := s.data[s.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		s.pos += 4
		return true, nil
	case len(rest) >= 5 && string(rest[:5]) == "false":
		s.pos += 5
		return false, nil
	case len(rest) >= 4 && string(rest[:4]) == "null":
		s.pos += 4
		return nil, nil
	}
	return nil, s.fail("invalid literal")
}

// number checks the JSON number grammar at Pos and, with Float64Numbers,
// the float64 range.
func (s *Scanner) number() error {
	b, i, start := s.data, s.pos, s.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		s.pos = i
		return s.fail("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.pos = i
			return s.fail("invalid number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	exp := false
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		exp = true
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			s.pos = i
			return s.fail("invalid number")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if s.numbers == Float64Numbers && (exp || i-start > maxPlainDigits) {
		if _, err := strconv.ParseFloat(string(b[start:i]), 64); err != nil {
			return s.fail("number out of the float64 range")
		}
	}
	s.pos = i
	return nil
}
