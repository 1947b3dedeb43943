package redact

import (
	"encoding/json"
)

// rewriteJSON copies valid JSON compacted, with every member named by
// SecretKey or PersonalKey masked whole (null stays null) and every
// remembered secret scrubbed from strings and keys. It works on the bytes,
// without decoding into maps: a prime is megabytes, and numbers, key order
// and escapes stay as the cloud sent them.
func (s *Set) rewriteJSON(in []byte) []byte {
	w := rewriter{s: s, in: in, out: make([]byte, 0, len(in)), scrub: s.known()}
	w.value()
	return w.out
}

type rewriter struct {
	s     *Set
	in    []byte
	i     int
	out   []byte
	scrub bool
}

func (w *rewriter) ws() {
	for w.i < len(w.in) {
		switch w.in[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value copies the value at w.i (the input is valid JSON).
func (w *rewriter) value() {
	w.ws()
	if w.i >= len(w.in) {
		return
	}
	switch w.in[w.i] {
	case '{':
		w.out = append(w.out, '{')
		w.i++
		for first := true; ; first = false {
			w.ws()
			if w.in[w.i] == '}' {
				w.i++
				break
			}
			if !first {
				w.out = append(w.out, ',')
			}
			key := w.stringLit()
			masked := maskedKey(key)
			w.ws()
			w.i++ // ':'
			w.out = append(w.out, ':')
			w.ws()
			if masked && !w.null() {
				at := len(w.out)
				w.value()
				w.out = append(w.out[:at], `"`+Mask+`"`...)
			} else {
				w.value()
			}
			w.ws()
			if w.in[w.i] == ',' {
				w.i++
			}
		}
		w.out = append(w.out, '}')
	case '[':
		w.out = append(w.out, '[')
		w.i++
		for first := true; ; first = false {
			w.ws()
			if w.in[w.i] == ']' {
				w.i++
				break
			}
			if !first {
				w.out = append(w.out, ',')
			}
			w.value()
			w.ws()
			if w.in[w.i] == ',' {
				w.i++
			}
		}
		w.out = append(w.out, ']')
	case '"':
		w.stringLit()
	default: // number, true, false, null
		start := w.i
		for w.i < len(w.in) {
			c := w.in[w.i]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			w.i++
		}
		w.out = append(w.out, w.in[start:w.i]...)
	}
}

// null reports whether the value at w.i is null.
func (w *rewriter) null() bool {
	return len(w.in)-w.i >= 4 && string(w.in[w.i:w.i+4]) == "null"
}

// stringLit copies the string literal at w.i, scrubbed, and returns its
// raw text (without the quotes) for a key's lookup.
func (w *rewriter) stringLit() []byte {
	start := w.i
	w.i++
	for w.in[w.i] != '"' {
		if w.in[w.i] == '\\' {
			w.i++
		}
		w.i++
	}
	w.i++
	lit := w.in[start:w.i]
	if w.scrub && len(lit)-2 >= minSecret {
		if text := string(lit); w.s.ScrubRecord(text) != text {
			// Scrubbed decoded, so a mask never cuts an escape.
			var v string
			if json.Unmarshal(lit, &v) == nil {
				b, _ := json.Marshal(w.s.ScrubRecord(v))
				w.out = append(w.out, b...)
				return lit[1 : len(lit)-1]
			}
		}
	}
	w.out = append(w.out, lit...)
	return lit[1 : len(lit)-1]
}

// maskedKey is SecretKey or PersonalKey of a raw key (escapes are rare in
// keys; one with an escape is decoded first).
func maskedKey(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' {
			var k string
			if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &k) != nil {
				return false
			}
			return SecretKey(k) || PersonalKey(k)
		}
	}
	var buf [maxFoldedKey]byte
	n, ok := foldKey(raw, &buf)
	if !ok {
		return SecretKey(string(raw)) || PersonalKey(string(raw))
	}
	return secretKeys[string(buf[:n])] || personalKeys[string(buf[:n])]
}

// maxFoldedKey bounds the keys folded on the stack; longer ones are no
// secret or personal key.
const maxFoldedKey = 40

// foldKey lower-cases an ASCII key and drops '-' and '_' into buf; ok is
// false for a key with other than ASCII bytes (the caller takes the
// Unicode-aware path).
func foldKey(key []byte, buf *[maxFoldedKey]byte) (n int, ok bool) {
	for _, c := range key {
		switch {
		case c >= utf8RuneSelf:
			return 0, false
		case c == '-' || c == '_':
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		if n == len(buf) {
			return n, true // longer than every key: looked up as its start, found nowhere
		}
		buf[n] = c
		n++
	}
	return n, true
}
