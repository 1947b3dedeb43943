package cli

// The names of the environment variables: every flag is read from
// BRAGERONE_ + its name in upper case, dots and dashes as underscores
// (kong.DefaultEnvars), unless its env tag names another variable.

import (
	"os"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

// envPrefix starts the name of every variable the exporter reads.
const envPrefix = "BRAGERONE"

// ruleEnvName is the variable the flag-to-variable rule gives a flag.
func ruleEnvName(flag string) string {
	return envPrefix + "_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(flag))
}

// misnamedEnv refuses a variable the rule gives a flag that is read from
// another variable (--cloud.email from BRAGERONE_EMAIL): set, it would be
// ignored without a word, and the exporter would run without the value the
// user meant to give. flags are those of the chosen command.
func misnamedEnv(flags []*kong.Flag) error {
	for _, f := range flags {
		if len(f.Envs) == 0 {
			continue // command-line only
		}
		rule := ruleEnvName(f.Name)
		suffix := strings.TrimPrefix(rule, envPrefix)
		follows := false
		for _, env := range f.Envs {
			// A command's own prefix (BRAGERONE_SIMULATE_) keeps the rule.
			follows = follows || strings.HasSuffix(env, suffix)
		}
		if _, set := os.LookupEnv(rule); set && !follows {
			return usageErrorf("%s is set, but --%s is read from %s: rename the variable", rule, f.Name, strings.Join(f.Envs, " or "))
		}
	}
	return nil
}

// knownEnv are the BRAGERONE_ variables the exporter or its deployment reads
// that no flag names: the password, the configuration file, and the
// docker-compose file's choice of environment file.
var knownEnv = []string{passwordEnv, configFileEnv, "BRAGERONE_ENV_FILE"}

// unknownEnv lists the BRAGERONE_ variables of environ that no flag of any
// command reads and that are not known otherwise, each with a suggestion:
// a misspelt BRAGERONE_CLOUD_TIMOUT would otherwise be ignored without a
// word. Skipped: the variables Kubernetes injects for a Service named
// bragerone-exporter (BRAGERONE_EXPORTER_SERVICE_HOST,
// BRAGERONE_EXPORTER_PORT_9826_TCP, …), that is any name holding _SERVICE_
// or _PORT.
func unknownEnv(app *kong.Application, environ []string) []string {
	known := map[string]bool{}
	for _, k := range knownEnv {
		known[k] = true
	}
	_ = kong.Visit(app, func(node kong.Visitable, next kong.Next) error {
		if f, ok := node.(*kong.Flag); ok {
			for _, env := range f.Envs {
				known[env] = true
			}
		}
		return next(nil)
	})
	cliOnly := map[string]string{} // the variable the rule would give a command-line-only flag
	_ = kong.Visit(app, func(node kong.Visitable, next kong.Next) error {
		if f, ok := node.(*kong.Flag); ok && len(f.Envs) == 0 {
			cliOnly[ruleEnvName(f.Name)] = f.Name
		}
		return next(nil)
	})
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix+"_") || known[name] || strings.Contains(name, "_SERVICE_") || strings.Contains(name, "_PORT") {
			continue
		}
		if flag, ok := cliOnly[name]; ok {
			out = append(out, name+" (--"+flag+" may be set only on the command line)")
			continue
		}
		out = append(out, name+suggestEnv(name, names))
	}
	slices.Sort(out)
	return out
}

// suggestEnv is the " (did you mean …?)" of an unknown variable: the known
// names within a few edits of it.
func suggestEnv(name string, names []string) string {
	best := max(2, len(name)/6) + 1
	var close []string
	for _, n := range names {
		switch d := editDistance(name, n); {
		case d < best:
			best, close = d, []string{n}
		case d == best:
			close = append(close, n)
		}
	}
	if len(close) == 0 {
		return " (no variable of that name is read; bragerone_exporter <command> --help lists each flag's)"
	}
	return " (did you mean " + strings.Join(close, " or ") + "?)"
}
