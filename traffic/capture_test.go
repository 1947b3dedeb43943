package traffic

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A capture is written and read back by the codec; rotated by size, each
// new file starts with the snapshot (the latest record of each key) and
// replays alone; Keep bounds the rotated files; an earlier capture at the
// path is kept as the first rotated file.
func TestCaptureRotatesWithSnapshot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "capture.jsonl")
	if err := os.WriteFile(path, []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	c, err := OpenCapture(CaptureConfig{
		Path: path, MaxBytes: 4000, Keep: 2, Settings: map[string]string{"objects": "1"},
		Snapshot: func(r Record) (string, bool) {
			if r.Kind == KindREST && r.Status == 200 {
				return r.Endpoint, true
			}
			return "", false
		},
		Now: func() time.Time { return at },
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path + ".1"); string(b) != "earlier\n" {
		t.Fatalf("the earlier capture became %q", b)
	}
	rest := func(ep string, n int) Record {
		return Record{Kind: KindREST, Endpoint: ep, Status: 200, Body: []byte(fmt.Sprintf(`{"n":%d}`, n))}
	}
	c.Record(rest("GET /v1/modules", 1))
	c.Record(rest("POST /v1/modules/parameters", 1))
	for i := range 60 {
		c.Record(Record{Kind: KindEvent, Event: "e", Payload: []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", 200)))})
		if i == 30 {
			c.Record(rest("GET /v1/modules", 2))
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Written != 63 || st.Dropped != 0 || st.Files < 3 {
		t.Fatalf("stats %+v, want 63 written over 3 or more files", st)
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Error("more rotated files than Keep")
	}
	h, recs, err := Read(mustOpen(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if !h.Snapshot || h.Settings["objects"] != "1" || !h.Started.Equal(at) {
		t.Errorf("the last file's header %+v, want a snapshot", h)
	}
	if len(recs) < 3 || string(recs[0].Body) != `{"n":2}` || recs[0].Endpoint != "GET /v1/modules" || recs[1].Endpoint != "POST /v1/modules/parameters" {
		t.Errorf("the last file starts with %+v, want the latest module list and the prime", recs[:min(len(recs), 2)])
	}
	for _, name := range []string{path, path + ".1", path + ".2"} {
		b, _ := os.ReadFile(name)
		if int64(len(b)) > 4000+400 {
			t.Errorf("%s is %d bytes, cap 4000", name, len(b))
		}
		if _, _, err := Read(mustOpen(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustOpen(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
