package main

// Shared by the command-line tools (check, modules, params, watch, set):
// logging in with one clear error, choosing the object, listing its modules,
// and rendering values, times and tables.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// outputFlag selects how a tool prints its result.
type outputFlag struct {
	Output string `name:"output" short:"o" default:"table" enum:"table,json" help:"Output format: table or json."`
}

func (o outputFlag) json() bool { return o.Output == "json" }

// toolSession is a logged-in REST client for one tool run.
type toolSession struct {
	client   *cloudclient.Client
	platform cloudclient.Platform
	login    *cloudclient.LoginResult
	logger   *slog.Logger
}

// openSession builds the client from the flags and logs in. Wrong
// credentials are a usage error (exit 2); an unreachable cloud is a runtime
// error (exit 1).
func openSession(ctx context.Context, cf *cloudFlags, g *Globals) (*toolSession, error) {
	client, platform, err := cf.newClient(g, nil)
	if err != nil {
		return nil, err
	}
	res, err := client.Login(ctx)
	if err != nil {
		return nil, loginError(err)
	}
	return &toolSession{client: client, platform: platform, login: res, logger: g.Logger}, nil
}

// close revokes the token, so a tool run leaves no session behind.
func (s *toolSession) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := s.client.Logout(ctx); err != nil {
		s.logger.Debug("logout", "err", err)
	}
}

// chooseObject returns the object the tools work on: --cloud.object-id when
// set, else the account's first object (as the exporter does). objects is
// the account's list (from GET /v1/objects, else the login answer); it may
// be empty when the cloud did not list them but an id was given.
func (s *toolSession) chooseObject(ctx context.Context, cf *cloudFlags) (id int, objects []cloudclient.Object, err error) {
	objects, err = s.client.Objects(ctx)
	if err != nil && cf.ObjectID == 0 {
		return 0, nil, fmt.Errorf("listing the account's objects: %w", err)
	}
	if len(objects) == 0 && s.login != nil {
		objects = s.login.Objects
	}
	if cf.ObjectID != 0 {
		if len(objects) > 0 && !slices.ContainsFunc(objects, func(o cloudclient.Object) bool { return o.ID == cf.ObjectID }) {
			ids := make([]string, len(objects))
			for i, o := range objects {
				ids[i] = strconv.Itoa(o.ID)
			}
			return 0, objects, usageErrorf("--cloud.object-id %d is not one of the account's objects (%s)", cf.ObjectID, strings.Join(ids, ", "))
		}
		return cf.ObjectID, objects, nil
	}
	if len(objects) == 0 {
		return 0, nil, fmt.Errorf("the account has no objects (installations)")
	}
	return objects[0].ID, objects, nil
}

// listModules returns the object's module list; an answer of an unknown
// shape is an error here, since a tool cannot show or check anything from it.
func (s *toolSession) listModules(ctx context.Context, objectID int) ([]cloudclient.Module, error) {
	l, err := s.client.Modules(ctx, objectID)
	if err != nil {
		return nil, fmt.Errorf("listing the modules of object %d: %w", objectID, err)
	}
	if !l.Recognised {
		return nil, fmt.Errorf("the module list of object %d has an unknown shape", objectID)
	}
	return l.Modules, nil
}

// selectModules keeps the modules named in want (all when want is empty) and
// reports the wanted devids the list lacks.
func selectModules(all []cloudclient.Module, want []string) (kept []cloudclient.Module, missing []string) {
	if len(want) == 0 {
		return all, nil
	}
	for _, d := range want {
		i := slices.IndexFunc(all, func(m cloudclient.Module) bool { return m.Devid == d })
		if i < 0 {
			missing = append(missing, d)
			continue
		}
		kept = append(kept, all[i])
	}
	return kept, missing
}

// formatEpoch renders a connectedAt-style epoch (seconds) as a local time
// with its offset; 0 (offline) is "-".
func formatEpoch(sec int64) string {
	if sec == 0 {
		return "-"
	}
	return time.Unix(sec, 0).Format(time.RFC3339)
}

func onlineWord(online bool) string {
	if online {
		return "online"
	}
	return "offline"
}

// dash stands in for an empty table cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatValue renders a parameter value compactly: numbers without trailing
// zeros or exponent noise, strings bare unless they contain spaces (or are
// empty, or would be mistaken for another type), objects as compact JSON.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float64:
		return formatFloat(x)
	case json.Number:
		return x.String()
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case string:
		if needsQuotes(x) {
			return strconv.Quote(x)
		}
		return x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

func formatFloat(f float64) string {
	if abs := math.Abs(f); abs != 0 && (abs >= 1e21 || abs < 1e-6) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func needsQuotes(s string) bool {
	if s == "" || s == "null" || s == "true" || s == "false" {
		return true
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return true // "21.5" the string, not 21.5 the number
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '"' || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}

// parseValue reads a value given on the command line: a JSON number (kept
// exactly as written) or boolean, a JSON string literal ("21" sends the
// string 21), and anything else is sent as the plain string.
func parseValue(s string) any {
	t := strings.TrimSpace(s)
	if t == "true" || t == "false" {
		return t == "true"
	}
	if strings.HasPrefix(t, `"`) {
		var str string
		if json.Unmarshal([]byte(t), &str) == nil {
			return str
		}
		return s
	}
	if t != "" && (t[0] == '-' || t[0] >= '0' && t[0] <= '9') && json.Valid([]byte(t)) {
		return json.Number(t)
	}
	return s
}

// keyFilter selects parameters by patterns with path.Match semantics on the
// key ("P4.v*" matches "P4.v8"); no patterns select everything.
type keyFilter []string

func (f keyFilter) validate(flag string) error {
	for _, p := range f {
		if _, err := path.Match(p, ""); err != nil {
			return usageErrorf("%s %q: %v", flag, p, err)
		}
	}
	return nil
}

func (f keyFilter) match(key string) bool {
	if len(f) == 0 {
		return true
	}
	for _, p := range f {
		if ok, _ := path.Match(p, key); ok {
			return true
		}
	}
	return false
}

func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// writeJSON prints v indented, with a final newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// orderedObject is a JSON object whose members keep their order.
type orderedObject []orderedMember

type orderedMember struct {
	Key   string
	Value any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
