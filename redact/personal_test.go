package redact

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// Secrets are scrubbed in base64 too, in both alphabets, padded or not.
func TestScrubBase64(t *testing.T) {
	s := NewSet()
	for _, secret := range []string{"Plant3d-Passw0rd!x", "tok?>>?1", "eyJhbGciOiJIUzI1NiJ9.abc~~~"} {
		s.Add(secret)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			e := enc.EncodeToString([]byte(secret))
			if got := s.Scrub("x " + e + " y"); strings.Contains(got, e) || !strings.Contains(got, Mask) {
				t.Errorf("%q in base64 %q: scrubbed to %q", secret, e, got)
			}
		}
	}
}

// A record's JSON loses its secrets and personal data by field, and keeps
// what a developer needs.
func TestRecordJSON(t *testing.T) {
	s := NewSet()
	s.Add("sekret-token-1234")
	in := `{"accessToken":"sekret-token-1234","user":{"id":7,"name":"Jan"},"user_id":7,
"objects":[{"id":5,"name":"Home","addressStreet":"Kwiatowa 1","addressPostCode":"00-123","latitude":52.1,"addressHouseNumber":null}],
"rows":[{"devid":"ABCDEFGHIJ","gateway":{"address":"10.0.0.2","version":"V2"},"moduleAddress":"10.0.0.3","note":"sekret-token-1234"}],
"card":{"clientFullName":"Jan K","clientPhoneNumber":"+48 1","clientAddressPostalCode":"00-1"},
"P4":{"v1":{"value":21.5}}}`
	out, ok := s.RecordJSON([]byte(in))
	if !ok {
		t.Fatal("not JSON")
	}
	got := string(out)
	for _, gone := range []string{"sekret-token-1234", "Jan", "Kwiatowa", "00-123", "52.1", "10.0.0.2", "10.0.0.3", "+48"} {
		if strings.Contains(got, gone) {
			t.Errorf("%q left in %s", gone, got)
		}
	}
	for _, kept := range []string{`"devid":"ABCDEFGHIJ"`, `"id":5`, `"name":"Home"`, `"value":21.5`, `"version":"V2"`, `"addressHouseNumber":null`} {
		if !strings.Contains(got, kept) {
			t.Errorf("%s lost from %s", kept, got)
		}
	}
	if text, ok := s.RecordJSON([]byte("<html>sekret-token-1234</html>")); ok || strings.Contains(string(text), "sekret") {
		t.Errorf("a page: %q, %v", text, ok)
	}
}

// A record keeps the headers that tell how the cloud answered, never one
// that authenticates.
func TestRecordHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Retry-After", "30")
	h.Set("Set-Cookie", "session=abc")
	h.Set("Authorization", "Bearer x")
	h.Set("X-Other", "y")
	got := NewSet().RecordHeaders(h)
	if len(got) != 2 || got["Content-Type"] != "application/json" || got["Retry-After"] != "30" {
		t.Errorf("headers kept %v", got)
	}
}

func TestPersonalKey(t *testing.T) {
	for _, k := range []string{"user", "user_id", "clientFullName", "addressPostCode", "moduleAddress", "address", "latitude", "phone", "email"} {
		if !PersonalKey(k) {
			t.Errorf("%s is not personal", k)
		}
	}
	for _, k := range []string{"devid", "id", "name", "value", "objectId", "version", "connectedAt"} {
		if PersonalKey(k) {
			t.Errorf("%s is personal", k)
		}
	}
}

// FuzzRecordJSON: the rewrite of valid JSON is valid JSON, keeps the shape
// of what it does not mask, and never holds a remembered secret.
func FuzzRecordJSON(f *testing.F) {
	f.Add(`{"a":[1,-2.5e3,true,null,"x\"y\\u00e9"],"user":{"n":1},"Password":null,"k\u0065y":"s3cr3t-value"}`)
	f.Add(`["s3cr3t-value", {"phone":"+48"}]`)
	f.Add(`"s3cr3t-v\u0061lue"`)
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		s := NewSet()
		s.Add("s3cr3t-value")
		out, ok := s.RecordJSON([]byte(in))
		if len(strings.TrimSpace(in)) == 0 {
			return
		}
		if !ok || !json.Valid(out) {
			t.Fatalf("%q became %q (%v)", in, out, ok)
		}
		var v any
		_ = json.Unmarshal(out, &v)
		if b, _ := json.Marshal(v); strings.Contains(string(b), "s3cr3t-v") {
			t.Fatalf("%q became %q: the secret is in it", in, out)
		}
	})
}

// A personal value (the account's email) is masked in records and logs,
// not in what the tools print.
func TestAddPersonal(t *testing.T) {
	s := NewSet()
	s.AddPersonal("jan@example.org")
	if got := s.Scrub("user jan@example.org"); got != "user jan@example.org" {
		t.Errorf("Scrub masked a personal value: %q", got)
	}
	if got := s.ScrubRecord("user jan%40example.org"); strings.Contains(got, "jan") {
		t.Errorf("ScrubRecord left it: %q", got)
	}
	if out, _ := s.RecordJSON([]byte(`{"note":"jan@example.org"}`)); strings.Contains(string(out), "jan") {
		t.Errorf("RecordJSON left it: %s", out)
	}
	a := s.ReplaceAttr(nil, slog.String("who", "jan@example.org"))
	if strings.Contains(a.Value.String(), "jan") {
		t.Errorf("a log attribute kept it: %v", a)
	}
}
