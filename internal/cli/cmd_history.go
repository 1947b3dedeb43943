package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// historyCmd prints the past of modules as the cloud keeps it: the activity
// (change) log and the alarms, active and finished, read straight from the
// REST lists (docs/spec.md W-2.7), newest first. With the
// parameter catalog each change names its parameter and shows the old and
// new values as the app displays them; without it the registers and raw
// values. Who made a change is shown here, as the app shows it.
type historyCmd struct {
	cloudFlags         `embed:""`
	outputFlag         `embed:""`
	catalogCommonFlags `embed:""`
	devidArgs          `embed:""`

	Limit int    `name:"limit" default:"50" help:"Rows read of each list (changes, active alarms, finished alarms) per module, newest first."`
	Since string `name:"since" help:"Only rows from this time on: a duration back from now (24h, 90m) or an RFC 3339 time."`
}

// historyPageSize is the page of the lists' reads, the size the app asks
// for.
const historyPageSize = cloudclient.DefaultListLimit

// maxHistoryLimit bounds --limit: a tool reads a module's recent past, not
// its whole log.
const maxHistoryLimit = 1000

// sinceTime reads --since against now: zero when not given.
func sinceTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, usageErrorf("--since %q: a duration back from now is positive", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, usageErrorf("--since %q: want a duration (24h, 90m) or an RFC 3339 time (2026-03-01T00:00:00Z)", s)
	}
	return t, nil
}

func (c *historyCmd) Run(ctx context.Context, g *Globals) error {
	if c.Limit < 1 || c.Limit > maxHistoryLimit {
		return usageErrorf("--limit %d: want 1 to %d rows", c.Limit, maxHistoryLimit)
	}
	since, err := sinceTime(c.Since, time.Now())
	if err != nil {
		return err
	}
	s, err := openSession(ctx, &c.cloudFlags, g)
	if err != nil {
		return err
	}
	defer s.close()

	found, err := s.locate(ctx, &c.cloudFlags, c.or(c.Modules), c.namedBy())
	if err != nil {
		return err
	}
	if len(found) == 0 {
		return errors.New("the watched objects list no modules")
	}
	modules := rows(found)
	// The current values give the catalog the module's menu and the unit
	// registers a displayed value depends on; without them the registers
	// are shown raw.
	var cat *catalog.Catalog
	st, err := s.prime(ctx, devidsOf(found))
	if err != nil {
		g.Logger.Warn("the modules' values could not be read: changes are shown by register, with raw values", "err", err)
		st = store.New()
	} else if cat, err = c.load(ctx, s.client, exporter.ListedModuleSpecs(modules, st), false, g.Logger); err != nil {
		return err
	}

	doc := make([]orderedObject, 0, len(found))
	var changeRows, alarmRows []orderedObject
	for _, f := range found {
		h := historyReader{client: s.client, devid: f.Devid, limit: c.Limit, since: since}
		acts, err := h.activity(ctx)
		if err != nil {
			return fmt.Errorf("module %s: the activity log: %w", h.devid, err)
		}
		alarms, err := h.alarms(ctx)
		if err != nil {
			return fmt.Errorf("module %s: the alarms: %w", h.devid, err)
		}
		var described *catalog.Module
		if cat != nil {
			described = cat.Module(h.devid)
		}
		r := st.Reader(h.devid)
		changes := make([]orderedObject, 0, len(acts))
		for _, a := range acts {
			rec := changeRecord(a, described, r)
			changes = append(changes, rec)
			changeRows = append(changeRows, changeTableRow(h.devid, rec))
		}
		alarmRecs := make([]orderedObject, 0, len(alarms))
		for _, a := range alarms {
			rec := alarmRecord(a, cat)
			alarmRecs = append(alarmRecs, rec)
			row := append(orderedObject{{keyDevid, h.devid}}, rec...)
			if a.Active() {
				row = row.with(keyTo, "active")
			}
			if note, ok := rec.get(keyUntranslated).(string); ok {
				row = row.with(keyName, fmt.Sprintf("%v (%s)", rec.get(keyName), note))
			}
			alarmRows = append(alarmRows, row)
		}
		if h.leftOut > 0 {
			g.Logger.Warn("rows the cloud sent that cannot be used are left out", "devid", h.devid, "rows", h.leftOut, "first_problem", h.firstProblem)
		}
		doc = append(doc, orderedObject{
			{keyDevid, h.devid}, {keyName, orNull(f.Name)}, {keyObjectID, f.object.ID},
			{keyChanges, changes}, {keyAlarms, alarmRecs}, {keyRowsLeftOut, h.leftOut},
		})
	}
	if c.json() {
		return writeJSON(g.Stdout, orderedObject{{keyModules, doc}})
	}
	if err := writeTable(g.Stdout, []string{keyTime, keyDevid, keyRegister, keyName, keyOldValue, keyNewValue, keyUnit, keyUser, keyState}, changeRows); err != nil {
		return err
	}
	fmt.Fprintln(g.Stdout)
	return writeTable(g.Stdout, []string{keyFrom, keyTo, keyDevid, keyCode, keyName, keyDurationSeconds}, alarmRows)
}

