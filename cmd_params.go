package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// paramsCmd prints the prime snapshot (POST /v1/modules/parameters) of the
// watched modules: --cloud.modules, else every module of the object. With
// the parameter catalog (unless --catalog.disable) each register the
// catalog describes is named, with the value the app displays and its unit.
type paramsCmd struct {
	cloudFlags         `embed:""`
	outputFlag         `embed:""`
	catalogCommonFlags `embed:""`

	Filter []string `name:"filter" help:"Print only parameters whose key matches one of these patterns (path.Match on e.g. P4.v8: P4.v*, P?.s1)."`
}

// paramJSON is one parameter of `params --output=json`; the catalog's
// fields are there for the registers it describes.
type paramJSON struct {
	Value any            `json:"value"`
	Meta  map[string]any `json:"meta,omitempty"`

	Symbol  string `json:"symbol,omitempty"`
	Name    string `json:"name,omitempty"`
	Display string `json:"display,omitempty"` // as the app shows it, a number or a state's label
	Unit    string `json:"unit,omitempty"`
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

	// The module list says which modules there are, whether the named ones
	// are among them, and (for the catalog) which menu and permissions each
	// has. Named modules are read without it when it cannot be read.
	devids := slices.Compact(slices.Sorted(slices.Values(c.Modules)))
	var modules []cloudclient.Module
	objectID, _, err := s.chooseObject(ctx, &c.cloudFlags)
	if err == nil {
		modules, err = s.listModules(ctx, objectID)
	}
	var usage usageError
	switch {
	case err != nil && (len(devids) == 0 || errors.As(err, &usage)):
		return err
	case err != nil:
		g.Logger.Warn("the module list could not be read: the named modules are not checked against it, and parameters are shown without names", "err", err)
	case len(devids) > 0:
		if modules, err = selectModules(modules, devids, objectID, modulesFlag); err != nil {
			return err
		}
	default:
		for _, m := range modules {
			devids = append(devids, m.Devid)
		}
		if len(devids) == 0 {
			return fmt.Errorf("object %d lists no modules", objectID)
		}
	}
	slices.Sort(devids)
	devids = slices.Compact(devids)

	updates, err := s.client.PrimeWithRetry(ctx, devids)
	if err != nil {
		return fmt.Errorf("parameter snapshot: %w", err)
	}
	// The store gives the exporter's key order (pool, channel, index, all
	// numeric) and folds duplicate entries exactly as the exporter would.
	st := store.New()
	st.ApplyPrime(st.BeginPrime(), updates, time.Now())
	for _, d := range devids {
		if len(st.Entries(d)) == 0 {
			g.Logger.Warn("the snapshot holds no parameters of a module", "devid", d)
		}
	}
	var cat *catalog.Catalog
	if len(modules) > 0 {
		if cat, err = c.load(ctx, s.client, listedModuleSpecs(modules, st), false, g.Logger); err != nil {
			return err
		}
	}
	// named describes a register with the catalog; nil without one.
	named := func(devid string, k store.Key) (*catalog.Param, catalog.Reader) {
		if cat == nil {
			return nil, nil
		}
		return cat.Module(devid).Lookup(k.Pool, k.Param()), storeReader(st, devid)
	}

	if c.json() {
		doc := orderedObject{}
		for _, d := range devids {
			params := orderedObject{}
			for _, e := range st.Entries(d) {
				key := e.Key.String()
				if !filter.match(key) {
					continue
				}
				pj := paramJSON{Value: e.Value, Meta: e.Meta}
				if p, r := named(d, e.Key); p != nil {
					pj.Symbol, pj.Name = p.Symbol, p.Name
					if v, unit, ok := shownValue(p, r); ok {
						pj.Display, pj.Unit = v, unit
					}
				}
				params = append(params, orderedMember{key, pj})
			}
			doc = append(doc, orderedMember{d, params})
		}
		return writeJSON(g.Stdout, doc)
	}
	tw := newTable(g.Stdout)
	if cat == nil {
		fmt.Fprintln(tw, "DEVID\tKEY\tVALUE")
	} else {
		fmt.Fprintln(tw, "DEVID\tKEY\tVALUE\tNAME\tDISPLAYED")
	}
	for _, d := range devids {
		for _, e := range st.Entries(d) {
			key := e.Key.String()
			if !e.HasValue || !filter.match(key) {
				continue
			}
			if cat == nil {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", d, key, formatValue(e.Value))
				continue
			}
			name, shown := "-", "-"
			if p, r := named(d, e.Key); p != nil {
				name = p.Name
				if v, unit, ok := shownValue(p, r); ok {
					shown = withUnit(v, unit)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d, key, formatValue(e.Value), name, shown)
		}
	}
	return tw.Flush()
}
