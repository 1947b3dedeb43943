package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// setCmd writes one value to a module (POST /v1/module/command) or sends it
// a raw command (POST /v1/module/command/raw). It refuses to write to a
// module the cloud lists as offline unless --force is given: the cloud would
// queue or drop the write, and the user would not know which. Its flags have
// no environment variables: a write is spelled out on the command line.
//
// The parameter is a register (P4.v8), whose value is written as given, or a
// symbol (PARAM_P6_1) or exact name (Boiler set temperature) from the
// parameter catalog, whose value is in the units the app displays: it is
// checked against the parameter's limits and turned into the register's raw
// value by inverting the unit's transform.
type setCmd struct {
	cloudFlags         `embed:""`
	catalogCommonFlags `embed:""`

	Devid      string  `arg:"" name:"devid" help:"Module to write to."`
	Assignment string  `arg:"" name:"assignment" optional:"" help:"Parameter write, KEY=VALUE. KEY is a register (P4.v8), whose VALUE is written as given (a JSON number or boolean, a quoted JSON string, or else text); or a symbol (PARAM_P6_1) or exact name (Boiler set temperature) from the catalog, whose VALUE is a number in the displayed unit, or a state's label."`
	Command    string  `name:"command" env:"-" help:"Send this raw command instead of a parameter write (e.g. MODULE_RESTART)."`
	Value      *string `name:"value" env:"-" help:"Value of a raw --command (parsed like VALUE)."`
	Unit       *int    `name:"unit" env:"-" help:"Unit code sent with a parameter write."`
	ParamName  string  `name:"parameter-name" env:"-" help:"Parameter name sent with a parameter write (e.g. PARAM_8)."`
	Force      bool    `name:"force" env:"-" help:"Write even when the module is offline or not in the object's module list."`
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
		return cmd, usageErrorf("nothing to write: give KEY=VALUE (e.g. P4.v8=21.5) or --command=NAME")
	case c.Command != "":
		if c.Unit != nil || c.ParamName != "" {
			return cmd, usageErrorf("--unit and --parameter-name belong to a parameter write, not to --command")
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
		return cmd, usageErrorf("%q: want KEY=VALUE, e.g. P4.v8=21.5", c.Assignment)
	}
	if valueText == "" {
		return cmd, usageErrorf("%q: no value after '='", c.Assignment)
	}
	cmd.Unit, cmd.ParameterName = c.Unit, c.ParamName
	keyText = strings.TrimSpace(keyText)
	key, ok := store.ParseKey(keyText)
	if !ok {
		if keyText == "" || looksLikeRegister(keyText) {
			return cmd, usageErrorf("%q: the key must be a register like P4.v8 (pool P<n>, channel letter and index), a symbol or a parameter's name", keyText)
		}
		if c.Disable {
			return cmd, usageErrorf("%q is not a register address, and %v", keyText, errCatalogDisabled)
		}
		// A symbol or name: resolved with the catalog once connected.
		return cmd, nil
	}
	cmd.Pool, cmd.Parameter, cmd.Value = key.Pool, key.Param(), parseValue(valueText)
	return cmd, nil
}

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

	var named *namedWrite
	if cmd.Command == "" && cmd.Pool == "" {
		if named, err = c.resolve(ctx, s, g, &cmd); err != nil {
			return err
		}
	} else if !c.Force {
		if err := c.checkOnline(ctx, s); err != nil {
			return err
		}
	}
	res, err := s.client.Command(ctx, cmd)
	if errors.Is(err, cloudclient.ErrInvalidCommand) {
		return usageError{err}
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
	if named != nil {
		what = fmt.Sprintf("%s %s = %s (%s, raw %s.%s = %s)", cmd.Devid, named.param.Name, named.shown,
			named.param.Symbol, cmd.Pool, cmd.Parameter, formatValue(cmd.Value))
	}
	fmt.Fprintf(g.Stdout, "%s: HTTP %d %s\n", what, res.Status, answer)
	return nil
}

// checkOnline refuses a write to a module the cloud lists as offline or
// does not list at all.
func (c *setCmd) checkOnline(ctx context.Context, s *toolSession) error {
	_, err := c.module(ctx, s)
	return err
}

// module finds the module in the object's module list; it refuses one that
// is missing or offline unless --force.
func (c *setCmd) module(ctx context.Context, s *toolSession) (cloudclient.Module, error) {
	objectID, _, err := s.chooseObject(ctx, &c.cloudFlags)
	if err != nil {
		return cloudclient.Module{}, err
	}
	modules, err := s.listModules(ctx, objectID)
	if err != nil {
		return cloudclient.Module{}, fmt.Errorf("cannot confirm that module %s is online (--force writes anyway): %w", c.Devid, err)
	}
	i := slices.IndexFunc(modules, func(m cloudclient.Module) bool { return m.Devid == c.Devid })
	if i < 0 {
		return cloudclient.Module{}, fmt.Errorf("module %s is not in the module list of object %d; nothing written (--force writes anyway)", c.Devid, objectID)
	}
	if !modules[i].Online() && !c.Force {
		return cloudclient.Module{}, fmt.Errorf("module %s is offline (connectedAt 0); nothing written (--force writes anyway)", c.Devid)
	}
	return modules[i], nil
}

