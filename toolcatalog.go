package main

// The command-line tools name parameters with the same catalog serve uses:
// read once from the cloud's web-app assets, for the modules a tool works
// on, with their values at that moment; values are shown through it as the
// web app shows them.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// errCatalogDisabled is the refusal of a tool that cannot work without the
// catalog.
var errCatalogDisabled = errors.New("--catalog.disable: this needs the parameter catalog")

// overrides validates the flags as serve does and reads
// --catalog.overrides-file; nil when none is given or the catalog is off.
func (f *catalogCommonFlags) overrides() (*catalog.Overrides, error) { return f.catalog().Overrides() }

// listedModuleSpecs describes the rows of a module listing to the catalog;
// st holds the modules' values.
func listedModuleSpecs(modules []cloudclient.Module, st *store.Store) []catalog.ModuleSpec {
	return exporter.ListedModuleSpecs(modules, st)
}

// load reads the catalog of the modules from the assets fetch fetches. A
// language the web app does not offer, and a bad overrides file, are usage
// errors. Any other failure is an error when required, and otherwise a
// warning: the tool goes on without names (nil catalog).
func (f *catalogCommonFlags) load(ctx context.Context, fetch catalog.Fetcher, specs []catalog.ModuleSpec, required bool, logger *slog.Logger) (*catalog.Catalog, error) {
	if f.Disable {
		if required {
			return nil, usageError{errCatalogDisabled}
		}
		return nil, nil
	}
	o, err := f.overrides()
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Load(ctx, fetch, specs, catalog.Options{Language: f.Language, Logger: logger})
	var le *catalog.LanguageError
	switch {
	case errors.As(err, &le):
		return nil, exporter.LanguageError(err)
	case err != nil && required:
		return nil, fmt.Errorf("reading the parameter catalog from the web app: %w", err)
	case err != nil:
		logger.Warn("parameters are shown without names: the catalog could not be read from the web app", "err", err)
		return nil, nil
	}
	if o != nil {
		cat = cat.WithOverrides(o)
	}
	return cat, nil
}

// storeReader reads one module's raw numeric values from st, for the
// catalog's display rules.
func storeReader(st *store.Store, devid string) catalog.Reader {
	return exporter.StoreReader(st, devid)
}

// shownValue is a parameter's value as the app shows it: the number and its
// unit, or the label of a state (with no unit). ok is false when nothing can
// be shown.
func shownValue(p *catalog.Param, r catalog.Reader) (value, unit string, ok bool) {
	v, label, ok := p.Display(r)
	switch {
	case !ok:
		return "", "", false
	case label != "":
		return label, "", true
	case isNaNOrInf(v):
		return "", "", false
	}
	return formatFloat(v), p.UnitFor(r), true
}

// withUnit joins a shown value and its unit: "5.3 kW", "Work".
func withUnit(value, unit string) string {
	return strings.TrimSpace(value + " " + unit)
}

func isNaNOrInf(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
