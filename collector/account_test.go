package collector

import (
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
)

// accountOKSnapshot: the healthy account, logged in: a token issued 10
// minutes ago that expires in 50, two tokens held (the current one and a
// superseded one still in use), three superseded ones revoked, an old
// throttle pause long over.
func accountOKSnapshot() Snapshot {
	s := healthySnapshot()
	s.Account = &AccountState{
		HasToken: true, TokenIssuedAt: t0.Add(-10 * time.Minute), TokenExpires: t0.Add(50 * time.Minute),
		PausedUntil: t0.Add(-time.Hour), Pauses: 2,
		LastLogin:  LoginState{Outcome: cloudapi.LoginOK, At: t0.Add(-10 * time.Minute)},
		TokensHeld: 2, SupersededRevoked: 3,
	}
	return s
}

// accountThrottledSnapshot: Home's session is down and the account has
// no token: the cloud throttles it (90 s of its pause left), its last
// login was held back by the pause (rate_limited) and the next one waits
// for the login backoff, 2 minutes away. The snapshot still carries the
// expiry of the token the account no longer holds: it is not exported.
func accountThrottledSnapshot() Snapshot {
	s := sessionDownSnapshot()
	s.TokenExpiry = t0.Add(20 * time.Minute)
	s.Account = &AccountState{
		PausedUntil: t0.Add(90 * time.Second), Pauses: 4,
		LastLogin:    LoginState{Outcome: cloudapi.LoginRateLimited, At: t0.Add(-30 * time.Second), Err: "POST /v1/auth/user: 429"},
		LoginRetryAt: t0.Add(2 * time.Minute),
		TokensHeld:   1, SupersededRevoked: 1,
	}
	return s
}

// accountFamilies are the account's families; the token's expiry is
// tested on its own.
var accountFamilies = []string{
	"bragerone_rate_limit_pause_seconds", "bragerone_rate_limit_pauses_total", "bragerone_login_failure_reason",
	"bragerone_login_retry_timestamp_seconds", "bragerone_tokens_held", "bragerone_tokens_revoked_total",
}

func TestAccountSeries(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap Snapshot
		want map[string]map[string]float64 // family → series; a family not listed must be absent
	}{
		{"logged in", accountOKSnapshot(), map[string]map[string]float64{
			"bragerone_rate_limit_pause_seconds":       {"": 0},
			"bragerone_rate_limit_pauses_total":        {"": 2},
			"bragerone_tokens_held":                    {"": 2},
			"bragerone_tokens_revoked_total":           {"": 3},
			"bragerone_token_expiry_timestamp_seconds": {"": unixSeconds(t0.Add(50 * time.Minute))},
		}},
		{"throttled, no token", accountThrottledSnapshot(), map[string]map[string]float64{
			"bragerone_rate_limit_pause_seconds":      {"": 90},
			"bragerone_rate_limit_pauses_total":       {"": 4},
			"bragerone_login_failure_reason":          {"reason=rate_limited": 1},
			"bragerone_login_retry_timestamp_seconds": {"": unixSeconds(t0.Add(2 * time.Minute))},
			"bragerone_tokens_held":                   {"": 1},
			"bragerone_tokens_revoked_total":          {"": 1},
		}},
		{"before any login", Snapshot{Now: t0, Account: &AccountState{}}, map[string]map[string]float64{
			"bragerone_rate_limit_pause_seconds": {"": 0},
			"bragerone_rate_limit_pauses_total":  {"": 0},
			"bragerone_tokens_held":              {"": 0},
			"bragerone_tokens_revoked_total":     {"": 0},
		}},
		{"credentials rejected and held for an hour", Snapshot{Now: t0, Account: &AccountState{
			LastLogin:            LoginState{Outcome: cloudapi.LoginRejected, At: t0.Add(-time.Minute), Err: "POST /v1/auth/user: 401"},
			CredentialsHeldUntil: t0.Add(59 * time.Minute),
		}}, map[string]map[string]float64{
			"bragerone_rate_limit_pause_seconds":      {"": 0},
			"bragerone_rate_limit_pauses_total":       {"": 0},
			"bragerone_login_failure_reason":          {"reason=rejected": 1},
			"bragerone_login_retry_timestamp_seconds": {"": unixSeconds(t0.Add(59 * time.Minute))},
			"bragerone_tokens_held":                   {"": 0},
			"bragerone_tokens_revoked_total":          {"": 0},
		}},
		{"blocked, the backoff over: no retry time", Snapshot{Now: t0, Account: &AccountState{
			LastLogin:    LoginState{Outcome: cloudapi.LoginBlocked, At: t0.Add(-time.Minute)},
			LoginRetryAt: t0.Add(-time.Second), CredentialsHeldUntil: t0,
		}}, map[string]map[string]float64{
			"bragerone_rate_limit_pause_seconds": {"": 0},
			"bragerone_rate_limit_pauses_total":  {"": 0},
			"bragerone_login_failure_reason":     {"reason=blocked": 1},
			"bragerone_tokens_held":              {"": 0},
			"bragerone_tokens_revoked_total":     {"": 0},
		}},
		{"an outcome outside the vocabulary reads as unreachable", Snapshot{Now: t0, Account: &AccountState{
			LastLogin: LoginState{Outcome: "weird"},
		}}, map[string]map[string]float64{
			"bragerone_rate_limit_pause_seconds": {"": 0},
			"bragerone_rate_limit_pauses_total":  {"": 0},
			"bragerone_login_failure_reason":     {"reason=unreachable": 1},
			"bragerone_tokens_held":              {"": 0},
			"bragerone_tokens_revoked_total":     {"": 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := gather(t, newTestCollector(t, tc.snap, nil, Options{}))
			for _, name := range append(accountFamilies, "bragerone_token_expiry_timestamp_seconds") {
				want := tc.want[name]
				if len(g[name]) != len(want) {
					t.Errorf("%s = %v, want %v", name, g[name], want)
					continue
				}
				for key, v := range want {
					if got, ok := g[name][key]; !ok || got != v {
						t.Errorf("%s{%s} = %v (present %v), want %v", name, key, got, ok, v)
					}
				}
			}
		})
	}
}

