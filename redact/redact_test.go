package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

const (
	tok      = "3f9a0c5be21d4477a9c1e0f2b6d8a4c3"
	oldTok   = "77aa0c5be21d4477a9c1e0f2b6d8ffff"
	password = `Pa55 "w0rd" <&> ß/+`
)

func TestScrubMasksEverySpellingAndCutToken(t *testing.T) {
	s := NewSet()
	s.Add(password, oldTok, tok)
	pwJSON, _ := json.Marshal(password)
	cases := map[string]string{
		"bearer":        "rejected Bearer " + tok,
		"previous":      "stale " + oldTok + "!",
		"cut short":     "rejected Bearer " + tok[:10] + "…",
		"password":      "bad password " + password,
		"json-escaped":  `{"password":` + string(pwJSON) + `}`,
		"html-escaped":  "<pre>Pa55 &#34;w0rd&#34; &lt;&amp;&gt; ß/+</pre>",
		"query-escaped": "email=a%40b&password=Pa55+%22w0rd%22+%3C%26%3E+%C3%9F%2F%2B",
		"twice":         tok + tok + " and " + tok,
	}
	for name, text := range cases {
		got := s.Scrub(text)
		for _, secret := range []string{tok, tok[:minPrefix], oldTok[:minPrefix], "w0rd"} {
			if strings.Contains(got, secret) {
				t.Errorf("%s: %q scrubbed to %q, still holding %q", name, text, got, secret)
			}
		}
		if !strings.Contains(got, Mask) {
			t.Errorf("%s: %q scrubbed to %q, no mask", name, text, got)
		}
	}
	if got := s.Scrub("HTTP 500: module P4.v8 out of range"); got != "HTTP 500: module P4.v8 out of range" {
		t.Errorf("text without a secret changed: %q", got)
	}
	if got := s.Scrub("rejected Bearer " + tok + " at 12:00"); got != "rejected Bearer "+Mask+" at 12:00" {
		t.Errorf("the text around a secret changed: %q", got)
	}
}

// A short secret is masked where it appears whole, not by its start.
func TestScrubShortSecret(t *testing.T) {
	s := NewSet()
	s.Add("hunter2")
	if got := s.Scrub("no hunter2 here, hunter here"); got != "no "+Mask+" here, hunter here" {
		t.Errorf("got %q", got)
	}
}

func TestSetForgetsOldestButKeepsReAdded(t *testing.T) {
	s := NewSet()
	s.Add(password)
	first := fmt.Sprintf("token-%02d-%s", 0, tok)
	s.Add(first)
	for i := 1; i <= maxRemembered; i++ {
		s.Add(fmt.Sprintf("token-%02d-%s", i, tok), password)
	}
	if s.Len() != maxRemembered {
		t.Fatalf("Len = %d, want %d", s.Len(), maxRemembered)
	}
	if got := s.Scrub(password); got != Mask {
		t.Errorf("the password re-added at every login was forgotten: %q", got)
	}
	if got := s.Scrub(first); got != first {
		t.Errorf("the oldest token is still remembered beyond the bound: %q", got)
	}
	s.Add("", "r", "abc")
	if s.Len() != maxRemembered {
		t.Errorf("values shorter than %d bytes were remembered", minSecret)
	}
}

func TestScrubJSONMasksMembersAndValues(t *testing.T) {
	s := NewSet()
	s.Add(tok)
	in := map[string]any{
		"message": "rejected Bearer " + tok,
		"details": []any{map[string]any{"accessToken": "anything", "hint": tok}},
		"status":  401.0,
	}
	out, _ := json.Marshal(s.ScrubJSON(in))
	if bytes.Contains(out, []byte(tok)) || bytes.Contains(out, []byte("anything")) {
		t.Errorf("scrubbed JSON still holds a secret: %s", out)
	}
	if !bytes.Contains(out, []byte(`"status":401`)) {
		t.Errorf("non-secret member changed: %s", out)
	}
	if m := in["message"].(string); !strings.Contains(m, tok) {
		t.Errorf("the input was modified")
	}
}

