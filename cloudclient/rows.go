package cloudclient

// The rows of the activity log and the alarm lists (docs/spec.md W-2.7).
// The cloud's rows vary by endpoint and release: devid at the top or
// nested in module, value bare or wrapped, the user a string or an object,
// the old value as prevValue or as a register snapshot. Each row is decoded
// on its own: a row that cannot be used says why in Problem and costs only
// itself; the list goes on. A body that is not one of the list shapes is an
// error of the call, never an empty list.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/redact"
	"github.com/bragerone/bragerone_exporter/wire"
)

// Row problems: why a row cannot be used. This decoder is the one judge of
// a row: every caller (the history trackers, the history command) takes
// its verdict, counts the rows that carry one (and may show the reason),
// and never sees a half-read row as a good one.
const (
	ProblemNotObject   = "row is not an object"
	ProblemNoDevid     = "row names no module (devid)"
	ProblemNoCode      = "row has no integer alarm code (id)"
	ProblemNoID        = "row has no integer id"
	ProblemNoParameter = "row names no parameter (name or prev_value)"
	ProblemNoState     = "row has no outcome (state)"
	problemTime        = "created_at"
	problemEndTime     = "finished_at"
)

// AlarmRow is one active or finished alarm. ID is the alarm type code, not a
// unique key.
type AlarmRow struct {
	ID         int
	Devid      string
	CreatedAt  string // as sent
	FinishedAt string // as sent; "" while active
	Raw        map[string]any

	// Symbol is the cloud's symbolic name of the alarm (the row's "name",
	// e.g. "ERROR_BRAK_PALIWA"); "" when none.
	Symbol string
	// Start is CreatedAt read as a time, End FinishedAt (zero while the
	// alarm is active). Both are UTC.
	Start, End time.Time
	// Problem says why the row cannot be used (no code, no devid, a time
	// that cannot be read, an end before its start); "" when it can. A
	// blank finished_at is no end, as null is: the alarm is active.
	Problem string
}

// Active says whether the alarm has not finished.
func (a AlarmRow) Active() bool { return a.FinishedAt == "" }

// ActivityRow is one entry of a module's activity (change) log.
type ActivityRow struct {
	ID        int64  // identifies the change: the log's rows are told apart by it
	Devid     string // the row's, or its nested module's
	Name      string // i18n token, e.g. "parameters.PARAM_1"
	Unit      int
	Value     any // the new value, unwrapped from {"value":…}
	PrevValue any // the old value as prevValue gives it; nil when absent
	State     string
	CreatedAt string // as sent
	User      string // a string user, or the user object's name
	Raw       map[string]any

	ModuleID int // module_id; 0 when absent
	UserID   int // user_id, else the user object's id; 0 when absent
	// At is CreatedAt read as a time (UTC); zero when Problem says it
	// could not be read.
	At time.Time
	// Snapshot is the prev_value snapshot, {"P6":{"219":{"v":2,"u":38}}}:
	// the registers the change touched with their channels' old values,
	// ordered by pool and index. Empty when the row has none.
	Snapshot []RegisterSnapshot
	// Problem says why the row cannot be used (no devid, a time that
	// cannot be read, no parameter named, no integer id, no outcome); ""
	// when it can.
	Problem string
}

// RegisterSnapshot is one register family of a prev_value snapshot: pool
// "P6", index 219 and the old values of its channels ("v" value, "u" unit,
// …).
type RegisterSnapshot struct {
	Pool     string
	Index    int
	Channels map[string]any
}

// Register is the register of the family's channel ch: "P6.v219".
func (s RegisterSnapshot) Register(ch string) string {
	return s.Pool + "." + ch + strconv.Itoa(s.Index)
}

// Register is the value register the change touched, "P6.v219", from the
// prev_value snapshot (the first family with a value channel); "" when the
// row has no snapshot with one.
func (a ActivityRow) Register() string {
	for _, s := range a.Snapshot {
		if _, ok := s.Channels["v"]; ok {
			return s.Register("v")
		}
	}
	return ""
}

// Old is the value before the change: prevValue, else the snapshot's value
// channel; nil when the row gives neither.
func (a ActivityRow) Old() any {
	if a.PrevValue != nil {
		return a.PrevValue
	}
	for _, s := range a.Snapshot {
		if v, ok := s.Channels["v"]; ok {
			return v
		}
	}
	return nil
}

