package cloudclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/cloudapi"
	"github.com/bragerone/bragerone_exporter/wire"
)

// ModuleListLimit is the page size asked of GET /v1/modules (one page).
const ModuleListLimit = 999

// ParameterSchema is one entry of a module row's parameterSchemas.
type ParameterSchema struct {
	ID    int
	Name  string
	Value any
}

// Module is one row of GET /v1/modules.
type Module struct {
	Devid, Name, Title, Version string // Title = moduleTitle, Version = moduleVersion
	ID                          int
	ConnectedAt                 int64 // epoch seconds; 0 (or null) = offline
	Gateway                     wire.Gateway
	Address, Interface          string // moduleAddress, moduleInterface
	AcceptedAt                  int64
	DeviceMenu                  int
	DeviceLanguageVariant       int
	ModuleAlarms                int
	Permissions                 []string
	ParameterSchemas            []ParameterSchema
	IsAcceptedAt, IsConnectedAt string // as sent ("" for null)
}

// Online reports whether the cloud sees the module connected.
func (m Module) Online() bool { return m.ConnectedAt != 0 }

// ModuleListing is the decoded module list. Recognised is false when the
// answer had none of the known list shapes: an unusable listing, not an
// error and not evidence that any module is offline. Dropped counts rows that
// failed validation and were left out.
type ModuleListing struct {
	Modules    []Module
	Recognised bool
	Dropped    int
}

// MissingModulesError says which devids named by the configuration an
// object's module list lacks, and which devids it does list: a typo must
// not pass for a module with nothing to show, and the one line that refuses
// it names the valid choices. Every command refuses a missing devid with
// this error's words.
type MissingModulesError struct {
	ObjectID  int
	ObjectIDs []int    // every object searched, when the devids were looked for in several
	Missing   []string // as named
	Listed    []string // the listings' devids, sorted
}

// maxListedInError bounds the devids an error line names.
const maxListedInError = 20

func (e *MissingModulesError) Error() string {
	what := "module " + strings.Join(e.Missing, ", ") + " is"
	if len(e.Missing) > 1 {
		what = "modules " + strings.Join(e.Missing, ", ") + " are"
	}
	where, they := fmt.Sprintf("the module list of object %d", e.ObjectID), "it lists"
	if len(e.ObjectIDs) > 1 {
		ids := make([]string, len(e.ObjectIDs))
		for i, id := range e.ObjectIDs {
			ids[i] = strconv.Itoa(id)
		}
		where, they = "the module lists of objects "+strings.Join(ids, ", "), "they list"
	}
	offered := they + " none"
	switch n := len(e.Listed); {
	case n > maxListedInError:
		offered = fmt.Sprintf("%s %s and %d more", they, strings.Join(e.Listed[:maxListedInError], ", "), n-maxListedInError)
	case n > 0:
		offered = they + " " + strings.Join(e.Listed, ", ")
	}
	return fmt.Sprintf("%s not in %s (%s)", what, where, offered)
}

// MissingModules returns the devids of want that modules lacks as a
// *MissingModulesError, nil when none is missing.
func MissingModules(objectID int, modules []Module, want []string) error {
	return MissingModulesAcross([]ObjectModules{{ObjectID: objectID, Modules: modules}}, want)
}

// ObjectModules is an object's module list.
type ObjectModules struct {
	ObjectID int
	Modules  []Module
}

