package catalog

import (
	"regexp"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
)

// The four parameter sections of a route (docs/spec.md ).
var sectionNames = [4]string{"read", "write", "status", "special"}

const sectionWrite = 1

// menuEntry is one parameter of a section.
type menuEntry struct {
	token      string
	permission string // normalised requirement; "" none
	gated      bool   // an object entry (string entries are always kept)
}

type sections [4][]menuEntry

func (s *sections) empty() bool {
	for _, l := range s {
		if len(l) > 0 {
			return false
		}
	}
	return true
}

// route is one node of a device menu (docs/spec.md ).
type route struct {
	path, name  string
	displayName string
	permission  string // meta.permissionModule, else the route's own
	meta        sections
	params      sections // route-level (older shape)
	children    []*route
}

// maxRouteDepth and maxRoutes bound menu trees (a live menu has ~50 routes).
const (
	maxRouteDepth = 32
	maxRoutes     = 10_000
)

// parseMenu reads a device-menu chunk (docs/spec.md ): the export (or the largest
// literal), then the first route list found through routes, deviceMenu,
// menu and items, then any value, to depth 5.
func parseMenu(src []byte) ([]*route, bool) {
	p := jsval.Parse(src, jsval.Limits{})
	v, _, found := p.Export()
	if !found {
		v, found = p.LargestLiteral()
	}
	if !found {
		return nil, false
	}
	budget := walkBudget(maxWalkNodes)
	list := findRouteList(v, 0, &budget)
	if list == nil {
		return nil, false
	}
	routes := walkBudget(maxRoutes)
	return parseRoutes(list, 0, &routes), true
}

func isRouteObject(v jsval.Value) bool {
	o, ok := v.(*jsval.Object)
	return ok && (o.Has("path") || o.Has("name") || o.Has("children") || o.Has("meta"))
}

func findRouteList(v jsval.Value, depth int, budget *walkBudget) []jsval.Value {
	if depth > 5 || !budget.spend() {
		return nil
	}
	switch v := v.(type) {
	case []jsval.Value:
		for _, item := range v {
			if isRouteObject(item) {
				return v
			}
		}
		for _, item := range v {
			if l := findRouteList(item, depth+1, budget); l != nil {
				return l
			}
		}
	case *jsval.Object:
		for _, k := range []string{"routes", "deviceMenu", "menu", "items"} {
			if l := findRouteList(v.Value(k), depth+1, budget); l != nil {
				return l
			}
		}
		for _, k := range v.Keys() {
			if l := findRouteList(v.Value(k), depth+1, budget); l != nil {
				return l
			}
		}
	}
	return nil
}

func parseRoutes(list []jsval.Value, depth int, budget *walkBudget) []*route {
	if depth > maxRouteDepth {
		return nil
	}
	var out []*route
	for _, item := range list {
		o, ok := item.(*jsval.Object)
		if !ok || !isRouteObject(o) || !budget.spend() {
			continue
		}
		r := &route{}
		r.path, _ = o.Value("path").(string)
		r.name, _ = o.Value("name").(string)
		meta, _ := o.Value("meta").(*jsval.Object)
		r.displayName, _ = jsval.Text(meta.Value("displayName"))
		if s, ok := jsval.Text(meta.Value("permissionModule")); ok && strings.TrimSpace(s) != "" {
			r.permission = permissionName(s)
		} else if s, ok := jsval.Text(o.Value("permissionModule")); ok {
			r.permission = permissionName(s)
		}
		if mp, ok := meta.Value("parameters").(*jsval.Object); ok {
			r.meta = parseSections(mp)
		}
		if rp, ok := o.Value("parameters").(*jsval.Object); ok {
			r.params = parseSections(rp)
		}
		if kids, ok := o.Value("children").([]jsval.Value); ok {
			r.children = parseRoutes(kids, depth+1, budget)
		}
		// A node with neither a path nor a name (a redirect) is pruned
		// (docs/spec.md ).
		if strings.TrimSpace(r.path) == "" && strings.TrimSpace(r.name) == "" {
			continue
		}
		out = append(out, r)
	}
	return out
}

