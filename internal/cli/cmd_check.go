package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
)

// checkCmd validates the configuration and the credentials against the cloud.
//
// It passes (exit 0) when the login works and every watched object's module
// list is usable, lists modules, and the watched objects together list the
// modules the exporter would watch. It fails with exit 2 when the
// credentials or flags are wrong (an object id the account does not list,
// and a devid of --cloud.modules no watched object lists, among them, as
// serve refuses them), and with exit 1 when the cloud cannot be reached or
// an object's module list is unusable or empty, naming the object. An empty
// module list fails because the exporter would wait for modules and never
// become ready. Offline modules are reported but do not fail the check: a
// module's link to the cloud is not the exporter's configuration.
type checkCmd struct {
	cloudFlags `embed:""`
	outputFlag `embed:""`
}

// The results of check, overall and of each object.
const (
	checkOK     = "ok"
	checkFailed = "failed"
)

// checkReport is what check found, printed as text or JSON once it is
// complete.
type checkReport struct {
	url, platform string
	notTried      error // the login was not tried: credentials are missing
	loginFailed   bool
	version       any   // the cloud's system version; nil when unavailable
	versionErr    error // why it is unavailable
	email         string
	userLine      string // the account record, as check prints it
	userID        any
	tokenExpires  any // RFC 3339; nil when the token does not expire
	account       *accountView
	accountErr    error           // the objects could not be resolved
	modules       []locatedModule // the watched modules, of the usable lists
	missing       error           // a named devid no watched object lists
	failures      []string        // a line per object that fails the check
}

func (c *checkCmd) Run(ctx context.Context, g *Globals) error {
	if err := c.simulated(); err != nil {
		return err
	}
	defer c.closeSimulation()
	p, err := c.platform()
	if err != nil {
		return err
	}
	r := &checkReport{url: p.BaseURL, platform: c.Platform, email: c.Email}
	err = c.run(ctx, g, r)
	if c.json() {
		if werr := writeJSON(g.Stdout, r.document(err)); werr != nil && err == nil {
			err = werr
		}
	} else {
		r.printText(g.Stdout, err)
	}
	return err
}

// run fills the report and returns the check's verdict.
func (c *checkCmd) run(ctx context.Context, g *Globals, r *checkReport) error {
	if _, err := c.credentials(); err != nil {
		// Missing credentials are no failed login: say what is missing.
		r.notTried = err
		return err
	}
	s, err := openSession(ctx, &c.cloudFlags, g)
	if err != nil {
		r.loginFailed = true
		return err
	}
	defer s.close()

	if v, err := s.client.SystemVersion(ctx); err != nil {
		r.versionErr = err
	} else {
		r.version = orNull(v.Version)
	}
	if t, ok := s.client.Token(); ok && !t.ExpiresAt.IsZero() {
		r.tokenExpires = t.ExpiresAt.Local().Format(time.RFC3339)
	}
	r.userLine, r.userID = userRecord(ctx, s)

	if r.account, err = s.resolveAccount(ctx, &c.cloudFlags); err != nil {
		r.accountErr = err
		return err
	}
	if r.account.listErr != nil {
		// The exporter starts from a usable listing of the objects.
		r.failures = append(r.failures, r.account.listErr.Error())
	}
	for i, w := range r.account.watched {
		for _, m := range w.Modules {
			if len(c.Modules) == 0 || slices.Contains(c.Modules, m.Devid) {
				r.modules = append(r.modules, locatedModule{Module: m, object: &r.account.watched[i]})
			}
		}
		switch {
		case w.Err != nil:
			r.failures = append(r.failures, fmt.Sprintf("object %s: %v", objectRef(w.Object), w.Err))
		case len(w.Modules) == 0:
			r.failures = append(r.failures, fmt.Sprintf("object %s lists no modules; the exporter would have nothing to watch", objectRef(w.Object)))
		}
	}
	var usage usageError
	if _, err := r.account.modules(c.Modules, modulesFlag); errors.As(err, &usage) {
		r.missing = err
		return err
	}
	if len(r.failures) > 0 {
		return errors.New(strings.Join(r.failures, "; "))
	}
	return nil
}

// userRecord is the account record as check prints it, and the user's id;
// a failure to read it is reported, not fatal.
func userRecord(ctx context.Context, s *toolSession) (line string, id any) {
	u, err := s.client.User(ctx)
	if err != nil {
		return fmt.Sprintf("id %d (GET /v1/user failed: %v)", s.client.UserID(), err), s.client.UserID()
	}
	uid := u.ID
	if uid == 0 {
		uid = s.client.UserID()
	}
	line = fmt.Sprintf("id %d", uid)
	if u.Email != "" {
		line += ", " + u.Email
	}
	if u.Name != "" {
		line += fmt.Sprintf(" (%s)", u.Name)
	}
	return line, uid
}