// MissingModulesAcross returns the devids of want that none of the objects
// lists as a *MissingModulesError naming the objects searched and every
// devid they list, nil when none is missing: a devid is looked for in every
// object of the account, since devids are unique across objects.
func MissingModulesAcross(objects []ObjectModules, want []string) error {
	listed := []string{}
	ids := make([]int, len(objects))
	for i, o := range objects {
		ids[i] = o.ObjectID
		for _, m := range o.Modules {
			listed = append(listed, m.Devid)
		}
	}
	slices.Sort(listed)
	listed = slices.Compact(listed)
	var missing []string
	for _, d := range want {
		if _, found := slices.BinarySearch(listed, d); !found && !slices.Contains(missing, d) {
			missing = append(missing, d)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	e := &MissingModulesError{Missing: missing, Listed: listed}
	if len(ids) > 0 {
		e.ObjectID = ids[0]
	}
	if len(ids) > 1 {
		e.ObjectIDs = ids
	}
	return e
}

// Modules lists the modules of an object (GET /v1/modules, page 1, limit 999).
func (c *Client) Modules(ctx context.Context, objectID int) (*ModuleListing, error) {
	cl := &call{method: "GET", path: "/modules", tmpl: cloudapi.EndpointModules, auth: true,
		query: "page=1&limit=" + strconv.Itoa(ModuleListLimit) + "&group_id=" + strconv.Itoa(objectID)}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status != 200 {
		err := c.apiError(cl, r)
		c.logFailure(cl.tmpl, err)
		return nil, err
	}
	l, err := decodeModules(r.body)
	if err != nil {
		de := decodeError(cl, r, "", err)
		c.logFailure(cl.tmpl, de)
		return nil, de
	}
	for i := range l.Modules {
		c.scrubModule(&l.Modules[i])
	}
	if !l.Recognised {
		// The caller says what an unusable listing means to it: the
		// gateway logs once per streak of unusable polls, a tool fails.
		c.log.Debug("module list has an unrecognised shape", "endpoint", cl.tmpl)
	}
	// A row that stays invalid is the same news at every poll: it is told
	// at WARN when the count of dropped rows changes, at DEBUG otherwise.
	switch last := c.droppedRows.Swap(int64(l.Dropped)); {
	case l.Dropped > 0 && int64(l.Dropped) != last:
		c.log.Warn("module list rows failed validation and were dropped", "endpoint", cl.tmpl, "dropped", l.Dropped)
	case l.Dropped > 0:
		c.log.Debug("module list rows failed validation and were dropped", "endpoint", cl.tmpl, "dropped", l.Dropped)
	case last > 0:
		c.log.Info("module list rows valid again", "endpoint", cl.tmpl)
	}
	return l, nil
}

var errModuleRow = errors.New("invalid module row")

// decodeModules decodes a module list answer: {"data":[rows]} or a bare
// list. Other well-formed JSON is an unrecognised listing; malformed JSON is
// an error.
func decodeModules(data []byte) (*ModuleListing, error) {
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("malformed JSON at offset %d", se.Offset)
		}
		return nil, err
	}
	l := &ModuleListing{Modules: []Module{}}
	var rows []json.RawMessage
	switch wire.FirstByte(raw) {
	case '[':
		rows = wire.Items(raw)
		l.Recognised = true
	case '{':
		if d, ok := wire.Members(raw)["data"]; ok && wire.FirstByte(d) == '[' {
			rows = wire.Items(d)
			l.Recognised = true
		}
	}
	for _, row := range rows {
		m, err := decodeModuleRow(row)
		if err != nil {
			l.Dropped++
			continue
		}
		l.Modules = append(l.Modules, m)
	}
	return l, nil
}

// decodeModuleRow validates one row. Only what identifies the module and its
// online state is strict: devid must be a string, connectedAt a number,
// numeric string or null. Degraded rows (gateway {} or null, null strings)
// parse.
func decodeModuleRow(raw json.RawMessage) (Module, error) {
	f := wire.Members(raw)
	if f == nil {
		return Module{}, fmt.Errorf("%w: not an object", errModuleRow)
	}
	var m Module
	if wire.FirstByte(f["devid"]) != '"' {
		return Module{}, fmt.Errorf("%w: devid missing or not a string", errModuleRow)
	}
	m.Devid = wire.String(f["devid"])
	if ca, ok := f["connectedAt"]; ok && !wire.IsNull(ca) {
		n, ok := wire.Int(ca)
		if !ok {
			return Module{}, fmt.Errorf("%w: connectedAt is not a number", errModuleRow)
		}
		m.ConnectedAt = n
	}
	m.Name = wire.String(f["name"])
	m.Title = wire.String(f["moduleTitle"])
	m.Version = wire.String(f["moduleVersion"])
	m.Address = wire.String(f["moduleAddress"])
	m.Interface = wire.String(f["moduleInterface"])
	m.IsAcceptedAt = wire.String(f["isAcceptedAt"])
	m.IsConnectedAt = wire.String(f["isConnectedAt"])
	id, _ := wire.Int(f["id"])
	m.ID = int(id)
	m.AcceptedAt, _ = wire.Int(f["acceptedAt"])
	n, _ := wire.Int(f["deviceMenu"])
	m.DeviceMenu = int(n)
	n, _ = wire.Int(f["deviceLanguageVariant"])
	m.DeviceLanguageVariant = int(n)
	n, _ = wire.Int(f["moduleAlarms"])
	m.ModuleAlarms = int(n)
	if g := wire.Members(f["gateway"]); g != nil {
		m.Gateway = wire.Gateway{Address: wire.String(g["address"]), Interface: wire.String(g["interface"]), Version: wire.String(g["version"])}
	}
	for _, p := range wire.Items(f["permissions"]) {
		if s := wire.String(p); s != "" {
			m.Permissions = append(m.Permissions, s)
		}
	}
	for _, p := range wire.Items(f["parameterSchemas"]) {
		ps := wire.Members(p)
		if ps == nil {
			continue
		}
		id, _ := wire.Int(ps["id"])
		m.ParameterSchemas = append(m.ParameterSchemas, ParameterSchema{ID: int(id), Name: wire.String(ps["name"]), Value: wire.Any(ps["value"])})
	}
	return m, nil
}

