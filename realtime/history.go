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
// as package history takes it (R: history.AlarmRow of the alarm history,
// history.ChangeRow of the activity log), its decoder's verdict included.
type listRow[R any] struct {
	devid string
	row   R
}

// listReader reads one of a gateway's lists (the alarm history or the
// activity log) incrementally: one read in flight, another after it when
// asked meanwhile, a sweep of pages as package history decides, and one
// log line per streak of failures.
type listReader[R any] struct {
	list     string // history.ListAlarmHistory or history.ListActivity
	fetch    func(ctx context.Context, c *cloudclient.Client, modules []string, page int) ([]listRow[R], error)
	tracker  func(h *moduleHistory) pageTracker[R]
	sweep    history.Sweep
	inFlight bool
	again    bool
	failures int // reads failed in a row
}

// The gateway's two list readers.
type (
	alarmHistoryReader = listReader[history.AlarmRow]
	activityReader     = listReader[history.ChangeRow]
)

// pageTracker is the part of a tracker a list read drives.
type pageTracker[R any] interface {
	BeginRead()
	ObservePage(now time.Time, rows []R) history.PageResult
	Horizon() time.Time
	end(complete bool)
}

type alarmsTracker struct{ *history.Alarms }

func (t alarmsTracker) end(complete bool) { t.EndRead(complete) }

type activityTracker struct{ *history.Activity }

func (t activityTracker) end(bool) { t.EndRead() }

// fetchPages is a list's fetch: a page of the list read for the modules,
// each row routed by its module and given as package history takes it.
func fetchPages[C, R any](read func(*cloudclient.Client, context.Context, cloudclient.ListRequest) ([]C, error),
	rowOf func(C) listRow[R]) func(context.Context, *cloudclient.Client, []string, int) ([]listRow[R], error) {
	return func(ctx context.Context, c *cloudclient.Client, modules []string, page int) ([]listRow[R], error) {
		rows, err := read(c, ctx, cloudclient.ListRequest{Modules: modules, Page: page, Limit: cloudclient.DefaultListLimit})
		out := make([]listRow[R], 0, len(rows))
		for _, r := range rows {
			out = append(out, rowOf(r))
		}
		return out, err
	}
}

func newAlarmHistoryReader() *alarmHistoryReader {
	return &alarmHistoryReader{
		list: history.ListAlarmHistory,
		fetch: fetchPages((*cloudclient.Client).AlarmHistory, func(r cloudclient.AlarmRow) listRow[history.AlarmRow] {
			o := history.Occurrence{Code: strconv.Itoa(r.ID), Symbol: r.Symbol, Start: r.Start, End: r.End}
			return listRow[history.AlarmRow]{r.Devid, history.AlarmRow{Occurrence: o, Problem: r.Problem}}
		}),
		tracker: func(h *moduleHistory) pageTracker[history.AlarmRow] { return alarmsTracker{h.alarms} },
	}
}

func newActivityReader() *activityReader {
	return &activityReader{
		list: history.ListActivity,
		fetch: fetchPages((*cloudclient.Client).Activity, func(r cloudclient.ActivityRow) listRow[history.ChangeRow] {
			return listRow[history.ChangeRow]{r.Devid, history.ChangeRow{ID: r.ID, At: r.At, State: r.State, Problem: r.Problem, Fields: r.Raw}}
		}),
		tracker: func(h *moduleHistory) pageTracker[history.ChangeRow] { return activityTracker{h.activity} },
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
	readList(ctx, g, g.alarmHistory)
	readList(ctx, g, g.activityLog)
}

// readList starts a read of list l unless one is in flight (then one more
// follows it). A failure costs that read only: the trackers keep their
// counts and the sweep retries the failed page next time.
func readList[R any](ctx context.Context, g *Gateway, l *listReader[R]) {
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
	fetchListPage(ctx, g, l, modules, l.sweep.Begin(horizon), 1)
}

func fetchListPage[R any](ctx context.Context, g *Gateway, l *listReader[R], modules []string, page, read int) {
	go func() {
		rows, err := l.fetch(ctx, g.client, modules, page)
		g.post(func() { listPageRead(ctx, g, l, modules, page, read, rows, err) })
	}()
}

// listPageRead applies one page on the loop and reads the next when the
// sweep says so.
func listPageRead[R any](ctx context.Context, g *Gateway, l *listReader[R], modules []string, page, read int, rows []listRow[R], err error) {
	if err != nil {
		l.sweep.Failed(page)
		if l.failures == 0 {
			lvl := g.log.Info
			if ctx.Err() != nil {
				lvl = g.log.Debug
			}
			lvl("a module's alarm or activity list could not be read; counts kept, trying again with the next poll", "list", l.list, "page", page, "err", compactErr(err))
		}
		l.failures++
		endList(ctx, g, l, modules, false)
		return
	}
	if l.failures > 0 {
		g.log.Info("module list read again", "list", l.list, "failed_reads", l.failures)
		l.failures = 0
	}
	byDevid := map[string][]R{}
	for _, r := range rows {
		d := r.devid
		if d == "" && len(modules) == 1 {
			// A row that does not say its module, read for one module: its
			// problem (it names no module) is counted there.
			d = modules[0]
		}
		byDevid[d] = append(byDevid[d], r.row)
	}
	now := g.cfg.Now()
	var res history.PageResult
	for _, d := range modules {
		h := g.history[d]
		if h == nil {
			continue
		}
		res = res.Merge(l.tracker(h).ObservePage(now, byDevid[d]))
		h.refresh()
	}
	more, done := l.sweep.Next(page, read, len(rows) >= cloudclient.DefaultListLimit, res)
	if more && !g.life.Stopping && ctx.Err() == nil {
		fetchListPage(ctx, g, l, modules, page+1, read+1)
		return
	}
	endList(ctx, g, l, modules, done)
}

func endList[R any](ctx context.Context, g *Gateway, l *listReader[R], modules []string, complete bool) {
	for _, d := range modules {
		if h := g.history[d]; h != nil {
			l.tracker(h).end(complete)
		}
	}
	l.inFlight = false
	if l.again {
		l.again = false
		readList(ctx, g, l)
	}
}
