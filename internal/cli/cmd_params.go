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
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// paramsCmd prints the prime snapshot (POST /v1/modules/parameters) of the
// modules named as arguments, else --cloud.modules, else every module of the
// watched objects (each devid finds its object by itself). With the parameter catalog (unless --catalog.disable) each
// register the catalog describes is named, with the value the app displays
// and its unit. Registers the cloud reports without a value are left out
// and counted, unless --include-null.
type paramsCmd struct {
	cloudFlags         `embed:""`
	outputFlag         `embed:""`
	catalogCommonFlags `embed:""`
	devidArgs          `embed:""`

	Filter      []string `name:"filter" help:"Print only parameters whose register matches one of these patterns (path.Match on e.g. P4.v8: P4.v*, P?.s1)."`
	IncludeNull bool     `name:"include-null" help:"Also list the registers the cloud reports without a value (null); otherwise they are left out and counted."`
}

func (c *paramsCmd) Run(ctx context.Context, g *Globals) error {
	filter := keyFilter(c.Filter)
	if err := filter.validate("--filter"); err != nil {
		return err
	}
	s, err := openSession(ctx, &c.cloudFlags, g)
	if err != nil {
		return err
	}
	defer s.close()

	// The module lists say which modules there are, whether the named ones
	// are among them, and (for the catalog) which menu and permissions each
	// has. Named modules are read without them when they cannot be read.
	devids := slices.Compact(slices.Sorted(slices.Values(c.or(c.Modules))))
	var modules []cloudclient.Module
	located, err := s.locate(ctx, &c.cloudFlags, devids, c.namedBy())
	var usage usageError
	switch {
	case err != nil && (len(devids) == 0 || errors.As(err, &usage)):
		return err
	case err != nil:
		g.Logger.Warn("the module list could not be read: the named modules are not checked against it, and parameters are shown without names", "err", err)
	case len(devids) > 0:
		modules = rows(located)
	default:
		modules = rows(located)
		devids = devidsOf(located)
		if len(devids) == 0 {
			return errors.New("the watched objects list no modules")
		}
	}
	slices.Sort(devids)
	devids = slices.Compact(devids)

	st, err := s.prime(ctx, devids)
	if err != nil {
		return err
	}
	for _, d := range devids {
		if len(st.Entries(d)) == 0 {
			g.Logger.Warn("the snapshot holds no parameters of a module", "devid", d)
		}
	}
	var cat *catalog.Catalog
	if len(modules) > 0 {
		if cat, err = c.load(ctx, s.client, exporter.ListedModuleSpecs(modules, st), false, g.Logger); err != nil {
			return err
		}
	}

	doc := c.document(devids, modules, st, cat, filter)
	if len(c.Filter) > 0 && !filter.matchesAny(st, devids) {
		g.Logger.Warn(fmt.Sprintf("--filter %s matches no register of the modules (registers are written like P4.v8; any case matches)",
			strings.Join(c.Filter, ",")), "modules", len(devids))
	}
	if c.json() {
		return writeJSON(g.Stdout, orderedObject{{keyModules, doc}})
	}
	columns := []string{keyDevid, keyRegister, keyRaw}
	if cat != nil {
		columns = append(columns, keyName, keyValue, keyUnit)
	}
	columns = append(columns, keyStale)
	var rows []orderedObject
	leftOut := 0
	for _, m := range doc {
		devid := m.get(keyDevid)
		for _, p := range m.get(keyParams).([]orderedObject) {
			rows = append(rows, staleCell(append(orderedObject{{keyDevid, devid}}, p...)))
		}
		leftOut += m.get(keyNullLeftOut).(int)
	}
	if err := writeTable(g.Stdout, columns, rows); err != nil {
		return err
	}
	sayAsOfPrime(g, st, modules)
	if leftOut > 0 {
		g.Logger.Info("registers the cloud reports without a value (null) are left out; --include-null lists them", "registers", leftOut)
	}
	return nil
}

// document is the snapshot as records, one a module: its devid, name, the
// parameters filter selects and how many of those were left out for having
// no value.
func (c *paramsCmd) document(devids []string, modules []cloudclient.Module, st *store.Store, cat *catalog.Catalog, filter keyFilter) []orderedObject {
	names := map[string]string{}
	for _, m := range modules {
		names[m.Devid] = m.Name
	}
	online := map[string]bool{}
	for _, m := range modules {
		online[m.Devid] = m.Online()
	}
	asOf, _ := st.LastUpdate()
	doc := make([]orderedObject, 0, len(devids))
	for _, d := range devids {
		isOnline, known := online[d]
		offline := known && !isOnline
		var described *catalog.Module
		if cat != nil {
			described = cat.Module(d)
		}
		r := st.Reader(d)
		params := []orderedObject{}
		leftOut := 0
		for _, e := range st.Entries(d) {
			register := e.Key.String()
			if !filter.match(register) {
				continue
			}
			if !e.HasValue && !c.IncludeNull {
				leftOut++
				continue
			}
			var symbol, name, value, unit any
			if p := described.Lookup(e.Key.Pool, e.Key.Param()); p != nil {
				symbol, name = p.Symbol, p.Name
				value, unit = displayed(p, r)
			}
			var meta any
			if len(e.Meta) > 0 {
				meta = e.Meta
			}
			params = append(params, orderedObject{
				{keyRegister, register}, {keyRaw, e.Value}, {keySymbol, symbol}, {keyName, name},
				{keyValue, value}, {keyUnit, unit}, {keyStale, offline}, {keyMeta, meta},
			})
		}
		var state any
		if known {
			state = onlineWord(isOnline)
		}
		doc = append(doc, orderedObject{
			{keyDevid, d}, {keyName, orNull(names[d])}, {keyState, state}, {keyAsOf, timeOrNull(asOf)},
			{keyNullLeftOut, leftOut}, {keyParams, params},
		})
	}
	return doc
}

// staleCell words a record's stale member for a table: "offline" for a
// value of an offline module, "-" otherwise.
func staleCell(r orderedObject) orderedObject {
	if stale, _ := r.get(keyStale).(bool); stale {
		return r.with(keyStale, "offline")
	}
	return r.with(keyStale, nil)
}

// sayAsOfPrime says, under a table of values read once, that they are as of
// the prime, and names the modules that are offline: their values are the
// last they sent, not current.
func sayAsOfPrime(g *Globals, st *store.Store, modules []cloudclient.Module) {
	if at, _ := st.LastUpdate(); !at.IsZero() {
		g.Logger.Info("values are as of the prime (the cloud's snapshot read now), not live", "at", at.Local().Format(time.RFC3339))
	}
	for _, m := range modules {
		if !m.Online() {
			g.Logger.Warn("module offline: its values are the last it sent, not current (marked stale)", "devid", m.Devid, "name", m.Name)
		}
	}
}

// timeOrNull is t in RFC 3339, or null when zero.
func timeOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Local().Format(time.RFC3339)
}

// Help is the long help of `params --help`.
func (c *paramsCmd) Help() string {
	return `Prints every register of the modules with its raw value and, where the parameter catalog describes it, its name
and the value the app displays, with its unit. Registers the cloud reports without a value (null) are left out and
counted (a line on stderr, null_left_out in JSON); --include-null lists them.

Examples:
  params                          every module of the watched objects
  params DEVID --filter='P4.v*'   one module's P4 value registers
  params DEVID -o json            as JSON: raw values, symbols, names, displayed values and the cloud's meta`
}
