package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// catalogCmd prints the parameter catalog as it resolves for the modules:
// every parameter their own menus and permissions show, with its symbol,
// register, name, unit, menu and the value the app displays now.
type catalogCmd struct {
	cloudFlags         `embed:""`
	outputFlag         `embed:""`
	catalogCommonFlags `embed:""`

	Devid string `arg:"" optional:"" name:"devid" help:"Module to describe (default: those of --cloud.modules, else every module of the object)."`
}

// catalogParamJSON is one parameter of `catalog --output=json`.
type catalogParamJSON struct {
	Symbol   string   `json:"symbol"`
	Address  string   `json:"address"`
	Parts    []string `json:"parts,omitempty"`
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	Menu     []string `json:"menu"`
	Value    *float64 `json:"value"`           // as displayed; null when not a number
	Label    string   `json:"label,omitempty"` // the state of an enum or computed value
	Raw      any      `json:"raw"`             // the register's stored value; null when not stored
	Min      *float64 `json:"min"`
	Max      *float64 `json:"max"`
	Visible  bool     `json:"visible"`
	Writable bool     `json:"writable"`
}

type catalogModuleJSON struct {
	Devid  string             `json:"devid"`
	Name   string             `json:"name"`
	Params []catalogParamJSON `json:"params"`
}

type catalogJSON struct {
	IndexAsset string              `json:"index_asset"`
	Language   string              `json:"language"`
	Modules    []catalogModuleJSON `json:"modules"`
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

	want, source := c.Modules, modulesFlag
	if c.Devid != "" {
		want, source = []string{c.Devid}, ""
	}
	objectID, modules, err := s.namedModules(ctx, &c.cloudFlags, want, source)
	if err != nil {
		return err
	}
	if len(modules) == 0 {
		return fmt.Errorf("object %d lists no modules", objectID)
	}
	slices.SortFunc(modules, func(a, b cloudclient.Module) int { return strings.Compare(a.Devid, b.Devid) })

	st, err := primeStore(ctx, s, modules)
	if err != nil {
		return err
	}
	cat, err := c.load(ctx, s.client, listedModuleSpecs(modules, st), true, g.Logger)
	if err != nil {
		return err
	}

	doc := catalogJSON{IndexAsset: cat.IndexAsset(), Language: cat.Language()}
	for _, m := range modules {
		mod := catalogModuleJSON{Devid: m.Devid, Name: m.Name, Params: []catalogParamJSON{}}
		cm := cat.Module(m.Devid)
		r := storeReader(st, m.Devid)
		for _, p := range cm.Params() {
			mod.Params = append(mod.Params, describeParam(p, r, st, m.Devid))
		}
		if len(mod.Params) == 0 {
			g.Logger.Warn("the catalog describes no parameter of the module (its menu and permissions show none)", "devid", m.Devid)
		}
		doc.Modules = append(doc.Modules, mod)
	}
	if c.json() {
		return writeJSON(g.Stdout, doc)
	}

	tw := newTable(g.Stdout)
	many := len(doc.Modules) > 1
	if many {
		fmt.Fprint(tw, "DEVID\t")
	}
	fmt.Fprintln(tw, "SYMBOL\tADDRESS\tNAME\tVALUE\tUNIT\tMENU")
	for _, m := range doc.Modules {
		for _, p := range m.Params {
			if many {
				fmt.Fprintf(tw, "%s\t", m.Devid)
			}
			name := p.Name
			if !p.Visible {
				name += " (hidden)"
			}
			value := p.Label
			if value == "" && p.Value != nil {
				value = formatFloat(*p.Value)
			}
			unit := p.Unit
			if p.Label != "" {
				unit = ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Symbol, p.Address, name, dash(value), dash(unit), dash(strings.Join(p.Menu, "/")))
		}
	}
	return tw.Flush()
}

// describeParam is one parameter as `catalog` prints it, with its values now.
func describeParam(p *catalog.Param, r catalog.Reader, st *store.Store, devid string) catalogParamJSON {
	out := catalogParamJSON{
		Symbol: p.Symbol, Address: p.Address.String(), Name: p.Name, Unit: p.UnitFor(r),
		Menu: append([]string{}, p.Menu...), Visible: p.Visible(r), Writable: p.Writable,
	}
	for _, a := range p.Parts {
		out.Parts = append(out.Parts, a.String())
	}
	if v, label, ok := p.Display(r); ok {
		out.Label = label
		if !isNaNOrInf(v) {
			out.Value = &v
		}
	}
	out.Min, out.Max = p.Range(r)
	if k, ok := store.ParseKey(out.Address); ok {
		if e, ok := st.Get(devid, k); ok && e.HasValue {
			out.Raw = e.Value
		}
	}
	return out
}

// primeStore reads the modules' current values (one REST prime) into a
// store, which orders and folds them as the exporter does.
func primeStore(ctx context.Context, s *toolSession, modules []cloudclient.Module) (*store.Store, error) {
	devids := make([]string, len(modules))
	for i, m := range modules {
		devids[i] = m.Devid
	}
	updates, err := s.client.PrimeWithRetry(ctx, devids)
	if err != nil {
		return nil, fmt.Errorf("parameter snapshot: %w", err)
	}
	st := store.New()
	st.ApplyPrime(st.BeginPrime(), updates, time.Now())
	return st, nil
}

// Help is the long help of `catalog --help`.
func (c *catalogCmd) Help() string {
	return `Reads the module list, the modules' current values and the parameter catalog of the cloud's web app, and prints
every parameter each module's own menu and permissions show: its symbol, register address, name, unit, menu and the
value the app displays now (scaled, or the label of a state). Parameters the app hides now are marked (hidden).

Examples:
  catalog                         every module of the object
  catalog DEVID                   one module
  catalog DEVID -o json           with limits, raw values and whether each is writable
  catalog --catalog.language=pl   names in Polish`
}
