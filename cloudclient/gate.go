package cloudclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// The account's gate: every request of one account passes one Client, so
// the Client is where the account's manners toward the cloud live. This file
// holds its pure decisions (how long to pause for a throttling answer, how
// long to wait after a failed login) and the typed errors that say a request
// or a login was held back; auth.go and client.go execute them.

// Defaults of the gate's Config fields.
const (
	// DefaultThrottleCap caps the pause a throttling answer asks for: a
	// cloud asking for a day is still asked again after this long.
	DefaultThrottleCap = 15 * time.Minute
	// DefaultThrottleBase is the first pause of a 429 without Retry-After;
	// it doubles with each throttling answer in a row, up to the cap.
	DefaultThrottleBase = 10 * time.Second
	// DefaultLoginRetryBase is the account-wide pause after a failed login
	// (one that is no verdict on the password); it doubles with each
	// failure in a row, up to DefaultLoginRetryMax.
	DefaultLoginRetryBase = time.Second
	DefaultLoginRetryMax  = 5 * time.Minute
	// DefaultRejectedRetry is how long a password the cloud rejected is not
	// sent again, unless the credentials change: clouds lock accounts that
	// keep trying a wrong password.
	DefaultRejectedRetry = time.Hour
	// DefaultRevokeTimeout bounds the revoke of a superseded token.
	DefaultRevokeTimeout = 5 * time.Second
)

// maxThrottleJitter bounds the jitter added to a throttle pause, so the
// exporter and the owner's other clients do not return in step.
const maxThrottleJitter = 5 * time.Second

// pauseHistory is how many finished or running pauses the gate remembers
// for PausedDuring.
const pauseHistory = 64

// ParseRetryAfter reads an HTTP Retry-After value: delay seconds or an HTTP
// date (RFC 9110, section 10.2.3). A date in the past is a delay of 0. ok is false
// for an absent or unreadable value.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if n < 0 {
			return 0, false
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(0, t.Sub(now)), true
}

// ThrottlePause decides whether an answer of the API host throttles the
// account and for how long: a 429 always (for Retry-After, else base
// doubled by each throttling answer before it in a row, streak), a 503 only
// with a Retry-After (without one it is the ordinary maintenance answer).
// The pause is capped at limit; jitter is the caller's.
func ThrottlePause(status int, retryAfter string, now time.Time, streak int, base, limit time.Duration) (time.Duration, bool) {
	ra, hasRA := ParseRetryAfter(retryAfter, now)
	switch {
	case status == http.StatusTooManyRequests && hasRA:
		return min(ra, limit), true
	case status == http.StatusTooManyRequests:
		return doubled(base, streak, limit), true
	case status == http.StatusServiceUnavailable && hasRA:
		return min(ra, limit), true
	}
	return 0, false
}

// LoginRetryAfter is the account-wide pause after the failures-th failed
// login in a row (failures ≥ 1).
func LoginRetryAfter(failures int, base, limit time.Duration) time.Duration {
	return doubled(base, failures-1, limit)
}

// doubled is base·2^n, at most limit.
func doubled(base time.Duration, n int, limit time.Duration) time.Duration {
	d := base
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// ThrottledError is a request the account's throttle pause held back
// without sending it (a client that does not wait out pauses, the tools'),
// or a login held back for the same reason.
type ThrottledError struct {
	Endpoint string
	Until    time.Time // when the cloud allows requests again
	// Err is why a request that waited for the pause gave up (its
	// context ended first); nil for one not held.
	Err error
}

func (e *ThrottledError) Error() string {
	s := fmt.Sprintf("cloudclient: %s: not sent: the cloud is throttling this account's requests until %s",
		e.Endpoint, e.Until.UTC().Format(time.RFC3339))
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *ThrottledError) Unwrap() error { return e.Err }

// LoginBackoffError is a login held back by the account-wide pause after a
// failed login: the outcome of the last attempt, shared by every caller
// until Until.
type LoginBackoffError struct {
	Until time.Time
	Err   error // the last login's error
}

func (e *LoginBackoffError) Error() string {
	return fmt.Sprintf("cloudclient: login not retried before %s: %v", e.Until.UTC().Format(time.RFC3339), e.Err)
}

func (e *LoginBackoffError) Unwrap() error { return e.Err }

// CredentialsHeldError is a login not sent because the cloud rejected the
// same credentials before: they are sent again only once they change or at
// Until.
type CredentialsHeldError struct {
	Until time.Time
	Err   error // the verdict
}

func (e *CredentialsHeldError) Error() string {
	return fmt.Sprintf("cloudclient: the cloud rejected these credentials; not sending them again before %s unless they change: %v",
		e.Until.UTC().Format(time.RFC3339), e.Err)
}

func (e *CredentialsHeldError) Unwrap() error { return e.Err }

// RateLimited reports whether err is the cloud throttling the account (a
// 429, a 503 with Retry-After, or a request the pause held back) and until
// when, as far as the answer says (zero when it does not).
func RateLimited(err error, now time.Time) (until time.Time, ok bool) {
	var te *ThrottledError
	if errors.As(err, &te) {
		return te.Until, true
	}
	var ae *APIError
	if errors.As(err, &ae) {
		ra, hasRA := ParseRetryAfter(ae.header("Retry-After"), now)
		switch {
		case ae.Status == http.StatusTooManyRequests && hasRA, ae.Status == http.StatusServiceUnavailable && hasRA:
			return now.Add(ra), true
		case ae.Status == http.StatusTooManyRequests:
			return time.Time{}, true
		}
	}
	return time.Time{}, false
}

// IsCredentialVerdict reports whether err means the account, not the
// cloud, is the problem: the login endpoint gave a verdict on the
// credentials (ClassifyLogin), or there are no credentials at all. Nothing
// else is: a 401 or 403 of another request is a token problem the client
// already answered with a fresh login, and a firewall's page is no verdict.
func IsCredentialVerdict(err error) bool {
	return errors.Is(err, ErrNoCredentials) || ClassifyLogin(err) == cloudapi.LoginRejected
}

// isCanceled: the caller abandoned the work; it says nothing about the cloud.
func isCanceled(err error) bool { return errors.Is(err, context.Canceled) }

// ThrottleAdvice says for a person that err is the cloud throttling the
// account and when it allows requests again, as the cloud asked; "" when
// err is no throttling.
func ThrottleAdvice(err error, now time.Time) string {
	until, ok := RateLimited(err, now)
	switch {
	case !ok:
		return ""
	case until.IsZero():
		return "the cloud is throttling this account's requests (HTTP 429, no time given); try again in a few minutes"
	}
	return fmt.Sprintf("the cloud is throttling this account's requests; it asks to wait %s (until %s)",
		until.Sub(now).Round(time.Second), until.UTC().Format(time.RFC3339))
}
