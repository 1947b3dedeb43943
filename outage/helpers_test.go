package outage

import "time"

var t0 = time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)

// at returns t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
