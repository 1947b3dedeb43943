package status

import (
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/collector"
)

// loggedIn is an account holding a token that expires in 50 minutes.
func loggedIn() *collector.AccountState {
	return &collector.AccountState{
		HasToken: true, TokenIssuedAt: t0.Add(-10 * time.Minute), TokenExpires: t0.Add(50 * time.Minute),
		LastLogin: collector.LoginState{Outcome: cloudapi.LoginOK, At: t0.Add(-10 * time.Minute)}, TokensHeld: 1,
	}
}

// failedLogin is an account without a token whose last login failed for
// reason; the next login may be sent in 90 s.
func failedLogin(reason cloudapi.LoginOutcome, err string) *collector.AccountState {
	return &collector.AccountState{
		LastLogin:    collector.LoginState{Outcome: reason, At: t0.Add(-30 * time.Second), Err: err},
		LoginRetryAt: t0.Add(90 * time.Second),
	}
}

// TestAccountSaysWhyTheLoginFails: the account's line and headline card
// say why the login fails and when it is tried again, and that the cloud
// throttles the account; a healthy account has its line and no card; the
// summary never claims a token the account does not hold.
func TestAccountSaysWhyTheLoginFails(t *testing.T) {
	rejected := &collector.AccountState{
		LastLogin:            collector.LoginState{Outcome: cloudapi.LoginRejected, At: t0.Add(-time.Minute), Err: "POST /v1/auth/user: HTTP 401"},
		CredentialsHeldUntil: t0.Add(59 * time.Minute),
	}
	throttled := loggedIn()
	throttled.PausedUntil, throttled.Pauses = t0.Add(90*time.Second), 2
	blockedThrottled := failedLogin(cloudapi.LoginRateLimited, "")
	blockedThrottled.PausedUntil = t0.Add(45 * time.Second)
	for _, tc := range []struct {
		name         string
		account      *collector.AccountState
		state, class string
		lines        []string // in the account line and the card's detail
		token        string   // the summary's token line
	}{
		{"logged in", loggedIn(), "", "", nil, "access token (shared): 2026-11-21 14:50:00 UTC (in 50m00s)"},
		{"blocked by a firewall's page", failedLogin(cloudapi.LoginBlocked, "POST /v1/auth/user: HTTP 403"), "LOGIN BLOCKED", classWarn,
			[]string{"the login was refused by something in front of the cloud (HTTP 403 page), retrying at 2026-11-21 14:01:30 UTC (in 1m30s)"},
			"access token (shared): none (not logged in)"},
		{"blocked, the status unknown", failedLogin(cloudapi.LoginBlocked, ""), "LOGIN BLOCKED", classWarn,
			[]string{"refused by something in front of the cloud (an HTML or empty page)"}, "none (not logged in)"},
		{"rate limited and throttled", blockedThrottled, "THROTTLED · LOGIN RATE LIMITED", classWarn,
			[]string{"the cloud throttles this account's logins; retrying at 2026-11-21 14:01:30 UTC (in 1m30s)",
				"the cloud is throttling this account: every request waits 45 more seconds"},
			"none (not logged in)"},
		{"unreachable", failedLogin(cloudapi.LoginUnreachable, "POST /v1/auth/user: HTTP 502"), "LOGIN UNREACHABLE", classWarn,
			[]string{"the login got no answer from the cloud (POST /v1/auth/user: HTTP 502); retrying at 2026-11-21 14:01:30 UTC (in 1m30s)"},
			"none (not logged in)"},
		{"credentials rejected and held", rejected, "CREDENTIALS REJECTED", classBad,
			[]string{"the cloud rejected the password; not sending it again before 2026-11-21 14:59:00 UTC (in 59m00s) unless it changes"},
			"access token (shared): none (not logged in)"},
		{"throttled while logged in", throttled, "THROTTLED", classWarn,
			[]string{"the cloud is throttling this account: every request waits 90 more seconds (until 2026-11-21 14:01:30 UTC)"},
			"2026-11-21 14:50:00 UTC (in 50m00s)"},
		{"before the first login", &collector.AccountState{}, "NOT LOGGED IN", classUnknown, nil, "access token (shared): none (not logged in)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := twoObjects(func(*collector.ObjectState) {})
			s.Account = tc.account
			doc := parsePage(t, render(t, s, Options{}))
			state, class, detail := cardStates(part(t, doc, "cards", ""))
			if state[accountCardLabel] != tc.state || class[accountCardLabel] != tc.class {
				t.Errorf("%s card: %q (%s), want %q (%s)", accountCardLabel, state[accountCardLabel], class[accountCardLabel], tc.state, tc.class)
			}
			line := part(t, doc, "account", "").Text
			if tc.state == "" && !strings.Contains(line, "LOGGED IN") {
				t.Errorf("a healthy account's line does not say it is logged in: %q", line)
			}
			for _, want := range tc.lines {
				if !strings.Contains(line, want) {
					t.Errorf("account line lacks %q: %q", want, line)
				}
				if !strings.Contains(detail[accountCardLabel], want) {
					t.Errorf("%s card detail lacks %q: %q", accountCardLabel, want, detail[accountCardLabel])
				}
			}
			if len(tc.lines) == 0 && strings.Contains(line, " · ") {
				t.Errorf("account line says something is wrong: %q", line)
			}
			sum := part(t, doc, "summary", "").Text
			if !strings.Contains(sum, tc.token) {
				t.Errorf("summary lacks %q: %q", tc.token, sum)
			}
		})
	}
}

