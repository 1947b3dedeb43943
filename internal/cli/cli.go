// Package cli is bragerone_exporter's command line: the command tree, the
// flag groups, logging, signals and exit codes, and the helpers the tools
// share. It maps flags onto the packages that do the work (exporter for
// serve) and owns no behaviour of its own beyond the tools' output.
//
// cli.go holds the command tree and process wiring; each command lives in its
// own cmd_*.go, each flag group in a flags_*.go, the tools' shared helpers in
// tool_*.go. The module's root main.go only calls Run, so that `go run .`
// (the README's quick start) runs the exporter and `go install
// <module>@<version>` names the binary bragerone_exporter.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/bragerone/bragerone_exporter/exporter"
)

// Exit codes, as documented in the README.
const (
	exitOK      = 0
	exitRuntime = 1 // the command ran and failed (cloud unreachable, a runtime fault, ...)
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
	Simulate simulateCmd `cmd:"" envprefix:"BRAGERONE_SIMULATE_" help:"Run the simulated cloud standalone (REST and Socket.IO) until interrupted."`
	Check    checkCmd    `cmd:"" help:"Validate the configuration and credentials against the cloud: login, objects, modules."`
	Modules  modulesCmd  `cmd:"" help:"List the modules of the object."`
	Params   paramsCmd   `cmd:"" help:"Print the parameter snapshot of the modules."`
	Watch    watchCmd    `cmd:"" help:"Print live parameter changes and session state until interrupted."`
	Set      setCmd      `cmd:"" help:"Write a parameter (DEVID P6.v8=VALUE, checked against the catalog) or send a raw command (DEVID --command=NAME)."`
	Catalog  catalogCmd  `cmd:"" help:"Print the parameter catalog of the modules: symbols, registers, names, units, menus and displayed values."`
	History  historyCmd  `cmd:"" help:"Print the modules' recent changes (who changed what, old → new) and alarms (active and finished)."`
	Diagnose diagnoseCmd `cmd:"" help:"Write a redacted diagnostics bundle (.tar.gz): fetched from a running exporter (--url), or from a short session of its own."`
}

// description heads --help. serve is the default command, and its flags
// are listed only by "serve --help": the top page says so.
const description = `Prometheus exporter and health monitor for the BragerOne device cloud.

Without a command it runs serve, the exporter, whose flags (web listener, cloud account, health, catalog, parameters) this page does not list; they may be given without the word serve. To list them:

    bragerone_exporter serve --help`

// usageError marks an error caused by bad flags or configuration; it exits
// with code 2, as does the exporter's *exporter.ConfigError.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// Run parses args, runs the chosen command and returns the process exit code.
func Run(args []string, stdout, stderr io.Writer) int {
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
		reportUsageError(stderr, logFormatBeforeParse(args), nil, err)
		return exitUsage
	}
	logger, err := cli.Globals.newLogger(stderr)
	if err != nil {
		reportUsageError(stderr, cli.Globals.LogFormat, nil, err)
		return exitUsage
	}
	cli.Globals.Logger = logger
	cli.Globals.Stdout = stdout

	if err := runSelected(ctx, kctx, &cli.Globals); err != nil {
		var ue usageError
		var ce *exporter.ConfigError
		if errors.As(err, &ue) || errors.As(err, &ce) {
			reportUsageError(stderr, cli.Globals.LogFormat, cli.Globals.Secrets, err)
			return exitUsage
		}
		logger.Error("command failed", "err", err)
		return exitRuntime
	}
	return exitOK
}

// command is what every command implements.
type command interface {
	Run(ctx context.Context, g *Globals) error
}

// runSelected runs the command kctx selected. The parser is not reachable
// while the command runs: its model of every command and flag (about
// 0.3 MB) would otherwise stay live for the whole life of serve.
func runSelected(ctx context.Context, kctx *kong.Context, g *Globals) error {
	if node := kctx.Selected(); node != nil && node.Target.CanAddr() {
		if cmd, ok := node.Target.Addr().Interface().(command); ok {
			return cmd.Run(ctx, g)
		}
	}
	kctx.BindTo(ctx, (*context.Context)(nil))
	return kctx.Run(g)
}

// flagVars are the flag defaults whose owner is another package (the
// ${name} values of default tags), one provider per flag group.
func flagVars() kong.Vars {
	vars := kong.Vars{}
	for _, v := range []kong.Vars{catalogVars(), cloudVars(), healthVars(), serveVars(), simulateVars()} {
		vars = vars.CloneWith(v)
	}
	return vars
}

// parseCLI fills cli from args, the environment and the configuration file.
// code is >= 0 when the process should exit without running a command
// (after --help or --version).
func parseCLI(cli *CLI, args []string, stdout, stderr io.Writer) (kctx *kong.Context, code int, err error) {
	code = -1
	options := []kong.Option{
		kong.Name("bragerone_exporter"),
		kong.Description(description),
		kong.DefaultEnvars(envPrefix),
		kong.Vars{"version": versionText()},
		flagVars(),
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { panic(kongExit{c}) }),
	}
	if path := configPath(args); path != "" {
		resolver, err := loadYAMLConfig(path)
		if err != nil {
			return nil, -1, err
		}
		// Every command refuses a file any command would refuse: the whole
		// file is checked once the command is known and before any of its
		// values is used (after --help and --version, which need no file).
		options = append(options, kong.Resolvers(resolver), kong.WithBeforeResolve(resolver.checkOnce))
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
	if err != nil {
		return kctx, -1, unknownCommand(parser.Model, args, err)
	}
	return kctx, -1, misnamedEnv(kctx.Flags())
}

// unknownCommand rewrites kong's "unexpected argument X" when X stands where
// a command would (no command named before it): serve, the default, takes
// any arguments kong cannot place, so a mistyped command ("chekc") would
// otherwise read as an argument serve does not want.
func unknownCommand(app *kong.Application, args []string, err error) error {
	arg, ok := strings.CutPrefix(err.Error(), "unexpected argument ")
	if !ok || strings.HasPrefix(arg, "-") {
		return err
	}
	var commands []string
	for _, n := range app.Children {
		if n.Type == kong.CommandNode && !n.Hidden {
			commands = append(commands, n.Name)
		}
	}
	for _, a := range args {
		if a == "--" || a == arg {
			break
		}
		if slices.Contains(commands, a) {
			return err // an extra argument of a named command
		}
	}
	var close []string
	for _, c := range commands {
		if strings.HasPrefix(c, arg) || editDistance(c, arg) <= 2 {
			close = append(close, strconv.Quote(c))
		}
	}
	switch len(close) {
	case 0:
		return fmt.Errorf("unknown command %q (commands: %s)", arg, strings.Join(commands, ", "))
	case 1:
		return fmt.Errorf("unknown command %q, did you mean %s?", arg, close[0])
	default:
		return fmt.Errorf("unknown command %q, did you mean one of %s?", arg, strings.Join(close, ", "))
	}
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// kongExit carries kong's request to exit (after --help or --version) out of Parse.
type kongExit struct{ code int }
