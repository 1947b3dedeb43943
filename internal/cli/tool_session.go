package cli

// A command-line tool's session with the cloud: logging in with one clear
// error, choosing the object, listing its modules, and selecting the modules
// and parameters the tool works on.

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bragerone/bragerone_exporter/cloudclient"
	"github.com/bragerone/bragerone_exporter/exporter"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// toolSession is a logged-in REST client for one tool run.
type toolSession struct {
	client   *cloudclient.Client
	platform cloudclient.Platform
	login    *cloudclient.LoginResult
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
		return nil, exporter.LoginError(err)
	}
	return &toolSession{client: client, platform: platform, login: res}, nil
}

// close revokes the token, so a tool run leaves no session behind.
func (s *toolSession) close() { s.client.LogoutOnExit() }

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
func devidsOf(modules []cloudclient.Module) []string {
	devids := make([]string, len(modules))
	for i, m := range modules {
		devids[i] = m.Devid
	}
	return devids
}

// chooseObject returns the object the tools work on: --cloud.object-id when
// set, else the account's first object (as the exporter does). objects is
// the account's list (from GET /v1/objects, else the login answer); it may
// be empty when the cloud did not list them but an id was given.
func (s *toolSession) chooseObject(ctx context.Context, cf *cloudFlags) (id int, objects []cloudclient.Object, err error) {
	var wanted int
	if len(cf.ObjectIDs) > 0 {
		wanted = cf.ObjectIDs[0]
	}
	objects, err = s.client.Objects(ctx)
	if err != nil && wanted == 0 {
		return 0, nil, fmt.Errorf("listing the account's objects: %w", err)
	}
	if len(objects) == 0 && s.login != nil {
		objects = s.login.Objects
	}
	if wanted != 0 {
		if len(objects) > 0 && !slices.ContainsFunc(objects, func(o cloudclient.Object) bool { return o.ID == wanted }) {
			ids := make([]string, len(objects))
			for i, o := range objects {
				ids[i] = strconv.Itoa(o.ID)
			}
			return 0, objects, usageErrorf("--cloud.object-id %d is not one of the account's objects (%s)", wanted, strings.Join(ids, ", "))
		}
		return wanted, objects, nil
	}
	if len(objects) == 0 {
		return 0, nil, fmt.Errorf("the account has no objects (installations)")
	}
	return objects[0].ID, objects, nil
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

// namedModules returns the chosen object and its modules named in want
// (all of them when want is empty); a named module the object does not list
// is a usage error (see selectModules), whose line starts with source.
func (s *toolSession) namedModules(ctx context.Context, cf *cloudFlags, want []string, source string) (objectID int, modules []cloudclient.Module, err error) {
	if objectID, _, err = s.chooseObject(ctx, cf); err != nil {
		return 0, nil, err
	}
	all, err := s.listModules(ctx, objectID)
	if err != nil {
		return 0, nil, err
	}
	modules, err = selectModules(all, want, objectID, source)
	return objectID, modules, err
}

// foundModule is a module and the object that lists it.
type foundModule struct {
	ObjectID int
	Module   cloudclient.Module
}

// findModules finds the modules named in want in the objects of
// --cloud.object-id, else in every object of the account, stopping once
// all are found: a devid is unique across objects, so it needs no object
// named with it. With want empty it returns every module of those objects.
// A named devid none of them lists is a usage error naming the objects
// searched and what they list (see selectModules).
func (s *toolSession) findModules(ctx context.Context, cf *cloudFlags, want []string, source string) ([]foundModule, error) {
	ids := slices.Clone(cf.ObjectIDs)
	if len(ids) == 0 {
		objects, err := s.client.Objects(ctx)
		if err != nil || len(objects) == 0 {
			if s.login != nil && len(s.login.Objects) > 0 {
				objects = s.login.Objects
			} else if err != nil {
				return nil, fmt.Errorf("listing the account's objects: %w", err)
			}
		}
		for _, o := range objects {
			ids = append(ids, o.ID)
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("the account has no objects (installations)")
		}
	}
	var searched []cloudclient.ObjectModules
	var found []foundModule
	for _, id := range ids {
		all, err := s.listModules(ctx, id)
		if err != nil {
			return nil, err
		}
		searched = append(searched, cloudclient.ObjectModules{ObjectID: id, Modules: all})
		for _, m := range all {
			if (len(want) == 0 || slices.Contains(want, m.Devid)) && !slices.ContainsFunc(found, func(f foundModule) bool { return f.Module.Devid == m.Devid }) {
				found = append(found, foundModule{ObjectID: id, Module: m})
			}
		}
		if len(want) > 0 && cloudclient.MissingModulesAcross(searched, want) == nil {
			break
		}
	}
	if err := cloudclient.MissingModulesAcross(searched, want); err != nil {
		if source != "" {
			return nil, usageErrorf("%s: %w", source, err)
		}
		return nil, usageError{err}
	}
	if len(want) > 0 {
		// In the order named.
		slices.SortStableFunc(found, func(a, b foundModule) int {
			return slices.Index(want, a.Module.Devid) - slices.Index(want, b.Module.Devid)
		})
	}
	return found, nil
}

// modulesFlag is the flag that names the modules to watch.
const modulesFlag = "--cloud.modules"

// selectModules keeps the modules named in want (all when want is empty),
// in the order named. A named devid the object's list lacks is a usage
// error naming the devids the list offers (a typo must not look like a
// module with nothing to show), the same for every command, serve's start
// included; source ("--cloud.modules", or "" for an argument) starts its
// line.
func selectModules(all []cloudclient.Module, want []string, objectID int, source string) ([]cloudclient.Module, error) {
	if err := cloudclient.MissingModules(objectID, all, want); err != nil {
		if source != "" {
			return nil, usageErrorf("%s: %w", source, err)
		}
		return nil, usageError{err}
	}
	if len(want) == 0 {
		return all, nil
	}
	kept := make([]cloudclient.Module, 0, len(want))
	for _, d := range want {
		if i := slices.IndexFunc(all, func(m cloudclient.Module) bool { return m.Devid == d }); i >= 0 && !slices.ContainsFunc(kept, func(m cloudclient.Module) bool { return m.Devid == d }) {
			kept = append(kept, all[i])
		}
	}
	return kept, nil
}

// devidArgs are the modules a tool works on, named as arguments.
type devidArgs struct {
	Devids []string `arg:"" optional:"" name:"devid" help:"Modules to print (default: those of --cloud.modules, else every module of the object)."`
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

func (f keyFilter) match(key string) bool {
	if len(f) == 0 {
		return true
	}
	for _, p := range f {
		if ok, _ := path.Match(p, key); ok {
			return true
		}
	}
	return false
}