func parseSections(o *jsval.Object) sections {
	var s sections
	for i, name := range sectionNames {
		switch v := o.Value(name).(type) {
		case []jsval.Value:
			for _, item := range v {
				if e, ok := parseEntry(item); ok {
					s[i] = append(s[i], e)
				}
			}
		case jsval.Source:
			// A generated list the evaluator could not expand: recover its
			// quoted public symbols (docs/spec.md ).
			for _, tok := range mapListTokens(string(v)) {
				s[i] = append(s[i], menuEntry{token: tok})
			}
		}
	}
	return s
}

// paramCallRE takes the quoted second argument of a readable helper call,
// E(A.WRITE,'URUCHOMIENIE_KOTLA') (docs/spec.md ).
var paramCallRE = regexp.MustCompile(`\b[A-Za-z_$][\w$]*\([^,]*?,\s*(['"])([A-Za-z0-9_]+)['"]\s*\)`)

func parseEntry(v jsval.Value) (menuEntry, bool) {
	var e menuEntry
	var p jsval.Value = v
	if o, ok := v.(*jsval.Object); ok {
		e.gated = true
		if s, ok := jsval.Text(o.Value("permissionModule")); ok {
			e.permission = permissionName(s)
		}
		p = o.Value("parameter")
	}
	s, ok := jsval.Text(p)
	if !ok {
		return e, false
	}
	if m := paramCallRE.FindStringSubmatch(s); m != nil {
		s = m[2]
	}
	e.token = strings.TrimSpace(s)
	if e.token == "" || strings.ContainsAny(e.token, " \t\n(){}[]'\"") {
		return e, false
	}
	return e, true
}

var (
	mapCallRE    = regexp.MustCompile(`\[\s*['"]map['"]\s*\]|\.map\s*\(`)
	quotedPubRE  = regexp.MustCompile(`['"]((?:PARAM|STATUS)_[A-Z0-9_]+)['"]`)
	permPrefixRE = regexp.MustCompile(`^[A-Za-z]{1,3}\.`)
)

// mapListTokens recovers the quoted PARAM_…/STATUS_… literals before a
// ['map'] call (other upper-case literals such as 'WRITE' are ignored).
func mapListTokens(src string) []string {
	loc := mapCallRE.FindStringIndex(src)
	if loc == nil {
		return nil
	}
	var out []string
	for _, m := range quotedPubRE.FindAllStringSubmatch(src[:loc[0]], -1) {
		out = append(out, m[1])
	}
	return out
}

// permissionName normalises a permission requirement (docs/spec.md A-4.3a): an
// obfuscated or enum subscript is its member name, and a short build prefix
// (A.DISPLAY_MENU_HEATING) is dropped.
func permissionName(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if m := memberName(s); m != s {
		return m
	}
	return permPrefixRE.ReplaceAllString(s, "")
}

// filterRoutes applies a module's permissions (docs/spec.md A-4.3b): entries whose
// requirement is not held are dropped (string entries are kept); a route
// whose own requirement fails survives only if it has children or its
// route-level sections still hold entries. A nil set filters nothing.
func filterRoutes(routes []*route, perms map[string]bool) []*route {
	if perms == nil {
		return routes
	}
	met := func(req string) bool { return req == "" || perms[req] }
	filter := func(s sections) sections {
		var out sections
		for i, l := range s {
			for _, e := range l {
				if !e.gated || met(e.permission) {
					out[i] = append(out[i], e)
				}
			}
		}
		return out
	}
	var out []*route
	for _, r := range routes {
		c := *r
		c.meta = filter(r.meta)
		c.params = filter(r.params)
		c.children = filterRoutes(r.children, perms)
		if !met(r.permission) && len(r.children) == 0 && c.params.empty() {
			continue
		}
		out = append(out, &c)
	}
	return out
}

// visibleToken is a symbol as the menu shows it.
type visibleToken struct {
	symbol   string
	menu     []*route // the route path of its first appearance
	writable bool
}

