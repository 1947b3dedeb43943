package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bragerone/bragerone_exporter/catalog"
	"github.com/bragerone/bragerone_exporter/cloudsim/webapp"
)

// deployment serves one deployment of the simulated web app's assets.
type deployment struct{ d *webapp.Deployment }

func (f deployment) Asset(_ context.Context, p string) ([]byte, error) {
	switch {
	case p == "/":
		return f.d.Page.Body, nil
	case p == "/assets/":
		return f.d.Listing.Body, nil
	case strings.HasPrefix(p, "/assets/"):
		if x := f.d.Files[strings.TrimPrefix(p, "/assets/")]; x != nil {
			return x.Body, nil
		}
	}
	return nil, fmt.Errorf("404 %s", p)
}

func roles(m *catalog.Module) map[string]catalog.Role {
	out := map[string]catalog.Role{}
	for _, p := range m.Params() {
		if p.Role != catalog.RoleNone {
			out[p.Address.String()] = p.Role
		}
	}
	return out
}

// The web app's boiler menu names its fuel level and fuel burned in the
// display language; their roles are the same in English and Polish, with
// and without the unit registers read, and the overrides file moves or
// takes away a role.
func TestRolesSurviveTheDisplayLanguage(t *testing.T) {
	live := func(pool, key string) (float64, bool) {
		if pool == "P4" && key == "u9" {
			return 2, true // the web app's unit code of %
		}
		return 0, false
	}
	want := map[string]catalog.Role{"P4.v9": catalog.RoleFuelLevel, "P5.v40": catalog.RoleFuelBurned}
	for _, lang := range []string{"en", "pl"} {
		for _, values := range []func(string, string) (float64, bool){nil, live} {
			c, err := catalog.Load(context.Background(), deployment{webapp.Deploy(0)},
				[]catalog.ModuleSpec{{DevID: "B", DeviceMenu: 153, Values: values}}, catalog.Options{Language: lang})
			if err != nil {
				t.Fatal(err)
			}
			m := c.Module("B")
			if got := roles(m); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s (values %v): roles %v, want %v", lang, values != nil, got, want)
			}
			if ps := m.ByRole(catalog.RoleFuelLevel); len(ps) != 1 || ps[0].Symbol != "PARAM_P4_9" {
				t.Errorf("%s: ByRole(fuel_level) = %v", lang, ps)
			}
			o, err := catalog.ParseOverrides([]byte("PARAM_P4_9: {role: none}\nP4.v2: {role: fuel_level}\nP4.v77: {role: ignitions}\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := roles(c.WithOverrides(o).Module("B"))
			wantOv := map[string]catalog.Role{"P4.v2": catalog.RoleFuelLevel, "P4.v77": catalog.RoleIgnitions, "P5.v40": catalog.RoleFuelBurned}
			if fmt.Sprint(got) != fmt.Sprint(wantOv) {
				t.Errorf("%s with overrides: %v, want %v", lang, got, wantOv)
			}
			if roles(m)["P4.v9"] != catalog.RoleFuelLevel {
				t.Errorf("overrides changed the original catalog")
			}
		}
	}
}
