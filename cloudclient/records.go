package cloudclient

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/wire"
)

// User is the account record of GET /v1/user.
type User struct {
	ID       int
	Name     string
	Email    string
	Language string
	Raw      map[string]any // every field as sent
}

// Object is an installation (object) record.
type Object struct {
	ID                 int
	Name               string
	AddressCountry     string
	AddressCity        string
	AddressPostCode    string
	AddressStreet      string
	AddressHouseNumber string
	Raw                map[string]any
}

// ObjectDetails is GET /v1/objects/{id}: the object and its operational
// status (e.g. "SUCCESS", "OFFLINE"; not an HTTP code).
type ObjectDetails struct {
	Object Object
	Status string
}

// ModuleCard is GET /v1/modules/{code}/card.
type ModuleCard struct {
	ID             int
	ModuleID       int
	ClientFullName string
	Raw            map[string]any
}

// SystemVersion is GET /v1/system/version.
type SystemVersion struct {
	Version string
	DevMode bool
}

func decodeObjectRecord(raw json.RawMessage) (Object, bool) {
	m := wire.Members(raw)
	if m == nil {
		return Object{}, false
	}
	id, _ := wire.Int(m["id"])
	return Object{
		ID:                 int(id),
		Name:               wire.String(m["name"]),
		AddressCountry:     wire.String(m["addressCountry"]),
		AddressCity:        wire.String(m["addressCity"]),
		AddressPostCode:    wire.String(m["addressPostCode"]),
		AddressStreet:      wire.String(m["addressStreet"]),
		AddressHouseNumber: wire.String(m["addressHouseNumber"]),
		Raw:                wire.Object(raw),
	}, true
}

// decodeObjectList decodes a list of object records, skipping non-objects.
func decodeObjectList(raw json.RawMessage) []Object {
	out := []Object{}
	for _, item := range wire.Items(raw) {
		if o, ok := decodeObjectRecord(item); ok {
			out = append(out, o)
		}
	}
	return out
}

// User returns the account record. Both {"user":{…}} and a bare object are
// accepted.
func (c *Client) User(ctx context.Context) (*User, error) {
	cl := &call{method: "GET", path: "/user", tmpl: cloudapi.EndpointUser, auth: true}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	m, err := c.decodeObject(cl, r)
	if err != nil {
		return nil, err
	}
	raw := json.RawMessage(r.body)
	if inner, ok := m["user"]; ok && wire.FirstByte(inner) == '{' {
		raw, m = inner, wire.Members(inner)
	}
	id, _ := wire.Int(m["id"])
	return &User{
		ID: int(id), Name: c.scrubText(wire.String(m["name"])), Email: c.scrubText(wire.String(m["email"])),
		Language: c.scrubText(wire.String(m["language"])), Raw: c.scrubRaw(wire.Object(raw)),
	}, nil
}

// Permissions returns the user's permission names.
func (c *Client) Permissions(ctx context.Context) ([]string, error) {
	return c.permissions(ctx, &call{method: "GET", path: "/user/permissions", tmpl: cloudapi.EndpointUserPermissions, auth: true})
}

// ObjectPermissions returns the user's permission names for one object.
func (c *Client) ObjectPermissions(ctx context.Context, objectID int) ([]string, error) {
	return c.permissions(ctx, &call{method: "GET", path: "/objects/" + strconv.Itoa(objectID) + "/permissions",
		tmpl: cloudapi.EndpointObjectPermissions, auth: true})
}

// permissions accepts {"permissions":[…]} or a bare list; items are strings
// or {"name":…}.
func (c *Client) permissions(ctx context.Context, cl *call) ([]string, error) {
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.decodeJSON(cl, r, &raw); err != nil {
		return nil, err
	}
	perms := decodePermissions(raw)
	for i, p := range perms {
		perms[i] = c.scrubText(p)
	}
	return perms, nil
}

