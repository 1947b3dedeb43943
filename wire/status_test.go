package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeConnectionStatus(t *testing.T) {
	raw := `{
	  "M1": {"connectedAt": 1700000100, "gateway": {"address": "10.0.0.2", "interface": "wifi", "version": "V2.08"}},
	  "M2": {"connected_at": "1700000200"},
	  "M3": {"gateway": {"address": null, "interface": "eth", "version": 2.08}},
	  "M4": {"connectedAt": 0},
	  "M5": {"connectedAt": null, "connected_at": 5},
	  "M6": {"connectedAt": 1.7e9},
	  "M7": {}
	}`
	got, err := DecodeConnectionStatus([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		at     int64
		hasAt  bool
		gw     *Gateway
		online bool
	}{
		"M1": {1700000100, true, &Gateway{"10.0.0.2", "wifi", "V2.08"}, true},
		"M2": {1700000200, true, nil, true},
		"M3": {0, false, &Gateway{"", "eth", "2.08"}, false},
		"M4": {0, true, nil, false},
		"M5": {5, true, nil, true},
		"M6": {1700000000, true, nil, true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries: %+v", len(got), got)
	}
	for i, st := range got {
		if i > 0 && got[i-1].Devid >= st.Devid {
			t.Errorf("entries not sorted: %q before %q", got[i-1].Devid, st.Devid)
		}
		w := want[st.Devid]
		if (st.ConnectedAt != nil) != w.hasAt || (st.ConnectedAt != nil && *st.ConnectedAt != w.at) {
			t.Errorf("%s connectedAt = %v, want %d (present %v)", st.Devid, st.ConnectedAt, w.at, w.hasAt)
		}
		if (st.Gateway == nil) != (w.gw == nil) || (st.Gateway != nil && *st.Gateway != *w.gw) {
			t.Errorf("%s gateway = %+v, want %+v", st.Devid, st.Gateway, w.gw)
		}
		online, known := st.Online()
		if known != w.hasAt || online != w.online {
			t.Errorf("%s Online() = %v, %v", st.Devid, online, known)
		}
	}
}

func TestDecodeConnectionStatusBadInput(t *testing.T) {
	for _, raw := range []string{``, `null`, `[]`, `"x"`, `{`, `17`} {
		got, err := DecodeConnectionStatus([]byte(raw))
		var pe *PayloadError
		if got != nil || !errors.As(err, &pe) || pe.Reason == "" {
			t.Errorf("DecodeConnectionStatus(%q) = %v, %v; want a payload error", raw, got, err)
		}
	}
	// Bad entries are skipped and reported; good ones survive.
	raw := `{"OK":{"connectedAt":1},"B1":"offline","B2":{"connectedAt":"soon"},"B3":{"connectedAt":-5},
	         "B4":{"connectedAt":true},"G":{"connectedAt":2,"gateway":"wifi"},"":{"connectedAt":1}}`
	got, err := DecodeConnectionStatus([]byte(raw))
	var pe *PayloadError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *PayloadError", err)
	}
	if len(got) != 2 || got[0].Devid != "G" || got[1].Devid != "OK" || got[0].Gateway != nil || *got[0].ConnectedAt != 2 {
		t.Errorf("usable entries = %+v", got)
	}
	for _, d := range []string{"B1:", "B2: connectedAt", "B3: connectedAt", "B4: connectedAt", "G: gateway", `"": empty devid`} {
		if !strings.Contains(err.Error(), d) {
			t.Errorf("error %q does not mention %q", err, d)
		}
	}
}

func TestDecodeDevid(t *testing.T) {
	if d, err := DecodeDevid([]byte(`{"devid":"M1","x":1}`)); err != nil || d != "M1" {
		t.Errorf("DecodeDevid = %q, %v", d, err)
	}
	for _, raw := range []string{`{"devid":""}`, `{"devid":"  "}`, `{"devid":5}`, `{"devid":null}`, `{}`, `"M1"`, `[]`, ``, `{`} {
		d, err := DecodeDevid([]byte(raw))
		var pe *PayloadError
		if d != "" || !errors.As(err, &pe) || pe.Payload != PayloadMemoryUpdated {
			t.Errorf("DecodeDevid(%q) = %q, %v; want a payload error", raw, d, err)
		}
	}
}

func FuzzDecodeConnectionStatus(f *testing.F) {
	f.Add([]byte(`{"M1":{"connectedAt":1700000100,"gateway":{"address":"a"}}}`))
	f.Add([]byte(`{"M1":{"connected_at":"12"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := DecodeConnectionStatus(raw)
		for _, st := range got {
			if st.Devid == "" || (st.ConnectedAt == nil && st.Gateway == nil) {
				t.Fatalf("unusable entry returned: %+v (err %v)", st, err)
			}
			if st.ConnectedAt != nil && *st.ConnectedAt < 0 {
				t.Fatalf("negative connectedAt: %+v", st)
			}
		}
		_, _ = DecodeDevid(raw)
	})
}
