package fleet

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

func obj(id int, name string) cloudclient.Object { return cloudclient.Object{ID: id, Name: name} }

func trusted(objects ...cloudclient.Object) Listing { return Listing{Objects: objects, Trusted: true} }

// TestDecide: which objects a listing starts, stops and renames.
func TestDecide(t *testing.T) {
	home, cottage, shop := obj(1, "Home"), obj(2, "Cottage"), obj(3, "Shop")
	tests := []struct {
		name    string
		watched map[int]string
		listing Listing
		want    []int
		plan    Plan
	}{
		{"Start_EveryListedObject", nil, trusted(cottage, home), nil, Plan{Start: []cloudclient.Object{home, cottage}}},
		{"Start_OnlyWanted", nil, trusted(home, cottage, shop), []int{3, 1}, Plan{Start: []cloudclient.Object{home, shop}}},
		{"Steady_NothingChanges", map[int]string{1: "Home", 2: "Cottage"}, trusted(home, cottage), nil, Plan{}},
		{"Joined_Started", map[int]string{1: "Home"}, trusted(home, shop), nil, Plan{Start: []cloudclient.Object{shop}}},
		{"Left_Stopped", map[int]string{1: "Home", 2: "Cottage"}, trusted(home), nil, Plan{Stop: []int{2}}},
		{"WantedLeft_Stopped", map[int]string{1: "Home", 2: "Cottage"}, trusted(home, shop), []int{1, 2}, Plan{Stop: []int{2}}},
		{"Renamed", map[int]string{1: "Old home"}, trusted(home), nil, Plan{Renamed: []cloudclient.Object{home}}},
		{"ListedTwice_CountsOnce", nil, trusted(home, obj(1, "Home again")), nil, Plan{Start: []cloudclient.Object{home}}},
		// A listing that proves nothing never stops a watched object.
		{"Failed_NothingStops", map[int]string{1: "Home", 2: "Cottage"}, Listing{}, nil, Plan{}},
		{"Untrusted_NothingStartsOrStops", map[int]string{1: "Home"}, Listing{Objects: []cloudclient.Object{shop}}, nil, Plan{}},
		{"Empty_NothingStops", map[int]string{1: "Home"}, ListingOf(&cloudclient.ObjectListing{Recognised: true, Objects: []cloudclient.Object{}}), nil, Plan{}},
		{"Partial_NothingStops", map[int]string{1: "Home", 2: "Cottage"}, ListingOf(&cloudclient.ObjectListing{Recognised: true, Dropped: 1, Objects: []cloudclient.Object{home}}), nil, Plan{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.watched, tc.listing, tc.want)
			if !reflect.DeepEqual(got, tc.plan) {
				t.Errorf("Decide = %+v, want %+v", got, tc.plan)
			}
			if got.Empty() != tc.plan.Empty() {
				t.Errorf("Empty = %v", got.Empty())
			}
		})
	}
}

