package catalog

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// selector is one register reference of a definition (docs/spec.md ).
type selector struct {
	addr    Address
	key     string  // addr.ChanIdx(), kept to read without allocating
	bit     int     // -1 when absent
	mask    int64   // 0 when absent
	convert bool    // multi-register word: masked to 16 bits
	times   float64 // multi-register weight, 1 by default
}

// raw reads the register.
func (s *selector) raw(r store.Reader) (float64, bool) { return read(r, s.addr, s.key) }

// bitValue reads the register as an integer and applies bit or mask; ok is
// false when the value is missing or not a number.
func (s *selector) bitValue(r store.Reader) (float64, bool) {
	v, ok := s.raw(r)
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if s.bit < 0 && s.mask == 0 {
		return v, true
	}
	i := int64(v) // floats are truncated (docs/spec.md A-4.10a)
	if s.bit >= 0 {
		return float64((i >> uint(s.bit)) & 1), true
	}
	return float64(i & s.mask), true
}

// condition is one clause of a rule (docs/spec.md ).
type condition struct {
	op       string      // equalTo, notEqualTo, greaterThan, …
	expected jsval.Value // normalised literal
	targets  []selector
	getter   string // storeGetter path, when the clause reads runtime state
}

// branch is one rule entry: if/elseif/else with its conditions and result.
type branch struct {
	kind  string // "if", "elseif", "else"
	conds []condition
	then  jsval.Value
	// result is then's computed result, normalised once (see
	// normalizeResult); set for the rules of a computed value.
	result jsval.Value
	// status holds the visibility entries a branch's then may carry
	// (docs/spec.md ).
	status []statusEntry
}

// statusEntry is one visibility or status clause under a condition name
// (docs/spec.md ): a register bit, or an if/then/else rule.
type statusEntry struct {
	cond string // upper case: INVISIBLE, DEVICE_AVAILABLE, …
	sel  *selector
	rule *branch // conds, then; else in elseVal
	els  jsval.Value
}

// definition is a parameter definition normalised once (docs/spec.md ).
type definition struct {
	symbol    string
	origin    string
	raw       *jsval.Object
	nameToken string
	values    []selector // register selectors of the value
	rules     []branch   // rule-valued value, or computed any/all/when rules
	commands  []branch   // write actions (rules whose then carries a command)
	unitCode  string     // scalar unit code ("49", or text such as "C"); "" none
	unitSel   []selector
	status    []statusEntry
	anyStatus []branch // any-rules whose then carries a status (docs/spec.md)
	minSel    []selector
	maxSel    []selector
	limMin    *float64
	limMax    *float64
	component string
	composite bool // value2..value4: a composite widget (docs/spec.md)
	inputs    []selector
}

// looksLikeDefinition is the test of docs/spec.md A-4.4b: a pool, a scalar
// unit, any register path, or one of the definition keys; an empty object is rejected.
func looksLikeDefinition(o *jsval.Object, token string) bool {
	if o.Len() == 0 {
		return false
	}
	if inner, ok := o.Value(token).(*jsval.Object); ok && inner.Len() > 0 {
		return true
	}
	for _, k := range []string{"name", "group", "pool", "use", "value", "unit", "units", "componentType", "status", "command", "any"} {
		if o.Has(k) {
			return true
		}
	}
	return false
}

