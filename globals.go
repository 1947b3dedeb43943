package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/lmittmann/tint"
)

// Set at build time with -ldflags "-X main.version=... -X main.revision=...".
var (
	version  = "dev"
	revision = ""
)

func versionString() string {
	rev := revision
	if rev == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					rev = s.Value
				}
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	return fmt.Sprintf("bragerone_exporter %s (revision %s)", version, rev)
}

// Globals are the flags every command shares, plus what main wires for them.
type Globals struct {
	LogLevel  string `name:"log.level" default:"info" enum:"debug,info,warn,error" help:"Log level: debug, info, warn, error."`
	LogFormat string `name:"log.format" default:"text" enum:"text,json" help:"Log format: text (coloured on a terminal) or json."`

	Logger *slog.Logger `kong:"-"`
	Stdout io.Writer    `kong:"-"`
}

func (g *Globals) newLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.LogLevel)); err != nil {
		return nil, fmt.Errorf("--log.level: %w", err)
	}
	var h slog.Handler
	switch strings.ToLower(g.LogFormat) {
	case "json":
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: redactAttr})
	default:
		h = tint.NewTextHandler(w, &tint.Options{Level: level, NoColor: !isTerminal(w), ReplaceAttr: redactAttr})
	}
	return slog.New(h), nil
}

// secretKeys are attribute keys whose values never reach a log line.
var secretKeys = map[string]bool{
	"password": true, "token": true, "access_token": true, "accesstoken": true,
	"refresh_token": true, "refreshtoken": true, "authorization": true,
}

func redactAttr(_ []string, a slog.Attr) slog.Attr {
	if secretKeys[strings.ToLower(a.Key)] {
		return slog.String(a.Key, "REDACTED")
	}
	return a
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