// Symbol is the key of the row's i18n token, "PARAM_1" of
// "parameters.PARAM_1"; the token when it has no namespace.
func (a ActivityRow) Symbol() string {
	if i := strings.LastIndexByte(a.Name, '.'); i >= 0 {
		return a.Name[i+1:]
	}
	return a.Name
}

// Activity returns activity rows (POST /v1/modules/activity), every row of
// the page: rows that cannot be used carry their Problem.
func (c *Client) Activity(ctx context.Context, req ListRequest) ([]ActivityRow, error) {
	return readList(ctx, c, &call{method: "POST", path: "/modules/activity", tmpl: cloudapi.EndpointActivity, auth: true}, req, decodeActivity)
}

// Alarms returns active alarms (POST /v1/modules/alarms), every row of the
// page: rows that cannot be used carry their Problem.
func (c *Client) Alarms(ctx context.Context, req ListRequest) ([]AlarmRow, error) {
	return readList(ctx, c, &call{method: "POST", path: "/modules/alarms", tmpl: cloudapi.EndpointAlarms, auth: true}, req, decodeAlarmRows)
}

// AlarmHistory returns finished alarms (POST /v1/modules/alarms/history),
// every row of the page: rows that cannot be used carry their Problem.
func (c *Client) AlarmHistory(ctx context.Context, req ListRequest) ([]AlarmRow, error) {
	return readList(ctx, c, &call{method: "POST", path: "/modules/alarms/history", tmpl: cloudapi.EndpointAlarmHistory, auth: true}, req, decodeAlarmRows)
}

// readList reads one page of a list and decodes its rows; a body that is not
// one of the list shapes is a *DecodeError of the call.
func readList[R any](ctx context.Context, c *Client, cl *call, req ListRequest, decode func([]byte, *redact.Set) ([]R, error)) ([]R, error) {
	r, body, err := c.listBody(ctx, cl, req)
	if err != nil || body == nil {
		return nil, err
	}
	rows, err := decode(body, c.cfg.Secrets)
	if err != nil {
		de := decodeError(cl, r, "", err)
		c.logFailure(cl.tmpl, de)
		return nil, de
	}
	return rows, nil
}

// listBody posts a list body and returns the answer's body; nil (and no
// error) on 204. Any status but 200 and 204 is an *APIError; a 200 that is
// not JSON (an HTML page from a proxy) is a *DecodeError.
func (c *Client) listBody(ctx context.Context, cl *call, req ListRequest) (*reply, []byte, error) {
	cl.body = req.body()
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	if r.status == 204 {
		return r, nil, nil
	}
	if r.status != 200 {
		err := c.apiError(cl, r)
		c.logFailure(cl.tmpl, err)
		return nil, nil, err
	}
	var raw json.RawMessage
	if err := c.decodeJSON(cl, r, &raw); err != nil {
		return nil, nil, err
	}
	return r, raw, nil
}

// errListShape is the error of a body that holds no list of rows.
var errListShape = errors.New("no list of rows")

// listRows finds the rows of a list body under key: {key:[rows]},
// {key:{"data":[rows]}}, {"data":[rows]} or a bare list; a null list is
// empty. Anything else (an object without the list, a list that is not an
// array) is errListShape, naming what was found.
func listRows(body []byte, key string) ([]json.RawMessage, error) {
	if !json.Valid(body) {
		return nil, fmt.Errorf("%w: not JSON", errListShape)
	}
	raw := json.RawMessage(body)
	if m := wire.Members(raw); m != nil {
		inner, ok := m[key]
		if !ok {
			if inner, ok = m["data"]; !ok {
				return nil, fmt.Errorf("%w: an object without %q or \"data\"", errListShape, key)
			}
		}
		raw = inner
		if m := wire.Members(raw); m != nil {
			if raw, ok = m["data"]; !ok {
				return nil, fmt.Errorf("%w: %q is an object without \"data\"", errListShape, key)
			}
		}
	}
	if wire.IsNull(raw) {
		return nil, nil
	}
	if wire.FirstByte(raw) != '[' {
		return nil, fmt.Errorf("%w: the rows are not an array", errListShape)
	}
	rows := wire.Items(raw)
	if rows == nil {
		return nil, fmt.Errorf("%w: the rows are not an array", errListShape)
	}
	return rows, nil
}

