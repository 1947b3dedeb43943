// Package redact owns what counts as a secret of the exporter and how a
// secret is scrubbed from text.
//
// Two kinds of secret exist. Some are known by name: a log attribute or a
// JSON member called password, token, authorization (see [SecretKey]) is a
// secret whatever it holds. Others are known by value: the account password
// and the access and refresh tokens the cloud issued, remembered in a [Set]
// by whoever learns them (the REST client, at every login). Text from the
// cloud passes through the Set where it enters the program (an error built
// from an answer, a Socket.IO connect error), and the log handlers pass every
// attribute through it once more, so a secret the cloud echoes back never
// reaches an error, a log line, a metric or a page.
package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Mask replaces a secret.
const Mask = "REDACTED"

// maxRemembered bounds the secrets a Set keeps: the newest win. A login adds
// two tokens and re-adds the password, so this covers the last dozen logins,
// far longer than a previous token can still be echoed.
const maxRemembered = 32

// minPrefix is the shortest start of a secret that is masked on its own: a
// token the cloud cut short ("rejected Bearer 3f9a0c…") is still a secret.
// Shorter secrets are masked where they appear whole.
const minPrefix = 8

// secretKeys are the names (lower case, without '-' and '_') whose values
// are secrets whatever they hold.
var secretKeys = map[string]bool{
	"password": true, "token": true, "accesstoken": true, "refreshtoken": true,
	"authorization": true, "proxyauthorization": true, "cookie": true, "setcookie": true,
}

// SecretKey reports whether an attribute, header or JSON member named key
// carries a secret (password, token, accessToken, refresh_token,
// Authorization, Cookie, ...). It runs for every attribute of every log
// line, so an ASCII key (every key the program writes) is folded into a
// stack buffer; only other keys take the Unicode-aware path.
func SecretKey(key string) bool {
	var buf [maxSecretKeyLen]byte
	n := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= utf8RuneSelf:
			return secretKeyUnicode(key)
		case c == '-' || c == '_':
			continue
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		}
		if n == len(buf) {
			return false // longer than every secret key
		}
		buf[n] = c
		n++
	}
	return secretKeys[string(buf[:n])]
}

// utf8RuneSelf is the first byte value that is not ASCII.
const utf8RuneSelf = 0x80

// maxSecretKeyLen is the length of the longest of secretKeys.
const maxSecretKeyLen = len("proxyauthorization")

// secretKeyUnicode is SecretKey for a key with non-ASCII letters, some of
// which lower-case to ASCII (the Kelvin sign to k).
func secretKeyUnicode(key string) bool {
	k := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' {
			return -1
		}
		return r
	}, strings.ToLower(key))
	return secretKeys[k]
}

// minSecret is the shortest value a Set remembers. A shorter one (a test
// fixture's refresh token "r") would mask letters of ordinary words in every
// line, and guards nothing a guess would not find.
const minSecret = 4

// Set remembers secret values and masks them in text. The zero value is
// not usable; a nil *Set masks by name only. It is safe for concurrent use.
type Set struct {
	mu      sync.RWMutex
	secrets []string // newest last
	forms   []string // every spelling of every secret, derived from secrets
	// personal are values that are no secret of the program but personal
	// data of the account (its email): masked in records and logs
	// (ScrubRecord, ReplaceAttr), not in what the tools print.
	personal []string
	pforms   []string
}

// AddPersonal remembers personal values (the account's email), masked by
// ScrubRecord and in logs; values shorter than minSecret bytes are ignored.
func (s *Set) AddPersonal(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		if len(v) < minSecret || slices.Contains(s.personal, v) {
			continue
		}
		s.personal = append(s.personal, v)
		if n := len(s.personal) - maxPersonal; n > 0 {
			s.personal = slices.Delete(s.personal, 0, n)
		}
		s.pforms = s.pforms[:0]
		for _, p := range s.personal {
			for _, f := range spellings(p) {
				if !slices.Contains(s.pforms, f) {
					s.pforms = append(s.pforms, f)
				}
			}
		}
	}
}

// maxPersonal bounds the personal values a Set keeps.
const maxPersonal = 8

// known reports whether the Set masks any value at all.
func (s *Set) known() bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.secrets)+len(s.personal) > 0
}

// NewSet returns an empty Set.
func NewSet() *Set { return &Set{} }

