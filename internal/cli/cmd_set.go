package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// setCmd writes one value to a module (POST /v1/module/command) or sends it
// a raw command (POST /v1/module/command/raw). It refuses to write to a
// module the cloud lists as offline unless --force is given: the cloud would
// queue or drop the write, and the user would not know which. Its flags have
// no environment variables: a write is spelled out on the command line.
//
// The parameter is a register (P6.v8), whose value is the register's raw
// number, or a symbol (PARAM_P6_1) or exact name (Boiler set temperature)
// from the parameter catalog, whose value is in the units the app displays.
// Either way the write is checked against the catalog as the app would
// check it: a parameter the app writes, that the module reports, a value
// within its limits and on the register's step; the raw value sent is said
// with what it means. A register the catalog does not describe or the
// module does not report, and any register without the catalog, is written
// only with --raw-unchecked, which sends the value as given.
type setCmd struct {
	cloudFlags         `embed:""`
	catalogCommonFlags `embed:""`

	Devid        string  `arg:"" name:"devid" help:"Module to write to."`
	Assignment   string  `arg:"" name:"assignment" optional:"" help:"Parameter write, KEY=VALUE. KEY is a register (P6.v8), whose VALUE is its raw number; or a symbol (PARAM_P6_1) or exact name (Boiler set temperature) from the catalog, whose VALUE is a number in the displayed unit, a state's label or a time of day. Either is checked against the catalog."`
	Command      string  `name:"command" env:"-" help:"Send this raw command instead of a parameter write (e.g. MODULE_RESTART)."`
	Value        *string `name:"value" env:"-" help:"Value of a raw --command (a JSON number or boolean, a quoted JSON string, or else text)."`
	Unit         *int    `name:"unit" env:"-" help:"Unit code sent with a parameter write."`
	ParamName    string  `name:"parameter-name" env:"-" help:"Parameter name sent with a parameter write (default: the catalog's symbol)."`
	Force        bool    `name:"force" env:"-" help:"Write even when the module is offline or in no watched object's module list (a module that is not listed has no catalog: a register write to it also needs --raw-unchecked)."`
	RawUnchecked bool    `name:"raw-unchecked" env:"-" help:"Write a register's VALUE as given (a JSON number or boolean, a quoted JSON string, or else text), without the catalog's checks: for a register the catalog does not describe or the module does not report, or when the catalog is disabled."`

	raw float64 // the raw number of a checked register write
}

