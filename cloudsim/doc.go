// Package cloudsim is a simulated BragerOne device cloud: the REST interface
// under /v1, the Socket.IO realtime channel (namespace /ws) under /socket.io/,
// the web app's static site (the page at /, the files under /assets/), and a
// control endpoint under /control/ that switches modules online or offline,
// redeploys the web app and injects faults seen in the field.
//
// It owns realistic module and parameter state (stable devids, ~800 parameters
// per module across pools P4-P6, periodic drift pushed as live deltas) and
// reproduces the cloud's quirks: a modules/connect with a stale namespace SID
// answers 200 but binds nothing, the module-memory-updated event is the
// numeric event 22, error bodies are HTML for 5xx and JSON otherwise.
//
// It backs the `simulate` command, `serve --simulate`, and the integration
// tests and benchmarks of the other packages.
//
// # Objects
//
// The account has Options.Objects objects (installations; one by default,
// DemoObjects for the simulate command and serve --simulate), the modules
// split over them in devid order: "Home", "Cottage", then seeded names. The
// login answer and GET /v1/objects list them, and GET /v1/modules with an
// object's group_id lists only its modules. modules/connect binds a session
// to the modules of one object (the group_id's when given), so a session
// receives only its object's events. HideObject (POST
// /control/objects/{id}/hide) revokes the account's access to an object: it
// leaves the lists, the object and its modules answer 404 (not 403, which
// clients take for a token problem), and its sessions lose their bindings;
// ShowObject (.../show) gives it back. The faults mute_pushes and the
// session faults narrow to one object with Fault.ObjectID, and Logins counts
// the successful logins (Counters the rest).
//
// # Manners toward the cloud: throttling, firewalls, tokens, cost
//
// A client must meet throttling, a firewall in front of the API, a login
// outage and revoked tokens without hammering the cloud; the fault kinds and
// counters here let a test show that it does. http_status with Status 429
// answers {"message":"Too Many Requests"} (Body replaces the message), with
// Fault.RetryAfterS a Retry-After of that many seconds, and with
// RetryAfterDate that as an HTTP date ahead of the cloud's clock
// (Options.Now); Status 503 with RetryAfterS is the front end's HTML page
// with the header. Fault.HTML makes a 4xx an HTML page (a 403 gets a
// firewall's "Access denied" page: no verdict on the password), Body being
// the page when given, and Fault.EmptyBody answers no body. reset_connection
// resets the TCP connection of the requests its Path selects: with Path
// "POST /v1/auth/user" and http_status 503 or reset_connection, a login
// outage while the rest of the API answers.
//
// Every access token a login issues is valid until it expires or is
// revoked: by POST /v1/auth/revoke called with it, or by RevokeTokens (POST
// /control/revoke-tokens) for all. A revoke ends only its own token unless
// the cloud revokes every session of the user (Options.RevokeAllSessions,
// or the fault revoke_all_sessions for Count revokes, switched at run
// time). A dead token is answered 401 on REST and its Socket.IO join is
// refused (a CONNECT_ERROR "Unauthorized").
//
// Counters (also flat in GET /control/state) count since New or
// ResetCounters (POST /control/reset-counters, so a measurement leaves out
// the client's start): login attempts and their outcome (logins,
// logins_rejected, logins_faulted), tokens_issued, revokes and
// tokens_revoked, requests by endpoint template (the templates of package
// cloudapi) and requests_by_object (the object the request names, "" for
// none), Engine.IO handshakes, /ws joins and joins_refused, and both by
// object once modules/connect binds the session; tokens_valid is the number
// of tokens valid now. Tokens themselves are never listed.
//
// # The web app
//
// The static site shares the REST origin, so the assets URL is the cloud's
// URL. What it serves is package webapp's: the web app's JavaScript assets,
// one deployment at a time. Module i gets webapp's profile i mod 3: its row
// carries the profile's deviceMenu and permissions, and it reports the
// registers of the profile's symbols first among its parameters (anonymous
// ones fill the rest, and a small ParamsPerModule keeps only the first of
// them), their values inside each definition's range, so what the assets say
// always matches what the modules report; Described and DescribedAlarms give
// those expectations as data (the full table is webapp's
// testdata/described.txt).
//
// The asset controls: RotateIndex (POST /control/assets/rotate-index)
// redeploys the web app: a new index hash (the old name answers 404), a new
// system version, the same chunks; AssetFile names a file. The fault kinds
// asset_broken (one file, by name or by its name before the hash) and
// assets_unreachable (the whole static site) break the site while REST and
// the realtime channel stay healthy.
//
// # Replay and record
//
// With Options.Replay the cloud plays a recorded cloud back instead of its
// simulated world (the simulate command's --replay): a capture or a
// diagnostics bundle (LoadReplay, ReadRecording; the records of package
// traffic) answers the REST requests, and its realtime events, on a replay
// clock that runs Speed times the recorded pace, reach the sessions bound
// to their objects; see Replay for the rules, and ReplayState (also in
// GET /control/state) for where the replay stands. With Options.Record the
// cloud hands its own record of its traffic (every API exchange, every
// event pushed, each session a fault ended) to a function, as a capture
// holds it: the tests make recordings of simulated field runs that way.
package cloudsim