// newDefinition normalises a definition object. A chunk may be a table keyed
// by symbol; then the symbol's own entry is the definition (docs/spec.md ).
func newDefinition(symbol, origin string, o *jsval.Object) *definition {
	if inner, ok := o.Value(symbol).(*jsval.Object); ok {
		o = inner
	}
	d := &definition{symbol: symbol, origin: origin, raw: o}
	d.nameToken, _ = o.Value("name").(string)
	d.nameToken = strings.TrimSpace(d.nameToken)

	// value: register selectors, or rules (computed value).
	sels, valueRules := selectorsOrRules(o.Value("value"))
	d.values = sels
	// any/all/when: command rules and computed rules, told apart by whether
	// their then carries a command (the reference client mixes them,
	// docs/spec.md A-4.10b). The computed rule list is these, else the value's rules
	// (docs/spec.md A-4.10a).
	var anyRules []branch
	for _, logic := range []string{"any", "all", "when"} {
		list, _ := o.Value(logic).([]jsval.Value)
		for _, b := range parseBranches(list) {
			switch {
			case isCommand(b.then):
				d.commands = append(d.commands, b)
			case len(b.status) > 0:
				d.anyStatus = append(d.anyStatus, b)
			case resultOf(b.then) != nil:
				anyRules = append(anyRules, b)
			}
		}
	}
	d.rules = anyRules
	if len(d.rules) == 0 {
		d.rules = valueRules
	}
	for i := range d.rules {
		d.rules[i].result = normalizeResult(resultOf(d.rules[i].then), 0)
	}
	// unit: a scalar code (units, unit_name, or a scalar unit), or selectors.
	for _, k := range []string{"units", "unit_name", "unit"} {
		if c := scalarCode(o.Value(k)); c != "" {
			d.unitCode = c
			break
		}
	}
	d.unitSel, _ = selectorsOrRules(o.Value("unit"))
	d.status = parseStatus(o.Value("status"))
	d.component = componentOf(o)
	d.composite = o.Has("value2") || o.Has("value3") || o.Has("value4")
	d.minSel, d.limMin = limitOf(o, "minValue", "min")
	d.maxSel, d.limMax = limitOf(o, "maxValue", "max")
	for _, k := range []string{"limits", "range", "minmax"} {
		if lim, ok := o.Value(k).(*jsval.Object); ok {
			if f, ok := lim.Value("min").(float64); ok && d.limMin == nil {
				d.limMin = &f
			}
			if f, ok := lim.Value("max").(float64); ok && d.limMax == nil {
				d.limMax = &f
			}
		}
	}
	// The legacy channel map (docs/spec.md) fills what the explicit
	// fields left empty.
	if use, ok := o.Value("use").(*jsval.Object); ok {
		get := func(k string) []selector { s, _ := selectorsOrRules(use.Value(k)); return s }
		if len(d.values) == 0 && len(d.rules) == 0 {
			d.values = get("v")
		}
		if len(d.unitSel) == 0 {
			d.unitSel = get("u")
		}
		if len(d.status) == 0 {
			for _, s := range get("s") {
				s := s
				d.status = append(d.status, statusEntry{cond: "DEFAULT", sel: &s})
			}
		}
		if len(d.minSel) == 0 {
			d.minSel = get("n")
		}
		if len(d.maxSel) == 0 {
			d.maxSel = get("x")
		}
	}
	// Inputs: every register a rule or status reads (docs/spec.md A-4.5b inverse index).
	addConds := func(cs []condition) {
		for _, c := range cs {
			d.inputs = append(d.inputs, c.targets...)
		}
	}
	for _, bs := range [][]branch{d.rules, d.commands, d.anyStatus} {
		for _, b := range bs {
			addConds(b.conds)
			for _, e := range b.status {
				if e.sel != nil {
					d.inputs = append(d.inputs, *e.sel)
				}
			}
		}
	}
	for _, e := range d.status {
		if e.sel != nil {
			d.inputs = append(d.inputs, *e.sel)
		}
		if e.rule != nil {
			addConds(e.rule.conds)
		}
	}
	return d
}

// computed says whether the value comes from rules (docs/spec.md A-4.10a).
func (d *definition) computed() bool { return len(d.rules) > 0 }

// scalarCode is a scalar unit code as text: an integer ("49") or other text
// ("C"); "" for anything else.
func scalarCode(v jsval.Value) string {
	switch v := v.(type) {
	case float64:
		if c := unitKey(jsval.FormatNumber(v)); c != "" {
			return c
		}
	case string:
		if c := unitKey(v); c != "" {
			return c
		}
		return strings.TrimSpace(v)
	}
	return ""
}

func componentOf(o *jsval.Object) string {
	for _, k := range []string{"componentType", "useComponent"} {
		if s, ok := jsval.Text(o.Value(k)); ok && strings.TrimSpace(s) != "" {
			return memberName(s)
		}
	}
	return ""
}

// limitOf reads one bound of a definition from the first of keys present
// with register selectors or a number: selectors, else a fixed value.
func limitOf(o *jsval.Object, keys ...string) ([]selector, *float64) {
	for _, k := range keys {
		if sels, _ := selectorsOrRules(o.Value(k)); len(sels) > 0 {
			return sels, nil
		}
		if f, ok := o.Value(k).(float64); ok {
			return nil, &f
		}
	}
	return nil, nil
}

