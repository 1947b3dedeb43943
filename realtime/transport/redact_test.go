package transport

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/bragerone/bragerone_exporter/redact"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A namespace join refused with a message quoting the handshake's bearer
// token reaches neither the connect error nor the log: the message passes
// through Config.Redact where it enters.
func TestConnectErrorEchoingTheTokenIsRedacted(t *testing.T) {
	const token = "5ec2e7a0b1c94d7f8e6a3b2c1d0e9f87"
	g := newGoServer(t, goServerOptions{})
	g.setReject("rejected Bearer " + token)
	secrets := redact.NewSet()
	secrets.Add(token)
	logs := &lockedBuffer{}
	c := newTestClient(t, g.URL, token, func(cfg *Config) {
		cfg.Redact = secrets.Scrub
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	_, err := c.Connect(context.Background())
	if err == nil {
		t.Fatal("the refused join connected")
	}
	if !strings.Contains(err.Error(), "rejected Bearer "+redact.Mask) {
		t.Errorf("the refusal is not quoted with the token masked: %v", err)
	}
	for _, text := range []string{err.Error(), logs.String()} {
		if strings.Contains(text, token[:8]) {
			t.Errorf("the token reached the error or the log: %s", text)
		}
	}
}
