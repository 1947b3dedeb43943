package status

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/collector"
)

// accountView is the account's standing with the cloud: one login and one
// token serve every object, so it is said once, above the objects.
type accountView struct {
	// State and Class are the headline's: the worst of the account's
	// conditions (rejected credentials, throttling, a failing login).
	State, Class string
	// Lines say what holds the account back, one sentence each; "" when
	// nothing does.
	Lines []string
}

// accountCardLabel heads the account's headline card.
const accountCardLabel = "Cloud account"

// httpStatus finds the status of a compact login error
// ("POST /v1/auth/user: HTTP 403").
var httpStatus = regexp.MustCompile(`\bHTTP (\d{3})\b`)

// buildAccount describes the account at now; nil when the snapshot does not
// know it.
func buildAccount(a *collector.AccountState, now time.Time, loc *time.Location) *accountView {
	if a == nil {
		return nil
	}
	v := &accountView{State: "LOGGED IN", Class: classOK}
	if !a.HasToken {
		v.State, v.Class = "NOT LOGGED IN", classUnknown
	}
	retry := "retrying at the next request"
	if at, ok := a.NextLogin(now); ok {
		retry = "retrying at " + fmtTime(at, loc) + " (in " + fmtDuration(at.Sub(now)) + ")"
	}
	reason, failed := a.LoginFailure()
	if failed {
		v.State, v.Class = "LOGIN FAILING", classWarn
		switch reason {
		case cloudapi.LoginRejected:
			v.State, v.Class = "CREDENTIALS REJECTED", classBad
			if a.CredentialsHeld(now) {
				v.Lines = append(v.Lines, "the cloud rejected the password; not sending it again before "+
					fmtTime(a.CredentialsHeldUntil, loc)+" (in "+fmtDuration(a.CredentialsHeldUntil.Sub(now))+") unless it changes")
			} else {
				v.Lines = append(v.Lines, "the cloud rejected the password at the last login; "+retry)
			}
		case cloudapi.LoginBlocked:
			v.State = "LOGIN BLOCKED"
			v.Lines = append(v.Lines, "the login was refused by something in front of the cloud ("+pageOf(a.LastLogin.Err)+"), "+retry)
		case cloudapi.LoginRateLimited:
			v.State = "LOGIN RATE LIMITED"
			v.Lines = append(v.Lines, "the cloud throttles this account's logins; "+retry)
		default:
			v.State = "LOGIN UNREACHABLE"
			line := "the login got no answer from the cloud"
			if e := clean(a.LastLogin.Err, maxShown); e != "" {
				line += " (" + e + ")"
			}
			v.Lines = append(v.Lines, line+"; "+retry)
		}
	}
	if left := a.Paused(now); left > 0 {
		secs := int((left + time.Second - 1) / time.Second)
		v.Lines = append(v.Lines, "the cloud is throttling this account: every request waits "+
			plural(secs, "more second", "more seconds")+" (until "+fmtTime(a.PausedUntil, loc)+")")
		if v.Class != classBad {
			v.Class = classWarn
			if failed {
				v.State = "THROTTLED · " + v.State
			} else {
				v.State = "THROTTLED"
			}
		}
	}
	return v
}

// pageOf says what answered a blocked login: "HTTP 403 page", or "an HTML
// or empty page" when the error does not say.
func pageOf(err string) string {
	if m := httpStatus.FindStringSubmatch(err); m != nil {
		return "HTTP " + m[1] + " page"
	}
	return "an HTML or empty page"
}

// accountCard is the account's headline card.
func accountCard(v *accountView) card {
	c := card{Label: accountCardLabel, State: v.State, Class: v.Class}
	if len(v.Lines) > 0 {
		c.Detail = strings.Join(v.Lines, "; ")
	}
	return c
}

// tokenLine is the summary's word on the shared access token: never one
// the account does not hold.
func tokenLine(s collector.Snapshot, now time.Time, loc *time.Location) string {
	exp := s.TokenExpiry
	if a := s.Account; a != nil {
		if !a.HasToken {
			return "none (not logged in)"
		}
		exp = a.TokenExpires
	}
	if exp.IsZero() {
		return "never expires"
	}
	return fmt.Sprintf("%s (in %s)", fmtTime(exp, loc), fmtDuration(exp.Sub(now)))
}
