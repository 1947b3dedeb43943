package cloudsim

import (
	"testing"
	"time"

	enginepacket "github.com/zishang520/socket.io/parsers/engine/v3/packet"
)

// Engine.IO timings of the ping tests: the timeout shorter than the
// interval, as the cloud sends them (20 s and 25 s).
const (
	testPingInterval = 100 * time.Millisecond
	testPingTimeout  = 60 * time.Millisecond
)

// answerPings reads frames, answers each ping with a pong, and returns once
// n pings were answered; it fails with the session's end reason when the
// cloud ends the session first.
func answerPings(t *testing.T, c *Cloud, w *rawWS, sid string, n int) {
	t.Helper()
	for answered := 0; answered < n; {
		f, err := w.read()
		if err != nil || f.opcode == 8 {
			var reason string
			eventually(t, "the session's end to be recorded", func() bool {
				s, ok := sessionBySID(c, sid)
				reason = s.Reason
				return ok && !s.Connected
			})
			t.Fatalf("the cloud ended a session whose every ping was answered, after %d pongs: %q", answered, reason)
		}
		if f.opcode == 1 && string(f.payload) == "2" {
			w.send("3")
			answered++
		}
	}
}

// TestAnsweredPingNeverEndsTheSession makes certain the race the cloud's
// pingGuard covers: the ping's goroutine is held between sending the ping
// and arming its timeout timer until the client's pong has been handled.
// Without the guard the timer armed late fires a ping timeout later and
// ends a session that answered every ping.
func TestAnsweredPingNeverEndsTheSession(t *testing.T) {
	c := startCloud(t, Options{PingInterval: testPingInterval, PingTimeout: testPingTimeout})
	pongs := make(chan struct{}, 16)
	held := make(chan struct{}, 16)
	eng := c.io.Engine()
	_ = eng.On("connection", func(args ...any) {
		conn, ok := elemOf(eng.Clients(), args[0])
		if !ok {
			return
		}
		// "flush" and "drain" come on the goroutine that flushes, under
		// the socket's flush lock: drain right after the send is queued,
		// before a ping's timeout timer is armed.
		pingQueued := false
		_ = conn.On("flush", func(a ...any) {
			wbuf, _ := a[0].([]*enginepacket.Packet)
			for _, p := range wbuf {
				if p != nil && p.Type == enginepacket.PING {
					pingQueued = true
				}
			}
		})
		_ = conn.On("drain", func(...any) {
			if !pingQueued {
				return
			}
			pingQueued = false
			select {
			case <-pongs:
				held <- struct{}{}
			case <-time.After(10 * time.Second):
			}
		})
		_ = conn.On("heartbeat", func(...any) { pongs <- struct{}{} })
	})
	tok := login(t, c)
	w := rawDial(t, c, tok)
	sid := w.join()
	const rounds = 4
	answerPings(t, c, w, sid, rounds)
	// The next ping comes only after the last pong: wait for its timeout
	// to have passed too.
	answerPings(t, c, w, sid, 1)
	if got := len(held); got < rounds {
		t.Fatalf("the ping's goroutine was held until the pong was handled %d times, want %d: the race was not made", got, rounds)
	}
	if s, ok := sessionBySID(c, sid); !ok || !s.Connected {
		t.Fatalf("session %s after %d answered pings: %+v", sid, rounds+1, s)
	}
}

// TestUnansweredPingEndsTheSession: the guard leaves a ping that gets no
// pong to time out as the library times it out.
func TestUnansweredPingEndsTheSession(t *testing.T) {
	c := startCloud(t, Options{PingInterval: testPingInterval, PingTimeout: testPingTimeout})
	tok := login(t, c)
	w := rawDial(t, c, tok)
	sid := w.join()
	answerPings(t, c, w, sid, 2)
	if ping := w.text(); ping != "2" {
		t.Fatalf("frame = %q, want a ping", ping)
	}
	w.endsBy()
	eventually(t, "the session to end", func() bool {
		s, ok := sessionBySID(c, sid)
		return ok && !s.Connected && s.Reason == "ping timeout"
	})
}
