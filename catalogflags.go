package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// catalogCommonFlags are the catalog flags of every command that names
// parameters: serve (whose catalogFlags add a refresh interval) and the
// tools, which read the catalog once.
type catalogCommonFlags struct {
	Language      string `name:"catalog.language" default:"${catalog_language}" help:"Language of parameter names, units and labels: any the web app offers (a language it does not offer is reported at start with the offered ones)." group:"Catalog"`
	Disable       bool   `name:"catalog.disable" help:"Do not read the catalog: no names, units, display values or enum states; raw values as always." group:"Catalog"`
	OverridesFile string `name:"catalog.overrides-file" type:"existingfile" help:"YAML file correcting the name, unit or scale of a register (P4.v7) or symbol (PARAM_P4_7) the catalog gets wrong." group:"Catalog"`
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

// shortDuration prints 6h rather than 6h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// validate checks what can be checked before the web app is asked: the
// language's form, the interval, and the overrides file (parsed here, so a
// bad file stops the start).
func (f *catalogFlags) validate() (*catalog.Overrides, error) {
	if f.Disable {
		return nil, nil
	}
	if !languageCode(f.Language) {
		return nil, usageErrorf("--catalog.language %q: want a language code such as en or pl", f.Language)
	}
	if f.RefreshInterval <= 0 {
		return nil, usageErrorf("--catalog.refresh-interval must be positive")
	}
	if f.OverridesFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(f.OverridesFile)
	if err != nil {
		return nil, usageErrorf("--catalog.overrides-file: %v", err)
	}
	o, err := catalog.ParseOverrides(data)
	if err != nil {
		return nil, usageErrorf("--catalog.overrides-file %s: %v", f.OverridesFile, err)
	}
	return o, nil
}

// languageCode accepts the shape of a language code (en, pl, pt-br, zh_tw).
func languageCode(s string) bool {
	if len(s) < 2 || len(s) > 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (c == '-' || c == '_') && i > 0) {
			return false
		}
	}
	return true
}

// languageUsageError is the start failure for a language the web app does
// not offer.
func languageUsageError(err error) error {
	return usageErrorf("--catalog.language: %v", err)
}

// newLoader builds the catalog loader of serve: module specs from the
// gateway's listing rows with their stored values, the first load after the
// first prime. Assets (and the unauthenticated frontend version) go through
// a client of their own, built like the REST client (its conditional cache,
// retries and 4 requests in flight, counted in the same HTTP metrics), so a
// slow or unreachable assets site never holds a slot a prime or a module
// poll needs.
func (f *catalogFlags) newLoader(rest *cloudclient.Client, gw *realtime.Gateway, st *store.Store, overrides *catalog.Overrides, logger *slog.Logger) (*catalogload.Loader, error) {
	cfg := rest.Config()
	cfg.Credentials, cfg.LoginObserver = nil, nil
	client, err := cloudclient.New(cfg)
	if err != nil {
		return nil, err
	}
	return catalogload.New(catalogload.Config{
		Fetcher: client,
		Modules: func() []catalog.ModuleSpec { return moduleSpecs(gw.Status(), st) },
		Ready:   gw.Ready(),
		Version: func(ctx context.Context) (string, error) {
			v, err := client.SystemVersion(ctx)
			if err != nil {
				return "", err
			}
			return v.Version, nil
		},
		Options:         catalog.Options{Language: f.Language, Logger: logger},
		Overrides:       overrides,
		RefreshInterval: f.RefreshInterval,
		Logger:          logger,
	})
}

// moduleSpecs describes the watched modules the listing has shown, with a
// reader of their stored values (units chosen by a register are read at
// load time).
func moduleSpecs(status *realtime.Status, st *store.Store) []catalog.ModuleSpec {
	if status == nil {
		return nil
	}
	var out []catalog.ModuleSpec
	for _, m := range status.Modules {
		if !m.Listed {
			continue
		}
		out = append(out, catalog.ModuleSpec{
			DevID: m.Devid, DeviceMenu: m.DeviceMenu, Permissions: listedPermissions(m.Permissions), ConnectedAt: m.ConnectedAt,
			Values: storeReader(st, m.Devid),
		})
	}
	return out
}