// command builds the write from the arguments. Every routing mistake is a
// usage error, found before any request is made.
func (c *setCmd) command() (cloudclient.Command, error) {
	cmd := cloudclient.Command{Devid: c.Devid}
	if strings.TrimSpace(c.Devid) == "" {
		return cmd, usageErrorf("empty devid")
	}
	switch {
	case c.Command != "" && c.Assignment != "":
		return cmd, usageErrorf("give either KEY=VALUE or --command, not both")
	case c.Command == "" && c.Assignment == "":
		return cmd, usageErrorf("nothing to write: give KEY=VALUE (e.g. P6.v8=200) or --command=NAME")
	case c.Command != "":
		if c.Unit != nil || c.ParamName != "" {
			return cmd, usageErrorf("--unit and --parameter-name belong to a parameter write, not to --command")
		}
		if c.RawUnchecked {
			return cmd, usageErrorf("--raw-unchecked belongs to a register write (P6.v8=VALUE), not to --command")
		}
		cmd.Command = c.Command
		if c.Value != nil {
			cmd.Value = parseValue(*c.Value)
		}
		return cmd, nil
	}
	if c.Value != nil {
		return cmd, usageErrorf("--value belongs to --command; a parameter write takes KEY=VALUE")
	}
	keyText, valueText, ok := strings.Cut(c.Assignment, "=")
	if !ok {
		return cmd, usageErrorf("%q: want KEY=VALUE, e.g. P6.v8=200", c.Assignment)
	}
	if valueText == "" {
		return cmd, usageErrorf("%q: no value after '='", c.Assignment)
	}
	if c.ParamName != "" && (strings.Contains(c.ParamName, ".") || looksLikeRegister(c.ParamName)) {
		return cmd, usageErrorf("--parameter-name %q: give the symbol the cloud's log names the parameter by (PARAM_P4_8), not a register; the write's register is its KEY", c.ParamName)
	}
	cmd.Unit, cmd.ParameterName = c.Unit, c.ParamName
	keyText = strings.TrimSpace(keyText)
	key, ok := store.ParseKey(keyText)
	if !ok {
		if keyText == "" || looksLikeRegister(keyText) {
			return cmd, usageErrorf("%q: the key must be a register like P4.v8 (pool P<n>, channel letter and index), a symbol or a parameter's name", keyText)
		}
		if c.RawUnchecked {
			return cmd, usageErrorf("--raw-unchecked writes a register (P6.v8=VALUE); a write by symbol or name (%q) is always checked against the catalog", keyText)
		}
		if c.Disable {
			return cmd, usageErrorf("%q is not a register address, and %v", keyText, errCatalogDisabled)
		}
		// A symbol or name: resolved with the catalog once connected.
		return cmd, nil
	}
	cmd.Pool, cmd.Parameter = key.Pool, key.Param()
	if c.RawUnchecked {
		cmd.Value = parseValue(valueText)
		return cmd, nil
	}
	if c.Disable {
		return cmd, usageErrorf("%s: a register write is checked against the parameter catalog, which --catalog.disable leaves out; nothing written (%s)", keyText, rawUncheckedHint)
	}
	raw, err := strconv.ParseFloat(strings.TrimSpace(valueText), 64)
	if err != nil || isNaNOrInf(raw) {
		return cmd, usageErrorf("%s: %q is not a number; a register write takes the register's raw number (a state by its label or a time of day goes by the parameter's name, text by --raw-unchecked)", keyText, strings.TrimSpace(valueText))
	}
	// Checked against the catalog once connected.
	c.raw = raw
	cmd.Value = json.Number(formatFloat(raw))
	return cmd, nil
}

// key is the KEY of a parameter write, "" for a raw command.
func (c *setCmd) key() string {
	key, _, _ := strings.Cut(c.Assignment, "=")
	return strings.TrimSpace(key)
}

// rawUncheckedHint ends the refusal of a register write the catalog cannot
// check.
const rawUncheckedHint = "--raw-unchecked writes the raw value as given"

// looksLikeRegister says whether a key that is not a register address was
// meant as one ("P4.v", "X4.v8"): it has a dot and no space. Symbols have
// no dot, and names are words.
func looksLikeRegister(s string) bool {
	return strings.Contains(s, ".") && !strings.ContainsAny(s, " \t")
}

