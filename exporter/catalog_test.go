package exporter

import (
	"slices"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/outage"
	"github.com/bragerone/bragerone_exporter/realtime"
	"github.com/bragerone/bragerone_exporter/realtime/store"
	"github.com/bragerone/bragerone_exporter/wire"
)

// The catalog is asked for the modules the listing has shown, each with its
// menu and permissions; a row without permissions is an empty set.
func TestModuleSpecsFromTheListing(t *testing.T) {
	st := &realtime.Status{Modules: []realtime.ModuleStatus{
		{ModuleSnapshot: outage.ModuleSnapshot{Devid: "A", ConnectedAt: 7}, Listed: true, DeviceMenu: 153, Permissions: []string{"DISPLAY_MENU_DHW"}},
		{ModuleSnapshot: outage.ModuleSnapshot{Devid: "B"}, Listed: true, DeviceMenu: 101},
		{ModuleSnapshot: outage.ModuleSnapshot{Devid: "C"}}, // not in a listing yet
	}}
	specs := ModuleSpecs(st, store.New())
	if len(specs) != 2 || specs[0].DevID != "A" || specs[0].DeviceMenu != 153 || specs[0].ConnectedAt != 7 ||
		!slices.Equal(specs[0].Permissions, []string{"DISPLAY_MENU_DHW"}) || specs[1].DevID != "B" {
		t.Fatalf("specs %+v", specs)
	}
	if specs[1].Permissions == nil || len(specs[1].Permissions) != 0 {
		t.Errorf("a row without permissions gave %#v, want an empty set", specs[1].Permissions)
	}
	if _, ok := specs[0].Values("P4", "v1"); ok {
		t.Error("a value read from an empty store")
	}
}

// A tool's module listing is described the same way as the gateway's.
func TestListedModuleSpecsFromTheRows(t *testing.T) {
	st := store.New()
	st.ApplyLive([]wire.ParamUpdate{{Devid: "A", Pool: "P4", Chan: 'v', Idx: 1, HasValue: true, Value: 21.5}}, store.SourceLive, time.Now())
	specs := ListedModuleSpecs([]cloudclient.Module{
		{Devid: "A", DeviceMenu: 153, Permissions: []string{"DISPLAY_MENU_DHW"}, ConnectedAt: 7},
		{Devid: "B", DeviceMenu: 101},
	}, st)
	if len(specs) != 2 || specs[0].DevID != "A" || specs[0].DeviceMenu != 153 || specs[0].ConnectedAt != 7 ||
		!slices.Equal(specs[0].Permissions, []string{"DISPLAY_MENU_DHW"}) || specs[1].DevID != "B" {
		t.Fatalf("specs %+v", specs)
	}
	if specs[1].Permissions == nil || len(specs[1].Permissions) != 0 {
		t.Errorf("a row without permissions gave %#v, want an empty set", specs[1].Permissions)
	}
	if v, ok := specs[0].Values("P4", "v1"); !ok || v != 21.5 {
		t.Errorf("stored P4.v1 read as %v %v, want 21.5", v, ok)
	}
	if _, ok := specs[1].Values("P4", "v1"); ok {
		t.Error("another module's value read")
	}
}
