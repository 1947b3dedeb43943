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
// the successful logins.
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
package cloudsim
