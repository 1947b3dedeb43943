package cli

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// catalogCmd prints the parameter catalog as it resolves for the modules:
// every parameter their own menus and permissions show, with its symbol,
// register, name, unit, menu and the value the app displays now.
type catalogCmd struct {
	cloudFlags         `embed:""`
	outputFlag         `embed:""`
	catalogCommonFlags `embed:""`
	devidArgs          `embed:""`
}

func (c *catalogCmd) Run(ctx context.Context, g *Globals) error {
	if c.Disable {
		return usageError{errCatalogDisabled}
	}
	if _, err := c.overrides(); err != nil {
		return err
	}
	s, err := openSession(ctx, &c.cloudFlags, g)
	if err != nil {
		return err
	}
	defer s.close()

	located, err := s.locate(ctx, &c.cloudFlags, c.or(c.Modules), c.namedBy())
	if err != nil {
		return err
	}
	if len(located) == 0 {
		return errors.New("the watched objects list no modules")
	}
	modules := rows(located)
	slices.SortFunc(modules, func(a, b cloudclient.Module) int { return strings.Compare(a.Devid, b.Devid) })
	modules = slices.CompactFunc(modules, func(a, b cloudclient.Module) bool { return a.Devid == b.Devid })

	st, err := s.prime(ctx, devidsOfRows(modules))
	if err != nil {
		return err
	}
	cat, err := c.load(ctx, s.client, exporter.ListedModuleSpecs(modules, st), true, g.Logger)
	if err != nil {
		return err
	}

	docModules := make([]orderedObject, 0, len(modules))
	var rows []orderedObject
	type unreportedParam struct {
		devid string
		p     *catalog.Param
	}
	var unreported []unreportedParam
	asOf, _ := st.LastUpdate()
	for _, m := range modules {
		params := []orderedObject{}
		r := st.Reader(m.Devid)
		for _, p := range cat.Module(m.Devid).Params() {
			rec := describeParam(p, r, st, m.Devid).with(keyStale, !m.Online())
			params = append(params, rec)
			row := staleCell(append(orderedObject{{keyDevid, m.Devid}}, rec...))
			if !p.Visible(r) {
				row = row.with(keyName, p.Name+" (hidden)")
			}
			rows = append(rows, row)
			if !p.ComputedPrimary.IsZero() && rec.get(keyRaw) == nil {
				unreported = append(unreported, unreportedParam{m.Devid, p})
			}
		}
		if len(params) == 0 {
			g.Logger.Warn("the catalog describes no parameter of the module (its menu and permissions show none)", "devid", m.Devid)
		}
		docModules = append(docModules, orderedObject{{keyDevid, m.Devid}, {keyName, orNull(m.Name)},
			{keyState, onlineWord(m.Online())}, {keyAsOf, timeOrNull(asOf)}, {keyParams, params}})
	}
	// Why a row is empty while the register its definition names may hold
	// a value (docs/spec.md A-4.5c).
	sayUnreported := func() {
		for _, u := range unreported {
			g.Logger.Info("a status parameter is read at its status register, which the module does not report; its definition names another register",
				"devid", u.devid, "symbol", u.p.Symbol, "register", u.p.Address.String(), "computed_primary", u.p.ComputedPrimary.String())
		}
	}
	if c.json() {
		err := writeJSON(g.Stdout, orderedObject{
			{keyIndexAsset, cat.IndexAsset()}, {keyLanguage, cat.Language()}, {keyModules, docModules},
		})
		sayUnreported()
		return err
	}
	if err := writeTable(g.Stdout, []string{keyDevid, keySymbol, keyRegister, keyName, keyValue, keyUnit, keyStale, keyMenu}, rows); err != nil {
		return err
	}
	sayAsOfPrime(g, st, modules)
	sayUnreported()
	return nil
}

// describeParam is one parameter as `catalog` prints it, with its values now.
func describeParam(p *catalog.Param, r store.Reader, st *store.Store, devid string) orderedObject {
	var parts any
	if len(p.Parts) > 0 {
		registers := make([]string, len(p.Parts))
		for i, a := range p.Parts {
			registers[i] = a.String()
		}
		parts = registers
	}
	var computedPrimary any
	if !p.ComputedPrimary.IsZero() {
		computedPrimary = p.ComputedPrimary.String()
	}
	var raw any
	if e, ok := st.Get(devid, store.Key{Pool: p.Address.Pool, Chan: p.Address.Chan, Idx: p.Address.Index}); ok && e.HasValue {
		raw = e.Value
	}
	value, unit := displayed(p, r)
	lo, hi := p.Range(r)
	return orderedObject{
		{keySymbol, p.Symbol}, {keyRegister, p.Address.String()}, {keyParts, parts}, {keyComputedPrimary, computedPrimary}, {keyName, p.Name},
		{keyRaw, raw}, {keyValue, value}, {keyUnit, unit}, {keyMenu, append([]string{}, p.Menu...)},
		{keyMin, numberOrNull(lo)}, {keyMax, numberOrNull(hi)}, {keyVisible, p.Visible(r)}, {keyWritable, p.Writable},
	}
}

// numberOrNull is *f, or null.
func numberOrNull(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// Help is the long help of `catalog --help`.
func (c *catalogCmd) Help() string {
	return `Reads the module list, the modules' current values and the parameter catalog of the cloud's web app, and prints
every parameter each module's own menu and permissions show: its symbol, register, name, the value the app displays
now (scaled, or the label of a state) with its unit, and its menu. Parameters the app hides now are marked (hidden).

Examples:
  catalog                         every module of the watched objects
  catalog DEVID...                these modules
  catalog DEVID -o json           with raw values, limits, visibility and whether each is writable
  catalog --catalog.language=pl   names in Polish`
}
