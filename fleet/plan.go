package fleet

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// Listing is one reading of the account's objects, as the plan sees it.
type Listing struct {
	Objects []cloudclient.Object
	// Trusted: the answer had a known shape, dropped no row and named at
	// least one object. Only a trusted listing starts or stops objects: a
	// failed, empty or partial one proves nothing about an object it lacks,
	// exactly as an unusable module list never turns a module offline.
	Trusted bool
}

// ListingOf judges a listing the client read.
func ListingOf(l *cloudclient.ObjectListing) Listing {
	if l == nil {
		return Listing{}
	}
	return Listing{Objects: l.Objects, Trusted: l.Recognised && l.Dropped == 0 && len(l.Objects) > 0}
}

// Plan is what one listing changes.
type Plan struct {
	// Start: listed, wanted and not watched yet, in ID order.
	Start []cloudclient.Object
	// Stop: watched, and absent from the listing (the object left the
	// account or access to it was revoked), in ID order.
	Stop []int
	// Renamed: watched objects listed under a new name.
	Renamed []cloudclient.Object
}

// Empty says the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Start) == 0 && len(p.Stop) == 0 && len(p.Renamed) == 0 }

// Decide compares the watched objects (ID to name) with a listing. want
// restricts the objects watched (--cloud.object-id; empty: every object of
// the account); an object listed twice counts once, under its first name.
// An untrusted listing changes nothing.
func Decide(watched map[int]string, l Listing, want []int) Plan {
	var p Plan
	if !l.Trusted {
		return p
	}
	listed := map[int]bool{}
	for _, o := range l.Objects {
		if listed[o.ID] {
			continue
		}
		listed[o.ID] = true
		if len(want) > 0 && !slices.Contains(want, o.ID) {
			continue
		}
		name, ok := watched[o.ID]
		switch {
		case !ok:
			p.Start = append(p.Start, o)
		case name != o.Name:
			p.Renamed = append(p.Renamed, o)
		}
	}
	for id := range watched {
		if !listed[id] {
			p.Stop = append(p.Stop, id)
		}
	}
	slices.SortFunc(p.Start, byID)
	slices.SortFunc(p.Renamed, byID)
	slices.Sort(p.Stop)
	return p
}

func byID(a, b cloudclient.Object) int { return a.ID - b.ID }

// UnknownObjectsError says which wanted object ids a trusted listing of the
// account lacks, and which objects it does list: an id that is a typo must
// not pass for an installation with nothing to show.
type UnknownObjectsError struct {
	Unknown []int
	Offered []cloudclient.Object // in ID order
}

// maxOfferedInError bounds the objects an error line names.
const maxOfferedInError = 20

func (e *UnknownObjectsError) Error() string {
	ids := make([]string, len(e.Unknown))
	for i, id := range e.Unknown {
		ids[i] = strconv.Itoa(id)
	}
	what := "object " + strings.Join(ids, ", ") + " is"
	if len(ids) > 1 {
		what = "objects " + strings.Join(ids, ", ") + " are"
	}
	var offered []string
	for i, o := range e.Offered {
		if i == maxOfferedInError {
			offered = append(offered, fmt.Sprintf("and %d more", len(e.Offered)-i))
			break
		}
		offered = append(offered, strings.TrimSpace(strconv.Itoa(o.ID)+" "+o.Name))
	}
	return fmt.Sprintf("%s not one of the account's objects (it lists %s)", what, strings.Join(offered, ", "))
}

// UnknownObjects returns the ids of want a trusted listing lacks as an
// *UnknownObjectsError; nil when none is missing or the listing is not
// trusted (an id may be right while the cloud cannot say).
func UnknownObjects(l Listing, want []int) error {
	if !l.Trusted {
		return nil
	}
	var unknown []int
	for _, id := range want {
		if !slices.ContainsFunc(l.Objects, func(o cloudclient.Object) bool { return o.ID == id }) && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	offered := slices.Clone(l.Objects)
	slices.SortFunc(offered, byID)
	offered = slices.CompactFunc(offered, func(a, b cloudclient.Object) bool { return a.ID == b.ID })
	return &UnknownObjectsError{Unknown: unknown, Offered: offered}
}

// Assign splits the devids of --cloud.modules over the objects whose
// module lists name them. listings maps an object ID to its module list
// (nil: the list could not be read). An object none of whose modules is
// wanted gets no entry. missing names the wanted devids no list named; it is
// only decisive (complete) when every object's list was read in full and
// was not empty: a devid may sit on an object whose list failed.
func Assign(want []string, listings map[int]*cloudclient.ModuleListing) (byObject map[int][]string, missing []string, complete bool) {
	byObject = map[int][]string{}
	found := map[string]bool{}
	complete = true
	ids := make([]int, 0, len(listings))
	for id := range listings {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		l := listings[id]
		if l == nil || !l.Recognised || l.Dropped > 0 {
			complete = false
		}
		if l == nil {
			continue
		}
		for _, m := range l.Modules {
			if slices.Contains(want, m.Devid) && !found[m.Devid] {
				found[m.Devid] = true
				byObject[id] = append(byObject[id], m.Devid)
			}
		}
	}
	for _, d := range want {
		if !found[d] && !slices.Contains(missing, d) {
			missing = append(missing, d)
		}
	}
	for id := range byObject {
		slices.Sort(byObject[id])
	}
	return byObject, missing, complete
}