// visibleTokens lists the symbols of a (filtered) menu in menu order: a
// pre-order walk, meta.parameters then route-level parameters, sections in
// order read, write, status, special (docs/spec.md A-4.3c "visible tokens").
func visibleTokens(routes []*route) []visibleToken {
	var out []visibleToken
	at := map[string]int{}
	var walk func(rs []*route, path []*route)
	walk = func(rs []*route, path []*route) {
		for _, r := range rs {
			p := append(append([]*route(nil), path...), r)
			for _, secs := range []*sections{&r.meta, &r.params} {
				for i, l := range secs {
					for _, e := range l {
						if j, seen := at[e.token]; seen {
							if i == sectionWrite {
								out[j].writable = true
							}
							continue
						}
						at[e.token] = len(out)
						out = append(out, visibleToken{symbol: e.token, menu: p, writable: i == sectionWrite})
					}
				}
			}
			walk(r.children, p)
		}
	}
	walk(routes, nil)
	return out
}

// titleTokenRE is a bare menu title token (docs/spec.md ).
var titleTokenRE = regexp.MustCompile(`^(MAINMENU|MENUSERWIS|MENUPALNIKA|MENU)_[A-Z0-9_]+$`)

// routeTitle is docs/spec.md: the displayName through the title overlay
// (a routes.X path, a flat menu key or a title namespace), else the route
// name as a routes path; else any other translation of the displayName;
// else the raw displayName, name, path, or "-".
func routeTitle(r *route, tr translations) string {
	dn := strings.TrimSpace(r.displayName)
	if dn != "" {
		if t, ok := overlayTitle(dn, tr); ok {
			return t
		}
	}
	if n := strings.TrimSpace(r.name); n != "" {
		if t, ok := overlayTitle(n, tr); ok {
			return t
		}
	}
	if dn != "" {
		if t, ok := tr.resolve(dn); ok && strings.TrimSpace(t) != "" {
			return t
		}
	}
	for _, s := range []string{dn, r.name, r.path} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return "-"
}

// overlayTitle looks a title up in the overlay of docs/spec.md: the routes
// namespace (a "routes." prefix dropped), then the flat menu namespace,
// then a title token's own namespace (its key, "__default__", or its only
// value).
func overlayTitle(key string, tr translations) (string, bool) {
	k := strings.TrimPrefix(key, "routes.")
	if s, ok := walkPath(tr["routes"], k, 0).(string); ok && strings.TrimSpace(s) != "" {
		return s, true
	}
	if m := tr["menu"]; m != nil {
		if s, ok := m.Value(key).(string); ok && strings.TrimSpace(s) != "" {
			return s, true
		}
	}
	if titleTokenRE.MatchString(key) {
		if ns := tr[strings.ToLower(key)]; ns != nil {
			for _, k := range []string{key, "__default__"} {
				if s, ok := ns.Value(k).(string); ok && strings.TrimSpace(s) != "" {
					return s, true
				}
			}
			if ns.Len() == 1 {
				if s, ok := ns.Value(ns.Keys()[0]).(string); ok && strings.TrimSpace(s) != "" {
					return s, true
				}
			}
		}
	}
	return "", false
}

// menuPath is docs/spec.md: the titles of the route and its ancestors,
// skipping empty ones and "-".
func menuPath(path []*route, tr translations) []string {
	var out []string
	for _, r := range path {
		if t := routeTitle(r, tr); t != "" && t != "-" {
			out = append(out, t)
		}
	}
	return out
}

// titleNamespaces lists the namespaces the titles of a menu may need.
func titleNamespaces(routes []*route, into map[string]bool) {
	for _, r := range routes {
		for _, s := range []string{r.displayName, r.name} {
			s = strings.TrimSpace(s)
			if titleTokenRE.MatchString(s) {
				into[strings.ToLower(s)] = true
			} else if ns := namespaceOf(s); ns != "" {
				into[ns] = true
			}
		}
		titleNamespaces(r.children, into)
	}
}
