package realtime

import (
	"context"
	"strconv"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/history"
)

// History is what a watched module's alarm history, active alarm list and
// activity log said since the gateway began watching it; shared, never
// changed once published.
type History struct {
	Alarms   history.AlarmsSnapshot
	Activity history.ActivitySnapshot
}

// moduleHistory holds one watched module's trackers (loop-owned) and their
// last published picture.
type moduleHistory struct {
	alarms   *history.Alarms
	activity *history.Activity
	snap     *History // nil until a list was read for the module
}

func (h *moduleHistory) refresh() {
	h.snap = &History{Alarms: h.alarms.Snapshot(), Activity: h.activity.Snapshot()}
}

// listRow is one row of a list page, routed by its module: the decoded row
// as package history takes it (alarm of the alarm history, change of the
// activity log), its decoder's verdict included.
type listRow struct {
	devid  string
	alarm  history.AlarmRow
	change history.ChangeRow
}

// listReader reads one of a gateway's lists (the alarm history or the
// activity log) incrementally: one read in flight, another after it when
// asked meanwhile, a sweep of pages as package history decides, and one
// log line per streak of failures.
type listReader struct {
	list     string // history.ListAlarmHistory or history.ListActivity
	fetch    func(ctx context.Context, c *cloudclient.Client, modules []string, page int) ([]listRow, error)
	tracker  func(h *moduleHistory) pageTracker
	sweep    history.Sweep
	inFlight bool
	again    bool
	failures int // reads failed in a row
}

// pageTracker is the part of a tracker a list read drives.
type pageTracker interface {
	BeginRead()
	observe(now time.Time, rows []listRow) history.PageResult
	Horizon() time.Time
	end(complete bool)
}

type alarmsTracker struct{ *history.Alarms }

func (t alarmsTracker) observe(now time.Time, rows []listRow) history.PageResult {
	in := make([]history.AlarmRow, len(rows))
	for i, r := range rows {
		in[i] = r.alarm
	}
	return t.ObservePage(now, in)
}

func (t alarmsTracker) end(complete bool) { t.EndRead(complete) }

type activityTracker struct{ *history.Activity }

func (t activityTracker) observe(now time.Time, rows []listRow) history.PageResult {
	in := make([]history.ChangeRow, len(rows))
	for i, r := range rows {
		in[i] = r.change
	}
	return t.ObservePage(now, in)
}

func (t activityTracker) end(bool) { t.EndRead() }

func newAlarmHistoryReader() *listReader {
	return &listReader{
		list: history.ListAlarmHistory,
		fetch: func(ctx context.Context, c *cloudclient.Client, modules []string, page int) ([]listRow, error) {
			rows, err := c.AlarmHistory(ctx, cloudclient.ListRequest{Modules: modules, Page: page, Limit: cloudclient.DefaultListLimit})
			out := make([]listRow, 0, len(rows))
			for _, r := range rows {
				o := history.Occurrence{Code: strconv.Itoa(r.ID), Symbol: r.Symbol, Start: r.Start, End: r.End}
				out = append(out, listRow{devid: r.Devid, alarm: history.AlarmRow{Occurrence: o, Problem: r.Problem}})
			}
			return out, err
		},
		tracker: func(h *moduleHistory) pageTracker { return alarmsTracker{h.alarms} },
	}
}

func newActivityReader() *listReader {
	return &listReader{
		list: history.ListActivity,
		fetch: func(ctx context.Context, c *cloudclient.Client, modules []string, page int) ([]listRow, error) {
			rows, err := c.Activity(ctx, cloudclient.ListRequest{Modules: modules, Page: page, Limit: cloudclient.DefaultListLimit})
			out := make([]listRow, 0, len(rows))
			for _, r := range rows {
				c := history.ChangeRow{ID: r.ID, At: r.At, State: r.State, Problem: r.Problem, Fields: r.Raw}
				out = append(out, listRow{devid: r.Devid, change: c})
			}
			return out, err
		},
		tracker: func(h *moduleHistory) pageTracker { return activityTracker{h.activity} },
	}
}