func decodePermissions(raw json.RawMessage) []string {
	if m := wire.Members(raw); m != nil {
		raw = m["permissions"]
	}
	out := []string{}
	for _, item := range wire.Items(raw) {
		s := wire.String(item)
		if s == "" {
			s = wire.String(wire.Members(item)["name"])
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Objects returns the account's objects. {"data":[…]}, {"objects":[…]} and a
// bare list are accepted; any other shape, or a 2xx other than 200, gives an
// empty list.
func (c *Client) Objects(ctx context.Context) ([]Object, error) {
	l, err := c.ListObjects(ctx)
	if err != nil {
		return nil, err
	}
	return l.Objects, nil
}

// ObjectListing is one reading of the account's objects, with what a
// caller needs to trust it: an object absent from a listing proves it left
// the account only when the listing was Recognised and dropped no row.
type ObjectListing struct {
	Objects    []Object
	Recognised bool // a 200 answer of a known shape
	Dropped    int  // rows without a usable object id
}

// ListObjects is Objects with the listing's shape and dropped rows.
func (c *Client) ListObjects(ctx context.Context) (*ObjectListing, error) {
	cl := &call{method: "GET", path: "/objects", tmpl: cloudapi.EndpointObjects, auth: true}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status != 200 {
		return &ObjectListing{Objects: []Object{}}, nil
	}
	var raw json.RawMessage
	if err := c.decodeJSON(cl, r, &raw); err != nil {
		return nil, err
	}
	l := decodeObjects(raw)
	for i := range l.Objects {
		c.scrubObject(&l.Objects[i])
	}
	return l, nil
}

func decodeObjects(raw json.RawMessage) *ObjectListing {
	if m := wire.Members(raw); m != nil {
		if l, ok := m["data"]; ok && wire.FirstByte(l) == '[' {
			raw = l
		} else if l, ok := m["objects"]; ok && wire.FirstByte(l) == '[' {
			raw = l
		} else {
			return &ObjectListing{Objects: []Object{}}
		}
	}
	if wire.FirstByte(raw) != '[' {
		return &ObjectListing{Objects: []Object{}}
	}
	l := &ObjectListing{Objects: []Object{}, Recognised: true}
	for _, item := range wire.Items(raw) {
		// An object without an id cannot be asked for its modules.
		if o, ok := decodeObjectRecord(item); ok && o.ID > 0 {
			l.Objects = append(l.Objects, o)
		} else {
			l.Dropped++
		}
	}
	return l
}

// Object returns one object with its operational status.
func (c *Client) Object(ctx context.Context, objectID int) (*ObjectDetails, error) {
	cl := &call{method: "GET", path: "/objects/" + strconv.Itoa(objectID), tmpl: cloudapi.EndpointObject, auth: true}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	m, err := c.decodeObject(cl, r)
	if err != nil {
		return nil, err
	}
	d := &ObjectDetails{Status: c.scrubText(wire.String(m["status"]))}
	inner, ok := m["object"]
	if !ok {
		inner = r.body
	}
	if o, ok := decodeObjectRecord(inner); ok {
		c.scrubObject(&o)
		d.Object = o
	}
	return d, nil
}

// ModuleCard returns the service card of a module (code = devid).
func (c *Client) ModuleCard(ctx context.Context, code string) (*ModuleCard, error) {
	cl := &call{method: "GET", path: "/modules/" + url.PathEscape(code) + "/card", tmpl: cloudapi.EndpointModuleCard, auth: true}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	m, err := c.decodeObject(cl, r)
	if err != nil {
		return nil, err
	}
	id, _ := wire.Int(m["id"])
	mid, _ := wire.Int(m["moduleId"])
	return &ModuleCard{ID: int(id), ModuleID: int(mid), ClientFullName: c.scrubText(wire.String(m["clientFullName"])),
		Raw: c.scrubRaw(wire.Object(r.body))}, nil
}

// SystemVersion returns the deployed frontend version. It needs no token.
func (c *Client) SystemVersion(ctx context.Context) (*SystemVersion, error) {
	cl := &call{method: "GET", path: "/system/version", tmpl: cloudapi.EndpointSystemVersion,
		query: "container=" + url.QueryEscape(c.cfg.Container) + "&platform=0"}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status != 200 {
		return nil, c.apiError(cl, r)
	}
	m, err := c.decodeObject(cl, r)
	if err != nil {
		return nil, err
	}
	if inner := wire.Members(m["version"]); inner != nil {
		m = inner
	}
	return &SystemVersion{Version: c.scrubText(wire.String(m["version"])), DevMode: wire.Bool(m["devMode"])}, nil
}
