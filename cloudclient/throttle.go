package cloudclient

import (
	"context"
	"strconv"
	"time"
)

// The throttle pause: when the API host throttles the account (a 429, or a
// 503 with Retry-After), every request of the account to it waits (or, for
// a client that does not hold requests, fails with *ThrottledError) until
// the pause the cloud asked for is over, capped and jittered: no poll, no
// prime retry, no history read, no login, no handshake meanwhile. The
// assets host is not paused: it has its own retry rule.

// pauseSpan is one throttle pause, from the answer that armed it to its end.
type pauseSpan struct{ from, to time.Time }

// noteThrottle arms or extends the pause after an answer of the API host; a
// successful answer ends the streak of throttling answers (an error that is
// no throttling says nothing about whether the throttling ended).
func (c *Client) noteThrottle(tmpl string, status int, retryAfter string) {
	now := c.cfg.Now()
	c.mu.Lock()
	d, ok := ThrottlePause(status, retryAfter, now, c.pauseStreak, c.cfg.ThrottleBase, c.cfg.ThrottleCap)
	if !ok {
		if status < 400 {
			c.pauseStreak = 0
		}
		c.mu.Unlock()
		return
	}
	c.pauseStreak++
	c.pauseCount++
	d += c.jitter(min(d/10, maxThrottleJitter))
	until := now.Add(d)
	started := !now.Before(c.pausedUntil)
	if until.After(c.pausedUntil) {
		if started || len(c.pauses) == 0 {
			c.pauses = append(c.pauses, pauseSpan{from: now, to: until})
			if len(c.pauses) > pauseHistory {
				c.pauses = c.pauses[len(c.pauses)-pauseHistory:]
			}
		} else {
			c.pauses[len(c.pauses)-1].to = until
		}
		c.pausedUntil = until
	}
	until = c.pausedUntil
	c.mu.Unlock()
	c.recordTransition("pause", map[string]string{"endpoint": tmpl, "status": strconv.Itoa(status),
		"retry_after": retryAfter, "until": until.UTC().Format(time.RFC3339Nano), "started": strconv.FormatBool(started)})
	if started {
		c.log.Warn("the cloud is throttling this account; pausing every request to it", "endpoint", tmpl,
			"status", status, "retry_after", retryAfter, "for", until.Sub(now).Round(time.Second))
	}
}

// waitThrottle waits for the account's throttle pause to end, or fails at
// once with *ThrottledError when the client does not hold requests.
func (c *Client) waitThrottle(ctx context.Context, tmpl string) error {
	for {
		c.mu.Lock()
		until := c.pausedUntil
		c.mu.Unlock()
		left := until.Sub(c.cfg.Now())
		if left <= 0 {
			return nil
		}
		if !c.cfg.HoldWhileThrottled {
			return &ThrottledError{Endpoint: tmpl, Until: until}
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return &ThrottledError{Endpoint: tmpl, Until: until, Err: ctx.Err()}
		case <-t.C:
		}
	}
}

// PausedUntil returns the end of the account's throttle pause (zero or in
// the past: none).
func (c *Client) PausedUntil() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pausedUntil
}

// Paused reports whether the account's requests are paused at now.
func (c *Client) Paused(now time.Time) bool { return now.Before(c.PausedUntil()) }

// PausedDuring returns how much of [from, to) the account spent paused: the
// live silence of a session in that time is the cloud's throttling, not a
// zombie.
func (c *Client) PausedDuring(from, to time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total time.Duration
	for _, p := range c.pauses {
		lo, hi := p.from, p.to
		if from.After(lo) {
			lo = from
		}
		if to.Before(hi) {
			hi = to
		}
		if hi.After(lo) {
			total += hi.Sub(lo)
		}
	}
	return total
}