// TestNoTokenClaimedWithoutOne: while the account holds no token the
// summary says so, even though the snapshot still carries the expiry of
// the token it held.
func TestNoTokenClaimedWithoutOne(t *testing.T) {
	s := twoObjects(func(*collector.ObjectState) {})
	s.TokenExpiry = t0.Add(50 * time.Minute)
	s.Account = failedLogin(cloudapi.LoginBlocked, "POST /v1/auth/user: HTTP 403")
	sum := part(t, parsePage(t, render(t, s, Options{})), "summary", "").Text
	if !strings.Contains(sum, "access token (shared): none (not logged in)") || strings.Contains(sum, "14:50:00") {
		t.Errorf("summary claims a token the account does not hold: %q", sum)
	}
	// A token that never expires.
	s.Account = loggedIn()
	s.Account.TokenExpires = time.Time{}
	if sum := part(t, parsePage(t, render(t, s, Options{})), "summary", "").Text; !strings.Contains(sum, "access token (shared): never expires") {
		t.Errorf("summary = %q", sum)
	}
}

// TestNoAccountNoAccountLine: a snapshot that does not know the account
// shows no account line and no account card, and the token as before.
func TestNoAccountNoAccountLine(t *testing.T) {
	doc := parsePage(t, render(t, twoObjects(func(*collector.ObjectState) {}), Options{}))
	if doc.byID("account") != nil {
		t.Error("an account line without an account")
	}
	if state, _, _ := cardStates(part(t, doc, "cards", "")); state[accountCardLabel] != "" {
		t.Errorf("an account card without an account: %q", state[accountCardLabel])
	}
}

// TestAccountErrorIsEscaped: the login error is the cloud's text.
func TestAccountErrorIsEscaped(t *testing.T) {
	s := twoObjects(func(*collector.ObjectState) {})
	s.Account = failedLogin(cloudapi.LoginUnreachable, `<script>alert("x")</script>&`+"\x01")
	page := render(t, s, Options{})
	if strings.Contains(string(page), "<script>alert") {
		t.Fatal("the login error reached the page unescaped")
	}
	line := part(t, parsePage(t, page), "account", "").Text
	if !strings.Contains(line, `<script>alert("x")</script>&`+"\uFFFD") {
		t.Errorf("account line = %q", line)
	}
}
