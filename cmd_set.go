package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// setCmd writes one value to a module (POST /v1/module/command) or sends it
// a raw command (POST /v1/module/command/raw). It refuses to write to a
// module the cloud lists as offline unless --force is given: the cloud would
// queue or drop the write, and the user would not know which. Its flags have
// no environment variables: a write is spelled out on the command line.
type setCmd struct {
	cloudFlags `embed:""`

	Devid      string  `arg:"" name:"devid" help:"Module to write to."`
	Assignment string  `arg:"" name:"assignment" optional:"" help:"Parameter write, KEY=VALUE (e.g. P4.v8=21.5). VALUE is a JSON number or boolean, a quoted JSON string, or else sent as text."`
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
	key, ok := store.ParseKey(strings.TrimSpace(keyText))
	if !ok {
		return cmd, usageErrorf("%q: the key must look like P4.v8 (pool P<n>, channel letter and index)", keyText)
	}
	if valueText == "" {
		return cmd, usageErrorf("%q: no value after '='", c.Assignment)
	}
	cmd.Pool, cmd.Parameter, cmd.Value = key.Pool, key.Param(), parseValue(valueText)
	cmd.Unit, cmd.ParameterName = c.Unit, c.ParamName
	return cmd, nil
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

	if !c.Force {
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
	fmt.Fprintf(g.Stdout, "%s: HTTP %d %s\n", describe(cmd), res.Status, answer)
	return nil
}

// checkOnline refuses a write to a module the cloud lists as offline or
// does not list at all.
func (c *setCmd) checkOnline(ctx context.Context, s *toolSession) error {
	objectID, _, err := s.chooseObject(ctx, &c.cloudFlags)
	if err != nil {
		return err
	}
	modules, err := s.listModules(ctx, objectID)
	if err != nil {
		return fmt.Errorf("cannot confirm that module %s is online (--force writes anyway): %w", c.Devid, err)
	}
	i := slices.IndexFunc(modules, func(m cloudclient.Module) bool { return m.Devid == c.Devid })
	if i < 0 {
		return fmt.Errorf("module %s is not in the module list of object %d; nothing written (--force writes anyway)", c.Devid, objectID)
	}
	if !modules[i].Online() {
		return fmt.Errorf("module %s is offline (connectedAt 0); nothing written (--force writes anyway)", c.Devid)
	}
	return nil
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
  set DEVID P4.v8=21.5                      write a value (POST /v1/module/command)
  set DEVID P4.v8='"21"'                    write the string 21
  set DEVID --command=MODULE_RESTART        send a raw command (POST /v1/module/command/raw)

The module must be online in the object's module list (GET /v1/modules); --force skips that check. Writes pass the client's write rate limiter.`
}
