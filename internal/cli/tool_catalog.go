package cli

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
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// errCatalogDisabled is the refusal of a tool that cannot work without the
// catalog.
var errCatalogDisabled = errors.New("--catalog.disable: this needs the parameter catalog")

// overrides validates the flags as serve does and reads
// --catalog.overrides-file; nil when none is given or the catalog is off.
func (f *catalogCommonFlags) overrides() (*catalog.Overrides, error) { return f.catalog().Overrides() }

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

// displayed is a parameter's value as the app shows it, for a record: a
// number and its unit, or the text of a state or a time of day (with no
// unit); both nil when nothing can be shown.
func displayed(p *catalog.Param, r store.Reader) (value, unit any) {
	v, label, ok := p.Display(r)
	return displayedAs(p, r, v, label, ok)
}

// displayedAs is displayed for a value the catalog has already turned into
// what the app shows (v, or the text label; ok false when it shows nothing).
func displayedAs(p *catalog.Param, r store.Reader, v float64, label string, ok bool) (value, unit any) {
	switch {
	case !ok:
		return nil, nil
	case label != "":
		return label, nil
	case isNaNOrInf(v):
		return nil, nil
	}
	return v, orNull(p.UnitFor(r))
}

// displayedText is a displayed value and its unit as a person reads them:
// "12.3 kW", "Summer"; "" when there is none.
func displayedText(value, unit any) string {
	if value == nil {
		return ""
	}
	u, _ := unit.(string)
	return withUnit(cellText(keyValue, value), u)
}

// paramsNamed are the parameters of the module with this name or symbol,
// ignoring case: a name is typed as the app shows it, and "boiler set
// temperature" means the same parameter as "Boiler set temperature". An
// exact match wins over one that differs in case.
func paramsNamed(m *catalog.Module, name string) []*catalog.Param {
	if m == nil {
		return nil
	}
	if exact := m.ByName(name); len(exact) > 0 {
		return exact
	}
	var found []*catalog.Param
	for _, p := range m.Params() {
		if strings.EqualFold(p.Name, name) || strings.EqualFold(p.Symbol, name) {
			found = append(found, p)
		}
	}
	return found
}

// withUnit joins a shown value and its unit: "5.3 kW", "Work".
func withUnit(value, unit string) string {
	return strings.TrimSpace(value + " " + unit)
}

func isNaNOrInf(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }
