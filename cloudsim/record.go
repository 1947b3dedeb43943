package cloudsim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/traffic"
)

// The cloud's own record of its traffic (Options.Record): what it answered
// and what it pushed, as traffic.Records, the form a capture carries. A
// recording made this way replays (NewReplay) like a field capture, which is
// how the tests turn a simulated run with faults into a recording.

// recordingWriter keeps a copy of an answer for the record.
type recordingWriter struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (rw *recordingWriter) WriteHeader(status int) {
	if rw.status == 0 {
		rw.status = status
	}
	rw.ResponseWriter.WriteHeader(status)
}

func (rw *recordingWriter) Write(p []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	rw.body.Write(p)
	return rw.ResponseWriter.Write(p)
}

func (rw *recordingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := rw.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("cloudsim: the connection cannot be hijacked")
	}
	rw.hijacked = true
	return hj.Hijack()
}

// recordREST hands one API exchange to Options.Record.
func (c *Cloud) recordREST(template string, r *http.Request, request []byte, obj *object, start time.Time, rw *recordingWriter) {
	rec := traffic.Record{
		At: start, Kind: traffic.KindREST, Method: r.Method, Endpoint: template, Path: r.URL.RequestURI(),
		Status: rw.status, DurationMS: float64(c.now().Sub(start).Microseconds()) / 1000,
	}
	if obj != nil {
		rec.Object = obj.id
	}
	if json.Valid(request) && template != cloudapi.EndpointLogin { // the credentials stay out
		rec.Request = json.RawMessage(request)
	}
	for _, h := range []string{"Content-Type", "Retry-After"} {
		if v := rw.Header().Get(h); v != "" {
			if rec.Headers == nil {
				rec.Headers = map[string]string{}
			}
			rec.Headers[h] = v
		}
	}
	switch body := rw.body.Bytes(); {
	case rw.hijacked:
		rec.Status, rec.Error = 0, "connection reset by peer"
	case json.Valid(body) && template == cloudapi.EndpointLogin:
		rec.Body = withoutTokens(body)
	case json.Valid(body):
		rec.Body = json.RawMessage(bytes.Clone(body))
	case len(body) > 0:
		rec.BodyText = string(body)
	}
	c.opts.Record(rec)
}

// recordEvent hands one pushed event to Options.Record, once for each
// session it reached.
func (c *Cloud) recordEvent(name, payload any, objects []int, sids []string) {
	data, err := json.Marshal(payload)
	if err != nil {
		return
	}
	now := c.now()
	for i, obj := range objects {
		c.opts.Record(traffic.Record{At: now, Kind: traffic.KindEvent, Object: obj, Event: fmt.Sprint(name), SID: sids[i], Payload: data})
	}
}

// recordSessionDown hands a session the cloud ended to Options.Record.
func (c *Cloud) recordSessionDown(obj int, sid, reason string) {
	if c.opts.Record == nil || obj == 0 {
		return
	}
	c.opts.Record(traffic.Record{At: c.now(), Kind: traffic.KindTransition, Object: obj, SID: sid, What: "session_down", Detail: map[string]string{"reason": reason}})
}

// withoutTokens is a login answer with its tokens masked (a replay issues
// its own).
func withoutTokens(body []byte) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	for _, k := range []string{"accessToken", "refreshToken", "token"} {
		if _, ok := m[k]; ok {
			m[k] = "<redacted>"
		}
	}
	out, _ := json.Marshal(m)
	return out
}