func (c *setCmd) Run(ctx context.Context, g *Globals) error {
	cmd, err := c.command()
	if err != nil {
		return err
	}
	s, err := openSession(ctx, &c.cloudFlags, g)
	if err != nil {
		return err
	}
	defer s.close()

	var checked *checkedWrite
	switch {
	case cmd.Command != "" || c.RawUnchecked:
		if !c.Force {
			if _, err := c.module(ctx, s); err != nil {
				return err
			}
		}
	default:
		if checked, err = c.check(ctx, s, g, &cmd); err != nil {
			return err
		}
	}
	res, err := s.client.Command(ctx, cmd)
	if errors.Is(err, cloudclient.ErrInvalidCommand) {
		return usageError{err}
	}
	if advice := cloudclient.ThrottleAdvice(err, time.Now()); advice != "" {
		// Not written, and not sent again: a write is never repeated.
		return fmt.Errorf("%s: not written: %s: %w", describe(cmd), advice, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", describe(cmd), err)
	}
	answer := "(no body)"
	if res.Data != nil {
		if b, err := json.Marshal(res.Data); err == nil {
			answer = string(b)
		}
	}
	what := describe(cmd)
	switch {
	case checked != nil:
		what = strings.Join(slices.DeleteFunc([]string{cmd.Devid, checked.param.Name, checked.shown,
			"→ raw", formatValue(cmd.Value), "(" + paramWhere(checked.param) + ")"}, func(s string) bool { return s == "" }), " ")
	case cmd.Command == "":
		what += " (raw, unchecked)"
	}
	fmt.Fprintf(g.Stdout, "%s: HTTP %d %s\n", what, res.Status, answer)
	return nil
}

// module finds the module in the watched objects' module lists, whichever
// object lists it. A devid no list holds is a usage error naming the devids
// they offer; an offline module is refused unless --force.
func (c *setCmd) module(ctx context.Context, s *toolSession) (cloudclient.Module, error) {
	located, err := s.locate(ctx, &c.cloudFlags, []string{c.Devid}, "")
	var usage usageError
	var missing *cloudclient.MissingModulesError
	switch {
	case errors.As(err, &usage) && !errors.As(err, &missing):
		return cloudclient.Module{}, err
	case errors.As(err, &usage):
		if _, register := store.ParseKey(c.key()); c.Force && register {
			// Without its row the catalog cannot check a write.
			return cloudclient.Module{}, usageErrorf("%v; nothing written (--force writes to a module the list lacks only with --raw-unchecked)", err)
		}
		return cloudclient.Module{}, usageErrorf("%v; nothing written", err)
	case err != nil && c.Command == "" && !c.RawUnchecked:
		return cloudclient.Module{}, fmt.Errorf("cannot read the module list to check the write to module %s: %w; nothing written", c.Devid, err)
	case err != nil:
		return cloudclient.Module{}, fmt.Errorf("cannot confirm that module %s is online (--force writes anyway): %w", c.Devid, err)
	}
	m := located[0].Module
	if !m.Online() && !c.Force {
		return cloudclient.Module{}, usageErrorf("module %s is offline (connectedAt 0); nothing written (--force writes anyway)", c.Devid)
	}
	return m, nil
}

// checkedWrite is a write checked against the catalog: the parameter and
// what the raw value written means ("20 kW", "Summer", "22:30").
type checkedWrite struct {
	param *catalog.Param
	shown string
}

// check turns a write by register, symbol or name into a checked register
// write: it reads the module's row (which menu and permissions it has) and
// values, and the catalog, finds the parameter, and refuses one the app
// does not write or the module does not report, and a value outside the
// parameter's limits or off the register's step. A value by symbol or name
// is in the displayed unit and turned into the raw value by inverting the
// unit's transform. Nothing is written when any step fails.
func (c *setCmd) check(ctx context.Context, s *toolSession, g *Globals, cmd *cloudclient.Command) (*checkedWrite, error) {
	_, valueText, _ := strings.Cut(c.Assignment, "=")
	keyText, valueText := c.key(), strings.TrimSpace(valueText)
	byRegister := cmd.Pool != ""
	m, err := c.module(ctx, s)
	if err != nil {
		return nil, err
	}
	st, err := s.prime(ctx, []string{m.Devid})
	if err != nil {
		return nil, fmt.Errorf("%w; nothing written", err)
	}
	cat, err := c.load(ctx, s.client, exporter.ListedModuleSpecs([]cloudclient.Module{m}, st), true, g.Logger)
	var usage usageError
	switch {
	case errors.As(err, &usage):
		return nil, err
	case err != nil && byRegister:
		return nil, fmt.Errorf("%w; nothing written (%s)", err, rawUncheckedHint)
	case err != nil:
		return nil, fmt.Errorf("%w; nothing written", err)
	}
	mod := cat.Module(c.Devid)
	var p *catalog.Param
	if byRegister {
		p, err = c.describedRegister(mod, st, keyText)
	} else {
		p, err = c.namedParam(mod, keyText)
	}
	if err != nil {
		return nil, err
	}
	if !p.Writable {
		return nil, usageErrorf("%s is not a setting the app writes; nothing written", paramRef(p))
	}
	// Unit and limits come from the module's registers: without the
	// parameter's own register reported they are unknown.
	if e, ok := st.Get(c.Devid, store.Key{Pool: p.Address.Pool, Chan: p.Address.Chan, Idx: p.Address.Index}); !ok || !e.HasValue {
		return nil, usageErrorf("module %s does not report %s, so its unit and limits are unknown; nothing written (%s=RAW with %s)",
			c.Devid, paramRef(p), p.Address, rawUncheckedHint)
	}
	r := st.Reader(c.Devid)
	var raw float64
	var shown string
	if byRegister {
		raw = c.raw
		err = p.CheckRaw(raw, r)
		shown = shownRaw(p, raw, r)
	} else {
		raw, shown, err = rawValueOf(p, r, valueText)
	}
	if err := refusal(p, r, err, byRegister, raw, shown, valueText); err != nil {
		return nil, err
	}
	cmd.Pool, cmd.Parameter = p.Address.Pool, p.Address.ChanIdx()
	cmd.Value = json.Number(formatFloat(raw))
	if cmd.ParameterName == "" {
		cmd.ParameterName = p.Symbol
	}
	return &checkedWrite{param: p, shown: shown}, nil
}

// describedRegister is the parameter the catalog describes at a register.
// A register it does not describe is refused: what the value means, and
// whether the app writes it, are unknown.
func (c *setCmd) describedRegister(mod *catalog.Module, st *store.Store, keyText string) (*catalog.Param, error) {
	key, _ := store.ParseKey(keyText)
	if p := mod.Lookup(key.Pool, key.Param()); p != nil {
		return p, nil
	}
	reported := false
	if e, ok := st.Get(c.Devid, key); ok && e.HasValue {
		reported = true
	}
	var readBy string
	if users := mod.Readers(key.Pool, key.Param()); len(users) > 0 {
		names := make([]string, len(users))
		for i, p := range users {
			names[i] = paramRef(p)
		}
		readBy = "; it is read by " + strings.Join(names, ", ")
	}
	if !reported {
		return nil, usageErrorf("module %s does not report %s and the catalog describes no parameter there%s; nothing written (%s)",
			c.Devid, key, readBy, rawUncheckedHint)
	}
	return nil, usageErrorf("the catalog describes no parameter of module %s at %s%s, so what its value means is unknown; nothing written (%s)",
		c.Devid, key, readBy, rawUncheckedHint)
}

// namedParam is the parameter of a symbol or an exact name.
func (c *setCmd) namedParam(mod *catalog.Module, keyText string) (*catalog.Param, error) {
	if p := mod.BySymbol(keyText); p != nil {
		return p, nil
	}
	switch byName := paramsNamed(mod, keyText); len(byName) {
	case 0:
		if close := closeParams(mod, keyText); len(close) > 0 {
			return nil, usageErrorf("module %s has no parameter %q, did you mean %s?", c.Devid, keyText, strings.Join(close, " or "))
		}
		return nil, usageErrorf("module %s has no parameter %q: not a symbol or a name its menu shows (`catalog %s` lists them)", c.Devid, keyText, c.Devid)
	case 1:
		return byName[0], nil
	default:
		symbols := make([]string, len(byName))
		for i, q := range byName {
			symbols[i] = q.Symbol
		}
		return nil, usageErrorf("%q names %d parameters of module %s (%s): give the symbol", keyText, len(byName), c.Devid, strings.Join(symbols, ", "))
	}
}

// closeParams are the names and symbols of the module's parameters a
// mistyped key was likely meant as (the same but for case, or within two
// edits), quoted, at most three.
func closeParams(mod *catalog.Module, key string) []string {
	if mod == nil {
		return nil
	}
	want := strings.ToLower(key)
	var close []string
	for _, p := range mod.Params() {
		for _, cand := range []string{p.Name, p.Symbol} {
			if cand == "" || slices.Contains(close, strconv.Quote(cand)) {
				continue
			}
			if c := strings.ToLower(cand); c == want || editDistance(c, want) <= 2 {
				close = append(close, strconv.Quote(cand))
			}
		}
	}
	return close[:min(len(close), 3)]
}

// refusal turns the catalog's verdict on a write's value into the refusal
// the user reads: what was asked, what the parameter allows, and that
// nothing was written; nil when the write may go.
func refusal(p *catalog.Param, r store.Reader, err error, byRegister bool, raw float64, shown, text string) error {
	asked := shown
	if byRegister {
		asked = "raw " + formatFloat(raw)
		if shown != "" {
			asked += " (" + shown + ")"
		}
	}
	var usage usageError
	var step *catalog.StepError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &usage):
		return err
	case errors.Is(err, catalog.ErrBadClock):
		return usageErrorf("%s: %q is not a time of day it can hold (HH:MM in steps of 10 minutes); nothing written", paramRef(p), text)
	case errors.Is(err, catalog.ErrOutOfRange):
		return usageErrorf("%s: %s is outside its limits, %s; nothing written", paramRef(p), asked, limitsOf(p, r))
	case errors.As(err, &step):
		near := make([]string, len(step.Nearest))
		for i, n := range step.Nearest {
			near[i] = shownRaw(p, n, r)
			if byRegister {
				near[i] = formatFloat(n) + " (" + near[i] + ")"
			}
		}
		nearest := "no step lies within its limits"
		if len(near) > 0 {
			nearest = "nearest: " + strings.Join(near, " or ")
		}
		if byRegister {
			asked = "raw " + formatFloat(raw) // what it shows is rounded: say only what was asked
		}
		return usageErrorf("%s: %s falls between the register's steps (whole raw numbers); %s; nothing written", paramRef(p), asked, nearest)
	case errors.Is(err, catalog.ErrNotWritable):
		return usageErrorf("%s: its value is not the register's own (it is computed, composed of several registers or a bit of one); nothing written", paramRef(p))
	case errors.Is(err, catalog.ErrNoTransform):
		return usageErrorf("%s: the web app's value function of its unit is not recognised, so what a raw value means and its limits are unknown; nothing written (%s=RAW with %s)", paramRef(p), p.Address, rawUncheckedHint)
	}
	return fmt.Errorf("%s: %w; nothing written", paramRef(p), err)
}

