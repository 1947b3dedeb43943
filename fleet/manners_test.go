package fleet

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/cloudsim"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/ladder"
)

// The account's manners toward the cloud, with five objects: logins shared
// whatever fails, tokens revoked once superseded and at the stop, the
// cloud's throttling waited out by every object, and a firewall's page at
// the first login no verdict on the password.

// freshLoginSteps counts the recovery steps an object took that log in
// afresh first (hard restart, recycle, rebuild) with one of outcomes, or
// whatever their result when none is given.
func freshLoginSteps(st ladder.State, outcomes ...ladder.Outcome) uint64 {
	if len(outcomes) == 0 {
		outcomes = ladder.Outcomes()
	}
	var n uint64
	for _, a := range []ladder.Action{ladder.HardRestart, ladder.Recycle, ladder.Rebuild} {
		for _, o := range outcomes {
			n += st.Count(a, o)
		}
	}
	return n
}

// backoffAttempts is how many login attempts the account's backoff allows
// within elapsed of the first: at 0, base, 3·base, 7·base, ...
func backoffAttempts(elapsed, base time.Duration) int {
	allowed, at := 0, time.Duration(0)
	for step := base; at <= elapsed; step *= 2 {
		allowed++
		at += step
	}
	return allowed
}

// loginOutage starts five objects (their gateways tuned by tune) on an
// account whose login backoff starts at base, and, once every object is
// live, has the cloud answer every login 503.
func loginOutage(t *testing.T, base time.Duration, tune func(*Config)) *account {
	t.Helper()
	a := startAccountWith(t, cloudsim.Options{Objects: 5, Modules: 5}, func(c *cloudclient.Config) {
		c.LoginRetryBase, c.LoginRetryMax = base, 10*time.Second
	}, tune, nil)
	a.waitAllLive(t)
	a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 503})
	a.sim.ResetCounters()
	return a
}

// zombieGateways makes every object's ladder climb in milliseconds, with
// cooldowns long against the poll so the objects stay in step as they
// would at the defaults (a 60 s poll against 300 s cooldowns).
func zombieGateways(c *Config) {
	gw := c.Gateway
	c.Gateway = func(id int) realtime.Config {
		cfg := gw(id)
		cfg.PollInterval = 20 * time.Millisecond
		cfg.Ladder.StaleAfter = 150 * time.Millisecond
		cfg.Ladder.CooldownBase = 250 * time.Millisecond
		cfg.Ladder.CooldownMax = 250 * time.Millisecond
		cfg.Ladder.QuarantineFor = time.Hour
		cfg.Ladder.ModuleOnlineDebounce = 0
		return cfg
	}
}

// A zombie episode of every object: each object's steps log in afresh, but
// the steps the objects take together share one login, so five objects
// cost hardly more logins than one does (two more at most), and far fewer
// than their steps.
func TestGlobalZombieSharesLogins(t *testing.T) {
	episode := func(t *testing.T, objects int) (logins int, most, sum uint64) {
		a := startAccount(t, objects, objects, zombieGateways, nil)
		a.waitAllLive(t)
		a.sim.ResetCounters()
		a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
		waitFor(t, "every object took three fresh-login steps", func() bool {
			for _, o := range a.fleet.Status().Objects {
				if freshLoginSteps(o.Gateway.Ladder) < 3 {
					return false
				}
			}
			return true
		})
		a.sim.ClearAll()
		logins = a.sim.Counters().LoginAttempts
		for _, o := range a.fleet.Status().Objects {
			n := freshLoginSteps(o.Gateway.Ladder)
			sum += n
			most = max(most, n)
		}
		t.Logf("%d objects: %d fresh-login steps (at most %d by one object), %d logins", objects, sum, most, logins)
		return logins, most, sum
	}
	one, oneSteps, _ := episode(t, 1)
	five, most, sum := episode(t, 5)
	if uint64(one) < oneSteps {
		t.Errorf("one object: %d logins for %d steps: each step logs in afresh", one, oneSteps)
	}
	// Each of one object's successive steps logs in (most); the steps of
	// the others taken with it share those logins.
	if uint64(five) > most+2 || uint64(five) >= sum {
		t.Errorf("five objects: %d logins for %d steps (%d by the busiest object): the objects' steps did not share their logins", five, sum, most)
	}
}