// decodeActivity decodes an activity list body (docs/spec.md W-2.7: {"activities":{"data":
// [rows]}} or {"activities":[rows]}) into one row per element, the cloud's
// text scrubbed of secrets.
func decodeActivity(body []byte, secrets *redact.Set) ([]ActivityRow, error) {
	return decodeRows(body, "activities", secrets, decodeActivityRow)
}

// decodeAlarmRows decodes an alarm list body (docs/spec.md W-2.7: {"alarms":[rows]} or
// {"alarms":{"data":[rows]}}) into one row per element, the cloud's text
// scrubbed of secrets.
func decodeAlarmRows(body []byte, secrets *redact.Set) ([]AlarmRow, error) {
	return decodeRows(body, "alarms", secrets, decodeAlarmRow)
}

// decodeRows decodes each row of a list body's list under key on its own.
func decodeRows[R any](body []byte, key string, secrets *redact.Set, decodeRow func(json.RawMessage, *redact.Set) R) ([]R, error) {
	rows, err := listRows(body, key)
	if err != nil {
		return nil, err
	}
	out := make([]R, 0, len(rows))
	for _, raw := range rows {
		out = append(out, decodeRow(raw, secrets))
	}
	return out, nil
}

func decodeActivityRow(raw json.RawMessage, secrets *redact.Set) ActivityRow {
	f := wire.Members(raw)
	if f == nil {
		return ActivityRow{Problem: ProblemNotObject}
	}
	id, idOK := wire.Int(f["id"])
	a := ActivityRow{
		ID: id, Devid: wire.String(f["devid"]), Name: strings.TrimSpace(wire.String(f["name"])),
		Unit: intOf(f["unit"]), Value: wire.Any(f["value"]), PrevValue: wire.Any(f["prevValue"]),
		State: strings.TrimSpace(wire.String(f["state"])), CreatedAt: wire.String(f["created_at"]),
		ModuleID: intOf(f["module_id"]), UserID: intOf(f["user_id"]), Raw: wire.Object(raw),
		Snapshot: decodeSnapshot(f["prev_value"]),
	}
	module := wire.Members(f["module"])
	if a.Devid == "" {
		a.Devid = wire.String(module["devid"])
	}
	if a.ModuleID == 0 {
		a.ModuleID = intOf(module["id"])
	}
	if v, ok := a.Value.(map[string]any); ok {
		if inner, ok := v["value"]; ok {
			a.Value = inner
		}
	}
	if v, ok := a.PrevValue.(map[string]any); ok {
		if inner, ok := v["value"]; ok {
			a.PrevValue = inner
		}
	}
	if user := wire.Members(f["user"]); user != nil {
		a.User = wire.String(user["name"])
		if a.UserID == 0 {
			a.UserID = intOf(user["id"])
		}
	} else {
		a.User = wire.String(f["user"])
	}
	a.User = strings.TrimSpace(a.User)
	var terr error
	a.At, terr = rowTime(f["created_at"])
	switch {
	case strings.TrimSpace(a.Devid) == "":
		a.Problem = ProblemNoDevid
	case terr != nil:
		a.Problem = problemTime + ": " + terr.Error()
	case a.Name == "" && a.Register() == "":
		a.Problem = ProblemNoParameter
	case !idOK:
		a.Problem = ProblemNoID
	case a.State == "":
		a.Problem = ProblemNoState
	}

	a.Name, a.State, a.User = secrets.Scrub(a.Name), secrets.Scrub(a.State), secrets.Scrub(a.User)
	a.CreatedAt, a.Problem = secrets.Scrub(a.CreatedAt), secrets.Scrub(a.Problem)
	a.Value, a.PrevValue, a.Raw = secrets.ScrubJSON(a.Value), secrets.ScrubJSON(a.PrevValue), scrubMap(secrets, a.Raw)
	for i := range a.Snapshot {
		a.Snapshot[i].Channels = scrubMap(secrets, a.Snapshot[i].Channels)
	}
	return a
}

