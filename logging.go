package main

// The flags every command shares (the log level and format) and the logger
// built from them, which masks secrets in every line.

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/lmittmann/tint"

	"github.com/bragerone/bragerone_exporter/redact"
)

// Globals are the flags every command shares, plus what main wires for them.
type Globals struct {
	LogLevel  string `name:"log.level" default:"info" enum:"debug,info,warn,error" help:"Log level: debug, info, warn, error."`
	LogFormat string `name:"log.format" default:"text" enum:"text,json" help:"Log format: text (coloured on a terminal) or json."`

	Logger *slog.Logger `kong:"-"`
	Stdout io.Writer    `kong:"-"`
	// Secrets are the password and the tokens the cloud issued: the REST
	// client remembers them, the log handlers mask them.
	Secrets *redact.Set `kong:"-"`
}

// newLogger builds the logger; every attribute passes through g.Secrets
// (created here when nil), which masks secrets by name and by value.
func (g *Globals) newLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log.level: %w", err)
	}
	if g.Secrets == nil {
		g.Secrets = redact.NewSet()
	}
	var h slog.Handler
	switch strings.ToLower(g.LogFormat) {
	case "json":
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: g.Secrets.ReplaceAttr})
	default:
		h = tint.NewTextHandler(w, &tint.Options{Level: level, NoColor: !isTerminal(w), ReplaceAttr: g.Secrets.ReplaceAttr})
	}
	return slog.New(h), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
