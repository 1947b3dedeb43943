package cli

// A command-line tool's session with the cloud: logging in with one clear
// error, listing the account's objects and their modules, finding each
// named module's object, and selecting the parameters the tool works on.

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/collector"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/fleet"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// toolSession is a logged-in REST client for one tool run.
type toolSession struct {
	client   *cloudclient.Client
	platform cloudclient.Platform
	login    *cloudclient.LoginResult
	flags    *cloudFlags // stops the simulated cloud of --simulate at close
}

// openSession builds the client from the flags and logs in. Wrong
// credentials are a usage error (exit 2); an unreachable cloud is a runtime
// error (exit 1).
func openSession(ctx context.Context, cf *cloudFlags, g *Globals) (*toolSession, error) {
	client, platform, err := cf.newClient(g, nil)
	if err != nil {
		return nil, err
	}
	res, err := client.Login(ctx)
	if err != nil {
		cf.closeSimulation()
		return nil, loginFailed(err)
	}
	return &toolSession{client: client, platform: platform, login: res, flags: cf}, nil
}

// loginFailed is the error of a login that failed, by the cloud-manners
// definition (cloudclient.ClassifyLogin, through exporter.LoginError): a
// verdict on the credentials is a usage error (exit 2) that says to check
// them; a block (an HTML or empty 4xx, 408, 429, 5xx, no answer) is a
// runtime failure (exit 1) that says what to do.
func loginFailed(err error) error {
	err = exporter.LoginError(err)
	var ce *exporter.ConfigError
	if errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("%w; the cloud gave no verdict on the credentials (it blocked or throttled the login, or did not answer): try again later, and check the network path to the cloud if it persists", err)
}

// close revokes the token, so a tool run leaves no session behind, then
// stops the simulated cloud of --simulate.
func (s *toolSession) close() {
	s.client.LogoutOnExit()
	s.flags.closeSimulation()
}

// prime reads the modules' current values (one REST prime) into a store,
// which gives the exporter's key order (pool, channel, index, all numeric)
// and folds duplicate entries exactly as the exporter does.
func (s *toolSession) prime(ctx context.Context, devids []string) (*store.Store, error) {
	updates, err := s.client.PrimeWithRetry(ctx, devids)
	if err != nil {
		return nil, fmt.Errorf("parameter snapshot: %w", err)
	}
	st := store.New()
	st.ApplyPrime(st.BeginPrime(), updates, time.Now())
	return st, nil
}

// devidsOf lists the devids of modules, in their order.
func devidsOf(modules []locatedModule) []string { return devidsOfRows(rows(modules)) }

// devidsOfRows lists the devids of module rows, in their order.
func devidsOfRows(modules []cloudclient.Module) []string {
	devids := make([]string, len(modules))
	for i, m := range modules {
		devids[i] = m.Devid
	}
	return devids
}

// watchedObject is an object (installation) a tool works on and its
// module list.
type watchedObject struct {
	cloudclient.Object
	Modules []cloudclient.Module
	// Err says why the module list is unusable: it could not be read, or it
	// has an unknown shape. Modules is nil then.
	Err error
}

// accountView is the account as a tool sees it: the objects it lists and,
// of those, the ones watched with their module lists.
type accountView struct {
	listed  []cloudclient.Object // the account's objects; empty when it listed none
	watched []watchedObject      // in the order listed
	// listErr says why the account's listing (GET /v1/objects) cannot be
	// trusted: it failed, was empty, of an unknown shape or dropped rows.
	// The login's list, or the ids given, stood in for it.
	listErr error
}

// resolveAccount lists the account's objects (GET /v1/objects, else the
// login answer's), keeps those of --cloud.object-id (all when none is
// given) and lists the modules of each. The lists are read at once,
// through the client, which bounds the requests in flight. An id the
// account does not list is a usage error naming the objects it does, as
// serve refuses it, when the account's listing is usable and non-empty;
// when it is not, the ids it lacks are watched as given.
func (s *toolSession) resolveAccount(ctx context.Context, cf *cloudFlags) (*accountView, error) {
	l, err := s.client.ListObjects(ctx)
	listing := fleet.ListingOf(l)
	var a accountView
	switch {
	case err != nil:
		a.listErr = fmt.Errorf("listing the account's objects: %w", err)
	case !listing.Trusted && l.Recognised && l.Dropped == 0:
		a.listErr = errNoObjects
	case !listing.Trusted:
		a.listErr = fmt.Errorf("listing the account's objects: the list is of an unknown shape or dropped rows")
	}
	if !listing.Trusted && s.login != nil && len(s.login.Objects) > 0 {
		// The login answer lists the objects too.
		listing = fleet.Listing{Objects: s.login.Objects, Trusted: true}
	}
	wanted := cf.ObjectIDs
	if err := fleet.UnknownObjects(listing, wanted); err != nil {
		return nil, usageErrorf("%s: %w", objectIDFlag, err)
	}
	for _, o := range listing.Objects {
		if !slices.ContainsFunc(a.listed, func(l cloudclient.Object) bool { return l.ID == o.ID }) {
			a.listed = append(a.listed, o)
		}
	}
	if len(wanted) == 0 && len(a.listed) == 0 {
		return nil, a.listErr
	}
	for _, o := range a.listed {
		if len(wanted) == 0 || slices.Contains(wanted, o.ID) {
			a.watched = append(a.watched, watchedObject{Object: o})
		}
	}
	// An id a listing that cannot be trusted lacks may still be right: the
	// module lists will tell.
	for _, id := range wanted {
		if !slices.ContainsFunc(a.watched, func(w watchedObject) bool { return w.ID == id }) {
			a.watched = append(a.watched, watchedObject{Object: cloudclient.Object{ID: id}})
		}
	}

	var wg sync.WaitGroup
	for i := range a.watched {
		w := &a.watched[i]
		wg.Go(func() { w.Modules, w.Err = s.listModules(ctx, w.ID) })
	}
	wg.Wait()
	return &a, nil
}

// errNoObjects is the answer of an account that lists no object.
var errNoObjects = errors.New("the account has no objects (installations)")

// objectIDFlag is the flag that chooses the objects.
const objectIDFlag = "--cloud.object-id"

// objectRef names an object in a message: its id and, when it has one, its
// name ("5747 Home").
func objectRef(o cloudclient.Object) string {
	if o.Name == "" {
		return strconv.Itoa(o.ID)
	}
	return strconv.Itoa(o.ID) + " " + o.Name
}

// unusable says which watched objects' module lists are unusable, and
// why, on one line; nil when every list is usable.
func (a *accountView) unusable() error {
	var errs []string
	for _, w := range a.watched {
		if w.Err != nil {
			errs = append(errs, w.Err.Error())
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// locatedModule is a module and the object that lists it.
type locatedModule struct {
	cloudclient.Module
	object *watchedObject
}

// modules returns the watched objects' modules named in want (all of them
// when want is empty, in the objects' order), each with its object: a devid
// finds its object by itself. A named devid no watched object lists is a
// usage error naming the devids they list (see selectModules); when a list
// it might be on is unusable, the failure to read it is the error. With
// want empty, every list must be usable.
func (a *accountView) modules(want []string, source string) ([]locatedModule, error) {
	var all []locatedModule
	var usable []cloudclient.ObjectModules
	for i := range a.watched {
		w := &a.watched[i]
		if w.Err != nil {
			continue
		}
		usable = append(usable, cloudclient.ObjectModules{ObjectID: w.ID, Modules: w.Modules})
		for _, m := range w.Modules {
			all = append(all, locatedModule{Module: m, object: w})
		}
	}
	if len(want) == 0 {
		if err := a.unusable(); err != nil {
			return nil, err
		}
		return all, nil
	}
	if err := cloudclient.MissingModulesAcross(usable, want); err != nil {
		var missing *cloudclient.MissingModulesError
		if unusable := a.unusable(); unusable != nil && errors.As(err, &missing) {
			// It may be on an object whose list could not be read.
			return nil, fmt.Errorf("finding the object of %s: %w", strings.Join(missing.Missing, ", "), unusable)
		}
		return nil, refuseMissing(source, err)
	}
	kept := make([]locatedModule, 0, len(want))
	for _, d := range want {
		if i := slices.IndexFunc(all, func(m locatedModule) bool { return m.Devid == d }); i >= 0 &&
			!slices.ContainsFunc(kept, func(m locatedModule) bool { return m.Devid == d }) {
			kept = append(kept, all[i])
		}
	}
	return kept, nil
}

// listModules returns the object's module list; an answer of an unknown
// shape is an error here, since a tool cannot show or check anything from it.
func (s *toolSession) listModules(ctx context.Context, objectID int) ([]cloudclient.Module, error) {
	l, err := s.client.Modules(ctx, objectID)
	if err != nil {
		return nil, fmt.Errorf("listing the modules of object %d: %w", objectID, err)
	}
	if !l.Recognised {
		return nil, fmt.Errorf("the module list of object %d has an unknown shape", objectID)
	}
	return l.Modules, nil
}

// namedModules resolves the account and returns its watched objects'
// modules named in want (all of them when want is empty); a named module
// no watched object lists is a usage error whose line starts with source.
func (s *toolSession) namedModules(ctx context.Context, cf *cloudFlags, want []string, source string) (*accountView, []locatedModule, error) {
	a, err := s.resolveAccount(ctx, cf)
	if err != nil {
		return nil, nil, err
	}
	modules, err := a.modules(want, source)
	return a, modules, err
}

// locate is namedModules without the account: the modules named in want
// (all when want is empty), each with its object.
func (s *toolSession) locate(ctx context.Context, cf *cloudFlags, want []string, source string) ([]locatedModule, error) {
	_, modules, err := s.namedModules(ctx, cf, want, source)
	return modules, err
}

// rows are the modules' rows of the module list.
func rows(modules []locatedModule) []cloudclient.Module {
	out := make([]cloudclient.Module, len(modules))
	for i, m := range modules {
		out[i] = m.Module
	}
	return out
}

// modulesFlag is the flag that names the modules to watch.
const modulesFlag = "--cloud.modules"

// refuseMissing turns a named devid no object lists into the usage error
// every command refuses it with, serve's start included (a typo must not
// look like a module with nothing to show); source ("--cloud.modules", or
// "" for an argument) starts its line.
func refuseMissing(source string, err error) error {
	if source != "" {
		return usageErrorf("%s: %w", source, err)
	}
	return usageError{err}
}

// devidArgs are the modules a tool works on, named as arguments.
type devidArgs struct {
	Devids []string `arg:"" optional:"" name:"devid" help:"Modules to print (default: those of --cloud.modules, else every module of the watched objects)."`
}

// or is the modules named as arguments, else the modules of --cloud.modules.
func (a devidArgs) or(modules []string) []string {
	if len(a.Devids) > 0 {
		return a.Devids
	}
	return modules
}

// namedBy is where or's modules were named, for the line refusing one the
// object lacks: "" for arguments, else the flag.
func (a devidArgs) namedBy() string {
	if len(a.Devids) > 0 {
		return ""
	}
	return modulesFlag
}

// keyFilter selects parameters by patterns with path.Match semantics on the
// key ("P4.v*" matches "P4.v8"); no patterns select everything.
type keyFilter []string

func (f keyFilter) validate(flag string) error {
	for _, p := range f {
		if _, err := path.Match(p, ""); err != nil {
			return usageErrorf("%s %q: %v", flag, p, err)
		}
	}
	return nil
}

// matchesAny reports whether the filter lets through any register the
// store holds for devids.
func (f keyFilter) matchesAny(st *store.Store, devids []string) bool {
	for _, d := range devids {
		for _, e := range st.Entries(d) {
			if f.match(e.Key.String()) {
				return true
			}
		}
	}
	return false
}

func (f keyFilter) match(key string) bool {
	if len(f) == 0 {
		return true
	}
	for _, p := range f {
		if collector.MatchRegister(p, key) {
			return true
		}
	}
	return false
}
