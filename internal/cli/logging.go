package cli

// The flags every command shares (the log level and format) and the logger
// built from them, which masks secrets in every line.
//
// Records have the shape of the Prometheus ecosystem's logs
// (github.com/prometheus/common/promslog, which node_exporter and
// blackbox_exporter use): the keys time, level, source and msg, the source
// as file:line, durations in Go syntax ("1.5s", never bare nanoseconds), and
// the levels DEBUG, INFO, WARN and ERROR. promslog itself is not used: its
// handlers take no ReplaceAttr of ours, and the secrets must be masked in
// every attribute, and its text format is not coloured on a terminal.

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lmittmann/tint"

	"github.com/bragerone/bragerone_exporter/redact"
	"github.com/bragerone/bragerone_exporter/traffic"
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
	// LogRing keeps the last log records at debug level, whatever
	// --log.level says, for the diagnostics bundle.
	LogRing *traffic.LogRing `kong:"-"`
}

// Log formats (--log.format).
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

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
	logger := newLogHandler(w, g.LogFormat, level, g.Secrets)
	if g.LogRing == nil {
		g.LogRing = traffic.NewLogRing(traffic.DefaultLogRingBytes)
	}
	// The ring's handler: JSON at debug level, the same masking.
	ring := newLogHandler(g.LogRing, logFormatJSON, slog.LevelDebug, g.Secrets)
	return slog.New(slog.NewMultiHandler(logger.Handler(), ring.Handler())), nil
}

// newLogHandler is the logger of a format and level, masking secrets.
func newLogHandler(w io.Writer, format string, level slog.Level, secrets *redact.Set) *slog.Logger {
	replace := func(groups []string, a slog.Attr) slog.Attr {
		return secrets.ReplaceAttr(groups, shapeAttr(groups, a))
	}
	var h slog.Handler
	switch strings.ToLower(format) {
	case logFormatJSON:
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, AddSource: true, ReplaceAttr: replace})
	default:
		h = tint.NewTextHandler(w, &tint.Options{Level: level, AddSource: true, NoColor: !isTerminal(w), ReplaceAttr: replace})
	}
	return slog.New(h)
}

// reservedKeyPrefix renames an attribute whose key is one of the record's
// own (time, level, source), as promslog does: a JSON object with the
// key twice would lose one of them in most readers.
const reservedKeyPrefix = "logged_"

// shapeAttr writes an attribute as promslog does: the source as file:line,
// a duration in Go syntax, and an attribute named like a key of the record
// itself renamed with reservedKeyPrefix.
func shapeAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.TimeKey:
			if _, ok := a.Value.Any().(time.Time); !ok {
				a.Key = reservedKeyPrefix + a.Key
			}
		case slog.LevelKey:
			if _, ok := a.Value.Any().(slog.Level); !ok {
				a.Key = reservedKeyPrefix + a.Key
			}
		case slog.SourceKey:
			if src, ok := a.Value.Any().(*slog.Source); ok {
				a.Value = slog.StringValue(filepath.Base(src.File) + ":" + strconv.Itoa(src.Line))
			} else {
				a.Key = reservedKeyPrefix + a.Key
			}
		}
	}
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
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

// reportUsageError writes the error of bad flags or configuration, after
// which the process exits with code 2: one plain line in the text format,
// one record in the json format, so that whatever reads the json log reads
// that line too.
func reportUsageError(stderr io.Writer, format string, secrets *redact.Set, err error) {
	if strings.ToLower(format) != logFormatJSON {
		fmt.Fprintf(stderr, "bragerone_exporter: %v\n", err)
		return
	}
	newLogHandler(stderr, format, slog.LevelError, secrets).Error("bad usage or configuration", "err", err)
}

// logFormatBeforeParse is the log format the command line or the
// environment asks for, read before kong parses: a parse that fails has
// set no flag, yet its error is written in the format asked for. A format
// given only in the --config.file is not seen here.
func logFormatBeforeParse(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--log.format="); ok {
			return v
		}
		if a == "--log.format" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return os.Getenv("BRAGERONE_LOG_FORMAT")
}