// paramRef names a parameter in a message: "Maximum boiler power
// (PARAM_P6_8, P6.v8)".
func paramRef(p *catalog.Param) string {
	return p.Name + " (" + paramWhere(p) + ")"
}

// paramWhere is a parameter's symbol and register, "PARAM_P6_8, P6.v8".
func paramWhere(p *catalog.Param) string {
	if p.Symbol == "" {
		return p.Address.String()
	}
	return p.Symbol + ", " + p.Address.String()
}

// shownRaw is what a raw value of the parameter's register shows as in the
// app: "20 kW", "Summer", "22:30"; "" when it shows nothing.
func shownRaw(p *catalog.Param, raw float64, r store.Reader) string {
	v, label, ok := p.DisplayRaw(raw, r)
	switch {
	case !ok:
		return ""
	case label != "":
		return label
	case isNaNOrInf(v):
		return ""
	}
	return withUnit(formatFloat(v), p.UnitFor(r))
}

// limitsOf renders a parameter's limits now: "5 to 25 kW", "00:00 to
// 23:50", "… to 90 °C".
func limitsOf(p *catalog.Param, r store.Reader) string {
	lo, hi := p.Range(r)
	if p.ShowsClock(r) {
		clock := func(f *float64) string {
			if f == nil {
				return "…"
			}
			if s := shownRaw(p, *f, r); s != "" {
				return s
			}
			return formatFloat(*f)
		}
		return clock(lo) + " to " + clock(hi)
	}
	return withUnit(limit(lo)+" to "+limit(hi), p.UnitFor(r))
}

