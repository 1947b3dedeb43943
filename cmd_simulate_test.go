package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log sink safe for the command's goroutine and the test.
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

func TestSimulateServesUntilCancelled(t *testing.T) {
	logs := &syncBuffer{}
	g := &Globals{Logger: slog.New(slog.NewJSONHandler(logs, nil)), Stdout: io.Discard}
	cmd := &simulateCmd{Listen: "127.0.0.1:0", Modules: 2, ParamsPerModule: 50, DriftInterval: time.Hour, TokenTTL: time.Hour, Seed: 1}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Run(ctx, g) }()

	var url string
	deadline := time.Now().Add(10 * time.Second)
	for url == "" {
		for _, line := range strings.Split(logs.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "simulated cloud serving" {
				url, _ = rec["url"].(string)
			}
		}
		if url == "" && time.Now().After(deadline) {
			t.Fatalf("no serving URL logged; logs:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, want := range []string{`"email":"demo@example.com"`, `/control/state`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs.String())
		}
	}
	body := strings.NewReader(`{"email":"demo@example.com","password":"demo"}`)
	res, err := http.Post(url+"/v1/auth/user", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("login against the simulated cloud = %d", res.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("simulate did not return after its context was cancelled")
	}
	if _, err := http.Get(url + "/v1/system/version"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestSimulateRejectsBadFlags(t *testing.T) {
	g := &Globals{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard}
	for _, cmd := range []simulateCmd{
		{Listen: "127.0.0.1:0", Modules: 0, ParamsPerModule: 10, TokenTTL: time.Hour},
		{Listen: "127.0.0.1:0", Modules: 1, ParamsPerModule: 10, TokenTTL: 0},
	} {
		err := cmd.Run(context.Background(), g)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%+v: err = %v, want a usage error", cmd, err)
		}
	}
}
