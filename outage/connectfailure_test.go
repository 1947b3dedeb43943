package outage

import (
	"testing"
	"time"
)

// A session that went down on a disconnect and then fails to reconnect
// keeps the disconnect as its outage reason and publishes the latest
// failed connect beside it, until a connect succeeds.
func TestSessionConnectFailureBesideOutageReason(t *testing.T) {
	s := NewSession(SessionConfig{Hysteresis: 15 * time.Second})
	s.ConnectFailed(ReasonLoginRejected) // at start, the login before the first connect: recorded
	if got := s.Snapshot(at(0)).ConnectFailure; got != ReasonLoginRejected {
		t.Fatalf("login failure before the first session = %q", got)
	}
	s.ConnectFailed(ReasonHandshake503) // at start, before any session: recorded
	if got := s.Snapshot(at(0)).ConnectFailure; got != ReasonHandshake503 {
		t.Fatalf("connect failure before the first session = %q", got)
	}
	s.Connected(at(1))
	if got := s.Snapshot(at(1)).ConnectFailure; got != "" {
		t.Fatalf("connect failure after a connect = %q, want none", got)
	}
	s.ConnectFailed(ReasonConnectError) // while up: not a reconnect, ignored
	if got := s.Snapshot(at(2)).ConnectFailure; got != "" {
		t.Fatalf("connect failure recorded while up: %q", got)
	}

	s.Disconnected(at(10), ReasonDisconnect)
	s.ConnectFailed(ReasonHandshake503)
	s.Tick(at(30))
	snap := s.Snapshot(at(30))
	if snap.Up || snap.Outage.Reason != ReasonDisconnect || snap.ConnectFailure != ReasonHandshake503 {
		t.Fatalf("snapshot = %+v, want down for disconnect with handshake_503 beside it", snap)
	}
	s.ConnectFailed(ReasonLoginUnreachable) // the reconnect's login got no answer
	if got := s.Snapshot(at(31)).ConnectFailure; got != ReasonLoginUnreachable {
		t.Fatalf("a failed login before a reconnect recorded as %q", got)
	}
	s.ConnectFailed(ReasonConnectError)
	s.ConnectFailed("something new")
	if got := s.Snapshot(at(31)).ConnectFailure; got != ReasonConnectError {
		t.Fatalf("an unknown reason recorded as %q, want connect_error", got)
	}
	if got := s.Snapshot(at(31)).Outage.Reason; got != ReasonDisconnect {
		t.Fatalf("outage reason changed to %q by failed connects", got)
	}
	s.Connected(at(40))
	snap = s.Snapshot(at(40))
	if snap.ConnectFailure != "" || snap.Outage.LastReason != ReasonDisconnect {
		t.Fatalf("after the restore: %+v", snap)
	}

	// A blink clears it too, and so does a stop.
	s.Disconnected(at(50), ReasonEIOClose)
	s.ConnectFailed(ReasonHandshake503)
	s.Connected(at(51))
	if got := s.Snapshot(at(51)).ConnectFailure; got != "" {
		t.Fatalf("after a blink: %q", got)
	}
	s.Disconnected(at(60), ReasonEIOClose)
	s.ConnectFailed(ReasonHandshake503)
	s.Stop(at(61))
	if got := s.Snapshot(at(61)).ConnectFailure; got != "" {
		t.Fatalf("after stop: %q", got)
	}
}
