package cloudclient

import (
	"context"
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
