package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

func TestRedactAttrHidesSecrets(t *testing.T) {
	var buf bytes.Buffer
	g := Globals{LogLevel: "debug", LogFormat: "json"}
	logger, err := g.newLogger(&buf)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("login", "password", "hunter2", "token", "eyJhbGciOi", "Authorization", "Bearer abc", "email", "demo@example.com")
	out := buf.String()
	for _, secret := range []string{"hunter2", "eyJhbGciOi", "Bearer abc"} {
		if strings.Contains(out, secret) {
			t.Fatalf("secret %q logged: %s", secret, out)
		}
	}
	if !strings.Contains(out, "demo@example.com") {
		t.Fatalf("non-secret attribute lost: %s", out)
	}
}

// The log handlers and the REST client share one set of secrets: a value
// the client learned is masked in any attribute of any log line, in both
// formats. The embedded simulator's public demo password is not shared.
func TestLoggerMasksWhatTheClientLearned(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		g := &Globals{LogLevel: "debug", LogFormat: format}
		logger, err := g.newLogger(&buf)
		if err != nil {
			t.Fatal(err)
		}
		g.Logger = logger
		t.Setenv(passwordEnv, "Pa55-w0rd-sekret-7731")
		cf := &cloudFlags{Email: "user@example.com", URL: "http://127.0.0.1:1", Timeout: time.Second}
		client, _, err := cf.newClient(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		if client.Secrets() != g.Secrets {
			t.Fatal("the client remembers its secrets apart from the log handlers")
		}
		_, _ = client.Login(context.Background()) // resolves the password; nothing listens
		logger.Warn("x", "detail", "echo Pa55-w0rd-sekret-7731", "err", errors.New("echo Pa55-w0rd-sekret-7731"))
		if out := buf.String(); strings.Contains(out, "sekret") || !strings.Contains(out, "echo REDACTED") {
			t.Errorf("%s: %s", format, out)
		}

		demo := &cloudFlags{Email: "demo@example.com", URL: "http://127.0.0.1:1", Timeout: time.Second, password: cloudsim.DefaultPassword}
		client, _, err = demo.newClient(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		if client.Secrets() == g.Secrets {
			t.Error("the demo password would be masked in every log line")
		}
	}
}