// changeRecord is one change as the tool prints it: its time, register,
// parameter (symbol and name from the catalog, else the row's token), the
// old and new raw values and, where the catalog can show them, the values
// as the app displays them, with the unit; who made it and the outcome.
func changeRecord(a cloudclient.ActivityRow, m *catalog.Module, r store.Reader) orderedObject {
	register := a.Register()
	// Named by the parameter it was made through (the row's token); a row
	// that names none by the one parameter the catalog has at its
	// register, else by its register plainly: never a guess among several.
	var p *catalog.Param
	if a.Symbol() != "" {
		p = m.BySymbol(a.Symbol())
	} else {
		p = onlyParamAt(m, register)
	}
	symbol, name := orNull(a.Symbol()), any(nil)
	var oldValue, newValue, unit any
	if p != nil {
		symbol, name = p.Symbol, p.Name
		if register == "" {
			register = p.Address.String()
		}
	}
	if p != nil && register == p.Address.String() {
		oldValue, unit = displayedRaw(p, a.Old(), r)
		var newUnit any
		newValue, newUnit = displayedRaw(p, a.Value, r)
		if newUnit != nil {
			unit = newUnit
		}
	}
	return orderedObject{
		{keyTime, a.At.Local().Format(time.RFC3339)}, {keyRegister, orNull(register)}, {keySymbol, symbol}, {keyName, name},
		{keyOldRaw, a.Old()}, {keyNewRaw, a.Value}, {keyOldValue, oldValue}, {keyNewValue, newValue}, {keyUnit, unit},
		{keyUser, orNull(a.User)}, {keyState, orNull(a.State)},
	}
}

// onlyParamAt is the parameter the catalog describes at register when it
// describes exactly one there (its primary address); nil when none or
// several are (naming one of several would be a guess).
func onlyParamAt(m *catalog.Module, register string) *catalog.Param {
	if m == nil || register == "" {
		return nil
	}
	var found *catalog.Param
	for _, p := range m.Params() {
		if p.Address.String() == register {
			if found != nil {
				return nil
			}
			found = p
		}
	}
	return found
}

// changeTableRow is a change as a table row: a value the catalog cannot
// show is shown raw, a parameter without a name by its symbol.
func changeTableRow(devid string, rec orderedObject) orderedObject {
	row := append(orderedObject{{keyDevid, devid}}, rec...)
	if row.get(keyName) == nil {
		row = row.with(keyName, row.get(keySymbol))
	}
	if row.get(keyName) == nil {
		row = row.with(keyName, row.get(keyRegister)) // a raw write: its register plainly
	}
	for shown, raw := range map[string]string{keyOldValue: keyOldRaw, keyNewValue: keyNewRaw} {
		if row.get(shown) == nil && row.get(raw) != nil {
			row = row.with(shown, formatValue(row.get(raw)))
		}
	}
	return row
}

// displayedRaw is what the app would display for a raw value of p: a number
// and its unit, or a label; both nil when the value is not a number the
// catalog can show.
func displayedRaw(p *catalog.Param, raw any, r store.Reader) (value, unit any) {
	var f float64
	switch x := raw.(type) {
	case float64:
		f = x
	case string:
		var ok bool
		if f, ok = wire.NumberText(x); !ok {
			return nil, nil
		}
	default:
		return nil, nil
	}
	v, label, ok := p.DisplayRaw(f, r)
	return displayedAs(p, r, v, label, ok)
}

// alarmRecord is one alarm occurrence: its code, the cloud's symbol, its
// name (the catalog's, as the exporter's alarm series name it, else the
// symbol, else the code), when it began and ended (null while active) and
// how long it lasted (so far, while active).
func alarmRecord(a cloudclient.AlarmRow, cat *catalog.Catalog) orderedObject {
	code := fmt.Sprint(a.ID)
	name := a.Symbol
	language := ""
	var untranslated any
	translated := false
	if cat != nil {
		language = cat.Language()
		if n, ok := cat.AlarmName(code, a.Symbol); ok {
			name, translated = n, true
		}
	}
	if !translated {
		untranslated = collector.Untranslated(language)
	}
	if name == "" {
		name = code
	}
	end, state := a.End, "finished"
	var to any
	if a.Active() {
		end, state = time.Now(), "active"
	} else {
		to = a.End.Local().Format(time.RFC3339)
	}
	return orderedObject{
		{keyCode, a.ID}, {keySymbol, orNull(a.Symbol)}, {keyName, name}, {keyUntranslated, untranslated},
		{keyFrom, a.Start.Local().Format(time.RFC3339)}, {keyTo, to},
		{keyDurationSeconds, max(0, int64(end.Sub(a.Start)/time.Second))}, {keyState, state},
	}
}

