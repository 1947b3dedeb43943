// Package cloudclient is the REST client of the BragerOne device cloud.
//
// It owns everything spoken over HTTP: login and the token model (there is no
// refresh endpoint, so a refresh is a fresh login), the browser-origin headers
// the backend expects, re-login and a single retry on 401/403, every endpoint
// of the interface with tolerant decoding of the list shapes seen in the
// field (built from the readers of package wire, which also decodes the
// prime answer), command routing with a write rate limiter, the
// conditional cache of static assets, and typed errors (APIError, DecodeError)
// whose messages never carry an upstream HTML page, nor a secret: the client
// remembers the password and every token it learns (Config.Secrets) and
// scrubs them from the cloud's text as an error is built.
//
// Limits are enforced here: a timeout per request, a bound on requests in
// flight, and a bound on response body size.
package cloudclient
