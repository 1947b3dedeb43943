package cloudapi

import (
	"slices"
	"time"
)

// AccountState is the account's standing with the cloud at one instant:
// the token it holds, its last login and the backoffs that follow a failed
// one, and the cloud's throttling. One login and one token serve every
// object of the account.
type AccountState struct {
	// HasToken: an access token is held. TokenIssuedAt and TokenExpires
	// (zero: it does not expire) are meaningful only then.
	HasToken      bool
	TokenIssuedAt time.Time
	TokenExpires  time.Time

	// PausedUntil is the end of the account-wide throttle pause (zero or
	// past: none); Pauses counts the throttling answers that paused it.
	PausedUntil time.Time
	Pauses      uint64

	// LastLogin is the last login attempt; its Outcome is "" before the
	// first.
	LastLogin LoginState
	// LoginRetryAt is the end of the account-wide backoff after a failed
	// login (zero: none).
	LoginRetryAt time.Time
	// CredentialsHeldUntil: the cloud rejected the credentials; they are
	// not sent again before this time unless they change (zero: none).
	CredentialsHeldUntil time.Time

	// TokensHeld counts the tokens obtained and not yet revoked, the
	// current one included; SupersededRevoked the superseded tokens
	// revoked since the start.
	TokensHeld        int
	SupersededRevoked uint64
	// RevokeDisabled: the cloud's revoke ended every session of the user,
	// so superseded tokens are left to expire.
	RevokeDisabled bool
}

// LoginState is the outcome of one login attempt.
type LoginState struct {
	Outcome LoginOutcome // "" before the first attempt
	At      time.Time
	Err     string // compact: endpoint and status, never a page
}

// LoginFailure reports whether the last login failed, and why: one of
// LoginFailures (an outcome outside them reads as unreachable,
// as bragerone_logins_total counts it).
func (a *AccountState) LoginFailure() (LoginOutcome, bool) {
	switch o := a.LastLogin.Outcome; {
	case o == "" || o == LoginOK:
		return "", false
	case slices.Contains(LoginFailures(), o):
		return o, true
	default:
		return LoginUnreachable, true
	}
}

// Paused returns how long the throttle pause still lasts at now (0: none).
func (a *AccountState) Paused(now time.Time) time.Duration {
	return max(0, a.PausedUntil.Sub(now))
}

// NextLogin is when the next login may be sent: the later of the login
// backoff and the hold on rejected credentials that are still ahead of
// now; ok is false when neither is.
func (a *AccountState) NextLogin(now time.Time) (at time.Time, ok bool) {
	for _, t := range []time.Time{a.LoginRetryAt, a.CredentialsHeldUntil} {
		if t.After(now) && t.After(at) {
			at, ok = t, true
		}
	}
	return at, ok
}

// CredentialsHeld reports whether the rejected credentials are held at now.
func (a *AccountState) CredentialsHeld(now time.Time) bool {
	return a.CredentialsHeldUntil.After(now)
}
