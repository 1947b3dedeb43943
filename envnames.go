package main

// The names of the environment variables: every flag is read from
// BRAGERONE_ + its name in upper case, dots and dashes as underscores
// (kong.DefaultEnvars), unless its env tag names another variable.

import (
	"os"
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