// Every token revoked at once (the cloud ended the sessions): every
// object's next request is refused, and the five share one login.
func TestRevokedTokenCostsOneLogin(t *testing.T) {
	a := startAccount(t, 5, 5, nil, nil)
	a.waitAllLive(t)
	a.sim.ResetCounters()
	a.sim.RevokeTokens()
	waitFor(t, "every object polled with the new token", func() bool {
		return a.sim.Counters().Logins >= 1 && a.sim.Counters().Requests["GET /v1/modules"] >= 10
	})
	if got := a.sim.Counters().LoginAttempts; got != 1 {
		t.Errorf("%d logins after the token was revoked, want 1 for five objects", got)
	}
}

// A login outage while every object needs a token: one attempt per step of
// the account's backoff, not one per object and poll.
func TestLoginOutageOneAttemptPerBackoffStep(t *testing.T) {
	const base = 200 * time.Millisecond
	a := loginOutage(t, base, nil)
	start := time.Now()
	a.sim.RevokeTokens()
	// Polls every 40 ms of five objects would try about 150 logins in
	// 1.2 s; the backoff allows attempts at 0, 0.2 and 0.6 s.
	waitFor(t, "1.2 s of login outage", func() bool { return time.Since(start) >= 1200*time.Millisecond })
	got := a.sim.Counters().LoginAttempts
	if allowed := backoffAttempts(time.Since(start), base); got < 1 || got > allowed {
		t.Errorf("%d login attempts in 1.2 s of outage, want 1 to %d (one per backoff step)", got, allowed)
	}
}

