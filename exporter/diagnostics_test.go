package exporter

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/redact"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// planted is one secret or personal datum planted in the simulated cloud's
// answers and events, and what it is.
type planted struct{ kind, value string }

// The personal data planted (the secrets are added once the exporter holds
// its token).
var plantedPersonal = []planted{
	{"user name (login answer, user record, activity rows)", "Zofia Plantowska-Nazwisko"},
	{"street address (object record)", "Ulica Plantowa 77"},
	{"house number (object record)", "77b/13"},
	{"post code (object record)", "99-777"},
	{"city (object record)", "Plantville"},
	{"phone number (object record)", "+48 600 700 800"},
	{"latitude (object record)", "52.987654"},
	{"longitude (object record)", "21.123456"},
	{"client name (module card)", "Kazimierz Plantowski"},
	{"client phone (module card)", "+48 511 222 333"},
	{"client street (module card)", "Kwiatowa Plantowa 15"},
	{"client post code (module card)", "11-222"},
	{"gateway IP address (module row, connection event)", "192.0.2.77"},
	{"module IP address (moduleAddress)", "198.51.100.88"},
}

const (
	plantedEmail    = "planted.user@example.org"
	plantedPassword = "Plant3d-Passw0rd!x"
)

// TestDiagnosticsRedactsPlantedData plants each kind of secret and personal
// datum in the simulated cloud's answers and events (the account's email
// and password, the tokens echoed as is and in base64, the user's name,
// an object's street, post code, phone and coordinates, the module card's
// client fields, IP addresses), runs the whole exporter with the traffic
// ring, a capture file and debug logs, and proves none of them reaches the
// bundle (/debug/diagnostics, every file of it), the capture file or the
// logs, while devids, object ids and values stay.
func TestDiagnosticsRedactsPlantedData(t *testing.T) {
	sim := cloudsim.New(cloudsim.Options{Email: plantedEmail, Password: plantedPassword, Modules: 2, Objects: 1, ParamsPerModule: 20, Seed: 7})
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.Plant(cloudsim.Planted{
		UserName: "Zofia Plantowska-Nazwisko",
		ObjectFields: map[string]any{"addressStreet": "Ulica Plantowa 77", "addressHouseNumber": "77b/13",
			"addressPostCode": "99-777", "addressCity": "Plantville", "phone": "+48 600 700 800",
			"latitude": 52.987654, "longitude": 21.123456},
		CardFields: map[string]any{"clientFullName": "Kazimierz Plantowski", "clientPhoneNumber": "+48 511 222 333",
			"clientAddressStreetAndNumber": "Kwiatowa Plantowa 15", "clientAddressPostalCode": "11-222"},
		GatewayAddress: "192.0.2.77", ModuleAddress: "198.51.100.88", EchoToken: true,
	})

	dir := t.TempDir()
	capture := filepath.Join(dir, "capture.jsonl")
	cfg := validConfig(t)
	t.Setenv("BRAGERONE_TEST_PASSWORD", plantedPassword)
	cfg.Cloud.URL, cfg.Cloud.AssetsURL, cfg.Cloud.Email = sim.URL(), sim.URL(), plantedEmail
	cfg.Parameters = Parameters{}
	secrets := redact.NewSet()
	logs := &syncBuffer{}
	ring := traffic.NewLogRing(1 << 20)
	opts := &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: secrets.ReplaceAttr}
	cfg.Logger = slog.New(slog.NewMultiHandler(slog.NewJSONHandler(logs, opts), slog.NewJSONHandler(ring, opts)))
	cfg.Secrets = secrets
	cfg.Diagnostics = Diagnostics{RingBytes: -1, Logs: ring, CaptureFile: capture, CaptureKeep: 1}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}
	defer stop()
	select {
	case <-e.Ready():
	case err := <-done:
		done <- err
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20s")
	}

	// The shapes the exporter reads on demand: activity rows (a person's
	// name), the module card (the client fields); and a connection-status
	// event carrying the gateway's address.
	devids := sim.Devids()
	if _, err := e.client.Activity(ctx, cloudclient.ListRequest{Modules: devids, Page: 1, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.ModuleCard(ctx, devids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Objects(ctx); err != nil {
		t.Fatal(err)
	}
	sim.SetModuleOnline(devids[1], false)
	sim.SetModuleOnline(devids[1], true)
	waitFor(t, "the connection-status events in the ring", func() bool {
		n := 0
		for _, r := range e.Traffic() {
			if r.Kind == traffic.KindEvent && r.Event == "app:module:connection:status:changed" {
				n++
			}
		}
		return n >= 2
	})

	tok, ok := e.client.Token()
	if !ok {
		t.Fatal("no token")
	}
	// The control: the cloud's own answers do carry what was planted.
	raw := rawGet(t, sim.URL()+"/v1/objects", tok.AccessToken) + rawGet(t, sim.URL()+"/v1/modules/"+devids[0]+"/card", tok.AccessToken) +
		rawGet(t, sim.URL()+"/v1/modules?group_id="+itoa(sim.ObjectID()), tok.AccessToken)
	for _, v := range []string{"Ulica Plantowa 77", "52.987654", "Kazimierz Plantowski", "192.0.2.77", "198.51.100.88", tok.AccessToken} {
		if !strings.Contains(raw, v) {
			t.Fatalf("the simulated cloud's answers lack the planted %q: the test proves nothing", v)
		}
	}
	items := append([]planted{
		{"account email", plantedEmail},
		{"account email, query-escaped", url.QueryEscape(plantedEmail)},
		{"account password", plantedPassword},
		{"account password, base64", base64.StdEncoding.EncodeToString([]byte(plantedPassword))},
		{"access token (login answer, echoed by the cloud)", tok.AccessToken},
		{"access token, base64 (echoed)", base64.StdEncoding.EncodeToString([]byte(tok.AccessToken))},
		{"refresh token (login answer)", tok.RefreshToken},
	}, plantedPersonal...)

	// The bundle, from the running exporter's handler.
	resp, err := http.Get(srv.URL + "/debug/diagnostics")
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/gzip" {
		t.Fatalf("GET /debug/diagnostics = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	files := untar(t, bundle)

	stop() // flushes and closes the capture
	captured, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	if _, recs, err := traffic.Read(bytes.NewReader(captured)); err != nil || len(recs) == 0 {
		t.Fatalf("the capture file reads back as %d records, %v", len(recs), err)
	}

	where := map[string]string{"capture file": string(captured), "logs": logs.String()}
	for name, b := range files {
		where["bundle "+name] = string(b)
	}
	t.Logf("%-55s %s", "planted", "found in")
	for _, it := range items {
		if len(it.value) < 4 {
			t.Fatalf("planted %s %q is too short to look for", it.kind, it.value)
		}
		var found []string
		for w, text := range where {
			if strings.Contains(text, it.value) {
				found = append(found, w)
			}
		}
		slices.Sort(found)
		if len(found) > 0 {
			t.Errorf("%s %q reached %s", it.kind, it.value, strings.Join(found, ", "))
		}
		t.Logf("%-55s %s", it.kind, strings.Join(append(found, "nowhere")[:max(len(found), 1)], ", "))
	}
	// What a developer needs stays: devids, the object id, values.
	for _, d := range devids {
		if !strings.Contains(files["traffic.jsonl"], d) || !strings.Contains(files["status.json"], d) || !strings.Contains(string(captured), d) {
			t.Errorf("devid %s missing from the traffic, the status or the capture", d)
		}
	}
	if id := sim.ObjectID(); !strings.Contains(files["traffic.jsonl"], `"object":`+itoa(id)) {
		t.Errorf("object id %d missing from the traffic records", id)
	}
	if !strings.Contains(files["traffic.jsonl"], `"value":`) {
		t.Error("no parameter value in the traffic records")
	}
}

// rawGet is a GET to the simulated cloud with a bearer token.
func rawGet(t *testing.T, u, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// untar opens a bundle: every file under BundleDir, in BundleFiles order.
func untar(t *testing.T, b []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(h.Name, BundleDir+"/")
		if !ok {
			t.Errorf("bundle file %s outside %s/", h.Name, BundleDir)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(data)
		names = append(names, name)
	}
	if !slices.Equal(names, BundleFiles) {
		t.Errorf("bundle files %v, want %v", names, BundleFiles)
	}
	return files
}

// TestDiagnosticsBundleFieldByField: the bundle of a running exporter
// (against its embedded simulated cloud), opened file by file: the
// version, the configuration, the status model with its objects and
// modules, the catalog report, the traffic ring as a traffic file the
// codec reads (logins, module lists, the prime, events), the ring's
// figures, and the debug log lines even with the logger at warn.
func TestDiagnosticsBundleFieldByField(t *testing.T) {
	cfg := simulatedConfig(t)
	ring := traffic.NewLogRing(1 << 20)
	cfg.Logger = slog.New(slog.NewJSONHandler(ring, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Diagnostics = Diagnostics{RingBytes: -1, Logs: ring, Settings: map[string]string{"cloud.email": redact.Mask, "poll.interval": "1m0s"}}
	cfg.Version = "v9.9.9-test"
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := serveRun(t, e)
	select {
	case <-e.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20s")
	}
	sim := e.sim
	waitFor(t, "the catalog loaded", func() bool { return e.loader.State().Catalog != nil })
	sim.SetModuleOnline(sim.Devids()[0], false)
	waitFor(t, "the connection event in the ring", func() bool {
		for _, r := range e.Traffic() {
			if r.Kind == traffic.KindEvent && r.Event == "app:module:connection:status:changed" {
				return true
			}
		}
		return false
	})
	for _, page := range []string{"/", "/status"} {
		if _, body := get(t, srv, page); !strings.Contains(body, `href="/debug/diagnostics"`) {
			t.Errorf("%s does not link /debug/diagnostics", page)
		}
	}
	resp, err := http.Get(srv.URL + "/debug/diagnostics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "bragerone-diagnostics-") || !strings.HasSuffix(cd, `.tar.gz"`) {
		t.Errorf("Content-Disposition %q", cd)
	}
	files := untar(t, b)

	var version map[string]string
	mustJSON(t, files["version.json"], &version)
	if version["version"] != "v9.9.9-test" || version["go"] == "" || version["made_at"] == "" || version["started"] == "" {
		t.Errorf("version.json %v", version)
	}
	var config map[string]string
	mustJSON(t, files["config.json"], &config)
	if config["cloud.email"] != redact.Mask || config["poll.interval"] != "1m0s" {
		t.Errorf("config.json %v, want the CLI's view", config)
	}
	var status struct {
		Objects []struct {
			ID       int
			Session  struct{ Up bool }
			Recovery struct{ Actions map[string]uint64 }
		}
		Modules []struct {
			Devid       string
			ObjectID    int
			OnlineKnown bool
			Params      int
		}
		Account  *struct{ HasToken bool }
		Episodes []json.RawMessage
	}
	mustJSON(t, files["status.json"], &status)
	if len(status.Objects) != 1 || status.Objects[0].ID != sim.ObjectID() || !status.Objects[0].Session.Up {
		t.Errorf("status.json objects %+v", status.Objects)
	}
	if len(status.Modules) != 1 || status.Modules[0].Devid != sim.Devids()[0] || status.Modules[0].Params == 0 || !status.Modules[0].OnlineKnown {
		t.Errorf("status.json modules %+v", status.Modules)
	}
	if status.Account == nil || !status.Account.HasToken {
		t.Errorf("status.json account %+v", status.Account)
	}
	var catalog map[string]any
	mustJSON(t, files["catalog.json"], &catalog)
	if catalog["loaded"] != true || catalog["index_asset"] != sim.IndexAsset() || catalog["failures_by_stage"] == nil {
		t.Errorf("catalog.json %v", catalog)
	}
	if m, _ := catalog["modules_params_described"].(map[string]any); m[sim.Devids()[0]] == nil {
		t.Errorf("catalog.json describes no parameter of %s: %v", sim.Devids()[0], catalog)
	}
	h, recs, err := traffic.Read(strings.NewReader(files["traffic.jsonl"]))
	if err != nil {
		t.Fatalf("traffic.jsonl: %v", err)
	}
	if h.Format != traffic.Format || h.Version != traffic.Version || h.Settings["exporter_version"] != "v9.9.9-test" {
		t.Errorf("traffic.jsonl header %+v", h)
	}
	seen := map[string]bool{}
	for i, r := range recs {
		if i > 0 && r.Seq <= recs[i-1].Seq {
			t.Errorf("records out of order: %d after %d", r.Seq, recs[i-1].Seq)
		}
		switch r.Kind {
		case traffic.KindREST:
			seen[r.Endpoint] = true
			if r.Status == 200 && len(r.Body) == 0 && r.BodyText == "" {
				t.Errorf("%s: no answer recorded", r.Endpoint)
			}
			if _, ok := r.Headers["Authorization"]; ok {
				t.Errorf("%s: the Authorization header recorded", r.Endpoint)
			}
		case traffic.KindEvent:
			seen["event "+r.Event] = true
		case traffic.KindTransition:
			seen["transition "+r.What] = true
		}
	}
	for _, want := range []string{cloudapi.EndpointLogin, cloudapi.EndpointModules, cloudapi.EndpointParameters, cloudapi.EndpointAsset,
		"event app:module:connection:status:changed", "transition login", "transition session_up"} {
		if !seen[want] {
			t.Errorf("traffic.jsonl has no %s record", want)
		}
	}
	var stats struct {
		Ring struct {
			LimitBytes     int  `json:"limit_bytes"`
			UsedBytes      int  `json:"used_bytes"`
			Records        int  `json:"records"`
			SizedByAccount bool `json:"sized_by_account"`
		} `json:"ring"`
	}
	mustJSON(t, files["traffic-stats.json"], &stats)
	if stats.Ring.Records != len(recs) || stats.Ring.UsedBytes == 0 || stats.Ring.LimitBytes < RingBase || !stats.Ring.SizedByAccount {
		t.Errorf("traffic-stats.json %+v (%d records read)", stats.Ring, len(recs))
	}
	if !strings.Contains(files["logs.jsonl"], `"level":"DEBUG"`) {
		t.Error("logs.jsonl has no debug line")
	}
	for _, line := range strings.Split(strings.TrimSpace(files["logs.jsonl"]), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("logs.jsonl line %q is not JSON", line)
		}
	}
}

func mustJSON(t *testing.T, text string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("%v in %.200s", err, text)
	}
}

// TestCaptureFileRotatesWithSnapshot: serve --capture.file against the
// embedded simulated cloud, rotated small: every file reads back with the
// codec, and each rotated file starts with the snapshot (the object list,
// the module list and the prime, as last answered) so it replays alone;
// every record is numbered.
func TestCaptureFileRotatesWithSnapshot(t *testing.T) {
	cfg := simulatedConfig(t)
	path := filepath.Join(t.TempDir(), "capture.jsonl")
	cfg.Diagnostics = Diagnostics{RingBytes: -1, CaptureFile: path, CaptureMaxBytes: 12000, CaptureKeep: 5}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	waitFor(t, "three capture files", func() bool {
		c := e.diag.capture.Load()
		return c != nil && c.Stats().Files >= 3
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + ".1"} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		h, recs, err := traffic.Read(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !h.Snapshot {
			t.Errorf("%s: the header says no snapshot", name)
		}
		want := []string{cloudapi.EndpointObjects, cloudapi.EndpointModules, cloudapi.EndpointParameters}
		var got []string
		for _, r := range recs {
			if r.Seq == 0 {
				t.Errorf("%s: a record without its number", name)
			}
			if r.At.After(h.Started) {
				break
			}
			got = append(got, r.Endpoint)
		}
		for _, ep := range want {
			if !slices.Contains(got, ep) {
				t.Errorf("%s: the snapshot %v lacks %s", name, got, ep)
			}
		}
	}
}
