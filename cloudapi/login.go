package cloudapi

// LoginOutcome classifies a finished login. Only a rejected login is a
// verdict on the credentials and needs a person (the password is wrong or
// the account is locked); every other failure is the cloud's, the network's
// or something in front of the cloud, and heals by itself. The values are
// the result label of bragerone_logins_total and, but for ok, the reason
// label of bragerone_login_failure_reason.
type LoginOutcome string

// Login outcomes.
const (
	// LoginOK: the cloud issued a token.
	LoginOK LoginOutcome = "ok"
	// LoginRejected: a verdict on the credentials: HTTP 401 with any body,
	// or 400, 403 or 422 with a JSON body (the cloud's own API refusing
	// the credential body).
	LoginRejected LoginOutcome = "rejected"
	// LoginBlocked: a 4xx that is no verdict: an HTML or empty 400, 403
	// or 422 (a firewall, a proxy, a captive portal in front of the
	// cloud), or any other 4xx but 401, 408 and 429.
	LoginBlocked LoginOutcome = "blocked"
	// LoginRateLimited: the cloud throttles: HTTP 429, or a 503 carrying
	// Retry-After, or the account's throttle pause held the login back.
	LoginRateLimited LoginOutcome = "rate_limited"
	// LoginUnreachable: no answer about the credentials: a transport error
	// or timeout, a 408, a 5xx (the duplicate-token race included once its
	// retries are spent), or an answer that is not a login result.
	LoginUnreachable LoginOutcome = "unreachable"
)

// LoginOutcomes lists every login outcome.
func LoginOutcomes() []LoginOutcome {
	return []LoginOutcome{LoginOK, LoginRejected, LoginBlocked, LoginRateLimited, LoginUnreachable}
}

// LoginFailures lists the outcomes of a failed login, the reason label
// values of bragerone_login_failure_reason.
func LoginFailures() []LoginOutcome {
	return []LoginOutcome{LoginRejected, LoginBlocked, LoginRateLimited, LoginUnreachable}
}