// watchHistory starts the trackers of modules newly watched (their watch
// begins now) and drops those of modules no longer watched.
func (g *Gateway) watchHistory(keep map[string]bool) {
	now := g.cfg.Now()
	for d := range keep {
		if g.history[d] == nil {
			g.history[d] = &moduleHistory{alarms: history.NewAlarms(history.Config{}, now), activity: history.NewActivity(history.Config{}, now)}
		}
	}
	for d := range g.history {
		if !keep[d] {
			delete(g.history, d)
		}
	}
}

// observeActiveHistory tells the alarm trackers of the fetched modules
// their active alarm list.
func (g *Gateway) observeActiveHistory(modules []string) {
	now := g.cfg.Now()
	for _, d := range modules {
		h := g.history[d]
		list, ok := g.activeAlarms[d]
		if h == nil || !ok {
			continue
		}
		active := make([]history.Active, 0, len(list))
		for _, a := range list {
			active = append(active, history.Active{Code: strconv.Itoa(a.Code), Symbol: a.Symbol, Start: a.Since})
		}
		h.alarms.ObserveActive(now, active)
		h.refresh()
	}
}

// readHistory reads the alarm history and the activity log.
func (g *Gateway) readHistory(ctx context.Context) {
	g.readList(ctx, g.alarmHistory)
	g.readList(ctx, g.activityLog)
}

// readList starts a read of list l unless one is in flight (then one more
// follows it). A failure costs that read only: the trackers keep their
// counts and the sweep retries the failed page next time.
func (g *Gateway) readList(ctx context.Context, l *listReader) {
	if g.life.Stopping || len(g.subscribed) == 0 {
		return
	}
	if l.inFlight {
		l.again = true
		return
	}
	modules := append([]string(nil), g.subscribed...)
	var horizon time.Time
	for _, d := range modules {
		h := g.history[d]
		if h == nil {
			continue
		}
		t := l.tracker(h)
		t.BeginRead()
		if hz := t.Horizon(); horizon.IsZero() || hz.Before(horizon) {
			horizon = hz
		}
	}
	l.inFlight = true
	g.fetchListPage(ctx, l, modules, l.sweep.Begin(horizon), 1)
}

func (g *Gateway) fetchListPage(ctx context.Context, l *listReader, modules []string, page, read int) {
	go func() {
		rows, err := l.fetch(ctx, g.client, modules, page)
		g.post(func() { g.listPageRead(ctx, l, modules, page, read, rows, err) })
	}()
}

// listPageRead applies one page on the loop and reads the next when the
// sweep says so.
func (g *Gateway) listPageRead(ctx context.Context, l *listReader, modules []string, page, read int, rows []listRow, err error) {
	if err != nil {
		l.sweep.Failed(page)
		if l.failures == 0 {
			lvl := g.log.Info
			if ctx.Err() != nil {
				lvl = g.log.Debug
			}
			lvl("module list read failed; counts kept, trying again with the next poll", "list", l.list, "page", page, "err", compactErr(err))
		}
		l.failures++
		g.endList(ctx, l, modules, false)
		return
	}
	if l.failures > 0 {
		g.log.Info("module list read again", "list", l.list, "failed_reads", l.failures)
		l.failures = 0
	}
	byDevid := map[string][]listRow{}
	for _, r := range rows {
		d := r.devid
		if d == "" && len(modules) == 1 {
			// A row that does not say its module, read for one module: its
			// problem (it names no module) is counted there.
			d = modules[0]
		}
		byDevid[d] = append(byDevid[d], r)
	}
	now := g.cfg.Now()
	var res history.PageResult
	for _, d := range modules {
		h := g.history[d]
		if h == nil {
			continue
		}
		res = res.Merge(l.tracker(h).observe(now, byDevid[d]))
		h.refresh()
	}
	more, done := l.sweep.Next(page, read, len(rows) >= cloudclient.DefaultListLimit, res)
	if more && !g.life.Stopping && ctx.Err() == nil {
		g.fetchListPage(ctx, l, modules, page+1, read+1)
		return
	}
	g.endList(ctx, l, modules, done)
}

func (g *Gateway) endList(ctx context.Context, l *listReader, modules []string, complete bool) {
	for _, d := range modules {
		if h := g.history[d]; h != nil {
			l.tracker(h).end(complete)
		}
	}
	l.inFlight = false
	if l.again {
		l.again = false
		g.readList(ctx, l)
	}
}
