package cloudclient

import (
	"net/http"
	"strconv"
	"time"

	"github.com/bragerone/bragerone_exporter/traffic"
)

// recordExchange gives Config.Recorder the record of one exchange, redacted
// with the client's secrets as it is made. The object is the group_id of
// the query when it has one (the module listing of one object).
func (c *Client) recordExchange(cl *call, req *http.Request, payload []byte, status int, d time.Duration,
	hdr http.Header, body []byte, err error) {
	if c.cfg.Recorder == nil {
		return
	}
	path := req.URL.Path
	if req.URL.RawQuery != "" {
		path += "?" + req.URL.RawQuery
	}
	r := traffic.REST(c.cfg.Secrets, c.cfg.Now(), cl.method, cl.tmpl, path, status, d, payload, hdr, body, err)
	if g := req.URL.Query().Get("group_id"); g != "" {
		r.Object, _ = strconv.Atoi(g)
	}
	c.cfg.Recorder(r)
}

// recordTransition gives Config.Recorder a login, token or throttle
// transition.
func (c *Client) recordTransition(what string, detail map[string]string) {
	if c.cfg.Recorder == nil {
		return
	}
	c.cfg.Recorder(traffic.Transition(c.cfg.Secrets, c.cfg.Now(), 0, what, detail))
}
