package cloudsim

import (
	"encoding/base64"
	"maps"
	"net/http"
	"strings"
)

// Planted is personal data and echoed secrets the cloud answers with, for
// tests proving that none of it reaches what the exporter records (its
// traffic ring, a capture file, a diagnostics bundle, its logs).
type Planted struct {
	UserName string // the account's user name (login answer, user, activity rows)
	// ObjectFields are merged into every object record (GET /v1/objects and
	// the login answer): street, post code, phone, coordinates...
	ObjectFields map[string]any
	// CardFields are merged into every module card (the client fields).
	CardFields map[string]any
	// GatewayAddress and ModuleAddress replace every module's IP addresses
	// (gateway.address of the module rows and of connection-status events,
	// moduleAddress).
	GatewayAddress, ModuleAddress string
	// EchoToken makes every object record quote the bearer token it was
	// asked with, as is and base64-encoded (fields "echo", "echo64"): a
	// cloud that echoes a secret.
	EchoToken bool
}

// Plant sets the planted data; the next answers carry it.
func (c *Cloud) Plant(p Planted) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.planted = &p
	if p.UserName != "" {
		c.user.Name = p.UserName
	}
	for _, m := range c.byDevid {
		if p.GatewayAddress != "" {
			m.gw.Address = p.GatewayAddress
		}
		if p.ModuleAddress != "" {
			m.address = p.ModuleAddress
		}
	}
}

// plantObjectLocked adds the planted fields to an object record; r is the
// request answered (nil for none).
func (c *Cloud) plantObjectLocked(rec map[string]any, r *http.Request) map[string]any {
	p := c.planted
	if p == nil {
		return rec
	}
	maps.Copy(rec, p.ObjectFields)
	if p.EchoToken && r != nil {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			rec["echo"] = "your token is " + tok
			rec["echo64"] = base64.StdEncoding.EncodeToString([]byte(tok))
		}
	}
	return rec
}

// plantCardLocked adds the planted client fields to a module card.
func (c *Cloud) plantCardLocked(card map[string]any) {
	if c.planted != nil {
		maps.Copy(card, c.planted.CardFields)
	}
}
