package exporter

import (
	"context"
	"log/slog"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/catalogload"
	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/fleet"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// newLoader builds the catalog loader: module specs from the gateway's
// listing rows with their stored values, the first load after the first
// prime. Assets (and the unauthenticated frontend version) go through a
// client of their own, built like the REST client (its conditional cache,
// retries and 4 requests in flight, counted in the same HTTP metrics), so a
// slow or unreachable assets site never holds a slot a prime or a module
// poll needs.
func newLoader(c Catalog, rest *cloudclient.Client, fl *fleet.Fleet, st *store.Store, overrides *catalog.Overrides, logger *slog.Logger) (*catalogload.Loader, error) {
	cfg := rest.Config()
	cfg.Credentials, cfg.LoginObserver = nil, nil
	client, err := cloudclient.New(cfg)
	if err != nil {
		return nil, err
	}
	return catalogload.New(catalogload.Config{
		Fetcher: client,
		Modules: func() []catalog.ModuleSpec {
			var specs []catalog.ModuleSpec
			for _, o := range fl.Status().Objects {
				specs = append(specs, ModuleSpecs(o.Gateway, st)...)
			}
			return specs
		},
		Ready: fl.Ready(),
		Version: func(ctx context.Context) (string, error) {
			v, err := client.SystemVersion(ctx)
			if err != nil {
				return "", err
			}
			return v.Version, nil
		},
		Options:         catalog.Options{Language: c.Language, Logger: logger},
		Overrides:       overrides,
		RefreshInterval: c.RefreshInterval,
		Logger:          logger,
	})
}

// ModuleSpecs describes to the catalog the watched modules the gateway's
// listing has shown, with a reader of their stored values (units chosen by
// a register are read at load time).
func ModuleSpecs(status *realtime.Status, st *store.Store) []catalog.ModuleSpec {
	if status == nil {
		return nil
	}
	var out []catalog.ModuleSpec
	for _, m := range status.Modules {
		if m.Listed {
			out = append(out, moduleSpec(m.Devid, m.DeviceMenu, m.Permissions, m.ConnectedAt, st))
		}
	}
	return out
}

// ListedModuleSpecs describes the rows of a module listing to the catalog;
// st holds the modules' values.
func ListedModuleSpecs(modules []cloudclient.Module, st *store.Store) []catalog.ModuleSpec {
	specs := make([]catalog.ModuleSpec, 0, len(modules))
	for _, m := range modules {
		specs = append(specs, moduleSpec(m.Devid, m.DeviceMenu, m.Permissions, m.ConnectedAt, st))
	}
	return specs
}

// moduleSpec describes one listed module row. A row always carries its
// permissions, so none is an empty set (gated entries hidden), never "no
// filtering".
func moduleSpec(devid string, deviceMenu int, permissions []string, connectedAt int64, st *store.Store) catalog.ModuleSpec {
	if permissions == nil {
		permissions = []string{}
	}
	return catalog.ModuleSpec{
		DevID: devid, DeviceMenu: deviceMenu, Permissions: permissions, ConnectedAt: connectedAt,
		Values: st.Reader(devid),
	}
}
