package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/wire"
)

// The reference Node.js Socket.IO server (socket.io 4.8.4, the server the
// cloud's protocol is defined by) in realtime/testdata/nodeserver. These
// tests prove the transport interoperates with it, not only with the Go
// server from the same library family as the client.

const nodeServerDir = "../testdata/nodeserver"

// startNodeServer runs server.js and returns its base URL. A missing node or
// missing node_modules fails the test: they are installed by `make test-deps`.
func startNodeServer(t *testing.T, env ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: install Node.js and run `make test-deps` (%v)", err)
	}
	pkg, err := os.ReadFile(filepath.Join(nodeServerDir, "node_modules", "socket.io", "package.json"))
	if err != nil {
		t.Fatalf("the reference Socket.IO server is not installed: run `make test-deps` (%v)", err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(pkg, &meta); err != nil || meta.Version != "4.8.4" {
		t.Fatalf("node_modules has socket.io %q, want 4.8.4: run `make test-deps` in a clean checkout (%v)", meta.Version, err)
	}

	cmd := exec.Command(node, "server.js")
	cmd.Dir = nodeServerDir
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &lineLogger{t: t, prefix: "node: "}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = stdin.Close() // the server exits when stdin closes
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		port, err := strconv.Atoi(strings.TrimSpace(line))
		if !ok || err != nil || port <= 0 {
			t.Fatalf("node server did not print its port (got %q)", line)
		}
		return "http://127.0.0.1:" + strconv.Itoa(port)
	case <-exited:
		t.Fatal("node server exited before printing its port")
	case <-time.After(20 * time.Second):
		t.Fatal("node server printed no port within 20s")
	}
	return ""
}

