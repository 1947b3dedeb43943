package cli

// The YAML configuration file (--config.file): found before kong parses,
// checked whole against every command's flags, and read as kong's resolver
// below the command line and the environment.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
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
	path    string
	values  map[string]string // flattened: "web.listen-address" -> value
	lines   map[string]int    // the line each key of values is written on
	twice   []string          // settings written more than once, described
	checked bool              // checkOnce ran
}

// fileSetting is one flattened key of the file and how it was written.
type fileSetting struct {
	value    string
	spelling string // e.g. "cloud.url: …" or "cloud: {url: …}"
	line     int
}

func loadYAMLConfig(path string) (*yamlResolver, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config.file: %w", err)
	}
	return parseYAMLConfig(path, data)
}

// parseYAMLConfig reads the file's text; path names it in errors.
func parseYAMLConfig(path string, data []byte) (*yamlResolver, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("--config.file %s: invalid YAML: %w", path, err)
	}
	settings := map[string][]fileSetting{}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: the file must be a mapping of flag names to values", path, root.Line)
		}
		if err := flatten(nil, root, settings, &fileWalk{open: map[*yaml.Node]bool{}}); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	r := &yamlResolver{path: path, values: map[string]string{}, lines: map[string]int{}}
	for key, s := range settings {
		if len(s) > 1 {
			slices.SortFunc(s, func(a, b fileSetting) int { return a.line - b.line })
			spellings := make([]string, len(s))
			for i, one := range s {
				spellings[i] = fmt.Sprintf("%q (line %d)", one.spelling, one.line)
			}
			r.twice = append(r.twice, fmt.Sprintf("%s is set %d times: as %s", key, len(s), strings.Join(spellings, " and as ")))
			continue
		}
		r.values[key] = s[0].value
		r.lines[key] = s[0].line
	}
	slices.Sort(r.twice)
	return r, nil
}

// maxFileEntries bounds the keys read from a file, aliases expanded: aliases
// of aliases could otherwise expand a short file into millions. The command
// tree has well under a hundred flags.
const maxFileEntries = 1000

// fileWalk is the state of one flatten: the mappings being flattened (an
// alias to one of them would never end) and the keys read so far.
type fileWalk struct {
	open    map[*yaml.Node]bool
	entries int
}

// flatten records every value under the mapping node, keyed by its dotted
// path, with the spelling it was written in: "cloud.url:" and
// "cloud: {url:}" name one setting, so a file giving both is refused
// rather than one of them winning by chance.
func flatten(prefix []string, m *yaml.Node, out map[string][]fileSetting, walk *fileWalk) error {
	if walk.open[m] {
		return fmt.Errorf("line %d: an alias refers to a mapping that holds it", m.Line)
	}
	walk.open[m] = true
	defer delete(walk.open, m)
	for i := 0; i+1 < len(m.Content); i += 2 {
		if walk.entries++; walk.entries > maxFileEntries {
			return fmt.Errorf("more than %d keys (aliases expanded)", maxFileEntries)
		}
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			return fmt.Errorf("line %d: keys are flag names", k.Line)
		}
		path := append(slices.Clone(prefix), k.Value)
		key := strings.Join(path, ".")
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		var value string
		switch v.Kind {
		case yaml.MappingNode:
			if err := flatten(path, v, out, walk); err != nil {
				return err
			}
			continue
		case yaml.SequenceNode:
			parts := make([]string, 0, len(v.Content))
			for _, e := range v.Content {
				if e.Kind == yaml.AliasNode {
					e = e.Alias
				}
				if e.Kind != yaml.ScalarNode {
					return fmt.Errorf("%s: lists may hold only plain values", key)
				}
				parts = append(parts, e.Value)
			}
			value = strings.Join(parts, ",")
		case yaml.ScalarNode:
			if v.Tag != "!!null" {
				value = v.Value
			}
		}
		out[key] = append(out[key], fileSetting{value: value, spelling: spelling(path), line: k.Line})
	}
	return nil
}

// spelling renders how a key path was written: ["cloud.url"] is
// "cloud.url: …", ["cloud", "url"] is "cloud: {url: …}".
func spelling(path []string) string {
	s := path[len(path)-1] + ": …"
	for i := len(path) - 2; i >= 0; i-- {
		s = path[i] + ": {" + s + "}"
	}
	return s
}

// checkOnce is kong's BeforeResolve hook, which kong calls once per element
// of the parsed path: the file is checked the first time.
func (r *yamlResolver) checkOnce(ctx *kong.Context) error {
	if r.checked {
		return nil
	}
	r.checked = true
	return r.check(ctx.Model)
}

