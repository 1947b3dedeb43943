package cli

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudsim"
)

// TestServeRefusesAnUnknownObject: an object id the account does not list
// stops serve's start with exit 2 and one line naming every object the
// account offers, by id and name, whether it is given as a flag (alone or
// among known ones) or in the environment; nothing is primed for it.
func TestServeRefusesAnUnknownObject(t *testing.T) {
	sim := startToolCloud(t, func(o *cloudsim.Options) { o.Objects, o.Modules = 2, 3 })
	objs := sim.Objects()
	var offered []string
	for _, o := range objs {
		offered = append(offered, strconv.Itoa(o.ID)+" "+o.Name)
	}
	want := "--cloud.object-id: object 99 is not one of the account's objects (it lists " + strings.Join(offered, ", ") + ")"
	for name, extra := range map[string][]string{
		"alone":    {"--cloud.object-id=99"},
		"among":    {"--cloud.object-id=" + strconv.Itoa(objs[0].ID) + ",99"},
		"repeated": {"--cloud.object-id=" + strconv.Itoa(objs[1].ID), "--cloud.object-id=99"},
		"from env": nil,
	} {
		t.Run(name, func(t *testing.T) {
			if extra == nil {
				t.Setenv("BRAGERONE_CLOUD_OBJECT_ID", "99")
			}
			args := append(toolArgs(sim, "serve", "--log.level=warn", "--web.listen-address=127.0.0.1:0"), extra...)
			primes := sim.Requests("POST /v1/modules/parameters")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errOut syncBuffer
			code := runContext(ctx, args, &out, &errOut)
			if code != exitUsage || !strings.Contains(errOut.String(), want) {
				t.Fatalf("exit %d stderr %q, want exit 2 and %q", code, errOut.String(), want)
			}
			oneLine(t, errOut.String())
			if sim.Requests("POST /v1/modules/parameters") != primes {
				t.Errorf("parameters were read for a start that was refused")
			}
		})
	}
}