// BindRequest binds the realtime session to modules.
type BindRequest struct {
	NamespaceSID string // SID of the /ws namespace; always the current one
	EngineSID    string // Engine.IO SID, used only when NamespaceSID is empty
	Modules      []string
	GroupID      int // object id; 0 = omit the group_id variants
}

// bindShape is a modules/connect body shape: which SID key, and whether
// group_id is sent. Only the shape is remembered, never a SID.
type bindShape struct {
	sidKey    string // "wsid" or "sid"
	withGroup bool
}

var bindShapes = []bindShape{{"wsid", false}, {"sid", false}, {"wsid", true}}

func (s bindShape) body(sid string, groupID int, modules []string) map[string]any {
	b := map[string]any{s.sidKey: sid, "modules": modules}
	if s.withGroup {
		b["group_id"] = strconv.Itoa(groupID)
	}
	return b
}

// ModulesConnect binds the session's SID to the modules. Candidate bodies are
// tried in order: the shape that bound last time (with the current namespace
// SID), then wsid, sid and wsid+group_id with the namespace SID (the Engine
// SID stands in only when no namespace SID is known). 200/204 binds; another 2xx (e.g. 201
// "accepted-not-bound") moves on; an error status aborts. All candidates
// unbound gives false and no error. An empty module list binds trivially.
func (c *Client) ModulesConnect(ctx context.Context, req BindRequest) (bool, error) {
	mods := sortedUnique(req.Modules)
	if len(mods) == 0 {
		return true, nil
	}
	if req.NamespaceSID == "" && req.EngineSID == "" {
		return false, errors.New("cloudclient: modules/connect needs a namespace or engine SID")
	}
	type candidate struct {
		shape bindShape
		sid   string
	}
	var cands []candidate
	seen := map[candidate]bool{}
	add := func(s bindShape, sid string) {
		cd := candidate{s, sid}
		if sid == "" || (s.withGroup && req.GroupID == 0) || seen[cd] {
			return
		}
		seen[cd] = true
		cands = append(cands, cd)
	}
	c.shapeMu.Lock()
	remembered := c.shape
	c.shapeMu.Unlock()
	if remembered != nil {
		add(*remembered, req.NamespaceSID)
	}
	// The spec: modules/connect always carries the current namespace SID.
	// The Engine.IO SID is used only when there is no namespace SID at all;
	// a 200 for an Engine SID was seen to bind nothing.
	sid := req.NamespaceSID
	if sid == "" {
		sid = req.EngineSID
	}
	for _, s := range bindShapes {
		add(s, sid)
	}
	for _, cd := range cands {
		cl := &call{method: "POST", path: "/modules/connect", tmpl: cloudapi.EndpointModulesConnect, auth: true, browser: true,
			body: cd.shape.body(cd.sid, req.GroupID, mods)}
		r, err := c.do(ctx, cl)
		if err != nil {
			return false, err
		}
		if r.status == 200 || r.status == 204 {
			s := cd.shape
			c.shapeMu.Lock()
			c.shape = &s
			c.shapeMu.Unlock()
			return true, nil
		}
		c.log.Debug("modules/connect accepted but not bound; trying the next body", "status", r.status, "shape", cd.shape.sidKey, "group_id", cd.shape.withGroup)
	}
	return false, nil
}

