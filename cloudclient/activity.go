package cloudclient

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/wire"
)

// DefaultListLimit is the page size of activity and alarm lists.
const DefaultListLimit = 20

// ListRequest pages an activity or alarm list. Zero Page/Limit take 1 and 20.
type ListRequest struct {
	Modules     []string
	Page, Limit int
}

// AlarmRow is one active or finished alarm. ID is the alarm type code, not a
// unique key.
type AlarmRow struct {
	ID         int
	Devid      string
	CreatedAt  string
	FinishedAt string // "" while active
	Raw        map[string]any
}

// ActivityRow is one entry of a module's activity (change) log.
type ActivityRow struct {
	ID        int
	Devid     string
	Name      string // i18n token, e.g. "parameters.PARAM_1"
	Unit      int
	Value     any // unwrapped from {"value":…}
	PrevValue any
	State     string
	CreatedAt string
	User      string
	Raw       map[string]any
}

// ActivityQuantity returns activity counts per module (POST
// /v1/modules/activity/quantity). A 204 gives an empty map.
func (c *Client) ActivityQuantity(ctx context.Context, modules []string) (map[string]int, error) {
	return c.quantity(ctx, &call{method: "POST", path: "/modules/activity/quantity", tmpl: cloudapi.EndpointActivityQuantity, auth: true},
		modules, wire.ActivityQuantityKey)
}

// AlarmQuantity returns active alarm counts per module (POST
// /v1/modules/alarms/quantity).
func (c *Client) AlarmQuantity(ctx context.Context, modules []string) (map[string]int, error) {
	return c.quantity(ctx, &call{method: "POST", path: "/modules/alarms/quantity", tmpl: cloudapi.EndpointAlarmsQuantity, auth: true},
		modules, wire.AlarmsQuantityKey)
}

func (c *Client) quantity(ctx context.Context, cl *call, modules []string, key string) (map[string]int, error) {
	cl.body = map[string]any{"modules": sortedUnique(modules)}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status == 204 || len(strings.TrimSpace(string(r.body))) == 0 {
		return map[string]int{}, nil
	}
	m, err := c.decodeObject(cl, r)
	if err != nil {
		return nil, err
	}
	return wire.Quantities(m, key), nil
}

func (r ListRequest) body() map[string]any {
	page, limit := r.Page, r.Limit
	if page <= 0 {
		page = 1
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	return map[string]any{"modules": sortedUnique(r.Modules), "page": page, "limit": limit}
}

// Activity returns activity rows (POST /v1/modules/activity).
func (c *Client) Activity(ctx context.Context, req ListRequest) ([]ActivityRow, error) {
	rows, err := c.list(ctx, &call{method: "POST", path: "/modules/activity", tmpl: cloudapi.EndpointActivity, auth: true}, req, "activities")
	if err != nil {
		return nil, err
	}
	out := make([]ActivityRow, 0, len(rows))
	for _, raw := range rows {
		f := wire.Members(raw)
		if f == nil {
			continue
		}
		id, _ := wire.Int(f["id"])
		unit, _ := wire.Int(f["unit"])
		a := ActivityRow{ID: int(id), Devid: wire.String(f["devid"]), Name: wire.String(f["name"]), Unit: int(unit),
			Value: wire.Any(f["value"]), PrevValue: wire.Any(f["prevValue"]), State: wire.String(f["state"]),
			CreatedAt: wire.String(f["created_at"]), User: wire.String(f["user"]), Raw: wire.Object(raw)}
		if a.Devid == "" {
			a.Devid = wire.String(wire.Members(f["module"])["devid"])
		}
		if v, ok := a.Value.(map[string]any); ok {
			if inner, ok := v["value"]; ok {
				a.Value = inner
			}
		}
		if a.User == "" {
			a.User = wire.String(wire.Members(f["user"])["name"])
		}
		a.Name, a.State, a.User = c.scrubText(a.Name), c.scrubText(a.State), c.scrubText(a.User)
		a.Value, a.PrevValue, a.Raw = c.scrubValue(a.Value), c.scrubValue(a.PrevValue), c.scrubRaw(a.Raw)
		out = append(out, a)
	}
	return out, nil
}

// Alarms returns active alarms (POST /v1/modules/alarms).
func (c *Client) Alarms(ctx context.Context, req ListRequest) ([]AlarmRow, error) {
	return c.alarms(ctx, &call{method: "POST", path: "/modules/alarms", tmpl: cloudapi.EndpointAlarms, auth: true}, req)
}

// AlarmHistory returns finished alarms (POST /v1/modules/alarms/history).
func (c *Client) AlarmHistory(ctx context.Context, req ListRequest) ([]AlarmRow, error) {
	return c.alarms(ctx, &call{method: "POST", path: "/modules/alarms/history", tmpl: cloudapi.EndpointAlarmHistory, auth: true}, req)
}

func (c *Client) alarms(ctx context.Context, cl *call, req ListRequest) ([]AlarmRow, error) {
	rows, err := c.list(ctx, cl, req, "alarms")
	if err != nil {
		return nil, err
	}
	out := make([]AlarmRow, 0, len(rows))
	for _, raw := range rows {
		f := wire.Members(raw)
		if f == nil {
			continue
		}
		id, _ := wire.Int(f["id"])
		out = append(out, AlarmRow{ID: int(id), Devid: wire.String(f["devid"]), CreatedAt: wire.String(f["created_at"]),
			FinishedAt: wire.String(f["finished_at"]), Raw: c.scrubRaw(wire.Object(raw))})
	}
	return out, nil
}

// list posts a list body and finds the rows under key: {key:[rows]},
// {key:{"data":[rows]}}, {"data":[rows]} or a bare list. 204 gives no rows.
func (c *Client) list(ctx context.Context, cl *call, req ListRequest, key string) ([]json.RawMessage, error) {
	cl.body = req.body()
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status == 204 {
		return nil, nil
	}
	if r.status != 200 {
		err := c.apiError(cl, r)
		c.logFailure(cl.tmpl, err)
		return nil, err
	}
	var raw json.RawMessage
	if err := c.decodeJSON(cl, r, &raw); err != nil {
		return nil, err
	}
	if m := wire.Members(raw); m != nil {
		if inner, ok := m[key]; ok {
			raw = inner
		} else {
			raw = m["data"]
		}
		if m := wire.Members(raw); m != nil {
			raw = m["data"]
		}
	}
	return wire.Items(raw), nil
}
