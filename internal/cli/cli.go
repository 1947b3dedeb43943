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
	"github.com/bragerone/bragerone_exporter/internal/nearest"

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
	Modules  modulesCmd  `cmd:"" help:"List the modules of every watched object (or of --cloud.object-id), each with its object."`
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
	if unknown := unknownEnv(kctx.Model, os.Environ()); len(unknown) > 0 {
		logger.Warn("environment variables that no setting reads are ignored: "+strings.Join(unknown, "; "), "count", len(unknown))
	}

	if err := runSelected(ctx, kctx, &cli.Globals); err != nil {
		code := exitRuntime
		var ue usageError
		var ce *exporter.ConfigError
		if errors.As(err, &ue) || errors.As(err, &ce) {
			code = exitUsage
		}
		reportError(stderr, cli.Globals.LogFormat, cli.Globals.Secrets, err, code)
		return code
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
	var resolver *yamlResolver
	if path := configPath(args); path != "" {
		resolver, err = loadYAMLConfig(path)
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
	cli.Globals.sources = settingSources(kctx, resolver)
	return kctx, -1, misnamedEnv(kctx.Flags())
}

// settingSources says, for each flag of the chosen command not given on
// the command line, which variable or file line set it.
func settingSources(kctx *kong.Context, resolver *yamlResolver) map[string]string {
	onCommandLine := map[string]bool{}
	for _, p := range kctx.Path {
		if p.Flag != nil && !p.Resolved {
			onCommandLine[p.Flag.Name] = true
		}
	}
	out := map[string]string{}
	for _, f := range kctx.Flags() {
		if onCommandLine[f.Name] {
			continue
		}
		for _, env := range f.Envs {
			if _, set := os.LookupEnv(env); set {
				out[f.Name] = env
				break
			}
		}
		if out[f.Name] == "" {
			if src := resolver.source(f); src != "" {
				out[f.Name] = src
			}
		}
	}
	return out
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
		if strings.HasPrefix(c, arg) || nearest.Distance(c, arg) <= 2 {
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

// kongExit carries kong's request to exit (after --help or --version) out of Parse.
type kongExit struct{ code int }