// limit renders a limit of a parameter; "…" when it has none.
func limit(f *float64) string {
	if f == nil {
		return "…"
	}
	return formatFloat(*f)
}

// rawValueOf turns the value of a write by symbol or name into the raw
// register value: a time of day for a parameter shown as one, else a number
// in the displayed unit or the label of one of the parameter's states.
func rawValueOf(p *catalog.Param, r store.Reader, text string) (raw float64, shown string, err error) {
	if p.ShowsClock(r) {
		raw, err = p.RawFromClock(text, r)
		return raw, text, err
	}
	display, shown, err := displayValueOf(p, r, text)
	if err != nil {
		return 0, "", err
	}
	raw, err = p.RawFromDisplay(display, r)
	return raw, shown, err
}

// displayValueOf reads the value of a write by symbol or name: a number in
// the displayed unit, or the label of one of the parameter's states.
func displayValueOf(p *catalog.Param, r store.Reader, text string) (value float64, shown string, err error) {
	if f, err := strconv.ParseFloat(text, 64); err == nil && !isNaNOrInf(f) {
		return f, withUnit(formatFloat(f), p.UnitFor(r)), nil
	}
	var labels []string
	for v, label := range p.Enum {
		if strings.EqualFold(label, text) {
			return float64(v), label, nil
		}
		labels = append(labels, label)
	}
	if len(labels) > 0 {
		slices.Sort(labels)
		return 0, "", usageErrorf("%s (%s): %q is not one of its states (%s)", p.Name, p.Symbol, text, strings.Join(labels, ", "))
	}
	return 0, "", usageErrorf("%s (%s): %q is not a number", p.Name, p.Symbol, text)
}