// namedWrite is a write of a parameter given by symbol or name.
type namedWrite struct {
	param *catalog.Param
	shown string // the value as given, with its unit: "65 °C", "Summer"
}

// resolve turns a write by symbol or name into a register write: it reads
// the module's row (which menu and permissions it has) and values, and the
// catalog, finds the parameter, checks the value against its limits and
// inverts the unit's transform. Nothing is written when any step fails.
func (c *setCmd) resolve(ctx context.Context, s *toolSession, g *Globals, cmd *cloudclient.Command) (*namedWrite, error) {
	keyText, valueText, _ := strings.Cut(c.Assignment, "=")
	keyText = strings.TrimSpace(keyText)
	m, err := c.module(ctx, s)
	if err != nil {
		return nil, err
	}
	st, err := primeStore(ctx, s, []cloudclient.Module{m})
	if err != nil {
		return nil, err
	}
	cat, err := c.load(ctx, s.client, listedModuleSpecs([]cloudclient.Module{m}, st), true, g.Logger)
	if err != nil {
		return nil, err
	}
	mod := cat.Module(c.Devid)
	p := mod.BySymbol(keyText)
	if p == nil {
		switch byName := paramsNamed(mod, keyText); len(byName) {
		case 0:
			return nil, usageErrorf("module %s has no parameter %q: not a symbol or a name its menu shows (`catalog %s` lists them)", c.Devid, keyText, c.Devid)
		case 1:
			p = byName[0]
		default:
			symbols := make([]string, len(byName))
			for i, q := range byName {
				symbols[i] = q.Symbol
			}
			return nil, usageErrorf("%q names %d parameters of module %s (%s): give the symbol", keyText, len(byName), c.Devid, strings.Join(symbols, ", "))
		}
	}
	if !p.Writable {
		return nil, usageErrorf("%s (%s) is not a setting the app writes; nothing written", p.Name, p.Symbol)
	}
	// Unit and limits come from the module's registers: without the
	// parameter's own register reported they are unknown.
	if e, ok := st.Get(c.Devid, store.Key{Pool: p.Address.Pool, Chan: p.Address.Chan, Idx: p.Address.Index}); !ok || !e.HasValue {
		return nil, fmt.Errorf("module %s does not report %s (%s), so its unit and limits are unknown; nothing written (%s=RAW writes the register as given)",
			c.Devid, p.Address, p.Name, p.Address)
	}
	r := storeReader(st, c.Devid)
	raw, shown, err := rawValueOf(p, r, strings.TrimSpace(valueText))
	var usage usageError
	switch {
	case errors.As(err, &usage):
		return nil, err
	case errors.Is(err, catalog.ErrBadClock):
		return nil, usageErrorf("%s (%s): %q is not a time of day it can hold (HH:MM in steps of 10 minutes); nothing written", p.Name, p.Symbol, strings.TrimSpace(valueText))
	case errors.Is(err, catalog.ErrOutOfRange):
		lo, hi := p.Range(r)
		return nil, usageErrorf("%s (%s): %s is outside its limits, %s to %s; nothing written", p.Name, p.Symbol, shown, limit(lo), limit(hi))
	case err != nil:
		return nil, fmt.Errorf("%s (%s): %w; nothing written", p.Name, p.Symbol, err)
	}
	cmd.Pool, cmd.Parameter = p.Address.Pool, p.Address.ChanIdx()
	cmd.Value = json.Number(formatFloat(raw))
	if cmd.ParameterName == "" {
		cmd.ParameterName = p.Symbol
	}
	return &namedWrite{param: p, shown: shown}, nil
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
func rawValueOf(p *catalog.Param, r catalog.Reader, text string) (raw float64, shown string, err error) {
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
func displayValueOf(p *catalog.Param, r catalog.Reader, text string) (value float64, shown string, err error) {
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
  set DEVID P4.v8=21.5                      write a register's raw value (POST /v1/module/command)
  set DEVID P4.v8='"21"'                    write the string 21
  set DEVID PARAM_P6_1=65                   write 65 in the displayed unit, converted to the raw value
  set DEVID 'Boiler set temperature=65'     the same by the parameter's name
  set DEVID 'Operating mode=Summer'         a state by its label
  set DEVID 'Night setback start=22:30'     a time of day (HH:MM, in the register's 10-minute steps)
  set DEVID --command=MODULE_RESTART        send a raw command (POST /v1/module/command/raw)

A write by symbol or name reads the parameter catalog (see the catalog command), refuses a parameter the app does not
write and a value outside the parameter's limits, and sends the raw value the inverse of the unit's transform gives,
with the symbol as the parameter name.

The module must be online in the object's module list (GET /v1/modules); --force skips that check. Writes pass the client's write rate limiter.`
}
