package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
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
	departed := fmt.Sprintf(`bragerone_object_departed_timestamp_seconds{name="Cottage",object_id="%d"}`, cottage.ID)
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
