package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// paramsCmd prints the prime snapshot (POST /v1/modules/parameters) of the
// watched modules: --cloud.modules, else every module of the object.
type paramsCmd struct {
	cloudFlags `embed:""`
	outputFlag `embed:""`

	Filter []string `name:"filter" help:"Print only parameters whose key matches one of these patterns (path.Match on e.g. P4.v8: P4.v*, P?.s1)."`
}

// paramJSON is one parameter of `params --output=json`.
type paramJSON struct {
	Value any            `json:"value"`
	Meta  map[string]any `json:"meta,omitempty"`
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

	devids := slices.Clone(c.Modules)
	if len(devids) == 0 {
		objectID, _, err := s.chooseObject(ctx, &c.cloudFlags)
		if err != nil {
			return err
		}
		modules, err := s.listModules(ctx, objectID)
		if err != nil {
			return err
		}
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

	if c.json() {
		doc := orderedObject{}
		for _, d := range devids {
			params := orderedObject{}
			for _, e := range st.Entries(d) {
				key := e.Key.String()
				if !filter.match(key) {
					continue
				}
				params = append(params, orderedMember{key, paramJSON{Value: e.Value, Meta: e.Meta}})
			}
			doc = append(doc, orderedMember{d, params})
		}
		return writeJSON(g.Stdout, doc)
	}
	tw := newTable(g.Stdout)
	fmt.Fprintln(tw, "DEVID\tKEY\tVALUE")
	for _, d := range devids {
		for _, e := range st.Entries(d) {
			key := e.Key.String()
			if !e.HasValue || !filter.match(key) {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d, key, formatValue(e.Value))
		}
	}
	return tw.Flush()
}