// objectRecords are the account's objects as check prints them: every
// object listed (and any id given that the account could not list), the
// watched ones with their module counts and result.
func (r *checkReport) objectRecords() []orderedObject {
	if r.account == nil {
		return []orderedObject{}
	}
	out := []orderedObject{}
	record := func(o cloudclient.Object, w *watchedObject) orderedObject {
		rec := orderedObject{{keyObjectID, o.ID}, {keyName, orNull(o.Name)}, {keyCity, orNull(o.AddressCity)}, {keyWatched, w != nil}}
		var count, online, result, reason any
		if w != nil {
			result = checkOK
			switch {
			case w.Err != nil:
				result, reason = checkFailed, w.Err.Error()
			case len(w.Modules) == 0:
				result, reason = checkFailed, "lists no modules; the exporter would have nothing to watch"
			}
			if w.Err == nil {
				n := 0
				for _, m := range w.Modules {
					if m.Online() {
						n++
					}
				}
				count, online = len(w.Modules), n
			}
		}
		return append(rec, orderedMember{keyModuleCount, count}, orderedMember{keyOnline, online},
			orderedMember{keyResult, result}, orderedMember{keyReason, reason})
	}
	watched := func(id int) *watchedObject {
		for i := range r.account.watched {
			if r.account.watched[i].ID == id {
				return &r.account.watched[i]
			}
		}
		return nil
	}
	for _, o := range r.account.listed {
		out = append(out, record(o, watched(o.ID)))
	}
	for i, w := range r.account.watched {
		if !slices.ContainsFunc(r.account.listed, func(o cloudclient.Object) bool { return o.ID == w.ID }) {
			out = append(out, record(w.Object, &r.account.watched[i]))
		}
	}
	return out
}

// moduleRecords are the watched modules, each with its object.
func (r *checkReport) moduleRecords() []orderedObject {
	out := make([]orderedObject, 0, len(r.modules))
	for _, m := range r.modules {
		out = append(out, locatedRecord(m))
	}
	return out
}

// document is the report as JSON; err is the check's verdict.
func (r *checkReport) document(err error) orderedObject {
	result, reason := checkOK, any(nil)
	if err != nil {
		result, reason = checkFailed, err.Error()
	}
	return orderedObject{
		{keyURL, r.url}, {keyPlatform, r.platform}, {keyVersion, r.version}, {keyUserID, r.userID},
		{keyTokenExpiresAt, r.tokenExpires}, {keyObjects, r.objectRecords()}, {keyModules, r.moduleRecords()},
		{keyResult, result}, {keyReason, reason},
	}
}

// printText prints the report for people; err is the check's verdict.
func (r *checkReport) printText(out io.Writer, err error) {
	fmt.Fprintf(out, "cloud      %s (platform %s)\n", r.url, r.platform)
	switch {
	case r.notTried != nil:
		// The error line below says what is missing; said once.
		fmt.Fprintln(out, "login      not tried: credentials missing (the error says which)")
		return
	case r.loginFailed:
		fmt.Fprintln(out, "login      FAILED")
		return
	}
	if r.versionErr != nil {
		fmt.Fprintf(out, "version    unavailable (%v)\n", r.versionErr)
	} else {
		v, _ := r.version.(string)
		fmt.Fprintf(out, "version    %s\n", dash(v))
	}
	expiry := "token does not expire"
	if t, ok := r.tokenExpires.(string); ok {
		expiry = "token expires " + t
	}
	fmt.Fprintf(out, "login      ok as %s, %s\n", r.email, expiry)
	fmt.Fprintf(out, "user       %s\n", r.userLine)
	if r.accountErr != nil {
		fmt.Fprintf(out, "FAIL: %v\n", r.accountErr)
		return
	}

	fmt.Fprintf(out, "objects    %d listed, %d watched\n", len(r.account.listed), len(r.account.watched))
	writeIndentedTable(out, []string{keyObjectID, keyName, keyCity, keyWatched, keyModuleCount, keyOnline, keyResult}, r.objectRecords())

	listed, online := 0, 0
	for _, w := range r.account.watched {
		listed += len(w.Modules)
	}
	for _, m := range r.modules {
		if m.Online() {
			online++
		}
	}
	fmt.Fprintf(out, "modules    %d listed, %d watched, %d online\n", listed, len(r.modules), online)
	if len(r.modules) > 0 {
		writeIndentedTable(out, []string{keyObjectID, keyDevid, keyName, keyTitle, keyState, keyConnectedAt}, r.moduleRecords())
	}
	switch {
	case r.missing != nil:
		fmt.Fprintf(out, "FAIL: %v\n", r.missing)
		return
	case len(r.failures) > 0:
		for _, f := range r.failures {
			fmt.Fprintf(out, "FAIL: %s\n", f)
		}
		return
	case err != nil:
		fmt.Fprintf(out, "FAIL: %v\n", err)
		return
	}
	if online < len(r.modules) {
		fmt.Fprintf(out, "warning: %d of %d watched modules are offline (the module's link to the cloud, not this configuration)\n", len(r.modules)-online, len(r.modules))
	}
	fmt.Fprintln(out, "OK: login and module listing work")
}

// writeIndentedTable is writeTable, each line indented under the line that
// introduces it.
func writeIndentedTable(out io.Writer, keys []string, rows []orderedObject) {
	var b strings.Builder
	writeTable(&b, keys, rows)
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" {
			io.WriteString(out, "  "+l)
		}
	}
}

// Help is the long help of `check --help`.
func (c *checkCmd) Help() string {
	return `Logs in, prints the system version, the user, the account's objects (each watched one with its module count, how
many are online and its result) and the watched modules with their object and online state.

Exit codes: 0 when the login works and every watched object's module list is usable, lists modules and, together
with the others, names the modules to watch (offline modules only warn); 2 when the credentials or flags are wrong, an
object id the account does not list or a devid of --cloud.modules no watched object lists among them; 1 when the cloud
cannot be reached or an object's module list is unusable or empty (the exporter would never become ready), naming the
object.`
}