// TestLoginFailureReasonFollowsLoginFailures: each failure outcome is its
// own reason value, and a failed login is said by one series only.
func TestLoginFailureReasonFollowsLoginFailures(t *testing.T) {
	for _, o := range cloudapi.LoginFailures() {
		s := Snapshot{Now: t0, Account: &AccountState{LastLogin: LoginState{Outcome: o, At: t0}}}
		got := gather(t, newTestCollector(t, s, nil, Options{}))["bragerone_login_failure_reason"]
		if len(got) != 1 || got["reason="+string(o)] != 1 {
			t.Errorf("last login %s: bragerone_login_failure_reason = %v, want {reason=%s} 1", o, got, o)
		}
	}
}

// TestTokenExpiryOnlyWhileATokenIsHeld: the expiry is never exported while
// the account holds no token, whatever the snapshot still remembers; a
// token that does not expire has none; without an account the snapshot's
// expiry is exported as before.
func TestTokenExpiryOnlyWhileATokenIsHeld(t *testing.T) {
	exp := t0.Add(20 * time.Minute)
	for _, tc := range []struct {
		name    string
		snap    Snapshot
		present bool
	}{
		{"no token, a stale expiry in the snapshot", Snapshot{Now: t0, TokenExpiry: exp, Account: &AccountState{TokenExpires: exp}}, false},
		{"a token that never expires", Snapshot{Now: t0, TokenExpiry: exp, Account: &AccountState{HasToken: true}}, false},
		{"a token", Snapshot{Now: t0, Account: &AccountState{HasToken: true, TokenExpires: exp}}, true},
		{"no account source", Snapshot{Now: t0, TokenExpiry: exp}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := gather(t, newTestCollector(t, tc.snap, nil, Options{}))["bragerone_token_expiry_timestamp_seconds"]
			if !tc.present {
				if len(got) != 0 {
					t.Fatalf("token expiry exported: %v", got)
				}
				return
			}
			if got[""] != unixSeconds(exp) {
				t.Fatalf("token expiry = %v, want %v", got, unixSeconds(exp))
			}
		})
	}
}

// TestNoAccountNoAccountSeries: a source that does not know the account
// exports none of its families.
func TestNoAccountNoAccountSeries(t *testing.T) {
	g := gather(t, newTestCollector(t, healthySnapshot(), nil, Options{}))
	for _, name := range accountFamilies {
		if len(g[name]) != 0 {
			t.Errorf("%s exported without an account: %v", name, g[name])
		}
	}
}