// Add remembers secret values; values shorter than minSecret bytes are
// ignored. A value already
// known becomes the newest again, so the password re-added at every login
// is never forgotten while tokens come and go.
func (s *Set) Add(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for _, v := range values {
		if len(v) < minSecret {
			continue
		}
		if i := slices.Index(s.secrets, v); i >= 0 {
			if i == len(s.secrets)-1 {
				continue
			}
			s.secrets = slices.Delete(s.secrets, i, i+1)
		}
		s.secrets = append(s.secrets, v)
		changed = true
	}
	if !changed {
		return
	}
	if n := len(s.secrets) - maxRemembered; n > 0 {
		s.secrets = slices.Delete(s.secrets, 0, n)
	}
	s.forms = s.forms[:0]
	for _, v := range s.secrets {
		for _, f := range spellings(v) {
			if !slices.Contains(s.forms, f) {
				s.forms = append(s.forms, f)
			}
		}
	}
}

// Len returns how many secret values the Set remembers.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.secrets)
}

// spellings are the forms a secret takes when the cloud quotes it: as is,
// escaped inside a JSON string, in an HTML page, in a query string.
func spellings(v string) []string {
	out := []string{v}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	out = append(out, html.EscapeString(v), url.QueryEscape(v))
	// base64 in its four alphabets (a Basic header, a JWT's segment, a
	// cookie): the unpadded forms, whose every byte the encoding of the
	// secret alone decides, so a padded or embedded copy starts with them.
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		e := enc.EncodeToString([]byte(v))
		// The last character also encodes what follows the secret.
		if n := len(v) % 3; n != 0 && len(e) > 1 {
			e = e[:len(e)-1]
		}
		out = append(out, e)
	}
	return out
}

// Scrub returns text with every remembered secret, in each of its
// spellings, and every run of at least minPrefix bytes that starts one,
// replaced by Mask.
func (s *Set) Scrub(text string) string { return s.scrub(text, false) }

// ScrubRecord is Scrub that masks the personal values (AddPersonal) too:
// for what the exporter records of the cloud and for its logs.
func (s *Set) ScrubRecord(text string) string { return s.scrub(text, true) }

func (s *Set) scrub(text string, personal bool) string {
	if s == nil || text == "" {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	forms := s.forms
	if personal && len(s.pforms) > 0 {
		forms = append(slices.Clip(forms), s.pforms...)
	}
	if len(forms) == 0 {
		return text
	}
	var spans [][2]int
	for _, f := range forms {
		probe := f
		if len(f) > minPrefix {
			probe = f[:minPrefix]
		}
		for from := 0; from < len(text); {
			i := strings.Index(text[from:], probe)
			if i < 0 {
				break
			}
			i += from
			n := len(probe)
			for n < len(f) && i+n < len(text) && text[i+n] == f[n] {
				n++
			}
			spans = append(spans, [2]int{i, i + n})
			from = i + 1
		}
	}
	if len(spans) == 0 {
		return text
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] <= end; i++ {
			end = max(end, spans[i][1])
		}
		b.WriteString(text[at:start])
		b.WriteString(Mask)
		at = end
	}
	b.WriteString(text[at:])
	return b.String()
}

// ScrubJSON returns a copy of a decoded JSON value (maps, lists, strings,
// numbers) with every string scrubbed and every member named by SecretKey
// masked whole.
func (s *Set) ScrubJSON(v any) any {
	switch x := v.(type) {
	case string:
		return s.Scrub(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if SecretKey(k) {
				out[s.Scrub(k)] = Mask
				continue
			}
			out[s.Scrub(k)] = s.ScrubJSON(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = s.ScrubJSON(val)
		}
		return out
	default:
		return v
	}
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr: an attribute named by
// SecretKey is written as Mask, and any other whose text holds a remembered
// secret is written as that text scrubbed. Attributes without a secret are
// left as they are, so the handler formats them as usual.
func (s *Set) ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	if SecretKey(a.Key) {
		return slog.String(a.Key, Mask)
	}
	if !s.known() {
		return a
	}
	var text string
	switch a.Value.Kind() {
	case slog.KindString:
		text = a.Value.String()
	case slog.KindAny:
		switch v := a.Value.Any().(type) {
		case nil:
			return a
		case error:
			text = v.Error()
		case fmt.Stringer:
			text = v.String()
		case []byte:
			text = string(v)
		default:
			text = fmt.Sprint(v)
		}
	default:
		return a
	}
	if scrubbed := s.ScrubRecord(text); scrubbed != text {
		return slog.String(a.Key, scrubbed)
	}
	return a
}
