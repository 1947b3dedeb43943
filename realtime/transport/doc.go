// Package transport owns the realtime channel's transport: a small Transport
// / Session interface of our own, its implementation on the zishang520
// Socket.IO client (the only code that imports that library and its packet
// parser), the disconnect-reason classifier and event-name normalisation. It
// frames Socket.IO packets and hands event arguments on as raw JSON; decoding
// the payloads is package wire's.
//
// The library has known defects; each is contained here so that the rest of
// the exporter never sees them:
//
//   - The WebSocket dial has no handshake timeout and blocks forever against
//     a server that accepts TCP and never answers. Every connect runs on its
//     own goroutine under a watchdog (Config.ConnectTimeout covers dial,
//     Engine.IO handshake and namespace join); a stuck attempt is abandoned.
//     The library's dial takes no context of ours, but the library's
//     WebSocket dialer is given a network dial of ours before it dials, so
//     the attempt's connection is ours: abandoning the attempt closes it,
//     and the stuck dial returns at once. Should that dialer not be found
//     (another library layout), a stuck dial keeps its goroutine and socket
//     until the peer gives up; such attempts are counted (Client.Abandoned)
//     and bounded by Config.MaxAbandoned, beyond which Connect fails fast
//     with ErrTooManyAbandoned, and what a late dial produced is closed at
//     once. An attempt stuck after the dial (no Engine.IO OPEN, or a
//     namespace join never acknowledged) is fully torn down.
//   - An attempt sent into a dead link (a partition: packets dropped, no
//     FIN) waits on TCP's retransmissions, at growing intervals, after the
//     link is back. While an attempt hears nothing, Connect probes the link
//     on fresh connections (Config.ProbeInterval); when a later probe is
//     answered while an earlier one is still lost, the link was dead and is
//     back, and the waiting attempt is replaced by a fresh one within the
//     same ConnectTimeout. A slow link or a slow cloud answers the probes
//     in order and is waited for (see attemptStale).
//   - Dial errors are swallowed by the library (the engine reports them
//     before anyone listens). The WebSocket transport constructor is wrapped
//     so our listener sees the transport's error first: a refused port fails
//     Connect at once with the real error. A rejected upgrade ("bad
//     handshake") is followed by one plain GET of the same URL to learn the
//     HTTP status, so a 503 storm is classified handshake_503.
//   - The same window can swallow the Engine.IO OPEN packet (the reader
//     goroutine starts before the manager listens), leaving the namespace
//     CONNECT unsent; the wrapped transport holds the reader's packets until
//     the dialling call has returned.
//   - The disconnect reason is racy after a server-side disconnect and
//     "disconnect" can fire twice: each session ends exactly once, with the
//     first reason seen; the manager's "forced close" (which precedes the
//     real reason) is ignored. Connect calls are serialised, and every call
//     into one library client holds one lock, so no two goroutines of ours
//     are ever inside it.
//   - Importing the client's engine package registers
//     signal.NotifyContext(SIGINT, SIGTERM, SIGQUIT) in an init(); without a
//     handler of its own a program's first SIGTERM is swallowed. The
//     exporter's main installs its own signal.NotifyContext before anything
//     else and shuts down on the first signal.
//   - A numeric event name (22) never reaches name-based listeners; it
//     reaches the catch-all listener as float64(22). All events are
//     dispatched from the catch-all listener and normalised (see Normalize).
//   - A CONNECT_ERROR without a "data" member loses its message in the
//     library; the raw packet is read first so the message survives.
//   - Each session builds three task queues (the manager's, the Engine.IO
//     socket's and the WebSocket transport's write queue), each with a
//     goroutine and a finalizer. The library never stops the manager's
//     queue, and a queue with its finalizer is never collected (it points
//     at itself), so every reconnect would leave about 27 KiB in the heap.
//     A session clears each queue's finalizer as soon as the queue exists
//     and stops all three when it is torn down (see libQueues).
//   - A library timer cleared before its goroutine first waited leaves that
//     goroutine waiting forever. The engine's ping-timeout timer is set at
//     the handshake and cleared at the engine's close, so a session that
//     closes right after its handshake can leave one; the timer is fired
//     once the engine has closed, which ends the goroutine (see
//     libglue.ReleaseTimer). The manager's connect timer is removed altogether.
//   - With two transports configured the first one tried is random: only
//     WebSocket is configured (the cloud's own client connects straight over
//     WebSocket too). The library's reconnection is off: callers own
//     reconnects, and a Session is never reconnected.
//
// The library's Socket.IO packet parser is replaced by one of our own
// (rawParser) that keeps event arguments as the JSON text that arrived
// (json.RawMessage) instead of decoding them into maps that would have to be
// encoded again for the payload decoders; the event's JSON is checked by
// wire's scanner. Every other packet is decoded as the library's parser does,
// and binary packets by the library's parser.
//
// Events reach the consumer in order on one channel per session, through a
// bounded buffer, so a slow consumer never blocks the library. On overflow,
// events are dropped and a cloudapi.EventOverflow tells the consumer to re-prime.
package transport
