package cloudsim

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// ObjectInfo describes one object (installation) of the account, for tests
// and /control/state.
type ObjectInfo struct {
	ID     int      `json:"id"`
	Name   string   `json:"name"`
	Devids []string `json:"devids"` // its modules, sorted
	// Hidden says the account no longer sees the object (HideObject): it is
	// absent from the object lists and calls naming it or its modules are
	// refused.
	Hidden bool `json:"hidden"`
}

// ObjectError reports an object id the cloud does not have.
type ObjectError struct{ ID int }

func (e *ObjectError) Error() string { return fmt.Sprintf("cloudsim: no object %d", e.ID) }

// Objects lists every object of the account, hidden ones too, in the order
// of their modules (the first is ObjectID's).
func (c *Cloud) Objects() []ObjectInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ObjectInfo, 0, len(c.objects))
	for _, o := range c.objects {
		info := ObjectInfo{ID: o.id, Name: o.name, Hidden: o.hidden, Devids: make([]string, len(o.modules))}
		for i, m := range o.modules {
			info.Devids[i] = m.devid
		}
		slices.Sort(info.Devids)
		out = append(out, info)
	}
	return out
}

// ObjectOf returns the id of the object a module belongs to, 0 for an
// unknown devid.
func (c *Cloud) ObjectOf(devid string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.byDevid[devid]; m != nil {
		return m.obj.id
	}
	return 0
}

// HideObject takes an object out of the account, as when the owner revokes
// the account's access: it leaves GET /v1/objects and the login's objects,
// GET /v1/objects/{id} and its module listing answer 404, every call naming
// one of its modules is refused with 404, and the realtime sessions bound to
// its modules lose those bindings (they stay connected, and receive nothing
// more of them). Hiding a hidden object changes nothing.
func (c *Cloud) HideObject(id int) error {
	c.mu.Lock()
	o := c.byObject[id]
	if o == nil {
		c.mu.Unlock()
		return &ObjectError{id}
	}
	o.hidden = true
	for _, s := range c.sessions {
		for _, m := range o.modules {
			delete(s.bound, m.devid)
		}
		if s.objectID == id {
			s.objectID = 0
		}
	}
	c.mu.Unlock()
	c.log.Info("cloudsim: object hidden from the account", "object_id", id)
	return nil
}

// ShowObject gives a hidden object back to the account: listed again, its
// calls answered. A session must bind its modules anew to receive their
// events.
func (c *Cloud) ShowObject(id int) error {
	c.mu.Lock()
	o := c.byObject[id]
	if o != nil {
		o.hidden = false
	}
	c.mu.Unlock()
	if o == nil {
		return &ObjectError{id}
	}
	c.log.Info("cloudsim: object shown to the account", "object_id", id)
	return nil
}

// Logins counts the successful login answers (POST /v1/auth/user with
// tokens) since New or the last ResetCounters; refused credentials and
// login faults (login_dup_entry) do not count (Counters has them).
func (c *Cloud) Logins() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count.Logins
}

// visibleObjectsLocked lists the object records the account sees.
func (c *Cloud) visibleObjectsLocked() []any { return c.visibleObjectRecordsLocked(nil) }

// visibleObjectRecordsLocked is visibleObjectsLocked answering r (planted
// data may quote it).
func (c *Cloud) visibleObjectRecordsLocked(r *http.Request) []any {
	out := []any{}
	for _, o := range c.objects {
		if !o.hidden {
			out = append(out, c.plantObjectLocked(o.record(), r))
		}
	}
	return out
}

// visibleObjectLocked resolves an object id as the account sees it: nil for
// an unknown or a hidden object.
func (c *Cloud) visibleObjectLocked(id int) *object {
	if o := c.byObject[id]; o != nil && !o.hidden {
		return o
	}
	return nil
}

// visibleModuleLocked resolves a devid as the account sees it: nil for an
// unknown module and for a module of a hidden object.
func (c *Cloud) visibleModuleLocked(devid string) *module {
	if m := c.byDevid[devid]; m != nil && !m.obj.hidden {
		return m
	}
	return nil
}

// hiddenModuleLocked returns the first of devids whose object is hidden,
// "" when none is.
func (c *Cloud) hiddenModuleLocked(devids []string) string {
	for _, d := range devids {
		if m := c.byDevid[d]; m != nil && m.obj.hidden {
			return d
		}
	}
	return ""
}

// record is the object record of GET /v1/objects and the login answer.
func (o *object) record() map[string]any {
	return map[string]any{
		"id": o.id, "name": o.name, "addressCountry": "PL", "addressCity": o.city,
		"addressPostCode": nil, "addressStreet": nil, "addressHouseNumber": nil,
	}
}

// parseGroupID reads a group_id, sent as a number (listen emits, the module
// listing's query) or as a decimal string (modules/connect).
func parseGroupID(v any) (int, bool) {
	switch g := v.(type) {
	case float64:
		if g == float64(int(g)) {
			return int(g), true
		}
	case string:
		if n, err := strconv.Atoi(g); err == nil {
			return n, true
		}
	}
	return 0, false
}