// selectorsOrRules reads a value/unit/min/max/command field: a list (or
// one object) of register selectors, or a list of rules.
func selectorsOrRules(v jsval.Value) ([]selector, []branch) {
	var list []jsval.Value
	switch v := v.(type) {
	case []jsval.Value:
		list = v
	case *jsval.Object:
		list = []jsval.Value{v}
	default:
		return nil, nil
	}
	var sels []selector
	ruleLike := false
	for _, item := range list {
		o, ok := item.(*jsval.Object)
		if !ok {
			continue
		}
		if o.Has("if") || o.Has("elseif") || o.Has("else") || o.Has("then") {
			ruleLike = true
			continue
		}
		if s, ok := parseSelector(o); ok {
			sels = append(sels, s)
		}
	}
	if ruleLike {
		return nil, parseBranches(list)
	}
	return sels, nil
}

// parseSelector reads a register selector with the key aliases of docs/spec.md:
// pool from group/pool (an integer pool 5 is "P5"), index from
// number/index/idx, channel from use/path/pathType/chan.
func parseSelector(o *jsval.Object) (selector, bool) {
	pool := ""
	for _, k := range []string{"group", "pool"} {
		switch v := o.Value(k).(type) {
		case string:
			pool = strings.TrimSpace(v)
		case float64:
			if v >= 0 && v == math.Trunc(v) {
				pool = "P" + jsval.FormatNumber(v)
			}
		}
		if pool != "" {
			break
		}
	}
	if pool != "" && pool[0] >= '0' && pool[0] <= '9' {
		pool = "P" + pool
	}
	idx := -1
	for _, k := range []string{"number", "index", "idx"} {
		switch v := o.Value(k).(type) {
		case float64:
			if v >= 0 && v == math.Trunc(v) && v < 1<<31 {
				idx = int(v)
			}
		case string:
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
				idx = n
			}
		}
		if idx >= 0 {
			break
		}
	}
	if pool == "" || idx < 0 {
		return selector{}, false
	}
	ch := byte('v')
	for _, k := range []string{"use", "path", "pathType", "chan"} {
		if s, ok := jsval.Text(o.Value(k)); ok && strings.TrimSpace(s) != "" {
			ch = channelLetter(s)
			break
		}
	}
	s := selector{addr: Address{Pool: pool, Chan: ch, Index: idx}, bit: -1, times: 1}
	s.key = s.addr.ChanIdx()
	if b, ok := o.Value("bit").(float64); ok && b >= 0 && b < 63 && b == math.Trunc(b) {
		s.bit = int(b)
	}
	if m, ok := o.Value("mask").(float64); ok && m > 0 && m == math.Trunc(m) && m < 1<<62 {
		s.mask = int64(m)
	}
	// convert names a helper whose name changes per build; an unresolved
	// identifier is as good as any (docs/spec.md ).
	switch c := o.Value("convert").(type) {
	case nil:
	case bool:
		s.convert = c
	case float64:
		s.convert = c != 0
	case string:
		s.convert = c != ""
	default:
		s.convert = true
	}
	if t, ok := o.Value("times").(float64); ok && t != 0 {
		s.times = t
	}
	return s, true
}

// channelLetter maps a channel word to its letter (docs/spec.md ).
func channelLetter(w string) byte {
	w = strings.TrimSpace(w)
	if strings.HasPrefix(w, "[t.") {
		return 's'
	}
	w = strings.ToLower(memberName(w))
	switch w {
	case "value", "command":
		return 'v'
	case "status":
		return 's'
	case "unit":
		return 'u'
	case "minvalue":
		return 'n'
	case "maxvalue":
		return 'x'
	}
	if w != "" && w[0] >= 'a' && w[0] <= 'z' {
		return w[0]
	}
	return 'v'
}

