package outage

import (
	"testing"
	"time"
)

// FuzzSession drives the session machine with arbitrary event sequences
// and checks its invariants after every event: it never panics, down_for
// is never negative, last_* appear only through a restore or a stop while
// down, and the published bit matches the state.
func FuzzSession(f *testing.F) {
	f.Add([]byte{0, 1, 5, 2, 0}, uint8(15))
	f.Add([]byte{0, 1, 2, 3, 4, 0, 1, 0}, uint8(0))
	f.Add([]byte{0, 3, 3, 4, 4, 0, 2, 2}, uint8(3))
	f.Fuzz(func(t *testing.T, ops []byte, hyst uint8) {
		eps := NewEpisodes(5)
		s := NewSession(SessionConfig{Hysteresis: time.Duration(hyst) * time.Second, Episodes: eps})
		now := t0
		reasons := append(SessionReasons(), "", "connect", "garbage")
		hadLast := false
		for i, b := range ops {
			// time moves by 0..7 s, occasionally backwards by 1 s.
			step := time.Duration(b>>5) * time.Second
			if b&0x10 != 0 && i%7 == 3 {
				step = -time.Second
			}
			now = now.Add(step)
			var r SessionResult
			switch b % 5 {
			case 0:
				r = s.Connected(now)
			case 1:
				r = s.Disconnected(now, reasons[int(b)%len(reasons)])
			case 2:
				r = s.Abort(now, reasons[int(b)%len(reasons)])
			case 3:
				r = s.Tick(now)
			case 4:
				r = s.Stop(now)
			}
			snap := s.Snapshot(now)
			if snap.Outage.DownFor < 0 || snap.Outage.LastDownFor < 0 || r.RestoredAfter < 0 {
				t.Fatalf("negative duration after op %d: %+v %+v", i, snap.Outage, r)
			}
			if snap.Outage.HasLast && !hadLast && !r.Restored && r.Episode == nil {
				t.Fatalf("last_* set without a restore or stop-while-down (op %d): %+v", i, r)
			}
			if r.Restored && (r.Episode == nil || !snap.Outage.HasLast) {
				t.Fatalf("restore without episode/last_* (op %d): %+v", i, r)
			}
			if r.Up != snap.Up || (snap.Up != (snap.State == SessionUp || snap.State == SessionPendingDown)) {
				t.Fatalf("published bit inconsistent (op %d): %+v %+v", i, r, snap)
			}
			if snap.Outage.Down != (snap.State == SessionDown) {
				t.Fatalf("open window iff down (op %d): %+v", i, snap)
			}
			if snap.Outage.Down && (snap.Outage.Reason == "connect" || NormalizeReason(snap.Outage.Reason) != snap.Outage.Reason) {
				t.Fatalf("reason %q is not a reason token", snap.Outage.Reason)
			}
			hadLast = snap.Outage.HasLast
		}
	})
}
