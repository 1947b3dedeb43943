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

	Version    kong.VersionFlag `help:"Print version information and exit." env:"-"`
	ConfigFile string           `name:"config.file" help:"YAML file with flag values (keys are flag names). Precedence: flag, environment, file, default." type:"existingfile" env:"BRAGERONE_CONFIG_FILE"`

	// Commands are added here, one line each; each lives in its own cmd_*.go.
	Serve    serveCmd    `cmd:"" default:"withargs" help:"Run the exporter (the default command)."`
	Simulate simulateCmd `cmd:"" help:"Run the simulated cloud standalone (REST and Socket.IO) until interrupted."`
	Check    checkCmd    `cmd:"" help:"Validate the configuration and credentials against the cloud: login, objects, modules."`
	Modules  modulesCmd  `cmd:"" help:"List the modules of the object."`
	Params   paramsCmd   `cmd:"" help:"Print the parameter snapshot of the modules."`
	Watch    watchCmd    `cmd:"" help:"Print live parameter changes and session state until interrupted."`
	Set      setCmd      `cmd:"" help:"Write a parameter (DEVID P4.v8=VALUE) or send a raw command (DEVID --command=NAME)."`
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
	return runContext(ctx, args, stdout, stderr)
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var cli CLI
	kctx, code, err := parseCLI(&cli, args, stdout, stderr)
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

// parseCLI fills cli from args, the environment and the configuration file.
// code is >= 0 when the process should exit without running a command
// (after --help or --version).
func parseCLI(cli *CLI, args []string, stdout, stderr io.Writer) (kctx *kong.Context, code int, err error) {
	code = -1
	options := []kong.Option{
		kong.Name("bragerone_exporter"),
		kong.Description("Prometheus exporter and health monitor for the BragerOne device cloud."),
		kong.DefaultEnvars("BRAGERONE"),
		kong.Vars{"version": versionString()},
		catalogVars(),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(kongExit{c}) }),
	}
	if path := configPath(args); path != "" {
		resolver, err := loadYAMLConfig(path)
		if err != nil {
			return nil, -1, err
		}
		options = append(options, kong.Resolvers(resolver))
	}
	parser, err := kong.New(cli, options...)
	if err != nil {
		return nil, -1, fmt.Errorf("internal error: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(kongExit); ok {
				kctx, code, err = nil, e.code, nil
				return
			}
			panic(r)
		}
	}()
	kctx, err = parser.Parse(args)
	return kctx, -1, err
}

// kongExit carries kong's request to exit (after --help or --version) out of Parse.
type kongExit struct{ code int }
