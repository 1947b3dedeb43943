package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/bragerone/bragerone_exporter/internal/nearest"
	"go.yaml.in/yaml/v3"
)

// Overrides correct what the catalog gets wrong for a user's firmware: a
// name, a unit, a scale and a role per register ("P4.v7", for every module)
// or per symbol ("PARAM_P4_7"). Read from the YAML file of
// --catalog.overrides-file:
//
//	P4.v7:
//	  name: Boiler power
//	  unit: kW
//	  scale: 0.1      # display = raw × scale, replacing the unit's transform
//	PARAM_66:
//	  name: Boiler setpoint
//	P4.v12:
//	  role: fuel_level  # fuel_burned, operating_hours, ignitions; none takes one away
type Overrides struct {
	byRegister map[Address]*override
	bySymbol   map[string]*override
}

type override struct {
	name  *string
	unit  *string
	scale *float64
	role  *Role
}

func (o *override) String() string {
	var parts []string
	if o.name != nil {
		parts = append(parts, "name="+*o.name)
	}
	if o.unit != nil {
		parts = append(parts, "unit="+*o.unit)
	}
	if o.scale != nil {
		parts = append(parts, "scale="+strconv.FormatFloat(*o.scale, 'g', -1, 64))
	}
	if o.role != nil {
		parts = append(parts, "role="+string(*o.role))
	}
	return strings.Join(parts, ",")
}

// merge lays b over a (b wins field by field).
func merge(a, b *override) *override {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := *a
	if b.name != nil {
		out.name = b.name
	}
	if b.unit != nil {
		out.unit = b.unit
	}
	if b.scale != nil {
		out.scale = b.scale
	}
	if b.role != nil {
		out.role = b.role
	}
	return &out
}

type overrideYAML struct {
	Name  *string  `yaml:"name"`
	Unit  *string  `yaml:"unit"`
	Scale *float64 `yaml:"scale"`
	Role  *string  `yaml:"role"`
}

