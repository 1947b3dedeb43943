package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// writeCapture writes a small capture: a login and Home's module list.
func writeCapture(t *testing.T) (path string, data []byte) {
	t.Helper()
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	w, err := traffic.NewWriter(&b, traffic.NewHeader(t0, map[string]string{"version": "test"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []traffic.Record{
		{At: t0, Kind: traffic.KindREST, Method: "POST", Endpoint: cloudapi.EndpointLogin, Path: "/v1/auth/user", Status: 200,
			Body: json.RawMessage(`{"type":"bearer","user":{"id":7},"objects":[{"id":101,"name":"Home"}]}`)},
		{At: t0.Add(time.Second), Kind: traffic.KindREST, Method: "GET", Endpoint: cloudapi.EndpointModules, Path: "/v1/modules?page=1&limit=999&group_id=101", Status: 200,
			Body: json.RawMessage(`{"data":[{"devid":"FIELDDEV01","name":"Boiler"}]}`)},
		{At: t0.Add(2 * time.Second), Kind: traffic.KindEvent, Object: 101, Event: "app:modules:parameters:change", Payload: json.RawMessage(`{"FIELDDEV01":{"P4":{"v1":{"value":5}}}}`)},
	} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	path = filepath.Join(t.TempDir(), "capture.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, b.Bytes()
}

// TestSimulateReplayRefusesABrokenCapture: a capture with a malformed line,
// or cut short, is refused with the line it broke on, and nothing is
// served.
func TestSimulateReplayRefusesABrokenCapture(t *testing.T) {
	_, good := writeCapture(t)
	lines := strings.SplitAfter(string(good), "\n")
	for name, tc := range map[string]struct {
		data string
		line string
	}{
		"malformed": {lines[0] + lines[1] + "{not json\n" + lines[3], "line 3"},
		"truncated": {strings.TrimSuffix(string(good), "\n"), "line 4: truncated"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "broken.jsonl")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			addr := freeAddr(t)
			code, _, errOut := runArgs(t, "simulate", "--replay="+path, "--listen="+addr)
			if code == exitOK || !strings.Contains(errOut, path) || !strings.Contains(errOut, tc.line) {
				t.Errorf("exit %d, stderr %q; want a failure naming the file and %s", code, errOut, tc.line)
			}
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				t.Errorf("something listens on %s after the refusal", addr)
			}
		})
	}
	if code, _, errOut := runArgs(t, "simulate", "--replay.speed=10", "--listen="+freeAddr(t)); code != exitUsage || !strings.Contains(errOut, "--replay.speed needs --replay") {
		t.Errorf("--replay.speed without --replay: exit %d, %q", code, errOut)
	}
}

// TestSimulateReplayServesTheCapture: --replay (here from the environment)
// and --replay.speed (from the configuration file) serve the capture:
// any credentials log in and the module list is the recorded one.
func TestSimulateReplayServesTheCapture(t *testing.T) {
	path, _ := writeCapture(t)
	t.Setenv("BRAGERONE_SIMULATE_REPLAY", path)
	cli, err := parseForTest(t, "simulate", "--listen=127.0.0.1:0", "--config.file="+writeConfig(t, "replay.speed: 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := cli.Simulate
	if cmd.Replay != path || cmd.ReplaySpeed != 10 {
		t.Fatalf("parsed --replay %q --replay.speed %v", cmd.Replay, cmd.ReplaySpeed)
	}
	logs := &syncBuffer{}
	g := &Globals{Logger: slog.New(slog.NewJSONHandler(logs, nil)), Stdout: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.Run(ctx, g) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; time.Sleep(5 * time.Millisecond) {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "replayed cloud serving" {
				url, _ = rec["url"].(string)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no serving URL logged:\n%s", logs.String())
		}
	}
	res, err := http.Post(url+"/v1/auth/user", "application/json", strings.NewReader(`{"email":"anyone@example.com","password":"anything"}`))
	if err != nil {
		t.Fatal(err)
	}
	var login struct {
		AccessToken string `json:"accessToken"`
	}
	_ = json.NewDecoder(res.Body).Decode(&login)
	res.Body.Close()
	if res.StatusCode != 200 || login.AccessToken == "" {
		t.Fatalf("login with any credentials = %d", res.StatusCode)
	}
	req, _ := http.NewRequest("GET", url+"/v1/modules?page=1&limit=999&group_id=101", nil)
	req.Header.Set("Authorization", "Bearer "+login.AccessToken)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "FIELDDEV01") {
		t.Errorf("module list = %d %s, want the recorded one", res.StatusCode, body)
	}
	res, err = http.Get(url + "/control/state")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Replay struct {
			Speed   float64 `json:"speed"`
			Started bool    `json:"started"`
			Records int     `json:"records"`
		} `json:"replay"`
	}
	_ = json.NewDecoder(res.Body).Decode(&st)
	res.Body.Close()
	if st.Replay.Speed != 10 || !st.Replay.Started || st.Replay.Records != 3 {
		t.Errorf("/control/state replay = %+v", st.Replay)
	}
}
