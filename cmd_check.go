package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// checkCmd validates the configuration and the credentials against the cloud.
//
// It passes (exit 0) when the login works and the chosen object's module
// list is usable and names the modules the exporter would watch. It fails
// with exit 2 when the credentials or flags are wrong (a devid of
// --cloud.modules that is not on the object among them, as serve refuses
// it), and with exit 1 when the cloud cannot be reached or the module list
// is unusable or empty. An empty module list fails
// because the exporter would wait for modules and never become ready.
// Offline modules are reported but do not fail the check: a module's link to
// the cloud is not the exporter's configuration.
type checkCmd struct {
	cloudFlags `embed:""`
}

func (c *checkCmd) Run(ctx context.Context, g *Globals) error {
	out := g.Stdout
	p, err := c.platform()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cloud      %s (platform %s)\n", p.BaseURL, c.Platform)
	if _, err := c.credentials(); err != nil {
		// Missing credentials are no failed login: say what is missing.
		fmt.Fprintf(out, "login      not tried: %v\n", err)
		return err
	}

	s, err := openSession(ctx, &c.cloudFlags, g)
	if err != nil {
		fmt.Fprintln(out, "login      FAILED")
		return err
	}
	defer s.close()

	if v, err := s.client.SystemVersion(ctx); err != nil {
		fmt.Fprintf(out, "version    unavailable (%v)\n", err)
	} else {
		fmt.Fprintf(out, "version    %s\n", dash(v.Version))
	}
	fmt.Fprintf(out, "login      ok as %s, %s\n", c.Email, tokenExpiry(s.client))
	printUser(ctx, out, s)

	objectID, objects, err := s.chooseObject(ctx, &c.cloudFlags)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "objects    %d\n", len(objects))
	if len(objects) > 0 {
		tw := newTable(out)
		fmt.Fprintln(tw, "  \tID\tNAME\tCITY")
		for _, o := range objects {
			mark := " "
			if o.ID == objectID {
				mark = "*"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\n", mark, o.ID, dash(o.Name), dash(o.AddressCity))
		}
		tw.Flush()
	}

	modules, err := s.listModules(ctx, objectID)
	if err != nil {
		return err
	}
	kept, missing := selectModules(modules, c.Modules, objectID, modulesFlag)
	online := 0
	for _, m := range kept {
		if m.Online() {
			online++
		}
	}
	fmt.Fprintf(out, "modules    object %d: %d listed, %d watched, %d online\n", objectID, len(modules), len(kept), online)
	if len(kept) > 0 {
		tw := newTable(out)
		fmt.Fprintln(tw, "  DEVID\tNAME\tTITLE\tSTATE\tCONNECTED AT")
		for _, m := range kept {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", m.Devid, dash(m.Name), dash(m.Title), onlineWord(m.Online()), formatEpoch(m.ConnectedAt))
		}
		tw.Flush()
	}
	switch {
	case missing != nil:
		fmt.Fprintf(out, "FAIL: %v\n", missing)
		return missing
	case len(modules) == 0:
		fmt.Fprintf(out, "FAIL: object %d lists no modules; the exporter would have nothing to watch\n", objectID)
		return fmt.Errorf("object %d lists no modules", objectID)
	}
	if online < len(kept) {
		fmt.Fprintf(out, "warning: %d of %d watched modules are offline (the module's link to the cloud, not this configuration)\n", len(kept)-online, len(kept))
	}
	fmt.Fprintln(out, "OK: login and module listing work")
	return nil
}

// printUser prints the account record; a failure is reported, not fatal.
func printUser(ctx context.Context, out io.Writer, s *toolSession) {
	u, err := s.client.User(ctx)
	if err != nil {
		fmt.Fprintf(out, "user       id %d (GET /v1/user failed: %v)\n", s.client.UserID(), err)
		return
	}
	id := u.ID
	if id == 0 {
		id = s.client.UserID()
	}
	line := fmt.Sprintf("user       id %d", id)
	if u.Email != "" {
		line += ", " + u.Email
	}
	if u.Name != "" {
		line += fmt.Sprintf(" (%s)", u.Name)
	}
	fmt.Fprintln(out, line)
}

func tokenExpiry(c *cloudclient.Client) string {
	t, ok := c.Token()
	if !ok || t.ExpiresAt.IsZero() {
		return "token does not expire"
	}
	return "token expires " + t.ExpiresAt.Local().Format(time.RFC3339)
}

// Help is the long help of `check --help`.
func (c *checkCmd) Help() string {
	return `Logs in, prints the system version, the user, the objects (* marks the chosen one) and the chosen object's modules with their online state.

Exit codes: 0 when the login works and the module list is usable and names the modules to watch (offline modules only warn); 2 when the credentials or flags are wrong, a devid of --cloud.modules not on the object among them; 1 when the cloud cannot be reached or the module list is unusable or empty (the exporter would never become ready).`
}
