package collector

import (
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
)

// Options configures a Collector.
type Options struct {
	// Include and Exclude select parameter series by their key "<pool>.<param>"
	// (for example "P4.v8") with path.Match semantics: "P4.v*", "P5.*",
	// "*.s*". '*' also matches the dot, so "P4*" selects every parameter of
	// pool P4. A parameter is exported when Include is empty or one Include
	// pattern matches, and no Exclude pattern matches.
	Include, Exclude []string

	// MaxSeries caps the number of bragerone_parameter_value series of each
	// module per scrape; 0 means unlimited (serve's default is
	// DefaultMaxSeriesPerModule). When the numeric parameters of a module
	// passing the filters exceed the cap, the series kept are its first
	// MaxSeries in the order (pool, param) compared as byte strings, so the
	// same set is kept scrape after scrape while the stored parameters stay
	// the same. The rest are counted in bragerone_parameter_series_dropped.
	MaxSeries int

	// Logger receives a warning when a series had to be skipped; nil discards.
	Logger *slog.Logger

	// Catalog, when set, supplies the parameter catalog: names, units,
	// display values and enum states of the stored registers, the
	// catalog's health, and alarm names. The parameter families it adds
	// obey Include and Exclude (matched against the register) but not
	// MaxSeries. Nil: none of them.
	Catalog CatalogSource
}

// PatternError reports an Include or Exclude pattern that path.Match rejects.
type PatternError struct {
	Option  string // "include" or "exclude"
	Pattern string
	Err     error
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("parameter %s pattern %q is invalid: %v (patterns look like \"P4.v*\", \"P5.*\", \"*.s*\")", e.Option, e.Pattern, e.Err)
}

func (e *PatternError) Unwrap() error { return e.Err }

// DefaultMaxSeriesPerModule is the default of MaxSeries in serve. A real
// module reports under 1,000 parameters, so five times that never drops a
// real series, while a runaway push (one event invented 100,000 keys in the
// field) exports at most this many series per module: a scrape stays well
// under a megabyte per module instead of growing to many.
const DefaultMaxSeriesPerModule = 5000

// ErrNegativeMaxSeries is returned by Validate when MaxSeries is below zero.
var ErrNegativeMaxSeries = errors.New("parameter max series must be 0 (unlimited) or positive")

// Validate checks the patterns and the cap. It returns every problem found,
// joined; each pattern problem is a *PatternError.
func (o Options) Validate() error {
	var errs []error
	check := func(option string, patterns []string) {
		for _, p := range patterns {
			if p == "" {
				errs = append(errs, &PatternError{Option: option, Pattern: p, Err: errors.New("empty pattern")})
				continue
			}
			// path.Match checks the whole pattern whatever the name.
			if _, err := path.Match(p, ""); err != nil {
				errs = append(errs, &PatternError{Option: option, Pattern: p, Err: err})
			}
		}
	}
	check("include", o.Include)
	check("exclude", o.Exclude)
	if o.MaxSeries < 0 {
		errs = append(errs, fmt.Errorf("%w: got %d", ErrNegativeMaxSeries, o.MaxSeries))
	}
	return errors.Join(errs...)
}

// MatchRegister reports whether a register ("P4.v8") matches a pattern
// with path.Match semantics, in any case: "p4.V8", "P4.v*" and "p?.S1" all
// match as their canonical spelling would. The one matcher of
// --parameters.include/--parameters.exclude and the tools' --filter.
func MatchRegister(pattern, register string) bool {
	ok, _ := path.Match(strings.ToLower(pattern), strings.ToLower(register))
	return ok
}
