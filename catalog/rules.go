package catalog

import (
	"math"
	"regexp"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// One evaluator serves computed values (docs/spec.md A-4.10a), status rules and
// visibility (docs/spec.md, A-4.10a): bit and mask, every operator,
// storeGetter conditions and else branches, wherever a rule appears (the
// reference client has two evaluators that disagree).

// ruleContext is the runtime state storeGetter paths read:
// {devid, modulesMap: {<devid>: {connectedAt}}} (docs/spec.md A-4.10a).
type ruleContext struct {
	vars *jsval.Object
}

func newRuleContext(devid string, connectedAt int64) *ruleContext {
	mod := jsval.NewObject()
	if connectedAt != 0 {
		mod.Set("connectedAt", float64(connectedAt))
	}
	mods := jsval.NewObject()
	mods.Set(devid, mod)
	vars := jsval.NewObject()
	vars.Set("devid", devid)
	vars.Set("modulesMap", mods)
	return &ruleContext{vars: vars}
}

var placeholderRE = regexp.MustCompile(`\{([A-Za-z_][\w]*)\}`)

// getter reads a storeGetter path: {key} placeholders are filled from the
// context, then the dotted path is walked.
func (c *ruleContext) getter(path string) (jsval.Value, bool) {
	if c == nil {
		return nil, false
	}
	p := placeholderRE.ReplaceAllStringFunc(path, func(m string) string {
		if s, ok := jsval.Text(c.vars.Value(m[1 : len(m)-1])); ok {
			return s
		}
		return m
	})
	var v jsval.Value = c.vars
	for _, seg := range strings.Split(p, ".") {
		o, ok := v.(*jsval.Object)
		if !ok {
			return nil, false
		}
		if v, ok = o.Get(seg); !ok {
			return nil, false
		}
	}
	return v, v != nil
}

// holds says whether a condition holds: with selectors, when any selector's
// value (bit or mask applied) satisfies it; missing or non-numeric values
// are skipped.
func (c *condition) holds(r store.Reader, ctx *ruleContext) bool {
	if c.getter != "" {
		v, ok := ctx.getter(c.getter)
		return ok && compare(c.op, v, c.expected)
	}
	for i := range c.targets {
		v, ok := c.targets[i].bitValue(r)
		if !ok {
			continue
		}
		if compare(c.op, v, c.expected) {
			return true
		}
	}
	return false
}

func (b *branch) holds(r store.Reader, ctx *ruleContext) bool {
	if len(b.conds) == 0 {
		return false
	}
	for i := range b.conds {
		if !b.conds[i].holds(r, ctx) {
			return false
		}
	}
	return true
}

// selectBranch returns the first if/elseif branch whose conditions all
// hold, else the first else branch (the default the reference client's
// computed evaluator ignores, docs/spec.md A-4.10a).
func selectBranch(bs []branch, r store.Reader, ctx *ruleContext) *branch {
	for i := range bs {
		if bs[i].kind != "else" && bs[i].holds(r, ctx) {
			return &bs[i]
		}
	}
	for i := range bs {
		if bs[i].kind == "else" {
			return &bs[i]
		}
	}
	return nil
}

// compare applies an operator to a value and the expected literal.
func compare(op string, v, expected jsval.Value) bool {
	switch op {
	case "equalTo":
		return looseEqual(v, expected)
	case "notEqualTo":
		return !looseEqual(v, expected)
	case "greaterThan", "greaterThanOrEqualTo", "lessThan", "lessThanOrEqualTo":
		a, ok1 := number(v)
		b, ok2 := number(expected)
		if !ok1 || !ok2 {
			return false
		}
		switch op {
		case "greaterThan":
			return a > b
		case "greaterThanOrEqualTo":
			return a >= b
		case "lessThan":
			return a < b
		}
		return a <= b
	case "matches", "notMatches":
		re := regexFromLiteral(expected)
		if re == nil {
			return false
		}
		s, ok := valueText(v)
		return ok && re.MatchString(s) == (op == "matches")
	}
	return false
}

// number converts a rule operand: numbers, booleans (1/0) and numeric text.
func number(v jsval.Value) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, !math.IsNaN(v)
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case string:
		return jsval.ParseNumber(v)
	}
	return 0, false
}

func valueText(v jsval.Value) (string, bool) {
	switch v := v.(type) {
	case float64:
		return jsval.FormatNumber(v), true
	case bool:
		if v {
			return "true", true
		}
		return "false", true
	}
	return jsval.Text(v)
}