// historyReader pages one module's lists, newest first: up to limit usable
// rows of each, none older than since, a bounded number of pages. A page
// that repeats the one before (a cloud ignoring the page number) ends the
// read; rows that cannot be used are counted and left out.
type historyReader struct {
	client *cloudclient.Client
	devid  string
	limit  int
	since  time.Time

	leftOut      int
	firstProblem string
}

// maxPages is the pages read of one list: enough for limit usable rows with
// as many unusable ones again.
func (h *historyReader) maxPages() int { return 2*((h.limit+historyPageSize-1)/historyPageSize) + 1 }

func (h *historyReader) drop(problem string) {
	h.leftOut++
	if h.firstProblem == "" {
		h.firstProblem = problem
	}
}

func (h *historyReader) activity(ctx context.Context) ([]cloudclient.ActivityRow, error) {
	out, err := readPages(ctx, h, h.client.Activity, func(a cloudclient.ActivityRow) pagedRow {
		return pagedRow{key: fmt.Sprint(a.ID, a.CreatedAt, a.Name), devid: a.Devid, problem: a.Problem,
			old: !h.since.IsZero() && a.At.Before(h.since)}
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b cloudclient.ActivityRow) int { return b.At.Compare(a.At) })
	return out, nil
}

// alarms are the module's active alarms and its alarm history, newest
// first by start.
func (h *historyReader) alarms(ctx context.Context) ([]cloudclient.AlarmRow, error) {
	var out []cloudclient.AlarmRow
	for _, read := range []func(context.Context, cloudclient.ListRequest) ([]cloudclient.AlarmRow, error){h.client.Alarms, h.client.AlarmHistory} {
		rows, err := readPages(ctx, h, read, func(a cloudclient.AlarmRow) pagedRow {
			return pagedRow{key: fmt.Sprint(a.ID, a.CreatedAt, a.FinishedAt), devid: a.Devid, problem: a.Problem,
				old: !h.since.IsZero() && !a.Active() && a.End.Before(h.since)}
		})
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	slices.SortStableFunc(out, func(a, b cloudclient.AlarmRow) int { return b.Start.Compare(a.Start) })
	return out, nil
}

// pagedRow is what paging a list needs of a row: what tells it apart
// within the read, its module, why it cannot be used (its decoder's
// verdict) and whether it is older than --since.
type pagedRow struct {
	key, devid, problem string
	old                 bool
}

// readPages reads one list of the module as historyReader pages it: up to
// limit usable rows, as listed. A row read before in this read is skipped;
// a row with a problem or of another module is left out and counted; the
// read ends at a row older than since, a page with nothing new, a short
// page or the page bound.
func readPages[R any](ctx context.Context, h *historyReader, read func(context.Context, cloudclient.ListRequest) ([]R, error), view func(R) pagedRow) ([]R, error) {
	var out []R
	seen := map[string]bool{}
	for page := 1; page <= h.maxPages() && len(out) < h.limit; page++ {
		rows, err := read(ctx, cloudclient.ListRequest{Modules: []string{h.devid}, Page: page, Limit: historyPageSize})
		if err != nil {
			return nil, err
		}
		fresh, old := 0, false
		for _, r := range rows {
			v := view(r)
			if seen[v.key] {
				continue
			}
			seen[v.key] = true
			fresh++
			switch {
			case v.problem != "":
				h.drop(v.problem)
			case v.devid != h.devid:
				h.drop("row of another module")
			case v.old:
				old = true
			case len(out) < h.limit:
				out = append(out, r)
			}
		}
		if fresh == 0 || old || len(rows) < historyPageSize {
			break
		}
	}
	return out, nil
}

// Help is the long help of `history --help`.
func (c *historyCmd) Help() string {
	return `Reads the modules' activity (change) log and alarms, active and finished, from the cloud's lists and prints
them newest first: each change's time, parameter, old and new value (as the app displays them where the parameter
catalog describes the parameter, else raw), who made it and its outcome; each alarm's span and duration. A devid is
looked for in every object of the account (or those of --cloud.object-id). Rows the cloud sends that cannot be used
are left out and counted (a line on stderr, rows_left_out in JSON).

Examples:
  history DEVID                   the last 50 changes and alarms of a module
  history DEVID --since=24h       those of the last day
  history DEVID --limit=200 -o json`
}