// parseBranches reads a rule list (docs/spec.md ).
func parseBranches(list []jsval.Value) []branch {
	var out []branch
	for _, item := range list {
		o, ok := item.(*jsval.Object)
		if !ok {
			continue
		}
		var b branch
		switch {
		case o.Has("if"):
			b.kind, b.conds = "if", parseConditions(o.Value("if"))
		case o.Has("elseif"):
			b.kind, b.conds = "elseif", parseConditions(o.Value("elseif"))
		case o.Has("else"):
			b.kind = "else"
		default:
			continue
		}
		if o.Has("then") {
			b.then = normLiteral(o.Value("then"))
		} else if b.kind == "else" {
			b.then = normLiteral(o.Value("else"))
		}
		if t, ok := b.then.(*jsval.Object); ok && t.Has("status") {
			b.status = parseStatus(t.Value("status"))
		}
		if b.then == nil && len(b.status) == 0 {
			continue // a branch with nothing to do (e.g. {else: null})
		}
		out = append(out, b)
	}
	return out
}

func parseConditions(v jsval.Value) []condition {
	var list []jsval.Value
	switch v := v.(type) {
	case []jsval.Value:
		list = v
	case *jsval.Object:
		list = []jsval.Value{v}
	}
	var out []condition
	for _, item := range list {
		o, ok := item.(*jsval.Object)
		if !ok {
			continue
		}
		c := condition{expected: normLiteral(o.Value("expected"))}
		if s, ok := jsval.Text(o.Value("operation")); ok {
			c.op = memberName(s)
		}
		switch tv := o.Value("value").(type) {
		case *jsval.Object:
			if g, ok := jsval.Text(tv.Value("storeGetter")); ok {
				c.getter = g
			} else if s, ok := parseSelector(tv); ok {
				c.targets = []selector{s}
			}
		case []jsval.Value:
			for _, t := range tv {
				if to, ok := t.(*jsval.Object); ok {
					if s, ok := parseSelector(to); ok {
						c.targets = append(c.targets, s)
					}
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// parseStatus reads a status field (docs/spec.md ): an object of condition name →
// entries (selectors or rules), or a list, kept under "DEFAULT".
func parseStatus(v jsval.Value) []statusEntry {
	var out []statusEntry
	add := func(cond string, item jsval.Value) {
		o, ok := item.(*jsval.Object)
		if !ok {
			return
		}
		if c, ok := jsval.Text(o.Value("condition")); ok && strings.TrimSpace(c) != "" {
			cond = conditionName(c)
		}
		if o.Has("if") {
			b := branch{kind: "if", conds: parseConditions(o.Value("if")), then: normLiteral(o.Value("then"))}
			out = append(out, statusEntry{cond: cond, rule: &b, els: normLiteral(o.Value("else"))})
			return
		}
		if s, ok := parseSelector(o); ok {
			out = append(out, statusEntry{cond: cond, sel: &s})
		}
	}
	switch v := v.(type) {
	case *jsval.Object:
		for _, k := range v.Keys() {
			cond := conditionName(k)
			switch items := v.Value(k).(type) {
			case []jsval.Value:
				for _, it := range items {
					add(cond, it)
				}
			default:
				add(cond, items)
			}
		}
	case []jsval.Value:
		for _, it := range v {
			add("DEFAULT", it)
		}
	}
	return out
}

// conditionName normalises a status condition key to its bare upper-case
// name (docs/spec.md ): [_0x4d['INVISIBLE']], ParameterStatus['INVISIBLE'],
// [t.INVISIBLE], t.INVISIBLE and invisible are all INVISIBLE.
func conditionName(k string) string { return strings.ToUpper(memberName(k)) }

var dottedIdentRE = regexp.MustCompile(`^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+$`)

// memberName reduces the enum and member leftovers of minified code to the
// member's name: "[x]" → x, X['M'] → M, a.b.M → M. Other text is returned
// trimmed.
func memberName(s string) string {
	s = strings.TrimSpace(s)
	for len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	if n := len(s); n >= 4 && s[n-1] == ']' && (s[n-2] == '\'' || s[n-2] == '"') {
		if open := strings.LastIndex(s, "["+string(s[n-2])); open > 0 {
			return s[open+2 : n-2]
		}
	}
	if dottedIdentRE.MatchString(s) {
		return s[strings.LastIndexByte(s, '.')+1:]
	}
	return s
}

// normLiteral normalises a rule literal (docs/spec.md ): the minified booleans and
// undefined written as text become values; other text is left as it is.
func normLiteral(v jsval.Value) jsval.Value {
	s, ok := jsval.Text(v)
	if !ok {
		return v
	}
	switch strings.ReplaceAll(strings.TrimSpace(s), " ", "") {
	case "!0", "!![]":
		return true
	case "!1", "![]":
		return false
	case "void0", "void0x0", "undefined":
		return nil
	}
	return v
}

// isCommand says whether a rule result is a write action.
func isCommand(then jsval.Value) bool {
	o, ok := then.(*jsval.Object)
	return ok && o.Has("command")
}

// resultOf is a computed rule's result: then.value when then is an object,
// else then itself.
func resultOf(then jsval.Value) jsval.Value {
	if o, ok := then.(*jsval.Object); ok {
		return o.Value("value")
	}
	return then
}

// primaryAddress is docs/spec.md A-4.5a: the value's first selector when the value is a
// register list (the caveat of docs/spec.md A-4.5a: prefer the selectors in value); else
// the first candidate of a depth-first walk of the raw definition, v before
// s, u, x, n; else the address a pool-encoded symbol spells. A STATUS_P…
// symbol is always described at its status register (docs/spec.md A-4.5c):
// when its definition points elsewhere, that register is returned as
// computed, and is zero otherwise.
func (d *definition) primaryAddress() (primary, computed Address, ok bool) {
	found, ok := d.definedAddress()
	if pool, idx, status := poolEncoded(d.symbol, "STATUS_P"); status {
		primary = Address{Pool: pool, Chan: 's', Index: idx}
		if ok && found != primary {
			computed = found
		}
		return primary, computed, true
	}
	return found, Address{}, ok
}

// definedAddress is the primary address the definition itself gives
// (docs/spec.md A-4.5a steps 1–3).
func (d *definition) definedAddress() (Address, bool) {
	if len(d.values) > 0 {
		return d.values[0].addr, true
	}
	var cands []Address
	budget := walkBudget(maxWalkNodes)
	walkSelectors(d.raw, 0, &budget, func(s selector) {
		if len(cands) < 256 {
			cands = append(cands, s.addr)
		}
	})
	for _, ch := range []byte{'v', 's', 'u', 'x', 'n'} {
		for _, a := range cands {
			if a.Chan == ch {
				return a, true
			}
		}
	}
	if len(cands) > 0 {
		return cands[0], true
	}
	if pool, idx, ok := poolEncoded(d.symbol, "PARAM_P"); ok {
		return Address{Pool: pool, Chan: 'v', Index: idx}, true
	}
	return Address{}, false
}

// walkBudget bounds the nodes a walk over converted values visits: values
// share parts (a binding is evaluated once and may be used many times), so a
// walk bounded in depth alone could still visit exponentially many nodes.
type walkBudget int

// maxWalkNodes is the budget of one walk.
const maxWalkNodes = 200_000

func (b *walkBudget) spend() bool {
	if *b <= 0 {
		return false
	}
	*b--
	return true
}

// walkSelectors visits every object with a pool and an index, depth first
// in key order (docs/spec.md A-4.5a), to a bounded depth and node count.
func walkSelectors(v jsval.Value, depth int, budget *walkBudget, fn func(selector)) {
	if depth > 32 || !budget.spend() {
		return
	}
	switch v := v.(type) {
	case *jsval.Object:
		if s, ok := parseSelector(v); ok {
			fn(s)
		}
		for _, k := range v.Keys() {
			walkSelectors(v.Value(k), depth+1, budget, fn)
		}
	case []jsval.Value:
		for _, x := range v {
			walkSelectors(x, depth+1, budget, fn)
		}
	}
}

// poolEncoded reads PARAM_P<pool>_<idx> / STATUS_P<pool>_<idx>.
func poolEncoded(symbol, prefix string) (pool string, idx int, ok bool) {
	rest, found := strings.CutPrefix(symbol, prefix)
	if !found {
		return "", 0, false
	}
	p, i, found := strings.Cut(rest, "_")
	if !found {
		return "", 0, false
	}
	pn, err1 := strconv.Atoi(p)
	in, err2 := strconv.Atoi(i)
	if err1 != nil || err2 != nil || pn < 0 || in < 0 {
		return "", 0, false
	}
	return "P" + strconv.Itoa(pn), in, true
}

// composes says whether the value is composed from several words (docs/spec.md ):
// two or more selectors, or one with convert or a weight other than 1.
func (d *definition) composes() bool {
	if len(d.values) >= 2 {
		return true
	}
	return len(d.values) == 1 && (d.values[0].convert || d.values[0].times != 1)
}
