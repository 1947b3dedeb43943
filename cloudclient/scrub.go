package cloudclient

import "github.com/bragerone/bragerone_exporter/wire"

// The records the client returns are the cloud's text, and a cloud may echo
// a secret into any of it: a module named after the bearer token it was
// sent, a card quoting the login. Every record passes through the client's
// secrets on its way out, as the errors do, so what the exporter turns into
// labels, pages and tool output is already clean. Identities stay as sent
// (devid, numeric ids, timestamps): masking one would merge two modules,
// and the cloud chose them before it saw any secret.

func (c *Client) scrubText(s string) string { return c.cfg.Secrets.Scrub(s) }

// scrubRaw scrubs a record's every field as sent (a copy; nil stays nil).
func (c *Client) scrubRaw(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := c.cfg.Secrets.ScrubJSON(m).(map[string]any)
	return out
}

func (c *Client) scrubValue(v any) any { return c.cfg.Secrets.ScrubJSON(v) }

// ScrubGateway returns a module's gateway with the remembered secrets masked
// in its text, for gateway data that reaches the exporter by another way
// than the client's records (a connection-status push).
func (c *Client) ScrubGateway(g wire.Gateway) wire.Gateway {
	return wire.Gateway{Address: c.scrubText(g.Address), Interface: c.scrubText(g.Interface), Version: c.scrubText(g.Version)}
}

// ScrubParameters masks the remembered secrets in the text of parameter
// updates (string values, and values and meta members holding text), in
// place, for a prime here and a pushed delta in the gateway. Numbers, nearly
// all of every payload, cost one type check each.
func (c *Client) ScrubParameters(ups []wire.ParamUpdate) {
	if c.cfg.Secrets.Len() == 0 {
		return
	}
	for i := range ups {
		u := &ups[i]
		u.Value = c.scrubParameterValue(u.Value)
		for k, v := range u.Meta {
			u.Meta[k] = c.scrubParameterValue(v)
		}
	}
}

func (c *Client) scrubParameterValue(v any) any {
	switch x := v.(type) {
	case nil, float64, bool:
		return v
	case string:
		return c.scrubText(x)
	default:
		return c.scrubValue(v)
	}
}

func (c *Client) scrubModule(m *Module) {
	for _, s := range []*string{&m.Name, &m.Title, &m.Version, &m.Address, &m.Interface, &m.IsAcceptedAt, &m.IsConnectedAt} {
		*s = c.scrubText(*s)
	}
	m.Gateway = c.ScrubGateway(m.Gateway)
	for i, p := range m.Permissions {
		m.Permissions[i] = c.scrubText(p)
	}
	for i := range m.ParameterSchemas {
		ps := &m.ParameterSchemas[i]
		ps.Name, ps.Value = c.scrubText(ps.Name), c.scrubValue(ps.Value)
	}
}

func (c *Client) scrubObject(o *Object) {
	for _, s := range []*string{&o.Name, &o.AddressCountry, &o.AddressCity, &o.AddressPostCode, &o.AddressStreet, &o.AddressHouseNumber} {
		*s = c.scrubText(*s)
	}
	o.Raw = c.scrubRaw(o.Raw)
}
