package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/catalog/jsval"
	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// resolver holds what resolution needs once the assets are loaded.
type resolver struct {
	defs  map[string]*definition
	tr    translations
	units *unitTable
}

// buildModule resolves one module from the tokens its menu shows under its
// permissions: every shown symbol with a definition turned into a Param,
// and the inverse index (docs/spec.md ). A symbol the
// permissions hide is not among them, so it is not described, whatever another
// module says about it.
func (rs *resolver) buildModule(spec ModuleSpec, shown []visibleToken) *Module {
	m := &Module{devid: spec.DevID}
	ctx := newRuleContext(spec.DevID, spec.ConnectedAt)
	for _, vt := range shown {
		d := rs.defs[vt.symbol]
		if d == nil {
			// No definition anywhere: not described (docs/spec.md A-4.4b),
			// but named in the diagnostics' catalog report.
			m.undefined = append(m.undefined, vt.symbol)
			continue
		}
		p := rs.newParam(d, vt, ctx, spec.Values)
		if p == nil {
			continue
		}
		m.params = append(m.params, p)
	}
	m.index()
	return m
}

// permissionSet is a module's permissions, normalised; nil (no filtering)
// when the module row carries none.
func permissionSet(perms []string) map[string]bool {
	if perms == nil {
		return nil
	}
	set := make(map[string]bool, len(perms))
	for _, p := range perms {
		set[permissionName(p)] = true
	}
	return set
}

func (rs *resolver) newParam(d *definition, vt visibleToken, ctx *ruleContext, values store.Reader) *Param {
	addr, computedAt, ok := d.primaryAddress()
	if !ok {
		return nil
	}
	p := &Param{
		Symbol:          d.symbol,
		Address:         addr,
		ComputedPrimary: computedAt,
		key:             addr.ChanIdx(),
		Writable:        vt.writable || len(d.commands) > 0,
		Computed:        d.computed(),
		def:             d,
		units:           rs.units,
		ctx:             ctx,
		unitCode:        d.unitCode,
	}
	if d.composes() && p.readsDefinition() {
		for _, s := range d.values {
			p.Parts = append(p.Parts, s.addr)
		}
	}
	p.Name = d.symbol
	if d.nameToken != "" {
		if s, ok := rs.tr.resolve(d.nameToken); ok && strings.TrimSpace(s) != "" {
			p.Name = strings.TrimSpace(s)
		}
	}
	p.Menu = menuPath(vt.menu, rs.tr)
	// The unit register: the definition's, else the family's u channel.
	family := func(ch byte) selector {
		a := Address{Pool: addr.Pool, Chan: ch, Index: addr.Index}
		return selector{addr: a, key: a.ChanIdx(), bit: -1, times: 1}
	}
	switch {
	case len(d.unitSel) > 0:
		p.unitReg, p.hasUReg = d.unitSel[0], true
	case addr.Chan == 'v':
		p.unitReg, p.hasUReg = family('u'), true
	}
	p.minReg, p.maxReg = d.minSel, d.maxSel
	if addr.Chan == 'v' {
		if len(p.minReg) == 0 {
			p.minReg = []selector{family('n')}
		}
		if len(p.maxReg) == 0 {
			p.maxReg = []selector{family('x')}
		}
	}
	// Static fields from the load-time values.
	if values != nil && p.hasUReg {
		if v, ok := p.unitReg.raw(values); ok {
			p.unitCode = scalarCode(v)
		}
	}
	u := rs.units.get(p.unitCode)
	if u == nil && d.unitCode != "" && p.unitCode != d.unitCode {
		p.unitCode = d.unitCode
		u = rs.units.get(p.unitCode)
	}
	if u != nil {
		p.Unit = u.symbol
		p.Enum = u.enumCopy()
	}
	p.Min, p.Max = p.Range(values)
	p.identify()
	return p
}

