package cloudapi

// LoginOutcome classifies a finished login. A rejected login needs a person
// (the credentials are wrong or the account is locked); an unreachable one is
// the cloud's or the network's and heals by itself. The values are the result
// label of bragerone_logins_total.
type LoginOutcome string

// Login outcomes.
const (
	// LoginOK: the cloud issued a token.
	LoginOK LoginOutcome = "ok"
	// LoginRejected: the cloud answered and refused the credentials: HTTP
	// 401 or 403, or 400 or 422 (the credential body refused).
	LoginRejected LoginOutcome = "rejected"
	// LoginUnreachable: no verdict on the credentials: a transport error or
	// timeout, a 5xx (the duplicate-token race included once its retries are
	// spent), any other status, or an answer that is not a login result.
	LoginUnreachable LoginOutcome = "unreachable"
)

// LoginOutcomes lists every login outcome.
func LoginOutcomes() []LoginOutcome { return []LoginOutcome{LoginOK, LoginRejected, LoginUnreachable} }
