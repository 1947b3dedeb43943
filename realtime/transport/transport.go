package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// Transport opens realtime sessions. At most one Connect runs at a time; a
// second caller waits for the first to finish (or for its own ctx).
type Transport interface {
	// Connect dials {BaseURL}/socket.io over WebSocket, joins the namespace
	// and returns once the namespace SID is known. It fails with a
	// *ConnectError when the dial, the Engine.IO handshake or the namespace
	// join fails or does not finish within Config.ConnectTimeout.
	Connect(ctx context.Context) (Session, error)
	// Close ends every open session, stops delivering events and makes
	// further Connect calls fail with ErrClosed.
	Close() error
}

// Session is one joined namespace on one Engine.IO connection. It is never
// reconnected: when it ends, the caller connects a new one.
type Session interface {
	// NamespaceSID is the SID of the namespace join, the one to post to
	// /v1/modules/connect.
	NamespaceSID() string
	// EngineSID is the Engine.IO session id (a fallback only).
	EngineSID() string
	// Connected reports whether the transport is still open and the
	// namespace still joined. A supervisor that finds it false while Done is
	// still open has caught a session that died without a disconnect.
	Connected() bool
	// Emit sends an event to the server. It fails once the session ended.
	Emit(event string, args ...any) error
	// Events delivers the session's events in arrival order: first
	// cloudapi.EventConnect, then pushed events, and finally one cloudapi.EventDisconnect, after
	// which the channel is closed. Delivery never blocks the Socket.IO
	// library: events wait in a bounded buffer (Config.EventBuffer); if it is
	// full, events are dropped and a cloudapi.EventOverflow carrying the count takes
	// their place, telling the consumer to re-prime over REST. After
	// Disconnect returns or the Transport is closed, undelivered events are
	// discarded and the channel is closed.
	Events() <-chan Event
	// Done is closed as soon as the session has ended, before the
	// cloudapi.EventDisconnect is necessarily read from Events.
	Done() <-chan struct{}
	// Reason returns the reason token and the raw library text of the end of
	// the session; both are empty while the session is up.
	Reason() (token, detail string)
	// Disconnect ends the session and releases its connection. Teardown is
	// bounded by Config.TeardownTimeout (and ctx); a teardown that does not
	// finish in time is abandoned and counted (see Client.Abandoned). It is
	// safe to call more than once and after the session ended by itself.
	Disconnect(ctx context.Context) error
}

// Event is one observation on a session.
type Event struct {
	Kind cloudapi.EventKind
	// Name is the normalised event name: "22" for the memory-updated event
	// however it arrived, the task event name for the numeric aliases 60, 61
	// and 63, otherwise the name as sent. Empty for Connect, Disconnect and
	// Overflow.
	Name string
	// WireName is the event name as it arrived ("22", "61", ...).
	WireName string
	// Payload is the first argument (nil when there is none), as the JSON
	// text the server sent: key order, number spelling and escapes are the
	// server's.
	Payload json.RawMessage
	// Args are all arguments in order, as sent.
	Args []json.RawMessage
	// Reason is the reason token of a cloudapi.EventDisconnect.
	Reason string
	// Detail is the raw library text behind Reason (e.g. "transport error").
	Detail string
	// Dropped is the number of events lost before a cloudapi.EventOverflow.
	Dropped int
	// Received is when the transport saw the event.
	Received time.Time
}

// Errors.
var (
	// ErrClosed is returned once the Transport was closed.
	ErrClosed = errors.New("realtime transport closed")
	// ErrTooManyAbandoned is returned by Connect while Config.MaxAbandoned
	// stuck connect or teardown attempts are still held by the library.
	ErrTooManyAbandoned = errors.New("too many abandoned Socket.IO attempts still stuck in the library")
	// ErrTimeout is wrapped by a ConnectError when a phase did not finish in time.
	ErrTimeout = errors.New("timed out")
	// ErrSessionEnded is returned by Emit after the session ended.
	ErrSessionEnded = errors.New("realtime session ended")
)