// index builds the lookups of a module: primary register → first param in
// menu order, every register a param reads → params, symbol, name.
func (m *Module) index() {
	m.byAddr = map[addrKey]*Param{}
	m.users = map[addrKey][]*Param{}
	m.bySymbol = map[string]*Param{}
	m.byName = map[string][]*Param{}
	for _, p := range m.params {
		k := addrKey{p.Address.Pool, p.Address.ChanIdx()}
		if _, seen := m.byAddr[k]; !seen {
			m.byAddr[k] = p
		}
		m.bySymbol[p.Symbol] = p
		m.byName[p.Name] = append(m.byName[p.Name], p)
		seen := map[addrKey]bool{}
		use := func(a Address) {
			k := addrKey{a.Pool, a.ChanIdx()}
			if a.IsZero() || seen[k] {
				return
			}
			seen[k] = true
			m.users[k] = append(m.users[k], p)
		}
		use(p.Address)
		for _, a := range p.Parts {
			use(a)
		}
		if p.readsDefinition() {
			for _, s := range p.def.values {
				use(s.addr)
			}
		}
		for _, s := range p.def.inputs {
			use(s.addr)
		}
		if p.hasUReg {
			use(p.unitReg.addr)
		}
		for _, s := range p.minReg {
			use(s.addr)
		}
		for _, s := range p.maxReg {
			use(s.addr)
		}
	}
}

// fingerprint hashes everything the catalog describes (see
// Catalog.Fingerprint).
func fingerprint(lang string, mods []*Module, units *unitTable, alarms map[string]string) string {
	h := sha256.New()
	var b strings.Builder
	b.WriteString("lang=" + lang + "\n")
	// The alarm names: a web app that only learns an alarm's name is a new
	// catalog too.
	for _, code := range slices.Sorted(maps.Keys(alarms)) {
		b.WriteString("alarm=" + code + "=" + alarms[code] + "\n")
	}
	// Every unit of the table: a parameter's unit register may select any.
	if units != nil {
		for _, code := range slices.Sorted(maps.Keys(units.memo)) {
			units.memo[code].fingerprint(&b)
			b.WriteByte('\n')
		}
	}
	for _, m := range mods {
		b.WriteString("module=" + m.devid + "\n")
		for _, p := range m.params {
			p.fingerprint(&b)
			b.WriteByte('\n')
			if b.Len() > 1<<16 {
				h.Write([]byte(b.String()))
				b.Reset()
			}
		}
	}
	h.Write([]byte(b.String()))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (p *Param) fingerprint(b *strings.Builder) {
	b.WriteString(p.Symbol + "|" + p.Address.String() + "|" + p.Name + "|" + p.Unit + "|" + strings.Join(p.Menu, "/") + "|")
	for _, a := range p.Parts {
		b.WriteString(a.String() + ",")
	}
	for _, k := range sortedInts(p.Enum) {
		b.WriteString(strconv.Itoa(k) + "=" + p.Enum[k] + ",")
	}
	b.WriteString("|" + floatText(p.Min) + "|" + floatText(p.Max) + "|" + strconv.FormatBool(p.Writable) + "|" + p.unitCode + "|")
	p.units.get(p.unitCode).fingerprint(b)
	b.WriteString("|")
	if p.override != nil {
		b.WriteString(p.override.String())
	}
	b.WriteString("|")
	writeValue(b, p.def.raw, 0)
}

func floatText(f *float64) string {
	if f == nil {
		return "-"
	}
	return strconv.FormatFloat(*f, 'g', -1, 64)
}

// writeValue renders a definition canonically (bounded), so a change of
// rules or selectors changes the fingerprint.
func writeValue(b *strings.Builder, v jsval.Value, depth int) {
	if depth > 24 || b.Len() > 1<<20 {
		b.WriteString("…")
		return
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case float64:
		if math.IsNaN(v) {
			b.WriteString("NaN")
		} else {
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
	case string:
		b.WriteString(strconv.Quote(v))
	case jsval.Source:
		b.WriteString("`" + string(v) + "`")
	case *jsval.Func:
		b.WriteString("func")
	case []jsval.Value:
		b.WriteString("[")
		for _, x := range v {
			writeValue(b, x, depth+1)
			b.WriteString(",")
		}
		b.WriteString("]")
	case *jsval.Object:
		keys := append([]string(nil), v.Keys()...)
		sort.Strings(keys)
		b.WriteString("{")
		for _, k := range keys {
			b.WriteString(strconv.Quote(k) + ":")
			writeValue(b, v.Value(k), depth+1)
			b.WriteString(",")
		}
		b.WriteString("}")
	}
}
