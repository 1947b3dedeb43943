package cloudsim

import (
	"fmt"
	"slices"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// RaiseAlarm makes alarm code active on the module from now, as the cloud
// lists it (POST /v1/modules/alarms), and pushes the module's new alarm
// quantity. An alarm of that code already active is an error.
func (c *Cloud) RaiseAlarm(devid string, code int) error {
	c.mu.Lock()
	m := c.byDevid[devid]
	if m == nil {
		c.mu.Unlock()
		return fmt.Errorf("cloudsim: no module %q", devid)
	}
	if slices.IndexFunc(m.alarms, func(r map[string]any) bool { return rowCode(r) == code }) >= 0 {
		c.mu.Unlock()
		return fmt.Errorf("cloudsim: alarm %d of %s is already active", code, devid)
	}
	row := map[string]any{"id": code, "devid": devid, "created_at": c.now().UTC().Format(time.RFC3339), "finished_at": nil}
	if a := webapp.AlarmByID(code); a.Code != "" {
		row["name"] = a.Code
	}
	m.alarms = append(m.alarms, row)
	n := len(m.alarms)
	c.mu.Unlock()
	c.EmitAlarmsQuantity(devid, n)
	return nil
}

// ClearAlarm finishes the module's active alarm code now: it leaves the
// active list and joins the alarm history (POST /v1/modules/alarms/history)
// with its start and finished_at, and the module's new alarm quantity is
// pushed. An alarm not active is an error.
func (c *Cloud) ClearAlarm(devid string, code int) error {
	c.mu.Lock()
	m := c.byDevid[devid]
	if m == nil {
		c.mu.Unlock()
		return fmt.Errorf("cloudsim: no module %q", devid)
	}
	i := slices.IndexFunc(m.alarms, func(r map[string]any) bool { return rowCode(r) == code })
	if i < 0 {
		c.mu.Unlock()
		return fmt.Errorf("cloudsim: alarm %d of %s is not active", code, devid)
	}
	row := m.alarms[i]
	m.alarms = slices.Delete(slices.Clone(m.alarms), i, i+1)
	done := make(map[string]any, len(row))
	for k, v := range row {
		done[k] = v
	}
	done["finished_at"] = c.now().UTC().Format(time.RFC3339)
	m.history = append(m.history, done)
	n := len(m.alarms)
	c.mu.Unlock()
	c.EmitAlarmsQuantity(devid, n)
	return nil
}

// AlarmHistory returns a copy of the module's finished alarm rows, oldest
// first.
func (c *Cloud) AlarmHistory(devid string) []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.byDevid[devid]
	if m == nil {
		return nil
	}
	out := make([]map[string]any, 0, len(m.history))
	for _, r := range m.history {
		cp := make(map[string]any, len(r))
		for k, v := range r {
			cp[k] = v
		}
		out = append(out, cp)
	}
	return out
}

func rowCode(r map[string]any) int {
	switch v := r["id"].(type) {
	case int:
		return v
	case float64:
		return int(v)
	}
	return -1
}
