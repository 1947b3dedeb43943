package serving

import (
	"net/http"
	"strings"
)

// negotiateEncoding picks the response's content encoding from the request's
// Accept-Encoding among offers, exactly as promhttp does (its copy of
// github.com/golang/gddo/httputil, BSD licence, is internal to
// client_golang), so that both paths of the /metrics handler answer a
// request the same way: the best quality wins, earlier offers win ties,
// "identity" when nothing is asked for, "" when everything offered is
// refused (q=0).
func negotiateEncoding(r *http.Request, offers []string) string {
	best, bestQ := "identity", -1.0
	specs := parseAcceptEncoding(r.Header)
	for _, offer := range offers {
		for _, spec := range specs {
			if spec.q > bestQ && (spec.value == "*" || spec.value == offer) {
				bestQ, best = spec.q, offer
			}
		}
	}
	if bestQ == 0 {
		best = ""
	}
	return best
}

type acceptSpec struct {
	value string
	q     float64
}

// parseAcceptEncoding is gddo's header.ParseAccept for Accept-Encoding.
func parseAcceptEncoding(h http.Header) []acceptSpec {
	var specs []acceptSpec
loop:
	for _, s := range h["Accept-Encoding"] {
		for {
			var spec acceptSpec
			spec.value, s = expectTokenSlash(s)
			if spec.value == "" {
				continue loop
			}
			spec.q = 1.0
			s = skipHeaderSpace(s)
			if strings.HasPrefix(s, ";") {
				s = skipHeaderSpace(s[1:])
				if !strings.HasPrefix(s, "q=") {
					continue loop
				}
				spec.q, s = expectQuality(s[2:])
				if spec.q < 0.0 {
					continue loop
				}
			}
			specs = append(specs, spec)
			s = skipHeaderSpace(s)
			if !strings.HasPrefix(s, ",") {
				continue loop
			}
			s = skipHeaderSpace(s[1:])
		}
	}
	return specs
}

func isHeaderSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// isToken reports an RFC 2616 token character.
func isToken(c byte) bool {
	return c > 31 && c < 127 && !strings.ContainsRune(" \t\"(),/:;<=>?@[]\\{}", rune(c))
}

func skipHeaderSpace(s string) string {
	i := 0
	for i < len(s) && isHeaderSpace(s[i]) {
		i++
	}
	return s[i:]
}

func expectTokenSlash(s string) (token, rest string) {
	i := 0
	for i < len(s) && (isToken(s[i]) || s[i] == '/') {
		i++
	}
	return s[:i], s[i:]
}

func expectQuality(s string) (q float64, rest string) {
	switch {
	case len(s) == 0:
		return -1, ""
	case s[0] == '0':
		q = 0
	case s[0] == '1':
		q = 1
	default:
		return -1, ""
	}
	s = s[1:]
	if !strings.HasPrefix(s, ".") {
		return q, s
	}
	s = s[1:]
	i, n, d := 0, 0, 1
	for ; i < len(s); i++ {
		b := s[i]
		if b < '0' || b > '9' {
			break
		}
		n = n*10 + int(b) - '0'
		d *= 10
	}
	return q + float64(n)/float64(d), s[i:]
}