// Connect phases, as reported in ConnectError.Phase.
const (
	PhaseHeaders   = "headers"   // building the handshake headers
	PhaseDial      = "dial"      // TCP connect and WebSocket upgrade
	PhaseHandshake = "handshake" // waiting for the Engine.IO OPEN packet
	PhaseNamespace = "namespace" // waiting for the namespace CONNECT ack
	PhaseLimit     = "limit"     // refused before dialling (abandoned-attempt bound)
)

// ConnectError is a failed Connect.
type ConnectError struct {
	Phase  string // one of the Phase constants
	Reason string // reason token (Classify of the failure, default connect_error)
	Err    error
	// ConnectErrorEvent says the failure was the library's connect_error
	// event (the server refused the namespace join, or the engine failed
	// while joining), not a timeout or a dial that never reached the
	// server's namespace; the consumer counts it as a received event.
	ConnectErrorEvent bool
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("realtime connect failed during %s (%s): %v", e.Phase, e.Reason, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Config configures the transport.
type Config struct {
	// BaseURL is the cloud's {base_url}, e.g. "https://io.brager.pl"; the
	// WebSocket URL is derived from it (http→ws, https→wss).
	BaseURL string
	// Path is the Socket.IO path; default "/socket.io".
	Path string
	// Namespace is the namespace to join; default "/ws".
	Namespace string
	// Header returns fresh handshake headers for every connect (see
	// HandshakeHeader). Optional.
	Header func(ctx context.Context) (http.Header, error)
	// ConnectTimeout bounds one Connect (dial, Engine.IO handshake and
	// namespace join together, over however many attempts the probes make
	// it take); default 20s.
	ConnectTimeout time.Duration
	// ProbeInterval paces the probes of the link while a connect attempt
	// hears nothing from the cloud (see attemptStale): an attempt sent into
	// a dead link that has come back is replaced by a fresh one about two
	// intervals after the link's return, instead of waiting for TCP's
	// retransmissions or ConnectTimeout. Default 500ms.
	ProbeInterval time.Duration
	// TeardownTimeout bounds one teardown; default 5s.
	TeardownTimeout time.Duration
	// MaxAbandoned bounds attempts given up on while still held inside the
	// library (a dial that never returns, a teardown that hangs). While that
	// many are outstanding Connect fails fast with ErrTooManyAbandoned;
	// default 4.
	MaxAbandoned int
	// EventBuffer bounds the events waiting for the consumer per session;
	// default 4096.
	EventBuffer int
	// Redact scrubs secrets from the cloud's text (a connect error's
	// message, a close reason) before it enters an error, an event or a
	// log line; the handshake carries the bearer token, and a cloud may
	// echo it. Default: none.
	Redact func(string) string
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Now stamps Event.Received; default time.Now.
	Now func() time.Time
}

// Defaults.
const (
	DefaultPath            = "/socket.io"
	DefaultNamespace       = "/ws"
	DefaultConnectTimeout  = 20 * time.Second
	DefaultProbeInterval   = 500 * time.Millisecond
	DefaultTeardownTimeout = 5 * time.Second
	DefaultMaxAbandoned    = 4
	DefaultEventBuffer     = 4096
)

// Handshake header values the cloud's own web client sends.
const (
	AcceptLanguage = "pl-PL,pl;q=0.9"
	AppVersion     = "1.1.78"
)

// HandshakeHeader returns the headers of a Socket.IO handshake for token and
// the assets origin (e.g. "https://one.brager.pl"): Authorization, Origin,
// Referer (origin plus "/"), Accept-Language and x-appversion. The token
// travels only here; no Socket.IO auth payload is sent.
func HandshakeHeader(token, origin string) http.Header {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if origin != "" {
		h.Set("Origin", origin)
		h.Set("Referer", origin+"/")
	}
	h.Set("Accept-Language", AcceptLanguage)
	h.Set("x-appversion", AppVersion)
	return h
}