// Prime fetches the parameter snapshot of the modules. Only 200/204 with a
// JSON object body counts as success.
func (c *Client) Prime(ctx context.Context, modules []string) ([]wire.ParamUpdate, error) {
	mods := sortedUnique(modules)
	if len(mods) == 0 {
		return []wire.ParamUpdate{}, nil
	}
	cl, r, err := c.fetchPrime(ctx, mods)
	if err != nil {
		return nil, err
	}
	ups, err := wire.DecodeParameters(r.body)
	if err != nil {
		de := decodeError(cl, r, "", err)
		c.logFailure(cl.tmpl, de)
		return nil, de
	}
	c.ScrubParameters(ups)
	return ups, nil
}

// PrimeEach is Prime for a snapshot too large to hold decoded: it gives fn
// the updates one module at a time (wire.DecodeParametersEach; fn must not
// keep the slice or its maps). The answer is checked whole before fn is
// first called, so on an error fn was not called at all.
func (c *Client) PrimeEach(ctx context.Context, modules []string, fn func([]wire.ParamUpdate)) error {
	mods := sortedUnique(modules)
	if len(mods) == 0 {
		return nil
	}
	cl, r, err := c.fetchPrime(ctx, mods)
	if err != nil {
		return err
	}
	err = wire.DecodeParametersEach(r.body, func(ups []wire.ParamUpdate) {
		c.ScrubParameters(ups)
		fn(ups)
	})
	if err != nil {
		de := decodeError(cl, r, "", err)
		c.logFailure(cl.tmpl, de)
		return de
	}
	return nil
}

// fetchPrime asks for the snapshot of mods (sorted, unique) and checks that
// the answer is a success holding a JSON object.
func (c *Client) fetchPrime(ctx context.Context, mods []string) (*call, *reply, error) {
	cl := &call{method: "POST", path: "/modules/parameters", tmpl: cloudapi.EndpointParameters, auth: true,
		body: map[string]any{"modules": mods}}
	r, err := c.do(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	if r.status != 200 && r.status != 204 {
		err := c.apiError(cl, r)
		c.logFailure(cl.tmpl, err)
		return nil, nil, err
	}
	if wire.FirstByte(r.body) != '{' {
		de := decodeError(cl, r, "prime snapshot is not a JSON object", nil)
		c.logFailure(cl.tmpl, de)
		return nil, nil, de
	}
	return cl, r, nil
}

// PrimeWithRetry is Prime retried after each pause of Config.PrimeBackoff.
// It returns the last error when every attempt failed.
func (c *Client) PrimeWithRetry(ctx context.Context, modules []string) ([]wire.ParamUpdate, error) {
	var ups []wire.ParamUpdate
	err := c.retryPrime(ctx, func() error {
		var err error
		ups, err = c.Prime(ctx, modules)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ups, nil
}

// PrimeEachWithRetry is PrimeEach retried as PrimeWithRetry retries Prime;
// fn is called only by the attempt that succeeds.
func (c *Client) PrimeEachWithRetry(ctx context.Context, modules []string, fn func([]wire.ParamUpdate)) error {
	return c.retryPrime(ctx, func() error { return c.PrimeEach(ctx, modules, fn) })
}

// retryPrime runs attempt until it succeeds, pausing Config.PrimeBackoff
// between attempts; it returns the last error when every attempt failed or
// ctx ended.
func (c *Client) retryPrime(ctx context.Context, attempt func() error) error {
	var lastErr error
	for n := 0; ; n++ {
		err := attempt()
		if err == nil {
			return nil
		}
		lastErr = err
		if ctx.Err() != nil || n >= len(c.cfg.PrimeBackoff) {
			return lastErr
		}
		if err := c.cfg.Sleep(ctx, c.cfg.PrimeBackoff[n]); err != nil {
			return lastErr
		}
	}
}
