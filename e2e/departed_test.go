package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// TestDepartedObjectInBrowser runs `serve --simulate` with Home and Cottage,
// then has the account stop listing Cottage: its series leave /metrics, a
// series naming Cottage says it left, and /status keeps a line for it (in
// chromium); listed again, Cottage is watched and the line is gone.
func TestDepartedObjectInBrowser(t *testing.T) {
	t.Parallel()
	exp := startServeSimulate(t, "--simulate.objects=2", "--objects.refresh-interval=300ms")
	waitModulesListed(t, exp)
	objects := exp.sim.state(t).Objects
	if len(objects) != 2 || objects[1].Name != "Cottage" {
		t.Fatalf("the simulated account holds %+v, want Home and Cottage", objects)
	}
	cottage := objects[1]
	departed := fmt.Sprintf(`bragerone_object_departed_timestamp_seconds{name="Cottage",object_id="%d",reason="unlisted"}`, cottage.ID)
	info := fmt.Sprintf(`bragerone_object_info{name="Cottage",object_id="%d"}`, cottage.ID)

	exp.sim.do(t, http.MethodPost, fmt.Sprintf("/control/objects/%d/hide", cottage.ID), nil)
	waitFor(t, 30*time.Second, "/metrics says Cottage left", func() (bool, string) {
		_, body := httpGet(t, nil, exp.url+"/metrics")
		return strings.Contains(body, departed) && !strings.Contains(body, info), "no departure series yet"
	})

	b := newBrowser(t)
	b.open("departed", exp.url+"/status")
	b.noConsoleErrors()
	lines := b.texts("#departed li.departure")
	if len(lines) != 1 || !strings.Contains(lines[0], fmt.Sprintf("Object Cottage (object %d) is no longer listed by the account", cottage.ID)) ||
		!strings.Contains(lines[0], "since ") || !strings.Contains(lines[0], "1 module no longer watched") {
		t.Errorf("departure lines %q", lines)
	}
	if sum := b.texts("#summary"); len(sum) != 1 || !strings.Contains(sum[0], "Watching 1 object") {
		t.Errorf("summary %q", sum)
	}
	if got := b.attrs("section.object", "id"); slices.Contains(got, fmt.Sprintf("object-%d", cottage.ID)) {
		t.Errorf("Cottage still has a section: %q", got)
	}

	exp.sim.do(t, http.MethodPost, fmt.Sprintf("/control/objects/%d/show", cottage.ID), nil)
	waitFor(t, 30*time.Second, "/metrics watches Cottage again", func() (bool, string) {
		_, body := httpGet(t, nil, exp.url+"/metrics")
		return strings.Contains(body, info) && !strings.Contains(body, departed), "still departed"
	})
	b.open("returned", exp.url+"/status")
	if lines := b.texts("#departed li.departure"); len(lines) != 0 {
		t.Errorf("after the return: departure lines %q", lines)
	}
}

// TestObjectListedWithoutItsModulesStaysDeparted: serve watches a module of
// Home and one of Cottage (--cloud.modules). Cottage leaves the account: it
// is departed, reason unlisted. It is listed again while its module list
// lacks the module asked for, so nothing watches it: it stays departed,
// since the same moment, now for that reason, on /metrics and /status.
// With its module back it is watched again and no longer departed.
func TestObjectListedWithoutItsModulesStaysDeparted(t *testing.T) {
	t.Parallel()
	sim := startSimulate(t, "--objects=2")
	objects := sim.ctl.state(t).Objects
	if len(objects) != 2 || len(objects[0].Devids) == 0 || len(objects[1].Devids) == 0 {
		t.Fatalf("the simulated account holds %+v, want two objects with modules", objects)
	}
	home, cottage := objects[0], objects[1]
	asked := cottage.Devids[0]
	exp := startServe(t, demoEnv, "--cloud.url="+sim.url, "--cloud.modules="+home.Devids[0]+","+asked,
		"--objects.refresh-interval=300ms")
	const departed = "bragerone_object_departed_timestamp_seconds"
	object := map[string]string{"object_id": strconv.Itoa(cottage.ID), "name": cottage.Name}
	because := func(reason string) map[string]string {
		return map[string]string{"object_id": object["object_id"], "name": cottage.Name, "reason": reason}
	}
	watched := func(s scrape) bool { _, ok := s.value("bragerone_object_info", object); return ok }
	waitFor(t, 30*time.Second, "Cottage watched", func() (bool, string) {
		s, err := exp.scrapeOrErr()
		return s != nil && watched(s), err
	})

	sim.ctl.do(t, http.MethodPost, fmt.Sprintf("/control/objects/%d/hide", cottage.ID), nil)
	var since float64
	waitFor(t, 30*time.Second, "Cottage departed, unlisted", func() (bool, string) {
		s, err := exp.scrapeOrErr()
		if s == nil {
			return false, err
		}
		v, ok := s.value(departed, because("unlisted"))
		since = v
		return ok, s.show(departed)
	})

	missing := sim.ctl.inject(t, cloudsim.Fault{Kind: cloudsim.FaultMissingRow, Devid: asked})
	sim.ctl.do(t, http.MethodPost, fmt.Sprintf("/control/objects/%d/show", cottage.ID), nil)
	waitFor(t, 30*time.Second, "Cottage listed, departed for its missing module", func() (bool, string) {
		s, err := exp.scrapeOrErr()
		if s == nil {
			return false, err
		}
		_, missingNow := s.value(departed, because("modules_missing"))
		_, unlisted := s.value(departed, because("unlisted"))
		return missingNow && !unlisted && !watched(s), s.show(departed)
	})
	if got, _ := exp.mustScrape(t).value(departed, because("modules_missing")); got != since {
		t.Errorf("the departure's moment moved with its reason: %v, was %v", got, since)
	}
	_, page := httpGet(t, nil, exp.url+"/status")
	if want := "is listed, but none of the modules --cloud.modules asks for is in its module list"; !strings.Contains(page, want) || strings.Contains(page, "is no longer listed by the account") {
		t.Errorf("/status does not say why Cottage is not watched (%q)", want)
	}

	sim.ctl.clear(t, missing)
	waitFor(t, 30*time.Second, "Cottage watched again", func() (bool, string) {
		s, err := exp.scrapeOrErr()
		if s == nil {
			return false, err
		}
		return watched(s) && len(s.series(departed, nil)) == 0, s.show(departed)
	})
}
