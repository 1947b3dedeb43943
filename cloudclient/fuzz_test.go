package cloudclient_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

func FuzzDecodeModules(f *testing.F) {
	for _, s := range []string{
		`{"data":[` + healthyRow + `]}`, `[` + degradedRow + `]`, `[]`, `{"unexpected":true}`,
		`[{"devid":"X","connectedAt":"soon"},{"devid":5},7,null]`, `[{"devid":"S","connectedAt":"1700000000","gateway":null}]`,
		`<html>503</html>`, `{"data":null}`, `[{"devid":"A","connectedAt":1e300}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := cloudclient.DecodeModules(data)
		if err != nil {
			if json.Valid(data) {
				t.Fatalf("valid JSON %q rejected: %v", data, err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("invalid JSON %q accepted", data)
		}
		// Every row is either kept or counted as dropped.
		var rows []json.RawMessage
		switch trimmed := bytes.TrimSpace(data); {
		case bytes.HasPrefix(trimmed, []byte("[")):
			_ = json.Unmarshal(trimmed, &rows)
		case bytes.HasPrefix(trimmed, []byte("{")):
			var m map[string]json.RawMessage
			_ = json.Unmarshal(trimmed, &m)
			if d := bytes.TrimSpace(m["data"]); bytes.HasPrefix(d, []byte("[")) {
				_ = json.Unmarshal(d, &rows)
			}
		}
		if len(l.Modules)+l.Dropped != len(rows) {
			t.Fatalf("%q: %d kept + %d dropped != %d rows", data, len(l.Modules), l.Dropped, len(rows))
		}
		if !l.Recognised && (len(l.Modules) != 0 || l.Dropped != 0) {
			t.Fatalf("unrecognised listing with rows: %+v", l)
		}
		for _, m := range l.Modules {
			if m.Online() != (m.ConnectedAt != 0) {
				t.Fatalf("Online() disagrees with ConnectedAt: %+v", m)
			}
		}
	})
}

func FuzzDecodeLogin(f *testing.F) {
	for _, s := range []string{
		`{"accessToken":"T1","refreshToken":"R1","type":"bearer","expiresAt":"2026-09-10T12:00:00Z","user":{"id":1,"name":"Test User","email":"a@b","language":"en","allow_email_type_informations":true,"allow_email_type_alarms":true,"allow_email_type_marketing":false,"allow_email_type_warnings":true,"activated_at":"2023-01-01T00:00:00Z","show_rate_us_modal":false},"objects":[{"id":1,"name":"Home","addressCountry":"PL"}]}`,
		`{"token":"T2"}`, `{"accessToken":""}`, `{"accessToken":"T","expiresAt":"2026-09-10T12:00:00.123+02:00"}`,
		`{"accessToken":"T","expiresAt":1757000000}`, `{"accessToken":"T","objects":{"id":1}}`, `{"accessToken":"T","user":[]}`,
		`<html>`, `{"message":"ER_DUP_ENTRY"}`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := cloudclient.DecodeLogin(data)
		if err != nil {
			var de *cloudclient.DecodeError
			if !errors.As(err, &de) && !errors.Is(err, cloudclient.ErrNoAccessToken) {
				t.Fatalf("untyped error %T %v", err, err)
			}
			if res != nil {
				t.Fatal("result with error")
			}
			if len(data) > 0 && strings.Contains(err.Error(), string(data)) && len(data) > 40 {
				t.Fatalf("error quotes the body: %v", err)
			}
			return
		}
		if res.Token.AccessToken == "" || res.Token.Type == "" || res.Objects == nil {
			t.Fatalf("incomplete result %+v", res)
		}
		if !json.Valid(data) {
			t.Fatalf("invalid JSON accepted: %q", data)
		}
		_ = fmt.Sprint(res.Token.ExpiresAt)
	})
}
