package main

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/alecthomas/kong"
	"go.yaml.in/yaml/v3"
)

// configFileEnv names the environment variable that may point at the YAML file.
const configFileEnv = "BRAGERONE_CONFIG_FILE"

// configPath finds --config.file in args (or its environment variable) before
// kong parses, because the file's values take part in that parse.
func configPath(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			return v
		}
		if a == "--config.file" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return os.Getenv(configFileEnv)
}

// yamlResolver supplies flag values from a YAML file. Keys are flag names,
// either flat ("web.listen-address: :9898") or nested ("web: {listen-address: ...}").
//
// Precedence, highest first: command-line flag, environment variable, file,
// built-in default. kong on its own would let a resolver beat an environment
// variable; we decline to resolve a flag whose variable is set.
type yamlResolver struct {
	path   string
	values map[string]any // flattened: "web.listen-address" -> value
}

func loadYAMLConfig(path string) (*yamlResolver, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config.file: %w", err)
	}
	var doc map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && err.Error() != "EOF" {
		return nil, fmt.Errorf("--config.file %s: invalid YAML: %w", path, err)
	}
	r := &yamlResolver{path: path, values: map[string]any{}}
	if err := flatten("", doc, r.values); err != nil {
		return nil, fmt.Errorf("--config.file %s: %w", path, err)
	}
	return r, nil
}

func flatten(prefix string, in map[string]any, out map[string]any) error {
	for k, v := range in {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch x := v.(type) {
		case map[string]any:
			if err := flatten(key, x, out); err != nil {
				return err
			}
		case []any:
			parts := make([]string, 0, len(x))
			for _, e := range x {
				if _, nested := e.(map[string]any); nested {
					return fmt.Errorf("%s: lists may hold only plain values", key)
				}
				parts = append(parts, fmt.Sprint(e))
			}
			out[key] = strings.Join(parts, ",")
		case nil:
			out[key] = ""
		default:
			out[key] = fmt.Sprint(x)
		}
	}
	return nil
}

// Validate rejects keys that name no flag, so a typo is an error rather than
// a silently ignored setting.
func (r *yamlResolver) Validate(app *kong.Application) error {
	known := map[string]bool{}
	_ = kong.Visit(app, func(node kong.Visitable, next kong.Next) error {
		if f, ok := node.(*kong.Flag); ok {
			known[f.Name] = len(f.Envs) > 0
		}
		return next(nil)
	})
	var unknown, cliOnly []string
	for k := range r.values {
		settable, exists := known[k]
		switch {
		case !exists:
			unknown = append(unknown, k)
		case !settable:
			cliOnly = append(cliOnly, k)
		}
	}
	if len(cliOnly) > 0 {
		sort.Strings(cliOnly)
		return fmt.Errorf("--config.file %s: only the command line may set: %s", r.path, strings.Join(cliOnly, ", "))
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("--config.file %s: unknown setting(s): %s", r.path, strings.Join(unknown, ", "))
	}
	return nil
}

func (r *yamlResolver) Resolve(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	// A flag that opted out of the environment (env:"-", e.g. set --force)
	// is command-line only: a forgotten file must not arm a write.
	if len(flag.Envs) == 0 {
		return nil, nil
	}
	for _, env := range flag.Envs {
		if _, set := os.LookupEnv(env); set {
			return nil, nil
		}
	}
	v, ok := r.values[flag.Name]
	if !ok {
		return nil, nil
	}
	return v, nil
}
