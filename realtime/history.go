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
	sched    listSchedule
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

// listSchedule is what decides when one of the gateway's lists (the active
// alarm list, the alarm history, the activity log) is read with a
// module-list poll (see readDue). Loop-owned. A change signal does not go
// through it: it reads the list at once.
type listSchedule struct {
	last time.Time // when the last read began; zero = never
	// owed: the next poll reads the list whatever the interval says: the
	// last read failed or left pages for later, or a module joined.
	owed bool
}

func (s *listSchedule) began(now time.Time) { s.last, s.owed = now, false }

func (s *listSchedule) due(now time.Time, safety time.Duration) bool {
	return readDue(now, s.last, s.owed, safety)
}

// readDue says whether a list last read at last (zero = never) is read with
// the module-list poll at now. The lists change seldom and each read costs
// the cloud a request, so a healthy list is read once a safety interval,
// the bound on what the change signals miss (an alarm that began and ended
// between two polls moves no count a poll sees); owed reads at once, and a
// safety interval of 0 reads with every poll. A clock that went back
// proves nothing about the time since the last read: read.
func readDue(now, last time.Time, owed bool, safety time.Duration) bool {
	return owed || last.IsZero() || safety <= 0 || now.Before(last) || !now.Before(last.Add(safety))
}

// readListsDue, at a module-list poll, reads the lists whose turn it is.
// The poll nearest the end of the safety interval reads: the poll a whole
// number of intervals after the read is a hair early as often as late, and
// waiting a poll more then would slip every read by a poll.
func (g *Gateway) readListsDue(ctx context.Context) {
	now, safety := g.cfg.Now().Add(g.cfg.PollInterval/2), g.cfg.HistorySafetyInterval
	if g.alarmsRead.due(now, safety) {
		g.pollAlarms(ctx)
	}
	if g.alarmHistory.sched.due(now, safety) {
		readList(ctx, g, g.alarmHistory)
	}
	if g.activityLog.sched.due(now, safety) {
		readList(ctx, g, g.activityLog)
	}
}

// watchHistory starts the trackers of modules newly watched (their watch
// begins now) and drops those of modules no longer watched. A module that
// joins has its lists read at the next poll, as they were before it joined.
func (g *Gateway) watchHistory(keep map[string]bool) {
	now := g.cfg.Now()
	for d := range keep {
		if g.history[d] == nil {
			g.history[d] = &moduleHistory{alarms: history.NewAlarms(history.Config{}, now), activity: history.NewActivity(history.Config{}, now)}
			g.alarmsRead.owed, g.alarmHistory.sched.owed, g.activityLog.sched.owed = true, true, true
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
	l.sched.began(g.cfg.Now())
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
	if !complete {
		l.sched.owed = true // failed, or pages left for later: the next poll reads on
	}
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
