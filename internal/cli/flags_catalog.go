package cli

import (
	"time"

	"github.com/alecthomas/kong"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/exporter"
)

// catalogCommonFlags are the catalog flags of every command that names
// parameters: serve (whose catalogFlags add a refresh interval) and the
// tools, which read the catalog once.
type catalogCommonFlags struct {
	Language      string `name:"catalog.language" default:"${catalog_language}" help:"Language of parameter names, units and labels: any the web app offers (a language it does not offer is reported at start with the offered ones)." group:"Catalog"`
	Disable       bool   `name:"catalog.disable" help:"Do not read the catalog: no names, units, display values or enum states; raw values as always." group:"Catalog"`
	OverridesFile string `name:"catalog.overrides-file" type:"existingfile" help:"YAML file correcting the name, unit, scale or role of a register (P4.v7) or symbol (PARAM_P4_7) the catalog gets wrong." group:"Catalog"`
}

// catalogFlags configure the parameter catalog: names, units, display values
// and enum labels read from the cloud's web-app assets. Their defaults are
// the catalog's and the loader's own (see catalogVars).
type catalogFlags struct {
	catalogCommonFlags `embed:""`
	RefreshInterval    time.Duration `name:"catalog.refresh-interval" default:"${catalog_refresh_interval}" help:"How often the catalog is read again from the web app; it is also read again when the cloud's frontend version changes or a module joins." group:"Catalog"`
}

// catalogVars are the catalog flags' defaults, taken from their owners.
func catalogVars() kong.Vars {
	return kong.Vars{
		"catalog_language":         catalog.DefaultLanguage,
		"catalog_refresh_interval": shortDuration(catalogload.DefaultRefreshInterval),
	}
}

// catalog maps the flags to the exporter's catalog settings.
func (f *catalogFlags) catalog() exporter.Catalog {
	c := f.catalogCommonFlags.catalog()
	c.RefreshInterval = f.RefreshInterval
	return c
}

// catalog maps the flags to the exporter's catalog settings, without a
// refresh (the tools read the catalog once).
func (f *catalogCommonFlags) catalog() exporter.Catalog {
	return exporter.Catalog{Disable: f.Disable, Language: f.Language, OverridesFile: f.OverridesFile}
}