// ParseOverrides reads an overrides file. Unknown fields, keys that are
// neither a register nor a symbol, entries without a field and scales that
// are zero or not finite are errors naming the entry.
func ParseOverrides(data []byte) (*Overrides, error) {
	o := &Overrides{byRegister: map[Address]*override{}, bySymbol: map[string]*override{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var raw map[string]overrideYAML
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("catalog overrides: %s", overridesYAMLError(err))
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		e := raw[k]
		if e.Name == nil && e.Unit == nil && e.Scale == nil && e.Role == nil {
			return nil, fmt.Errorf("catalog overrides: %q: give at least one of name, unit, scale, role", k)
		}
		if e.Scale != nil && (*e.Scale == 0 || math.IsNaN(*e.Scale) || math.IsInf(*e.Scale, 0)) {
			return nil, fmt.Errorf("catalog overrides: %q: scale must be a finite, non-zero number", k)
		}
		ov := &override{name: e.Name, unit: e.Unit, scale: e.Scale}
		if e.Role != nil {
			r, ok := ParseRole(*e.Role)
			if !ok {
				return nil, fmt.Errorf("catalog overrides: %q: role %q is none of %s", k, *e.Role, roleNames())
			}
			ov.role = &r
		}
		if a, ok := ParseAddress(canonicalRegister(k)); ok {
			o.byRegister[a] = ov
			continue
		}
		if tokenRE.MatchString(k) {
			o.bySymbol[k] = ov
			continue
		}
		return nil, fmt.Errorf("catalog overrides: %q is neither a register (P4.v7) nor a symbol (PARAM_P4_7)", k)
	}
	return o, nil
}

// registerAnyCase is a register written in any case: p4.V7.
var registerAnyCase = regexp.MustCompile(`^(?i:p)([0-9]+)\.([A-Za-z])([0-9]+)$`)

// canonicalRegister spells a register written in any case as the cloud
// does (p4.V7 is P4.v7); anything else is returned as it is.
func canonicalRegister(k string) string {
	m := registerAnyCase.FindStringSubmatch(strings.TrimSpace(k))
	if m == nil {
		return k
	}
	return "P" + m[1] + "." + strings.ToLower(m[2]) + m[3]
}

// overrideFields are the keys of an entry, as the file spells them.
var overrideFields = []string{"name", "unit", "scale", "role"}

// unknownField is the YAML decoder's word for a key of an entry that is
// none of overrideFields.
var unknownField = regexp.MustCompile(`line ([0-9]+): field (\S+) not found in type \S+`)

// overridesYAMLError words a decoding error for a person: an unknown key
// of an entry is named with its line and the key meant; anything else is
// the decoder's message without its Go type names.
func overridesYAMLError(err error) string {
	msg := err.Error()
	if ms := unknownField.FindAllStringSubmatch(msg, -1); len(ms) > 0 {
		var parts []string
		for _, m := range ms {
			part := fmt.Sprintf("line %s: unknown key %q (an entry's keys are %s", m[1], m[2], strings.Join(overrideFields, ", "))
			if near := nearestWord(m[2], overrideFields); near != "" {
				part += fmt.Sprintf("; did you mean %q?", near)
			}
			parts = append(parts, part+")")
		}
		return strings.Join(parts, "; ")
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
}

// nearestWord is the word of words within two edits of w, "" when none is.
func nearestWord(w string, words []string) string {
	if near := nearest.Names(strings.ToLower(w), words, 3); len(near) > 0 {
		return near[0]
	}
	return ""
}

// Len is the number of entries.
func (o *Overrides) Len() int {
	if o == nil {
		return 0
	}
	return len(o.byRegister) + len(o.bySymbol)
}

// WithOverrides returns a catalog with the overrides applied: a symbol's
// entry, then its register's entry (the more specific), replace the name,
// unit, scale and role of the parameters they match in every module; a register
// entry for a register no parameter describes adds one (without a symbol)
// to every module. The receiver is left unchanged.
func (c *Catalog) WithOverrides(o *Overrides) *Catalog {
	if o.Len() == 0 {
		return c
	}
	out := *c
	out.modules = make(map[string]*Module, len(c.modules))
	for id, m := range c.modules {
		nm := &Module{devid: m.devid, undefined: m.undefined}
		described := map[Address]bool{}
		for _, p := range m.params {
			cp := *p
			described[p.Address] = true
			if ov := merge(o.bySymbol[p.Symbol], o.byRegister[p.Address]); ov != nil {
				cp.override = merge(p.override, ov)
				cp.applyOverride()
			}
			nm.params = append(nm.params, &cp)
		}
		regs := make([]Address, 0, len(o.byRegister))
		for a := range o.byRegister {
			if !described[a] {
				regs = append(regs, a)
			}
		}
		sort.Slice(regs, func(i, j int) bool { return regs[i].String() < regs[j].String() })
		for _, a := range regs {
			nm.params = append(nm.params, c.overrideParam(a, o.byRegister[a], m))
		}
		nm.index()
		out.modules[id] = nm
	}
	out.fingerprint = fingerprint(out.language, out.Modules(), c.res.units, out.alarms)
	return &out
}

func (p *Param) applyOverride() {
	ov := p.override
	if ov.name != nil {
		p.Name = *ov.name
	}
	if ov.unit != nil {
		p.Unit = *ov.unit
	}
	if ov.scale != nil {
		p.Enum = nil
		scale := func(f *float64) *float64 {
			if f == nil {
				return nil
			}
			v := *f * *ov.scale
			return &v
		}
		// Limits of a scaled register are raw limits scaled; the catalog's
		// (transformed) limits no longer apply.
		p.Min, p.Max = nil, nil
		if p.def.limMin != nil || p.def.limMax != nil {
			p.Min, p.Max = scale(p.def.limMin), scale(p.def.limMax)
		}
	}
	p.identify()
}

// roleNames lists the role names the overrides file takes.
func roleNames() string {
	names := make([]string, 0, len(Roles)+1)
	for _, r := range Roles {
		names = append(names, string(r))
	}
	return strings.Join(append(names, "none"), ", ")
}

// overrideParam describes a register only the overrides name.
func (c *Catalog) overrideParam(a Address, ov *override, m *Module) *Param {
	sel := selector{addr: a, key: a.ChanIdx(), bit: -1, times: 1}
	d := &definition{origin: "overrides", values: []selector{sel}}
	p := &Param{Address: a, key: a.ChanIdx(), Name: a.String(), def: d, units: c.res.units, override: ov}
	if len(m.params) > 0 {
		p.ctx = m.params[0].ctx
	}
	p.applyOverride()
	return p
}