func TestSecretKey(t *testing.T) {
	for _, k := range []string{"password", "Password", "token", "accessToken", "access_token", "refresh-token", "Authorization", "Set-Cookie"} {
		if !SecretKey(k) {
			t.Errorf("SecretKey(%q) = false", k)
		}
	}
	for _, k := range []string{"email", "err", "devid", "tokens_total"} {
		if SecretKey(k) {
			t.Errorf("SecretKey(%q) = true", k)
		}
	}
}

// TestSecretKeyFoldsLikeUnicode checks the ASCII fast path against the
// Unicode-aware fold on keys around every secret key, and that the buffer
// holds the longest one.
func TestSecretKeyFoldsLikeUnicode(t *testing.T) {
	for k := range secretKeys {
		if len(k) > maxSecretKeyLen {
			t.Fatalf("secret key %q is longer than maxSecretKeyLen %d", k, maxSecretKeyLen)
		}
		for _, v := range []string{k, strings.ToUpper(k), "x" + k, k + "s", k[1:], "_" + k + "-", "\u212a" + k, strings.Repeat(k, 2)} {
			if got, want := SecretKey(v), secretKeyUnicode(v); got != want {
				t.Errorf("SecretKey(%q) = %v, the Unicode fold says %v", v, got, want)
			}
		}
	}
	if !SecretKey("CoO\u212aie") {
		t.Error("a key with the Kelvin sign for k is not folded to cookie")
	}
}

func FuzzSecretKey(f *testing.F) {
	for _, k := range []string{"password", "Set-Cookie", "access_TOKEN", "CoO\u212aie", "devid", ""} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if got, want := SecretKey(key), secretKeyUnicode(key); got != want {
			t.Fatalf("SecretKey(%q) = %v, the Unicode fold says %v", key, got, want)
		}
	})
}

// BenchmarkSecretKey asks about five typical log attribute keys; the
// baseline is the Unicode-aware fold SecretKey used for every key before.
func BenchmarkSecretKey(b *testing.B) {
	keys := []string{"devid", "err", "namespace_sid", "Authorization", "component"}
	for _, bc := range []struct {
		name string
		fn   func(string) bool
	}{{"ascii-fold", SecretKey}, {"baseline-unicode-fold", secretKeyUnicode}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, k := range keys {
					_ = bc.fn(k)
				}
			}
		})
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

func TestReplaceAttr(t *testing.T) {
	s := NewSet()
	s.Add(tok, password)
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: s.ReplaceAttr}))
	log.Info("login "+tok, "token", "x", "err", errors.New("rejected "+tok), "who", stringer(password),
		"list", []string{"a", tok}, "raw", []byte(tok), "n", 3, "nil", nil,
		slog.Group("g", "detail", "Bearer "+tok))
	out := buf.String()
	for _, secret := range []string{tok[:minPrefix], "w0rd", `"token":"x"`} {
		if strings.Contains(out, secret) {
			t.Errorf("%q logged: %s", secret, out)
		}
	}
	if !strings.Contains(out, `"n":3`) || !strings.Contains(out, `"nil":null`) {
		t.Errorf("plain attributes changed: %s", out)
	}
	var nilSet *Set
	if a := nilSet.ReplaceAttr(nil, slog.String("password", "p")); a.Value.String() != Mask {
		t.Errorf("a nil Set does not mask by name: %v", a)
	}
	if got := nilSet.Scrub(tok); got != tok {
		t.Errorf("a nil Set changed text: %q", got)
	}
}

func FuzzScrub(f *testing.F) {
	f.Add("rejected Bearer "+tok, tok)
	f.Add("", "x")
	f.Add("aaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaa")
	f.Fuzz(func(t *testing.T, text, secret string) {
		s := NewSet()
		s.Add(secret)
		if s.Len() == 0 {
			return
		}
		got := s.Scrub(text)
		// A secret sharing no byte with Mask cannot be rebuilt from a mask
		// and the text beside it, so it must be gone.
		if secret != "" && !strings.ContainsAny(secret, Mask) && strings.Contains(got, secret) {
			t.Fatalf("Scrub(%q) with secret %q = %q", text, secret, got)
		}
	})
}