// TestListingOf: only a whole, recognised, non-empty listing is trusted.
func TestListingOf(t *testing.T) {
	one := []cloudclient.Object{obj(1, "Home")}
	for _, tc := range []struct {
		in   *cloudclient.ObjectListing
		want bool
	}{
		{nil, false},
		{&cloudclient.ObjectListing{Objects: one, Recognised: true}, true},
		{&cloudclient.ObjectListing{Objects: one}, false},
		{&cloudclient.ObjectListing{Objects: one, Recognised: true, Dropped: 1}, false},
		{&cloudclient.ObjectListing{Objects: []cloudclient.Object{}, Recognised: true}, false},
	} {
		if got := ListingOf(tc.in).Trusted; got != tc.want {
			t.Errorf("ListingOf(%+v).Trusted = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestUnknownObjects: an id a trusted listing lacks is named with the
// objects the account offers; an untrusted listing refuses nothing.
func TestUnknownObjects(t *testing.T) {
	l := trusted(obj(6120, "Cottage"), obj(5747, "Home"))
	err := UnknownObjects(l, []int{5747, 99, 99})
	var ue *UnknownObjectsError
	if !errors.As(err, &ue) {
		t.Fatalf("UnknownObjects = %v, want *UnknownObjectsError", err)
	}
	if want := "object 99 is not one of the account's objects (it lists 5747 Home, 6120 Cottage)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if err := UnknownObjects(l, []int{5747, 6120}); err != nil {
		t.Errorf("known ids refused: %v", err)
	}
	if err := UnknownObjects(Listing{Objects: l.Objects}, []int{99}); err != nil {
		t.Errorf("an untrusted listing refused an id: %v", err)
	}
	if err := UnknownObjects(l, []int{7, 8}); !strings.HasPrefix(err.Error(), "objects 7, 8 are not") {
		t.Errorf("two unknown ids: %v", err)
	}
	var many []cloudclient.Object
	for i := 1; i <= 25; i++ {
		many = append(many, obj(i, ""))
	}
	if err := UnknownObjects(trusted(many...), []int{99}); !strings.HasSuffix(err.Error(), "19, 20, and 5 more)") {
		t.Errorf("long list not bounded: %v", err)
	}
}

func listing(devids ...string) *cloudclient.ModuleListing {
	l := &cloudclient.ModuleListing{Recognised: true}
	for _, d := range devids {
		l.Modules = append(l.Modules, cloudclient.Module{Devid: d})
	}
	return l
}

// TestAssign: --cloud.modules is split over the objects that list the
// devids; a devid no list names is decisive only when every list was read.
func TestAssign(t *testing.T) {
	tests := []struct {
		name     string
		want     []string
		listings map[int]*cloudclient.ModuleListing
		by       map[int][]string
		missing  []string
		complete bool
	}{
		{"SplitAcrossObjects", []string{"C", "A"}, map[int]*cloudclient.ModuleListing{1: listing("A", "B"), 2: listing("C")},
			map[int][]string{1: {"A"}, 2: {"C"}}, nil, true},
		{"ObjectWithoutWantedModule_NotWatched", []string{"A"}, map[int]*cloudclient.ModuleListing{1: listing("A"), 2: listing("C")},
			map[int][]string{1: {"A"}}, nil, true},
		{"Missing_Complete", []string{"A", "TYPO"}, map[int]*cloudclient.ModuleListing{1: listing("A"), 2: listing("C")},
			map[int][]string{1: {"A"}}, []string{"TYPO"}, true},
		{"Missing_ListFailed_NotDecisive", []string{"A", "C"}, map[int]*cloudclient.ModuleListing{1: listing("A"), 2: nil},
			map[int][]string{1: {"A"}}, []string{"C"}, false},
		{"Missing_ListPartial_NotDecisive", []string{"Z"}, map[int]*cloudclient.ModuleListing{1: {Recognised: true, Dropped: 1}},
			map[int][]string{}, []string{"Z"}, false},
		{"DevidOnTwoObjects_FirstObjectKeepsIt", []string{"A"}, map[int]*cloudclient.ModuleListing{2: listing("A"), 1: listing("A")},
			map[int][]string{1: {"A"}}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			by, missing, complete := Assign(tc.want, tc.listings)
			if !reflect.DeepEqual(by, tc.by) || !reflect.DeepEqual(missing, tc.missing) || complete != tc.complete {
				t.Errorf("Assign = %v, %v, %v; want %v, %v, %v", by, missing, complete, tc.by, tc.missing, tc.complete)
			}
		})
	}
}

// TestReconnectOffset: fixed per object, inside the spread, and different
// objects get different offsets (so their reconnects do not coincide).
func TestReconnectOffset(t *testing.T) {
	const spread = 3 * time.Second
	if ReconnectOffset(5747, 0) != 0 {
		t.Error("no spread must give no offset")
	}
	seen := map[time.Duration]bool{}
	for id := 1; id <= 50; id++ {
		d := ReconnectOffset(id, spread)
		if d < 0 || d >= spread {
			t.Fatalf("offset of %d = %v, outside [0, %v)", id, d, spread)
		}
		if d != ReconnectOffset(id, spread) {
			t.Fatalf("offset of %d not fixed", id)
		}
		seen[d.Truncate(100*time.Millisecond)] = true
	}
	// 50 objects over 30 slots of 100 ms: a hash that spreads fills most.
	if len(seen) < 15 {
		t.Errorf("50 objects share only %d of 30 100-ms slots: %v", len(seen), fmt.Sprint(seen))
	}
}
