// Command bragerone_exporter is a Prometheus exporter and health monitor for the
// BragerOne device cloud. main.go holds the command tree and process wiring only:
// flags, logging, signals and exit codes. Each command lives in its own cmd_*.go.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"
)

// Exit codes, as documented in the README.
const (
	exitOK      = 0
	exitRuntime = 1 // the command ran and failed (cloud unreachable, wrong credentials, ...)
	exitUsage   = 2 // bad flags or configuration
)

// CLI is the whole command tree. Every flag can also be set from the
// environment (BRAGERONE_*).
type CLI struct {
	Globals

	Version kong.VersionFlag `help:"Print version information and exit."`

	// Commands are added here, one line each; each lives in its own cmd_*.go.
}

// usageError marks an error caused by bad flags or configuration; it exits with code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, runs the chosen command and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	// Our own handler for SIGINT/SIGTERM: the Socket.IO client's engine package
	// registers a NotifyContext in an init(), which would otherwise swallow the
	// first signal. The first signal cancels ctx; every command stops on it.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var cli CLI
	exitCode := -1
	parser, err := kong.New(&cli,
		kong.Name("bragerone_exporter"),
		kong.Description("Prometheus exporter and health monitor for the BragerOne device cloud."),
		kong.UsageOnError(),
		kong.DefaultEnvars("BRAGERONE"),
		kong.Vars{"version": versionString()},
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { exitCode = code; panic(kongExit{}) }),
	)
	if err != nil {
		fmt.Fprintf(stderr, "bragerone_exporter: internal error: %v\n", err)
		return exitRuntime
	}
	kctx, code, err := parse(parser, args)
	if exitCode >= 0 {
		return exitCode
	}
	if code >= 0 {
		return code
	}
	if err != nil {
		fmt.Fprintf(stderr, "bragerone_exporter: %v\n", err)
		return exitUsage
	}
	logger, err := cli.Globals.newLogger(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bragerone_exporter: %v\n", err)
		return exitUsage
	}
	cli.Globals.Logger = logger
	cli.Globals.Stdout = stdout

	kctx.BindTo(ctx, (*context.Context)(nil))
	if err := kctx.Run(&cli.Globals); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "bragerone_exporter: %v\n", err)
			return exitUsage
		}
		logger.Error("command failed", "err", err)
		return exitRuntime
	}
	return exitOK
}

// kongExit carries kong's request to exit (after --help or --version) out of Parse.
type kongExit struct{}

func parse(parser *kong.Kong, args []string) (kctx *kong.Context, code int, err error) {
	code = -1
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(kongExit); ok {
				code = exitOK
				return
			}
			panic(r)
		}
	}()
	kctx, err = parser.Parse(args)
	return kctx, code, err
}