// looseEqual compares a register or context value with an expected literal:
// numerically when both read as numbers (true is 1), else as text; an
// expected null (void 0) equals nothing present.
func looseEqual(v, expected jsval.Value) bool {
	if expected == nil || v == nil {
		return expected == nil && v == nil
	}
	a, ok1 := number(v)
	b, ok2 := number(expected)
	if ok1 && ok2 {
		return a == b
	}
	s1, ok1 := valueText(v)
	s2, ok2 := valueText(expected)
	return ok1 && ok2 && s1 == s2
}

// regexFromLiteral compiles a regular expression written as /pattern/flags
// (only the i flag is honoured) or as plain text.
func regexFromLiteral(v jsval.Value) *regexp.Regexp {
	s, ok := jsval.Text(v)
	if !ok || s == "" {
		return nil
	}
	pat, flags := s, ""
	if strings.HasPrefix(s, "/") {
		if end := strings.LastIndexByte(s, '/'); end > 0 {
			pat, flags = s[1:end], s[end+1:]
		}
	}
	if strings.Contains(flags, "i") {
		pat = "(?i)" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil
	}
	return re
}

// computedValue evaluates a computed definition (docs/spec.md A-4.10a): the selected
// branch's result, normalised (docs/spec.md A-4.10a). ok is false when no branch
// applies.
func (d *definition) computedValue(r store.Reader, ctx *ruleContext) (jsval.Value, bool) {
	b := selectBranch(d.rules, r, ctx)
	if b == nil {
		return nil, false
	}
	return b.result, b.result != nil
}

// normalizeResult is docs/spec.md A-4.10a: enum leftovers to member names, integral
// numbers to their decimal text, booleans to 1/0, an object's value
// followed; anything else is no result.
func normalizeResult(v jsval.Value, depth int) jsval.Value {
	if depth > 4 {
		return nil
	}
	switch v := normLiteral(v).(type) {
	case string:
		return memberName(v)
	case jsval.Source:
		return memberName(string(v))
	case float64:
		return v
	case bool:
		if v {
			return 1.0
		}
		return 0.0
	case *jsval.Object:
		return normalizeResult(v.Value("value"), depth+1)
	}
	return nil
}

// Visibility reasons (docs/spec.md ), kept for diagnostics and tests.
const (
	visibleNoMapping    = "visible:no-mapping"
	hiddenComposite     = "hidden:composite-component"
	visibleNoPaths      = "visible:no-paths"
	hiddenInvisible     = "hidden:invisible"
	hiddenUnavailable   = "hidden:device-unavailable"
	visibleDefault      = "visible:default"
	conditionInvisible  = "INVISIBLE"
	conditionDeviceAvbl = "DEVICE_AVAILABLE"
)

// visibility mirrors the app's isParameterVisible (docs/spec.md ).
func (d *definition) visibility(r store.Reader, ctx *ruleContext) (bool, string) {
	if d == nil {
		return true, visibleNoMapping
	}
	if d.composite {
		return false, hiddenComposite
	}
	entries := d.status
	if len(entries) == 0 && len(d.anyStatus) > 0 {
		if b := selectBranch(d.anyStatus, r, ctx); b != nil {
			entries = b.status
		}
	}
	if len(entries) == 0 {
		return true, visibleNoPaths
	}
	if v, known := statusFlag(entries, conditionInvisible, r, ctx); known && v {
		return false, hiddenInvisible
	}
	if v, known := statusFlag(entries, conditionDeviceAvbl, r, ctx); known && !v {
		return false, hiddenUnavailable
	}
	return true, visibleDefault
}

// statusFlag evaluates one condition of a status map: a selector entry is
// its bit (or masked value, or the value) being non-zero; a rule entry is
// its then when all its conditions hold, else its else. Several entries
// are OR-ed; unknown (missing values) never decides.
func statusFlag(entries []statusEntry, cond string, r store.Reader, ctx *ruleContext) (value, known bool) {
	for i := range entries {
		e := &entries[i]
		if e.cond != cond {
			continue
		}
		var v, k bool
		switch {
		case e.sel != nil:
			x, ok := e.sel.bitValue(r)
			v, k = ok && x != 0, ok
		case e.rule != nil:
			res := e.els
			if e.rule.holds(r, ctx) {
				res = e.rule.then
			}
			v, k = jsval.Truthy(normLiteral(res))
		}
		if k {
			known = true
			value = value || v
		}
	}
	return value, known
}
