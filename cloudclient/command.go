package cloudclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// Command is a write. Either Command is set (raw route, e.g.
// "MODULE_RESTART"), or Pool and Parameter are (plain route, e.g. "P4", "v8").
type Command struct {
	Devid string

	Pool, Parameter string
	Value           any    // plain: always sent (nil as null); raw: sent when non-nil
	ParameterName   string // plain only; sent as "parameterName"
	Unit            *int   // plain only

	Command string

	Extra map[string]any // merged at the top level; the fields above win on a clash
}

// CommandResult is the cloud's answer to a write.
type CommandResult struct {
	Status int
	Data   any
}

// route checks the command before any I/O and returns the call to make.
func (cmd Command) route() (*call, error) {
	hasRaw := cmd.Command != ""
	hasPlain := cmd.Pool != "" || cmd.Parameter != ""
	switch {
	case hasRaw && hasPlain:
		return nil, ErrAmbiguousRoute
	case !hasRaw && (cmd.Pool == "" || cmd.Parameter == ""):
		return nil, ErrMissingRoute
	}
	if cmd.Devid == "" {
		return nil, fmt.Errorf("%w: devid is required", ErrInvalidCommand)
	}
	body := make(map[string]any, len(cmd.Extra)+6)
	for k, v := range cmd.Extra {
		body[k] = v
	}
	body["devid"] = cmd.Devid
	if hasRaw {
		body["command"] = cmd.Command
		if cmd.Value != nil {
			body["value"] = cmd.Value
		}
		return &call{method: "POST", path: "/module/command/raw", tmpl: cloudapi.EndpointCommandRaw, auth: true, body: body}, nil
	}
	body["pool"] = cmd.Pool
	body["parameter"] = cmd.Parameter
	body["value"] = cmd.Value
	if cmd.ParameterName != "" {
		body["parameterName"] = cmd.ParameterName
	}
	if cmd.Unit != nil {
		body["unit"] = *cmd.Unit
	}
	return &call{method: "POST", path: "/module/command", tmpl: cloudapi.EndpointCommand, auth: true, body: body}, nil
}

// Command sends a write through the write rate limiter. Routing errors
// (ErrAmbiguousRoute, ErrMissingRoute) are returned before any I/O.
func (c *Client) Command(ctx context.Context, cmd Command) (*CommandResult, error) {
	cl, err := cmd.route()
	if err != nil {
		return nil, err
	}
	if err := c.writes.Wait(ctx); err != nil {
		return nil, fmt.Errorf("cloudclient: %s: write rate limit: %w", cl.tmpl, err)
	}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	switch r.status {
	case 200, 201, 202, 204:
	default:
		err := c.apiError(cl, r)
		c.logFailure(cl.tmpl, err)
		return nil, err
	}
	// The answer is shown to the user (set prints it): scrubbed like an error.
	res := &CommandResult{Status: r.status}
	if len(r.body) > 0 {
		var v any
		if json.Unmarshal(r.body, &v) == nil {
			res.Data = c.cfg.Secrets.ScrubJSON(v)
		} else {
			text := c.cfg.Secrets.Scrub(string(r.body))
			res.Data = text[:min(len(text), maxErrorText)]
		}
	}
	return res, nil
}