// check validates the whole file against every command's flags before any
// command runs: a setting written twice, a key that names no flag, a key
// only the command line may set, or a value the flag's type (or its list of
// choices) refuses is an error naming the file, the line and the key; a key
// that names no flag gets the closest flag name suggested. kong on its own
// would parse only the values of the flags the chosen command has, so
// `check` would accept a file `serve` refuses.
func (r *yamlResolver) check(app *kong.Application) error {
	flags := map[string][]*kong.Flag{}
	_ = kong.Visit(app, func(node kong.Visitable, next kong.Next) error {
		if f, ok := node.(*kong.Flag); ok {
			flags[f.Name] = append(flags[f.Name], f)
		}
		return next(nil)
	})
	if len(r.twice) > 0 {
		return fmt.Errorf("%s: %s", r.path, strings.Join(r.twice, "; "))
	}
	var settable []string // what a key may name
	for name, fs := range flags {
		if len(fs[0].Envs) > 0 {
			settable = append(settable, name)
		}
	}
	slices.Sort(settable)
	keys := make([]string, 0, len(r.values))
	for k := range r.values {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(r.lines[a]-r.lines[b], strings.Compare(a, b)) })
	var unknown, cliOnly, bad []string
	for _, key := range keys {
		at := fmt.Sprintf("%s:%d", r.path, r.lines[key])
		fs, exists := flags[key]
		if !exists {
			fs, exists = byRuleEnv(flags, key)
		}
		switch {
		case !exists:
			unknown = append(unknown, fmt.Sprintf("%s: unknown setting %q%s", at, key, suggestSetting(key, settable)))
		case len(fs[0].Envs) == 0:
			cliOnly = append(cliOnly, fmt.Sprintf("%s: %s may be set only on the command line", at, key))
		default:
			for _, f := range fs {
				if err := checkFlagValue(f, r.values[key]); err != nil {
					bad = append(bad, fmt.Sprintf("%s: %s: %v", at, key, err))
					break
				}
			}
		}
	}
	for _, errs := range [][]string{cliOnly, unknown, bad} {
		if len(errs) > 0 {
			return errors.New(strings.Join(errs, "; "))
		}
	}
	return nil
}

// simulatorAlias reports whether a file key "simulate.<name>" names flag,
// a flag of the simulate command read from BRAGERONE_SIMULATE_<NAME>: the
// file spells the simulator's settings as their variables do.
func simulatorAlias(key string, flag *kong.Flag) bool {
	return strings.HasPrefix(key, "simulate.") && slices.Contains(flag.Envs, ruleEnvName(key))
}

// byRuleEnv is the flags a "simulate.<name>" key names besides its own
// (simulatorAlias): "simulate.listen" is the simulate command's --listen.
func byRuleEnv(flags map[string][]*kong.Flag, key string) ([]*kong.Flag, bool) {
	var out []*kong.Flag
	for _, fs := range flags {
		for _, f := range fs {
			if simulatorAlias(key, f) {
				out = append(out, f)
			}
		}
	}
	return out, len(out) > 0
}

// suggestSetting is the ", did you mean …?" of an unknown key: the flag
// names it is a tail of ("email" for cloud.email), else those within a few
// edits of it ("web.listen-adress"), else a pointer to where the names are.
// The password is no setting: the pointer says where it comes from.
func suggestSetting(key string, names []string) string {
	if last := key[strings.LastIndex(key, ".")+1:]; last == "password" {
		return fmt.Sprintf(": the password is no setting; it comes from %s or cloud.password-file", passwordEnv)
	}
	var close []string
	for _, n := range names {
		if strings.HasSuffix(n, "."+key) {
			close = append(close, n)
		}
	}
	if len(close) == 0 {
		best := max(2, len(key)/5) + 1
		for _, n := range names {
			switch d := editDistance(key, n); {
			case d < best:
				best, close = d, []string{n}
			case d == best:
				close = append(close, n)
			}
		}
	}
	for i, c := range close {
		close[i] = strconv.Quote(c)
	}
	switch len(close) {
	case 0:
		return " (keys are flag names: bragerone_exporter <command> --help lists them)"
	case 1:
		return ", did you mean " + close[0] + "?"
	default:
		return ", did you mean one of " + strings.Join(close, ", ") + "?"
	}
}

// checkFlagValue decodes value as kong would for flag f, into a scratch
// target, and checks it against the flag's choices.
func checkFlagValue(f *kong.Flag, value string) error {
	target := reflect.New(f.Target.Type()).Elem()
	switch target.Kind() {
	case reflect.Ptr:
		target.Set(reflect.New(target.Type().Elem()))
	case reflect.Slice:
		target.Set(reflect.MakeSlice(target.Type(), 0, 0))
	case reflect.Map:
		target.Set(reflect.MakeMap(target.Type()))
	}
	scan := kong.Scan().PushTyped(value, kong.FlagValueToken)
	if err := f.Mapper.Decode(&kong.DecodeContext{Value: f.Value, Scan: scan}, target); err != nil {
		return err
	}
	if f.Enum == "" {
		return nil
	}
	choices := f.EnumSlice()
	values := []reflect.Value{target}
	if target.Kind() == reflect.Slice {
		values = values[:0]
		for i := range target.Len() {
			values = append(values, target.Index(i))
		}
	}
	for _, v := range values {
		if got := fmt.Sprint(v.Interface()); !slices.Contains(choices, got) {
			return fmt.Errorf("must be one of %s but got %q", strings.Join(choices, ", "), got)
		}
	}
	return nil
}

// Validate is kong's resolver check after parsing; the file was already
// checked whole by checkOnce, before any of its values was used.
func (r *yamlResolver) Validate(*kong.Application) error { return nil }

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
		// "simulate: {modules: 2}" is BRAGERONE_SIMULATE_MODULES, so it is
		// the simulate command's --modules as well as --simulate.modules.
		for key, value := range r.values {
			if simulatorAlias(key, flag) {
				return value, nil
			}
		}
		return nil, nil
	}
	return v, nil
}

// source says where a setting of the chosen command came from, for a
// message about its value: "" for the command line or the default,
// "BRAGERONE_SIMULATE_OBJECTS" or "config.yml:4" for the environment or
// the file.
func (r *yamlResolver) source(flag *kong.Flag) string {
	if r == nil {
		return ""
	}
	if v, ok := r.lines[flag.Name]; ok {
		return fmt.Sprintf("%s:%d", r.path, v)
	}
	for key, line := range r.lines {
		if simulatorAlias(key, flag) {
			return fmt.Sprintf("%s:%d", r.path, line)
		}
	}
	return ""
}