// describe names a write for the user, e.g. "D1 P4.v8 = 21.5".
func describe(cmd cloudclient.Command) string {
	if cmd.Command != "" {
		if cmd.Value != nil {
			return fmt.Sprintf("%s command %s (value %s)", cmd.Devid, cmd.Command, formatValue(cmd.Value))
		}
		return fmt.Sprintf("%s command %s", cmd.Devid, cmd.Command)
	}
	return fmt.Sprintf("%s %s.%s = %s", cmd.Devid, cmd.Pool, cmd.Parameter, formatValue(cmd.Value))
}

// Help is the long help of `set --help`.
func (c *setCmd) Help() string {
	return `Examples:
  set DEVID P6.v8=200                       write a register's raw value: Maximum boiler power 20 kW → raw 200
  set DEVID PARAM_P6_1=65                   write 65 in the displayed unit, converted to the raw value
  set DEVID 'Boiler set temperature=65'     the same by the parameter's name
  set DEVID 'Operating mode=Summer'         a state by its label
  set DEVID 'Night setback start=22:30'     a time of day (HH:MM, in the register's 10-minute steps)
  set DEVID P9.z1=1 --raw-unchecked         write a raw value as given, unchecked
  set DEVID --command=MODULE_RESTART        send a raw command (POST /v1/module/command/raw)

Every parameter write reads the module's values and the parameter catalog (see the catalog command) and is refused
(exit 2, nothing written) unless the catalog describes the parameter, the app writes it, the module reports its
register, and the value lies within the parameter's limits and on the register's step (whole raw numbers: 20.05 kW on
a register of tenths of a kW is refused with the nearest values, never rounded). The write sends the raw value, with
the symbol as the parameter name, and says what it means.

--raw-unchecked writes a register's VALUE as given (a JSON number or boolean, a quoted JSON string, or else text)
without any of these checks: for a register the catalog does not describe or the module does not report, or with
--catalog.disable. Nothing else writes such a register.

The module must be online in the module list of its object, whichever watched object lists it (GET /v1/modules);
--force skips that check. A module no list holds has no catalog, so a parameter write to it also needs
--raw-unchecked. Writes pass the client's write rate
limiter.`
}