// Superseded tokens are revoked once nothing uses them, and a stop leaves
// no token of ours valid.
func TestNoTokenLeftBehind(t *testing.T) {
	a := startAccount(t, 5, 5, nil, nil)
	a.waitAllLive(t)
	waitFor(t, "five sessions joined", func() bool { return a.sim.Counters().Joins >= 5 })
	for range 3 {
		if err := a.cfg.Client.ForceRelogin(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// The sessions hold the first token until they end; the two tokens
	// no one used are revoked.
	waitFor(t, "the unused superseded tokens revoked", func() bool { return a.sim.Counters().TokensValid == 2 })
	a.stop()
	select {
	case err := <-a.done:
		a.done <- err // for the cleanup
	case <-time.After(15 * time.Second):
		t.Fatal("the fleet did not stop")
	}
	a.cfg.Client.LogoutOnExit()
	if got := a.sim.Counters().TokensValid; got != 0 {
		t.Errorf("%d tokens still valid after the stop, want 0", got)
	}
}

// A 429 with Retry-After on the module list pauses every object's REST
// traffic for the time asked: no request reaches the cloud meanwhile,
// no module goes offline, no session changes, no poll counts as failed.
func TestThrottleIsWaitedOutByEveryObject(t *testing.T) {
	for _, c := range []struct {
		name, path string
		date       bool
		// trigger makes the throttled request happen, when polls do not.
		trigger func(sim *cloudsim.Cloud)
	}{
		{"module list, seconds", "GET /v1/modules", false, nil},
		{"module list, http date", "GET /v1/modules", true, nil},
		{"prime after event 22", "POST /v1/modules/parameters", false, func(sim *cloudsim.Cloud) { sim.EmitMemoryUpdated(sim.Devids()[0]) }},
		{"alarm history", "POST /v1/modules/alarms/history", true, func(sim *cloudsim.Cloud) {
			d := sim.Devids()[0]
			_ = sim.RaiseAlarm(d, 91)
			sim.EmitAlarmsQuantity(d, 1)
		}},
	} {
		date := c.date
		t.Run(c.name, func(t *testing.T) {
			a := startAccountWith(t, cloudsim.Options{Objects: 5, Modules: 5}, func(c *cloudclient.Config) {
				c.HoldWhileThrottled = true
			}, nil, nil)
			a.waitAllLive(t)
			sessions := map[int]string{}
			for _, o := range a.fleet.Status().Objects {
				sessions[o.Object.ID] = o.Gateway.NamespaceSID
			}
			a.sim.ResetCounters()
			a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: c.path, Status: http.StatusTooManyRequests,
				RetryAfterS: 2, RetryAfterDate: date, Count: 1})
			if c.trigger != nil {
				c.trigger(a.sim)
			}
			waitFor(t, "the throttling answer", func() bool { return a.cfg.Client.Paused(time.Now()) })
			until := a.cfg.Client.PausedUntil()
			asked := a.sim.Counters().Requests
			// Checked until the pause ends: nothing more is asked, and
			// every object stays as it was.
			for time.Now().Before(until.Add(-100 * time.Millisecond)) {
				for _, o := range a.fleet.Status().Objects {
					g := o.Gateway
					if !g.Session.Up || g.NamespaceSID != sessions[o.Object.ID] || g.PollFailureStreak != 0 {
						t.Fatalf("object %d changed during the pause: up %v sid %s streak %d", o.Object.ID, g.Session.Up, g.NamespaceSID, g.PollFailureStreak)
					}
					for _, m := range g.Modules {
						if !m.Online {
							t.Fatalf("module %s went offline during the pause", m.Devid)
						}
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			// Requests already on the wire when the 429 came back may
			// still arrive (at most the client's slots, less the
			// throttled one); nothing is sent after.
			during := a.sim.Counters().Requests
			late := 0
			for ep, n := range during {
				if ep != "GET /socket.io/" && ep != "POST /socket.io/" {
					late += n - asked[ep]
				}
			}
			if late > cloudclient.DefaultMaxInFlight-1 {
				t.Errorf("%d requests reached the cloud during the pause, more than were in flight when it began: before %v, after %v", late, asked, during)
			}
			waitFor(t, "polls after the pause", func() bool { return a.sim.Counters().Requests["GET /v1/modules"] > during["GET /v1/modules"]+5 })
			// What the throttled request was for is asked again after
			// the pause.
			waitFor(t, "the throttled request asked again", func() bool { return a.sim.Counters().Requests[c.path] > during[c.path] })
		})
	}
}

// An HTML 403 from something in front of the cloud at the first login is
// no verdict on the password: the fleet keeps trying and comes up when the
// block ends. A JSON 401 is one: the start fails with ErrStartAuth.
func TestBlockAtFirstLoginIsNoVerdict(t *testing.T) {
	t.Run("html 403", func(t *testing.T) {
		a := startAccount(t, 2, 2, nil, func(c *cloudsim.Cloud) {
			c.Inject(cloudsim.Fault{Kind: cloudsim.FaultHTTPStatus, Path: "POST /v1/auth/user", Status: 403, HTML: true, Count: 3})
		})
		select {
		case <-a.fleet.Ready():
		case err := <-a.done:
			t.Fatalf("the fleet stopped on a firewall's page: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("not ready after the block ended")
		}
		if got := a.sim.Counters().LoginAttempts; got != 4 {
			t.Errorf("%d login attempts, want 4 (three blocked, one through)", got)
		}
	})
	t.Run("json 401", func(t *testing.T) {
		a := startAccountWith(t, cloudsim.Options{Objects: 2, Modules: 2}, func(c *cloudclient.Config) {
			c.Credentials = cloudclient.StaticCredentials(cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: "wrong"})
		}, nil, nil)
		select {
		case err := <-a.done:
			if !errors.Is(err, realtime.ErrStartAuth) {
				t.Fatalf("Run = %v, want ErrStartAuth", err)
			}
			a.done <- err // for the cleanup
		case <-time.After(20 * time.Second):
			t.Fatal("a rejected password did not stop the start")
		}
	})
}

// A password the cloud rejects while the exporter runs (changed by the
// owner in the app) is not sent again at every poll, reconnect or step of
// five objects: one login, then nothing until the password changes, when
// one login brings every object back.
func TestRejectedPasswordWhileRunningNoLoginStorm(t *testing.T) {
	var mu sync.Mutex
	password := cloudsim.DefaultPassword
	a := startAccountWith(t, cloudsim.Options{Objects: 5, Modules: 5}, func(c *cloudclient.Config) {
		c.Credentials = func(context.Context) (cloudclient.Credentials, error) {
			mu.Lock()
			defer mu.Unlock()
			return cloudclient.Credentials{Email: cloudsim.DefaultEmail, Password: password}, nil
		}
	}, nil, nil)
	a.waitAllLive(t)
	mu.Lock()
	password = "changed-in-the-app"
	mu.Unlock()
	a.sim.ResetCounters()
	a.sim.RevokeTokens()
	waitFor(t, "the rejected login", func() bool { return a.sim.Counters().LoginsRejected == 1 })
	waitFor(t, "twenty polls of five objects failed for want of a token", func() bool {
		failed := 0
		for _, o := range a.fleet.Status().Objects {
			failed += o.Gateway.PollFailureStreak
		}
		return failed >= 20
	})
	if got := a.sim.Counters().LoginAttempts; got != 1 {
		t.Fatalf("%d logins with the rejected password, want 1", got)
	}
	if held := a.cfg.Client.Account().CredentialsHeldUntil; held.Before(time.Now().Add(50 * time.Minute)) {
		t.Errorf("credentials held until %v, want about an hour", held)
	}
	mu.Lock()
	password = cloudsim.DefaultPassword
	mu.Unlock()
	waitFor(t, "one login with the new password", func() bool { return a.sim.Counters().Logins == 1 })
	a.waitAllLive(t)
	if got := a.sim.Counters().LoginAttempts; got != 2 {
		t.Errorf("%d logins in all, want 2 (the rejected one, then the changed password's)", got)
	}
}

// A cloud whose revoke ends every session of the user: the revoke of a
// superseded token ends the current one too. The exporter notices (the
// current token refused right after the revoke), logs in once more, and
// revokes no superseded token for the rest of the run.
func TestRevokeAllSessionsCloudIsLeftAlone(t *testing.T) {
	a := startAccountWith(t, cloudsim.Options{Objects: 5, Modules: 5, RevokeAllSessions: true}, nil, nil, nil)
	a.waitAllLive(t)
	a.sim.ResetCounters()
	// The sessions hold the first token; a new login supersedes it, and
	// once the sessions are replaced it is revoked, and with it every
	// token of the user, the current one included.
	if err := a.cfg.Client.ForceRelogin(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultCloseTransport})
	waitFor(t, "the revoke noticed as ending every session", func() bool { return a.cfg.Client.Account().RevokeDisabled })
	waitFor(t, "the objects poll again with a new token", func() bool {
		return a.sim.Counters().TokensValid == 1 && a.sim.Counters().Logins == 2
	})
	a.waitAllLive(t)
	if err := a.cfg.Client.ForceRelogin(context.Background()); err != nil {
		t.Fatal(err)
	}
	polls := a.sim.Counters().Requests["GET /v1/modules"]
	waitFor(t, "more polls", func() bool { return a.sim.Counters().Requests["GET /v1/modules"] >= polls+10 })
	if got := a.sim.Counters().Revokes; got != 1 {
		t.Errorf("%d revokes, want 1: a superseded token was revoked after the cloud showed its revoke ends every session", got)
	}
	if got := a.sim.Counters().LoginAttempts; got != 3 {
		t.Errorf("%d logins, want 3 (forced, after the revoke ended everything, forced)", got)
	}
}

// A login outage while every object climbs its ladder: each step meets the
// account's backoff and is aborted without a login of its own, so the
// attempts follow the backoff, not the objects' steps.
func TestLoginOutageWhileLaddersClimb(t *testing.T) {
	const base = 200 * time.Millisecond
	a := loginOutage(t, base, zombieGateways)
	start := time.Now()
	a.sim.Inject(cloudsim.Fault{Kind: cloudsim.FaultMutePushes})
	waitFor(t, "every object had two steps aborted", func() bool {
		for _, o := range a.fleet.Status().Objects {
			if freshLoginSteps(o.Gateway.Ladder, ladder.Aborted) < 2 {
				return false
			}
		}
		return true
	})
	elapsed := time.Since(start)
	allowed := backoffAttempts(elapsed, base)
	got := a.sim.Counters().LoginAttempts
	t.Logf("%v of login outage with five ladders climbing: %d attempts (the backoff allows %d)", elapsed.Round(time.Millisecond), got, allowed)
	if got > allowed {
		t.Errorf("%d login attempts in %v, more than the backoff's %d", got, elapsed, allowed)
	}
}
