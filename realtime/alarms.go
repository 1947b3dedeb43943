package realtime

import (
	"context"
	"slices"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// Alarm is one active alarm of a module, from the cloud's active alarm list
// (POST /v1/modules/alarms).
type Alarm struct {
	// Code is the alarm type code (the row's id, e.g. 38), not a unique key:
	// one alarm type is listed once per module.
	Code int
	// Symbol is the symbolic name sent with the row ("ERROR_BRAK_PALIWA");
	// "" when the row carries none.
	Symbol string
	// Since is when the alarm began (the row's created_at); zero when the
	// cloud sent none or nothing readable.
	Since time.Time
}

// maxAlarmPages bounds one alarm list fetch: a page holds
// cloudclient.DefaultListLimit rows, so this admits far more active alarms
// than a few boilers raise, while a cloud that keeps answering full pages
// cannot keep the poll going.
const maxAlarmPages = 10

// pollAlarms fetches the active alarm list of the watched modules, unless a
// fetch is in flight (then one more follows it). It runs when a module's
// alarm count changes (alarmsChanged) and with a module-list poll when its
// turn comes (readListsDue). A failure keeps the last list and touches no
// module, session or push state: the alarm list is its own, best-effort
// signal; the next poll reads it again.
func (g *Gateway) pollAlarms(ctx context.Context) {
	if g.life.Stopping || len(g.subscribed) == 0 {
		return
	}
	if g.alarmsInFlight {
		g.alarmsAgain = true
		return
	}
	g.alarmsInFlight = true
	g.alarmsRead.began(g.cfg.Now())
	modules := append([]string(nil), g.subscribed...)
	go func() {
		rows, err := g.fetchAlarms(ctx, modules)
		g.post(func() {
			g.alarmsInFlight = false
			if err != nil {
				lvl := g.log.Info
				if cloudclient.IsExpectedUpstream(err) || ctx.Err() != nil {
					lvl = g.log.Debug
				}
				lvl("active alarm list failed; keeping the last one", "err", compactErr(err))
				g.alarmsRead.owed = true
			} else {
				g.setActiveAlarms(modules, rows)
				g.observeActiveHistory(modules)
			}
			if g.alarmsAgain {
				g.alarmsAgain = false
				g.pollAlarms(ctx)
			}
		})
	}()
}

// alarmsChanged reads the active alarm list and the alarm history now: a
// module's alarm count moved, so an alarm began or ended (and a finished
// one is in the history).
func (g *Gateway) alarmsChanged(ctx context.Context) {
	g.pollAlarms(ctx)
	readList(ctx, g, g.alarmHistory)
}

// listedAlarms tells of a usable module list (before its rows are kept as
// the modules' last): a watched module whose alarm count (moduleAlarms)
// differs from its last listed one had an alarm begin or end since, which
// each module-list poll thus shows at no cost of its own.
func (g *Gateway) listedAlarms(ctx context.Context, l *cloudclient.ModuleListing) {
	for _, m := range l.Modules {
		if prev, ok := g.meta[m.Devid]; ok && g.isSubscribed(m.Devid) && prev.ModuleAlarms != m.ModuleAlarms {
			g.alarmsChanged(ctx)
			return
		}
	}
}

// fetchAlarms reads every page of the active alarm list (bounded).
func (g *Gateway) fetchAlarms(ctx context.Context, modules []string) ([]cloudclient.AlarmRow, error) {
	var all []cloudclient.AlarmRow
	for page := 1; page <= maxAlarmPages; page++ {
		rows, err := g.client.Alarms(ctx, cloudclient.ListRequest{Modules: modules, Page: page, Limit: cloudclient.DefaultListLimit})
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
		if len(rows) < cloudclient.DefaultListLimit {
			return all, nil
		}
	}
	g.log.Warn("active alarm list longer than the pages read; the rest is left out", "pages", maxAlarmPages)
	return all, nil
}

// setActiveAlarms replaces the active alarms of the fetched modules: a
// fetched module without rows has none. Rows of modules not watched are
// ignored; one alarm type listed twice for a module counts once, from its
// earliest start. The stored slices are never changed afterwards, so the
// published status shares them.
func (g *Gateway) setActiveAlarms(modules []string, rows []cloudclient.AlarmRow) {
	byDevid := make(map[string][]Alarm, len(modules))
	for _, d := range modules {
		if g.isSubscribed(d) {
			byDevid[d] = nil
		}
	}
	for _, r := range rows {
		list, ok := byDevid[r.Devid]
		if !ok {
			continue
		}
		if r.Problem == cloudclient.ProblemNoCode {
			continue // names no alarm; the history's tracker counts it dropped
		}
		// The decoder reads the row (docs/spec.md W-2.7c). A start it cannot
		// read leaves the alarm active with no start: the list says the alarm
		// is on now, which the page and the series must not lose; the
		// history, which keys an occurrence by its start, drops such a row.
		a := Alarm{Code: r.ID, Symbol: r.Symbol, Since: r.Start}
		i := slices.IndexFunc(list, func(x Alarm) bool { return x.Code == a.Code })
		switch {
		case i < 0:
			list = append(list, a)
		case !a.Since.IsZero() && (list[i].Since.IsZero() || a.Since.Before(list[i].Since)):
			list[i].Since = a.Since
		}
		if i >= 0 && list[i].Symbol == "" {
			list[i].Symbol = a.Symbol
		}
		byDevid[r.Devid] = list
	}
	for d, list := range byDevid {
		slices.SortFunc(list, func(a, b Alarm) int { return a.Code - b.Code })
		g.activeAlarms[d] = list
	}
}
