package transport

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/outage"
)

// networkEndpoints matches what Classify blanks out of the (lower-cased)
// text: URLs, bracketed IPv6 and dotted IPv4 addresses (with or without a
// port) and dotted host names or localhost with a port.
var networkEndpoints = regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://\S+|\[[0-9a-f:.%]+\](:\d+)?|\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b|\b(localhost|[a-z0-9-]+(\.[a-z0-9-]+)+):\d{1,5}\b`)

// classifiedKeys are the object members whose values carry the failure text.
var classifiedKeys = []string{"message", "msg", "error", "description", "reason", "data"}

// Classify maps a disconnect or connect-failure payload to one of the session
// outage reason tokens, which package outage owns (outage.SessionReasons).
// payload may be a string, []byte, error, an object (map) whose message, msg,
// error, description, reason and data members are read, a list whose items are
// joined, a json.RawMessage, a number or nil. def is returned when nothing
// matches (for a plain Socket.IO disconnect it is outage.ReasonDisconnect).
//
// Rules, first match wins, on the lower-cased text with its network
// endpoints (URLs, host:port, IP addresses) blanked out: a library error
// such as "dial tcp 127.0.0.1:43503: connect: connection refused" names
// addresses whose digits are neither a status nor a close code.
//
//  1. empty text → def
//  2. "503" → handshake_503
//  3. "packet queue is empty" / "queue is empty" → empty_queue
//  4. "server has stopped communicating" / "stopped communicating" → server_stop;
//     also "ping timeout", the Engine.IO reason for the same condition (the
//     server's pings stopped arriving within pingInterval+pingTimeout)
//  5. "wsmsgtype.closed" / "msgtype.closed" → eio_close
//  6. "257" → eio_close (the aiohttp WSMsgType.CLOSED code)
//  7. "close" with "eio", or with both "engine" and "io" → eio_close
//  8. "transport error" → eio_close (the Engine.IO reason for a transport
//     that died under the session, e.g. a TCP abort without a close frame)
//  9. "reconnect" and "error" → reconnect_error
//  10. ("connect" and "error"), "connection error" or "connection refused" → connect_error
//  11. otherwise → def
//
// Engine.IO reasons not listed ("transport close", "io server disconnect",
// "io client disconnect", "parse error") are deliberately left to def: they
// name an ordinary end of the session, and the spec maps unmatched strings to
// the default.
func Classify(payload any, def string) string {
	text := strings.ToLower(strings.TrimSpace(classText(payload, 0)))
	if text != "" {
		text = strings.TrimSpace(networkEndpoints.ReplaceAllString(text, " "))
		if text == "" {
			return def
		}
	}
	switch {
	case text == "":
		return def
	case strings.Contains(text, "503"):
		return outage.ReasonHandshake503
	case strings.Contains(text, "packet queue is empty"), strings.Contains(text, "queue is empty"):
		return outage.ReasonEmptyQueue
	case strings.Contains(text, "server has stopped communicating"),
		strings.Contains(text, "stopped communicating"),
		strings.Contains(text, "ping timeout"):
		return outage.ReasonServerStop
	case strings.Contains(text, "wsmsgtype.closed"), strings.Contains(text, "msgtype.closed"):
		return outage.ReasonEIOClose
	case strings.Contains(text, "257"):
		return outage.ReasonEIOClose
	case strings.Contains(text, "close") &&
		(strings.Contains(text, "eio") || (strings.Contains(text, "engine") && strings.Contains(text, "io"))):
		return outage.ReasonEIOClose
	case strings.Contains(text, "transport error"):
		return outage.ReasonEIOClose
	case strings.Contains(text, "reconnect") && strings.Contains(text, "error"):
		return outage.ReasonReconnectError
	case strings.Contains(text, "connect") && strings.Contains(text, "error"),
		strings.Contains(text, "connection error"),
		strings.Contains(text, "connection refused"):
		return outage.ReasonConnectError
	default:
		return def
	}
}

// classText flattens a payload into the text the classifier reads. At the
// top level an object contributes only its classified members; nested values
// contribute their whole JSON text, so {"data":{"status":503}} still reads 503.
func classText(v any, depth int) string {
	if depth > 8 {
		return ""
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case json.RawMessage:
		var decoded any
		if err := json.Unmarshal(x, &decoded); err != nil {
			return string(x)
		}
		return classText(decoded, depth)
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case map[string]any:
		if depth > 0 {
			return jsonText(x)
		}
		parts := make([]string, 0, len(classifiedKeys))
		for _, k := range classifiedKeys {
			if val, ok := x[k]; ok {
				if s := classText(val, depth+1); s != "" {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, " ")
	case []any:
		parts := make([]string, 0, len(x))
		for _, item := range x {
			if s := classText(item, depth+1); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, " ")
	case []string:
		return strings.Join(x, " ")
	default:
		return fmt.Sprint(x)
	}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
