package cloudclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrNotAuthenticated: a token was asked for before any login succeeded.
	ErrNotAuthenticated = errors.New("cloudclient: not authenticated")
	// ErrNoCredentials: no credentials provider, or it has none to give.
	ErrNoCredentials = errors.New("cloudclient: no credentials available")
	// ErrNoAccessToken: a login answer carried an empty or missing access token.
	ErrNoAccessToken = errors.New("cloudclient: no access token in login answer")
	// ErrInvalidCommand is wrapped by every command validation error.
	ErrInvalidCommand = errors.New("cloudclient: invalid command")
	// ErrAmbiguousRoute: a command gives both a raw command and pool/parameter.
	ErrAmbiguousRoute = fmt.Errorf("%w: ambiguous route (command together with pool/parameter)", ErrInvalidCommand)
	// ErrMissingRoute: a command gives neither a raw command nor pool and parameter.
	ErrMissingRoute = fmt.Errorf("%w: missing route (need command, or pool and parameter)", ErrInvalidCommand)
	// ErrBodyTooLarge: a response body exceeded Config.MaxBodyBytes.
	ErrBodyTooLarge = errors.New("cloudclient: response body too large")
)

// dispatchTimeoutStatus is the body status the cloud sends with HTTP 408 when
// a module did not answer in time; it is an upstream hiccup, not a client fault.
const dispatchTimeoutStatus = "E_DISPATCH_EVENT_TIMEOUT"

// maxErrorText bounds the raw text kept in APIError.Data for non-JSON bodies.
const maxErrorText = 2048

// maxMessageInError bounds the JSON message quoted by APIError.Error.
const maxMessageInError = 160

// APIError is a non-2xx answer (or a 2xx the endpoint does not accept).
type APIError struct {
	Endpoint string            // fixed template, e.g. "GET /v1/modules"
	Status   int               // HTTP status
	Data     any               // parsed JSON body, or raw text (truncated) when not JSON
	Headers  map[string]string // response headers, first value of each
	// JSONBody: the body was JSON (Data is its decoded value). A firewall's
	// or a proxy's page is not, which tells its 403 from the API's.
	JSONBody bool
}

// header returns the response header k, or "".
func (e *APIError) header(k string) string { return e.Headers[http.CanonicalHeaderKey(k)] }

// Error is compact: endpoint, status and, for JSON bodies only, a short
// message. An HTML error page is never quoted.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cloudclient: %s: HTTP %d", e.Endpoint, e.Status)
	if m, ok := e.Data.(map[string]any); ok {
		if s, ok := m["status"].(string); ok && s != "" && len(s) <= maxMessageInError {
			b.WriteString(" ")
			b.WriteString(s)
		}
		if s, ok := m["message"].(string); ok && s != "" && len(s) <= maxMessageInError {
			b.WriteString(": ")
			b.WriteString(s)
		}
	}
	return b.String()
}

// Message returns the JSON "message" of the body, if any.
func (e *APIError) Message() string {
	if m, ok := e.Data.(map[string]any); ok {
		s, _ := m["message"].(string)
		return s
	}
	return ""
}

// bodyStatus returns the JSON "status" string of the body, if any.
func (e *APIError) bodyStatus() string {
	if m, ok := e.Data.(map[string]any); ok {
		s, _ := m["status"].(string)
		return s
	}
	return ""
}

// DecodeError is a body that could not be decoded where JSON of a given shape
// was expected (an HTML page with status 200, truncated JSON, a list where an
// object was required). It never carries the body itself.
type DecodeError struct {
	Endpoint    string
	Status      int
	ContentType string
	Reason      string
	Err         error
}

func (e *DecodeError) Error() string {
	s := fmt.Sprintf("cloudclient: %s: HTTP %d: undecodable body", e.Endpoint, e.Status)
	if e.ContentType != "" {
		s += " (" + e.ContentType + ")"
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *DecodeError) Unwrap() error { return e.Err }

// IsExpectedUpstream reports whether err is an expected upstream capacity or
// maintenance failure: HTTP 502/503/504, HTTP 408 with body status
// E_DISPATCH_EVENT_TIMEOUT, or a timeout. Wrapped and joined errors are
// searched.
func IsExpectedUpstream(err error) bool {
	if err == nil {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch ae.Status {
		case 502, 503, 504:
			return true
		case 408:
			if ae.bodyStatus() == dispatchTimeoutStatus {
				return true
			}
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	return false
}

// statusOf returns the HTTP status carried by err, or 0.
func statusOf(err error) int {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Status
	}
	return 0
}
