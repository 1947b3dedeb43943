package cloudsim

import (
	"testing"
	"time"
)

// An alarm raised and cleared leaves the active list and joins the history
// with its start and its end, as the REST lists show it.
func TestRaiseAndClearAlarm(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	c := startCloud(t, Options{Now: clock.Now})
	tok := login(t, c)
	devid := c.Devids()[0]
	list := func(path string) []any {
		t.Helper()
		body := call(t, c, "POST", path, tok, map[string]any{"modules": []string{devid}, "page": 1, "limit": 100}).json(t)
		alarms := body["alarms"]
		if m, ok := alarms.(map[string]any); ok {
			alarms = m["data"]
		}
		rows, _ := alarms.([]any)
		return rows
	}
	find := func(rows []any, code float64, start string) map[string]any {
		for _, r := range rows {
			if m := r.(map[string]any); m["id"] == code && m["created_at"] == start {
				return m
			}
		}
		return nil
	}
	activeBefore, historyBefore := len(list("/v1/modules/alarms")), len(list("/v1/modules/alarms/history"))

	if err := c.RaiseAlarm(devid, 57); err != nil {
		t.Fatal(err)
	}
	if err := c.RaiseAlarm(devid, 57); err == nil {
		t.Fatal("raising an alarm already active succeeded")
	}
	start := "2026-03-01T12:00:00Z"
	row := find(list("/v1/modules/alarms"), 57, start)
	if row == nil || row["finished_at"] != nil || row["name"] != "ERROR_NIEUDANE_ROZPALANIE" {
		t.Fatalf("active row = %v, want code 57 from %s, unfinished, named", row, start)
	}
	clock.Add(90 * time.Second)
	if err := c.ClearAlarm(devid, 57); err != nil {
		t.Fatal(err)
	}
	if err := c.ClearAlarm(devid, 57); err == nil {
		t.Fatal("clearing an alarm not active succeeded")
	}
	if err := c.RaiseAlarm("NOSUCH", 57); err == nil {
		t.Fatal("raising an alarm on an unknown module succeeded")
	}
	if n := len(list("/v1/modules/alarms")); n != activeBefore {
		t.Fatalf("active rows = %d after clearing, want %d", n, activeBefore)
	}
	hist := list("/v1/modules/alarms/history")
	row = find(hist, 57, start)
	if len(hist) != historyBefore+1 || row == nil || row["finished_at"] != "2026-03-01T12:01:30Z" {
		t.Fatalf("history = %v, want one more row: 57 from %s to 12:01:30", hist, start)
	}
	if got := len(c.AlarmHistory(devid)); got != historyBefore+1 {
		t.Fatalf("AlarmHistory holds %d rows, want %d", got, historyBefore+1)
	}
}