type lineLogger struct {
	t      *testing.T
	prefix string
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.t.Log(l.prefix + strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestNodeServerInterop(t *testing.T) {
	base := startNodeServer(t)
	c := newTestClient(t, base, "good-token", func(c *Config) { c.ConnectTimeout = 10 * time.Second })
	s := connect(t, c)
	if ev := nextEvent(t, s); ev.Kind != cloudapi.EventConnect {
		t.Fatalf("first event %v, want connect", ev.Kind)
	}

	// What the server saw of the handshake, and its view of the SIDs.
	hello := eventNamed(t, s, "test:hello")
	var h struct {
		Nsp, Engine, Transport string
		Headers                map[string]string
	}
	if err := json.Unmarshal(hello.Payload, &h); err != nil {
		t.Fatal(err)
	}
	if h.Nsp == "" || h.Nsp != s.NamespaceSID() || h.Engine != s.EngineSID() || h.Nsp == h.Engine {
		t.Errorf("server SIDs nsp=%q engine=%q, client nsp=%q engine=%q", h.Nsp, h.Engine, s.NamespaceSID(), s.EngineSID())
	}
	if h.Transport != "websocket" {
		t.Errorf("server sees transport %q, want websocket", h.Transport)
	}
	for k, want := range map[string]string{
		"authorization": "Bearer good-token", "origin": "https://one.example.test", "referer": "https://one.example.test/",
		"accept-language": AcceptLanguage, "x-appversion": AppVersion,
	} {
		if h.Headers[k] != want {
			t.Errorf("server saw %s %q, want %q", k, h.Headers[k], want)
		}
	}

	// Server → client: string and numeric event names.
	if err := s.Emit("test:push"); err != nil {
		t.Fatal(err)
	}
	var got []Event
	for {
		ev := nextEvent(t, s)
		if ev.Name == "test:pushed" {
			break
		}
		got = append(got, ev)
	}
	if len(got) != 4 {
		t.Fatalf("got %d pushed events, want 4: %+v", len(got), got)
	}
	// The payload is the JSON text the server sent (socket.io writes keys in
	// insertion order), not a re-encoding of it.
	if got[0].Kind != cloudapi.EventParamsChange || string(got[0].Payload) != `{"M1":{"P4":{"v1":{"value":21.5},"s1":3}}}` {
		t.Errorf("params change = %v %s", got[0].Kind, got[0].Payload)
	}
	if got[1].Kind != cloudapi.EventMemoryUpdated || got[1].WireName != "22" {
		t.Errorf("numeric 22 arrived as %v %q", got[1].Kind, got[1].WireName)
	}
	if devid, err := wire.DecodeDevid(got[1].Payload); err != nil || devid != "M1" {
		t.Errorf("event 22 devid = %q, %v", devid, err)
	}
	if got[2].Kind != cloudapi.EventConnectionStatus {
		t.Errorf("connection status arrived as %v", got[2].Kind)
	}
	st, err := wire.DecodeConnectionStatus(got[2].Payload)
	if err != nil || len(st) != 1 || st[0].ConnectedAt == nil || *st[0].ConnectedAt != 1700000100 || st[0].Gateway == nil || st[0].Gateway.Interface != "wifi" {
		t.Errorf("connection status = %+v, %v", st, err)
	}
	if got[3].Kind != cloudapi.EventOther || got[3].Name != cloudapi.WireTaskCreated || got[3].WireName != "61" {
		t.Errorf("task alias = %v %q %q", got[3].Kind, got[3].Name, got[3].WireName)
	}

	// Client → server → client round trip of several arguments.
	if err := s.Emit("test:echo", map[string]any{"modules": []string{"M1", "M2"}, "group_id": 7}, "x", 3); err != nil {
		t.Fatal(err)
	}
	echo := eventNamed(t, s, "test:echo")
	if len(echo.Args) != 3 || string(echo.Args[0]) != `{"group_id":7,"modules":["M1","M2"]}` || string(echo.Args[1]) != `"x"` || string(echo.Args[2]) != `3` {
		t.Errorf("echo args = %s", echo.Args)
	}

	// A server-side namespace disconnect.
	if err := s.Emit("test:disconnect"); err != nil {
		t.Fatal(err)
	}
	ev := drainToEnd(t, s)
	if ev == nil || ev.Reason != outage.ReasonDisconnect || ev.Detail != "io server disconnect" {
		t.Fatalf("Disconnect = %+v, want disconnect / io server disconnect", ev)
	}
}

func TestNodeServerEndings(t *testing.T) {
	base := startNodeServer(t)
	cases := []struct {
		command    string
		wantReason string
		wantDetail []string
	}{
		{"test:close", outage.ReasonDisconnect, []string{"io server disconnect", "transport close"}},
		{"test:abort", outage.ReasonEIOClose, []string{"transport error"}},
		{"test:connect_error", outage.ReasonHandshake503, []string{"connect_error: HTTP 503 upstream"}},
	}
	for _, tc := range cases {
		t.Run(tc.command, func(t *testing.T) {
			c := newTestClient(t, base, "good-token", func(c *Config) { c.ConnectTimeout = 10 * time.Second })
			s := connect(t, c)
			eventNamed(t, s, "test:hello")
			if err := s.Emit(tc.command); err != nil {
				t.Fatal(err)
			}
			ev := drainToEnd(t, s)
			if ev == nil || ev.Reason != tc.wantReason || !oneOf(ev.Detail, tc.wantDetail, true) {
				t.Fatalf("Disconnect = %+v, want %s / one of %v", ev, tc.wantReason, tc.wantDetail)
			}
		})
	}
}

// The reference server refuses a bad token with a CONNECT_ERROR that has no
// "data" member; the message must survive.
func TestNodeServerRejectsBadToken(t *testing.T) {
	base := startNodeServer(t)
	c := newTestClient(t, base, "stale-token", func(c *Config) { c.ConnectTimeout = 10 * time.Second })
	_, err := c.Connect(context.Background())
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Phase != PhaseNamespace || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "not authorized") {
		t.Fatalf("Connect = %v, want a namespace rejection saying not authorized", err)
	}
}

// Sessions come and go for days; each one must leave nothing behind.
func TestNodeServerSessionsLeaveNoGoroutines(t *testing.T) {
	base := startNodeServer(t)
	c := newTestClient(t, base, "good-token", func(c *Config) { c.ConnectTimeout = 10 * time.Second })
	cycle := func() {
		s := connect(t, c)
		eventNamed(t, s, "test:hello")
		if err := s.Disconnect(context.Background()); err != nil {
			t.Fatal(err)
		}
		drainToEnd(t, s)
	}
	cycle() // warm up lazily started library goroutines
	waitFor(t, "first session's goroutines to finish", func() bool { return c.Abandoned() == 0 })
	baseline := settledGoroutines()
	for range 8 {
		cycle()
	}
	// Also sessions the server ends.
	for range 4 {
		s := connect(t, c)
		eventNamed(t, s, "test:hello")
		_ = s.Emit("test:close")
		drainToEnd(t, s)
	}
	deadline := time.Now().Add(10 * time.Second)
	n := runtime.NumGoroutine()
	for n > baseline && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if n > baseline {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after 12 sessions, %d before:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
	}
}

func settledGoroutines() int {
	prev := -1
	for range 50 {
		n := runtime.NumGoroutine()
		if n == prev {
			return n
		}
		prev = n
		time.Sleep(20 * time.Millisecond)
	}
	return prev
}

// eventNamed reads events until one with the given name arrives.
func eventNamed(t *testing.T, s Session, name string) Event {
	t.Helper()
	for {
		ev := nextEvent(t, s)
		if ev.Name == name {
			return ev
		}
		if ev.Kind == cloudapi.EventDisconnect {
			t.Fatalf("session ended (%s: %s) while waiting for %q", ev.Reason, ev.Detail, name)
		}
	}
}