func decodeAlarmRow(raw json.RawMessage, secrets *redact.Set) AlarmRow {
	f := wire.Members(raw)
	if f == nil {
		return AlarmRow{Problem: ProblemNotObject}
	}
	a := AlarmRow{Devid: wire.String(f["devid"]), CreatedAt: wire.String(f["created_at"]),
		FinishedAt: wire.String(f["finished_at"]), Symbol: strings.TrimSpace(wire.String(f["name"])), Raw: wire.Object(raw)}
	if a.Devid == "" {
		a.Devid = wire.String(wire.Members(f["module"])["devid"])
	}
	id, idOK := wire.Int(f["id"])
	if idOK && (id < 0 || id > 1<<31-1) {
		idOK = false
	}
	if idOK {
		a.ID = int(id)
	}
	var serr, eerr error
	a.Start, serr = rowTime(f["created_at"])
	if strings.TrimSpace(a.FinishedAt) == "" {
		a.FinishedAt = "" // blank: not finished, as null
	}
	if !wire.IsNull(f["finished_at"]) && !blank(f["finished_at"]) {
		if a.End, eerr = rowTime(f["finished_at"]); eerr == nil && a.FinishedAt == "" {
			// An epoch number: keep the "finished" meaning of FinishedAt.
			a.FinishedAt = a.End.Format(time.RFC3339)
		}
	}
	switch {
	case strings.TrimSpace(a.Devid) == "":
		a.Problem = ProblemNoDevid
	case !idOK:
		a.Problem = ProblemNoCode
	case serr != nil:
		a.Problem = problemTime + ": " + serr.Error()
	case eerr != nil:
		a.Problem = problemEndTime + ": " + eerr.Error()
	case !a.End.IsZero() && a.End.Before(a.Start):
		a.Problem = "finished_at is before created_at"
	}
	a.Symbol, a.CreatedAt, a.FinishedAt = secrets.Scrub(a.Symbol), secrets.Scrub(a.CreatedAt), secrets.Scrub(a.FinishedAt)
	a.Problem, a.Raw = secrets.Scrub(a.Problem), scrubMap(secrets, a.Raw)
	return a
}

// decodeSnapshot reads a prev_value snapshot, {"P6":{"219":{"v":2,"u":38}}}:
// pools, then register indexes as keys, then channels. Entries of another
// shape (a pool that is not P<n>, an index that is not an integer, a
// family that is not an object) are left out.
func decodeSnapshot(raw json.RawMessage) []RegisterSnapshot {
	pools := wire.Members(raw)
	var out []RegisterSnapshot
	for pool, families := range pools {
		if len(pool) < 2 || pool[0] != 'P' {
			continue
		}
		if _, err := strconv.Atoi(pool[1:]); err != nil {
			continue
		}
		for key, body := range wire.Members(families) {
			idx, err := strconv.Atoi(key)
			if err != nil || idx < 0 {
				continue
			}
			channels := wire.Object(body)
			if channels == nil {
				continue
			}
			out = append(out, RegisterSnapshot{Pool: pool, Index: idx, Channels: channels})
		}
	}
	slices.SortFunc(out, func(a, b RegisterSnapshot) int {
		pa, _ := strconv.Atoi(a.Pool[1:])
		pb, _ := strconv.Atoi(b.Pool[1:])
		if pa != pb {
			return pa - pb
		}
		return a.Index - b.Index
	})
	return out
}

// rowTime reads a row's timestamp: RFC 3339 and the cloud's other text forms,
// or epoch seconds or milliseconds (see parseTimestamp). Missing or null is
// an error too: a row without its time cannot be placed.
func rowTime(raw json.RawMessage) (time.Time, error) {
	if wire.IsNull(raw) {
		return time.Time{}, errors.New("missing")
	}
	return parseTimestamp(raw)
}

// blank says whether a field is a string of nothing but white space.
func blank(raw json.RawMessage) bool {
	return wire.FirstByte(raw) == '"' && strings.TrimSpace(wire.String(raw)) == ""
}

// intOf is an integral field, 0 when absent or not an integer in int range.
func intOf(raw json.RawMessage) int {
	n, ok := wire.Int(raw)
	if !ok || n < -(1<<31) || n > 1<<31-1 {
		return 0
	}
	return int(n)
}

func scrubMap(secrets *redact.Set, m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := secrets.ScrubJSON(m).(map[string]any)
	return out
}
