package realtime

import (
	"time"

	"github.com/bragerone/bragerone_exporter/realtime/transport"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// recordEvent gives Config.Recorder the record of one realtime event,
// redacted with the client's secrets as it is made.
func (g *Gateway) recordEvent(ev transport.Event, now time.Time) {
	if g.cfg.Recorder == nil {
		return
	}
	name := ev.WireName
	if name == "" {
		name = ev.Name
	}
	if name == "" {
		name = ev.Kind.String()
	}
	sid := ""
	if g.sess != nil {
		sid = g.sess.NamespaceSID()
	}
	var payload any
	if len(ev.Payload) > 0 {
		payload = ev.Payload
	}
	r := traffic.Event(g.client.Secrets(), now, g.cfg.ObjectID, name, sid, payload)
	if ev.Reason != "" {
		r.Detail = map[string]string{"reason": ev.Reason}
	}
	g.cfg.Recorder(r)
}

// recordTransition gives Config.Recorder a session or ladder transition;
// kv are detail pairs.
func (g *Gateway) recordTransition(what string, kv ...string) {
	if g.cfg.Recorder == nil {
		return
	}
	detail := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			detail[kv[i]] = kv[i+1]
		}
	}
	g.cfg.Recorder(traffic.Transition(g.client.Secrets(), g.cfg.Now(), g.cfg.ObjectID, what, detail))
}
