package traffic

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// Records written by a Writer read back the same, header first.
func TestJSONLRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, NewHeader(at, map[string]string{"objects": "1,2"}))
	if err != nil {
		t.Fatal(err)
	}
	in := []Record{
		{Seq: 1, At: at, Kind: KindREST, Object: 1, Method: "POST", Endpoint: "POST /v1/modules/parameters",
			Path: "/v1/modules/parameters", Status: 200, DurationMS: 12.5, Request: json.RawMessage(`{"modules":["A"]}`),
			Headers: map[string]string{"Content-Type": "application/json"}, Body: json.RawMessage(`{"A":{}}`)},
		{Seq: 2, At: at.Add(time.Second), Kind: KindEvent, Object: 1, Event: "app:modules:parameters:listen", SID: "s1",
			Payload: json.RawMessage(`{"A":{"P4":{"v0":{"value":1}}}}`)},
		{Seq: 3, At: at.Add(2 * time.Second), Kind: KindTransition, What: "login", Detail: map[string]string{"outcome": "ok"}},
	}
	for _, r := range in {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if w.Written() != int64(buf.Len()) {
		t.Errorf("Written %d, buffer %d", w.Written(), buf.Len())
	}
	h, out, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if h.Format != Format || h.Version != Version || !h.Started.Equal(at) || h.Settings["objects"] != "1,2" {
		t.Errorf("header %+v", h)
	}
	a, _ := json.Marshal(in)
	b, _ := json.Marshal(out)
	if !bytes.Equal(a, b) {
		t.Errorf("read back\n%s\nwant\n%s", b, a)
	}
}

// A malformed or truncated file is refused with the line it broke on.
func TestJSONLRefusesWithLine(t *testing.T) {
	hdr := `{"format":"bragerone-traffic","version":1,"started":"2026-11-29T06:00:00Z"}` + "\n"
	rec := `{"seq":1,"at":"2026-11-29T06:00:00Z","kind":"event","event":"x"}` + "\n"
	for _, c := range []struct {
		name, text string
		line       int
		truncated  bool
	}{
		{"empty", "", 1, false},
		{"not a header", rec, 1, false},
		{"other format", `{"format":"pcap","version":1}` + "\n", 1, false},
		{"newer version", `{"format":"bragerone-traffic","version":2}` + "\n", 1, false},
		{"malformed record", hdr + rec + `{"seq":2,"kind":` + "\n" + rec, 3, false},
		{"unknown kind", hdr + rec + rec + `{"seq":3,"kind":"smoke"}` + "\n", 4, false},
		{"two values", hdr + `{"kind":"event"} {"kind":"event"}` + "\n", 2, false},
		{"empty line", hdr + rec + "\n" + rec, 3, false},
		{"truncated", hdr + rec + rec[:30], 3, true},
		{"truncated header", hdr[:20], 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, recs, err := Read(strings.NewReader(c.text))
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err %v, want a *LineError", err)
			}
			if le.Line != c.line {
				t.Errorf("line %d, want %d (%v)", le.Line, c.line, err)
			}
			if errors.Is(err, ErrTruncated) != c.truncated {
				t.Errorf("truncated: %v, want %v", err, c.truncated)
			}
			if recs != nil || h.Format != "" {
				t.Errorf("a refused file gave %d records and header %+v", len(recs), h)
			}
		})
	}
	if _, recs, err := Read(strings.NewReader(hdr + rec)); err != nil || len(recs) != 1 {
		t.Errorf("a whole file: %d records, %v", len(recs), err)
	}
}
