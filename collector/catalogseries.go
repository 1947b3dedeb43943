package collector

import (
	"cmp"
	"io"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/bragerone/bragerone_exporter/exposition"

	"github.com/bragerone/bragerone_exporter/realtime/store"
)

// The catalog's parameter families (bragerone_parameter_info,
// bragerone_parameter_display_value, bragerone_parameter_state) are as large
// as bragerone_parameter_value, so they are built the same way: everything
// that depends only on the catalog (escaped label text, label pairs, the
// exposition order) is rendered once per catalog and module, and a scrape
// only reads the module's values, evaluates the catalog's rules and points
// at what was rendered. The /metrics handler writes the three families
// straight into text answers; the registry path gets metrics whose label
// pairs are the rendered ones.

// infoLabelNames are the labels of bragerone_parameter_info in the sorted
// order of the exposition.
var infoLabelNames = []string{"devid", "menu", "name", "param", "pool", "symbol", "unit", "visible"}

// Shared label names and the two values of "visible"; label pairs point at
// them and nobody changes them.
var (
	labelMenu    = "menu"
	labelName    = "name"
	labelSymbol  = "symbol"
	labelUnit    = "unit"
	labelVisible = "visible"
	labelState   = "state"
	labelText    = "text"
	labelRole    = "role"
	valueTrue    = "true"
	valueFalse   = "false"

	visiblePairs = [2]dto.LabelPair{{Name: &labelVisible, Value: &valueFalse}, {Name: &labelVisible, Value: &valueTrue}}
)

// maxValueSlots bounds the registers remembered per described module for
// reading values (a module stores several hundred); past it, further
// registers read as absent.
const maxValueSlots = 1 << 16

// addrKey is one register of a module: pool "P4", param "v7".
type addrKey struct{ pool, param string }

// packAddr packs a register in its canonical spelling, "P<n>" and
// "<channel><index>" in decimal without leading zeros (how the store spells
// every key it reports), into one word: the pool number, the channel byte
// and the index. Other spellings do not pack.
func packAddr(pool, param string) (uint64, bool) {
	if len(pool) < 2 || pool[0] != 'P' || len(param) < 2 {
		return 0, false
	}
	n, ok := decimal(pool[1:], 1<<16)
	if !ok {
		return 0, false
	}
	idx, ok := decimal(param[1:], 1<<40)
	if !ok {
		return 0, false
	}
	return n<<48 | uint64(param[0])<<40 | idx, true
}

// decimal reads s as a canonical decimal below limit.
func decimal(s string, limit uint64) (uint64, bool) {
	if len(s) == 0 || len(s) > 13 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, n < limit
}

// valueIndex holds one scrape's raw values of a described module, so that the
// catalog's rules can read any register. Slots are given to registers as the
// store reports them and kept across scrapes; a slot holds a value of this
// scrape when its stamp is the scrape's generation. A module stores several
// hundred registers, all of them indexed, so the index is keyed by the
// packed register (16 bytes a slot, where two strings took 32 and their
// text); a register that does not pack is kept by its strings.
type valueIndex struct {
	slots   map[uint64]int32
	odd     map[addrKey]int32
	vals    []float64
	numeric []bool
	stamp   []uint32
}

func (v *valueIndex) find(pool, param string) (int32, bool) {
	if k, ok := packAddr(pool, param); ok {
		s, ok := v.slots[k]
		return s, ok
	}
	s, ok := v.odd[addrKey{pool, param}]
	return s, ok
}

func (v *valueIndex) slot(pool, param string) int32 {
	if s, ok := v.find(pool, param); ok {
		return s
	}
	if len(v.vals) >= maxValueSlots {
		return -1
	}
	s := int32(len(v.vals))
	if k, ok := packAddr(pool, param); ok {
		if v.slots == nil {
			v.slots = make(map[uint64]int32)
		}
		v.slots[k] = s
	} else {
		if v.odd == nil {
			v.odd = make(map[addrKey]int32)
		}
		v.odd[addrKey{pool, param}] = s
	}
	v.vals = append(v.vals, 0)
	v.numeric = append(v.numeric, false)
	v.stamp = append(v.stamp, 0)
	return s
}

func (v *valueIndex) observe(gen uint32, pool, param string, value float64, numeric bool) {
	s := v.slot(pool, param)
	if s < 0 {
		return
	}
	v.vals[s], v.numeric[s], v.stamp[s] = value, numeric, gen
}

// stored reports whether the register of slot s holds a value at this scrape.
func (v *valueIndex) stored(gen uint32, s int32) bool { return s >= 0 && v.stamp[s] == gen }

// reader reads this scrape's numeric values; it allocates nothing per read.
func (v *valueIndex) reader(gen uint32) store.Reader {
	return func(pool, param string) (float64, bool) {
		s, ok := v.find(pool, param)
		if !ok || v.stamp[s] != gen || !v.numeric[s] {
			return 0, false
		}
		return v.vals[s], true
	}
}

// renderedParam is one described register, rendered.
type renderedParam struct {
	d    *ParamDescription
	slot int32

	menu, name, param, pool, symbol, unit string // label values
	pairs                                 [6]dto.LabelPair
	infoLabels                            [2][]*dto.LabelPair // visible false, true
	addrLabels                            []*dto.LabelPair    // devid, param, pool

	infoText []byte // `,menu="…",…,unit="…",visible="` after the devid label
	addrText []byte // `,param="…",pool="…"` after the devid label
	states   []renderedState

	role       string           // label value; "" when the register has none
	rolePair   dto.LabelPair    // role
	roleLabels []*dto.LabelPair // devid, param, pool, role
	roleText   []byte           // `,param="…",pool="…",role="…"`
}

// renderedState is one state of an enum-valued parameter.
type renderedState struct {
	raw    string // as the catalog labels it, compared with the current label
	label  string // label value
	text   []byte // `,state="…"`
	pair   dto.LabelPair
	labels []*dto.LabelPair // devid, param, pool, state
}

// moduleRender is a described module, rendered for one ModuleCatalog and
// devid label.
type moduleRender struct {
	src       *ModuleCatalog
	label     string
	devidPair dto.LabelPair
	devidText []byte // the escaped devid label value
	values    valueIndex
	params    []renderedParam // in the order of bragerone_parameter_info
	byAddr    []int32         // params in the order of the other two families
}

// newModuleRender renders mc for the module labelled label, keeping the
// registers keep admits. The first description of a register wins.
func newModuleRender(mc *ModuleCatalog, label string, keep func(pool, param string) bool) *moduleRender {
	r := &moduleRender{src: mc, label: label, values: valueIndex{slots: make(map[uint64]int32, len(mc.Params))}}
	r.devidPair = dto.LabelPair{Name: &labelDevid, Value: &r.label}
	r.devidText = exposition.AppendEscaped(nil, label, true)
	// Labels first, sorted as plain strings; the rendered params (which hold
	// label pairs that must not be copied) are built in their final place.
	type candidate struct {
		d                                     *ParamDescription
		menu, name, param, pool, symbol, unit string
	}
	seen := make(map[addrKey]bool, len(mc.Params))
	cands := make([]candidate, 0, len(mc.Params))
	for i := range mc.Params {
		d := &mc.Params[i]
		k := addrKey{LabelValue(d.Pool), LabelValue(d.Param)}
		if d.Pool == "" || d.Param == "" || seen[k] || !keep(d.Pool, d.Param) {
			continue
		}
		seen[k] = true
		cands = append(cands, candidate{d: d, pool: k.pool, param: k.param, menu: LabelValue(d.Menu), name: LabelValue(d.Name),
			symbol: LabelValue(d.Symbol), unit: LabelValue(d.Unit)})
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.menu, b.menu), cmp.Compare(a.name, b.name), cmp.Compare(a.param, b.param),
			cmp.Compare(a.pool, b.pool), cmp.Compare(a.symbol, b.symbol), cmp.Compare(a.unit, b.unit))
	})
	r.params = make([]renderedParam, len(cands))
	for i, x := range cands {
		p := &r.params[i]
		p.d, p.menu, p.name, p.param, p.pool, p.symbol, p.unit = x.d, x.menu, x.name, x.param, x.pool, x.symbol, x.unit
	}
	r.byAddr = make([]int32, len(r.params))
	for i := range r.params {
		p := &r.params[i]
		r.byAddr[i] = int32(i)
		p.slot = r.values.slot(p.d.Pool, p.d.Param)
		p.render(&r.devidPair)
	}
	slices.SortFunc(r.byAddr, func(a, b int32) int {
		pa, pb := &r.params[a], &r.params[b]
		return cmp.Or(cmp.Compare(pa.param, pb.param), cmp.Compare(pa.pool, pb.pool))
	})
	return r
}

func (p *renderedParam) render(devid *dto.LabelPair) {
	vals := [6]*string{&p.menu, &p.name, &p.param, &p.pool, &p.symbol, &p.unit}
	names := [6]*string{&labelMenu, &labelName, &labelParam, &labelPool, &labelSymbol, &labelUnit}
	for i := range p.pairs {
		p.pairs[i].Name, p.pairs[i].Value = names[i], vals[i]
	}
	for v := range p.infoLabels {
		l := make([]*dto.LabelPair, 0, len(infoLabelNames))
		l = append(l, devid)
		for i := range p.pairs {
			l = append(l, &p.pairs[i])
		}
		p.infoLabels[v] = append(l, &visiblePairs[v])
	}
	paramPair, poolPair := &p.pairs[2], &p.pairs[3]
	p.addrLabels = []*dto.LabelPair{devid, paramPair, poolPair}

	for i, n := range []string{"menu", "name", "param", "pool", "symbol", "unit"} {
		p.infoText = append(p.infoText, ',')
		p.infoText = append(p.infoText, n...)
		p.infoText = append(p.infoText, `="`...)
		p.infoText = exposition.AppendEscaped(p.infoText, *vals[i], true)
		p.infoText = append(p.infoText, '"')
	}
	p.infoText = append(p.infoText, `,visible="`...)
	p.addrText = append(p.addrText, `,param="`...)
	p.addrText = exposition.AppendEscaped(p.addrText, p.param, true)
	p.addrText = append(p.addrText, `",pool="`...)
	p.addrText = exposition.AppendEscaped(p.addrText, p.pool, true)
	p.addrText = append(p.addrText, '"')

	if p.d.Role != "" {
		p.role = LabelValue(p.d.Role)
		p.rolePair = dto.LabelPair{Name: &labelRole, Value: &p.role}
		p.roleLabels = []*dto.LabelPair{devid, paramPair, poolPair, &p.rolePair}
		p.roleText = append(append(p.roleText, p.addrText...), `,role="`...)
		p.roleText = exposition.AppendEscaped(p.roleText, p.role, true)
		p.roleText = append(p.roleText, '"')
	}

	labels := make([]string, 0, len(p.d.States))
	raws := make(map[string]string, len(p.d.States))
	for _, raw := range p.d.States {
		l := LabelValue(raw)
		if _, dup := raws[l]; dup {
			continue // two options with one label: one series
		}
		raws[l] = raw
		labels = append(labels, l)
	}
	slices.Sort(labels)
	p.states = make([]renderedState, len(labels))
	for i := range p.states {
		s := &p.states[i]
		s.label, s.raw = labels[i], raws[labels[i]]
		s.pair = dto.LabelPair{Name: &labelState, Value: &s.label}
		s.labels = []*dto.LabelPair{devid, paramPair, poolPair, &s.pair}
		s.text = append(s.text, `,state="`...)
		s.text = exposition.AppendEscaped(s.text, s.label, true)
		s.text = append(s.text, '"')
	}
}

// catSeries is one series of a catalog family at one scrape: the rendered
// register, which variant (info: 0 hidden, 1 visible; state: the state's
// index) and the value.
type catSeries struct {
	mod     *moduleRender
	p       *renderedParam
	variant int32
	value   float64
}

// catText is one series of bragerone_parameter_display_text at one
// scrape: the rendered register and the text the app shows, as a label
// value. Few registers show text, so it is rendered per scrape.
type catText struct {
	mod  *moduleRender
	p    *renderedParam
	text string
}

// catalogSeries are the five families of one scrape, each in exposition
// order.
type catalogSeries struct {
	info, display, state, role []catSeries
	text                       []catText
}

// syncRenders brings the rendered modules in line with the catalog: new or
// changed modules are rendered, modules gone are forgotten. Called with
// paramMu held.
func (c *Collector) syncRenders(cs *CatalogState, mods map[string]*exportedModule) {
	if cs == nil || len(cs.Modules) == 0 || c.params == nil {
		clear(c.renders)
		return
	}
	for devid, r := range c.renders {
		m := mods[devid]
		if m == nil || cs.Modules[devid] != r.src || m.label != r.label {
			delete(c.renders, devid)
		}
	}
	for devid, m := range mods {
		mc := cs.Modules[devid]
		if mc == nil || c.renders[devid] != nil {
			continue
		}
		c.renders[devid] = newModuleRender(mc, m.label, c.keepUncached)
	}
}

// keepUncached applies Include and Exclude without the cache (rendering
// happens once per catalog).
func (c *Collector) keepUncached(pool, param string) bool {
	if len(c.opts.Include) == 0 && len(c.opts.Exclude) == 0 {
		return true
	}
	return c.decide(pool + "." + param)
}

// collectCatalogParams evaluates the rendered modules against this scrape's
// values. Called with paramMu held, after the store walk.
func (c *Collector) collectCatalogParams(mods []*exportedModule) catalogSeries {
	var out catalogSeries
	if len(c.renders) == 0 {
		return out
	}
	gen := c.scrapeGen
	for _, m := range mods {
		r := c.renders[m.devid]
		if r == nil {
			continue
		}
		read := r.values.reader(gen)
		for i := range r.params {
			p := &r.params[i]
			if !r.values.stored(gen, p.slot) {
				continue
			}
			visible := int32(1)
			if p.d.Visible != nil && !p.d.Visible(read) {
				visible = 0
			}
			out.info = append(out.info, catSeries{mod: r, p: p, variant: visible, value: 1})
		}
		for _, i := range r.byAddr {
			p := &r.params[i]
			if !r.values.stored(gen, p.slot) {
				continue
			}
			if p.role != "" {
				out.role = append(out.role, catSeries{mod: r, p: p, value: 1})
			}
			var (
				v     float64
				label string
				ok    bool
			)
			if p.d.Display != nil {
				v, label, ok = p.d.Display(read)
			} else {
				v, ok = read(p.d.Pool, p.d.Param)
			}
			if !ok {
				continue
			}
			if finite(v) {
				out.display = append(out.display, catSeries{mod: r, p: p, value: v})
			}
			// A computed state may have a label and no number: its state
			// set is still known.
			inState := false
			for j := range p.states {
				on := label != "" && p.states[j].raw == label
				inState = inState || on
				out.state = append(out.state, catSeries{mod: r, p: p, variant: int32(j), value: boolValue(on)})
			}
			// What the app shows as text and no state of the parameter
			// says (a time of day) is the text family's.
			if !finite(v) && label != "" && !inState {
				out.text = append(out.text, catText{mod: r, p: p, text: LabelValue(label)})
			}
		}
	}
	return out
}

// catMetric is one catalog series on the registry path.
type catMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	gauge  dto.Gauge
}

// Desc implements prometheus.Metric.
func (m *catMetric) Desc() *prometheus.Desc { return m.desc }

// Write implements prometheus.Metric. The label pairs are the rendered ones,
// shared and never changed.
func (m *catMetric) Write(out *dto.Metric) error {
	m.gauge.Value = &m.value
	out.Label = m.labels
	out.Gauge = &m.gauge
	return nil
}

// send hands the catalog series to the registry, from one slab.
func (c *Collector) sendCatalogSeries(ch chan<- prometheus.Metric, s *catalogSeries) {
	slab := make([]catMetric, 0, len(s.info)+len(s.display)+len(s.state)+len(s.role)+len(s.text))
	add := func(desc *prometheus.Desc, labels []*dto.LabelPair, v float64) {
		slab = append(slab, catMetric{desc: desc, labels: labels, value: v})
		ch <- &slab[len(slab)-1]
	}
	for _, x := range s.info {
		add(c.cat.paramInfo, x.p.infoLabels[x.variant], x.value)
	}
	for _, x := range s.display {
		add(c.cat.paramDisplay, x.p.addrLabels, x.value)
	}
	for _, x := range s.state {
		add(c.cat.paramState, x.p.states[x.variant].labels, x.value)
	}
	for _, x := range s.role {
		add(c.cat.paramRole, x.p.roleLabels, x.value)
	}
	if len(s.text) == 0 {
		return
	}
	pairs := make([]dto.LabelPair, len(s.text))
	for i := range s.text {
		x := &s.text[i]
		pairs[i] = dto.LabelPair{Name: &labelText, Value: &x.text}
		add(c.cat.paramText, []*dto.LabelPair{x.p.addrLabels[0], x.p.addrLabels[1], x.p.addrLabels[2], &pairs[i]}, 1)
	}
}

// directCatalogFamilies lists the catalog families of a scrape that have series,
// in name order.
func directCatalogFamilies(s *catalogSeries) []exposition.Family {
	var out []exposition.Family
	if len(s.text) > 0 {
		out = append(out, exposition.Family{Name: paramTextName, Series: len(s.text), Write: func(w io.Writer, f exposition.Format) error {
			// variant indexes the text of the series.
			series := make([]catSeries, len(s.text))
			for i := range s.text {
				series[i] = catSeries{mod: s.text[i].mod, p: s.text[i].p, variant: int32(i), value: 1}
			}
			return writeCatalogFamily(w, f, paramTextName, paramTextHelp, series, func(b []byte, x *catSeries) []byte {
				b = append(append(b, x.p.addrText...), `,text="`...)
				b = exposition.AppendEscaped(b, s.text[x.variant].text, true)
				return append(b, '"')
			})
		}})
	}
	if len(s.display) > 0 {
		out = append(out, exposition.Family{Name: paramDisplayName, Series: len(s.display), Write: func(w io.Writer, f exposition.Format) error {
			return writeCatalogFamily(w, f, paramDisplayName, paramDisplayHelp, s.display, func(b []byte, x *catSeries) []byte {
				return append(b, x.p.addrText...)
			})
		}})
	}
	if len(s.info) > 0 {
		out = append(out, exposition.Family{Name: paramInfoName, Series: len(s.info), Write: func(w io.Writer, f exposition.Format) error {
			return writeCatalogFamily(w, f, paramInfoName, paramInfoHelp, s.info, func(b []byte, x *catSeries) []byte {
				b = append(b, x.p.infoText...)
				if x.variant == 1 {
					return append(b, `true"`...)
				}
				return append(b, `false"`...)
			})
		}})
	}
	if len(s.role) > 0 {
		out = append(out, exposition.Family{Name: paramRoleName, Series: len(s.role), Write: func(w io.Writer, f exposition.Format) error {
			return writeCatalogFamily(w, f, paramRoleName, paramRoleHelp, s.role, func(b []byte, x *catSeries) []byte {
				return append(b, x.p.roleText...)
			})
		}})
	}
	if len(s.state) > 0 {
		out = append(out, exposition.Family{Name: paramStateName, Series: len(s.state), Write: func(w io.Writer, f exposition.Format) error {
			return writeCatalogFamily(w, f, paramStateName, paramStateHelp, s.state, func(b []byte, x *catSeries) []byte {
				return append(append(b, x.p.addrText...), x.p.states[x.variant].text...)
			})
		}})
	}
	return out
}

// writeCatalogFamily writes one catalog family in the text format f, as
// expfmt would write the registry's family: `name{devid="…"` per module,
// the rendered rest of the labels per series, then the value.
func writeCatalogFamily(w io.Writer, f exposition.Format, name, help string, series []catSeries, labels func([]byte, *catSeries) []byte) error {
	bp := exposition.GetBuffer()
	defer exposition.PutBuffer(bp)
	b := f.AppendGaugeHeader((*bp)[:0], name, help)
	for i := range series {
		x := &series[i]
		b = append(b, name...)
		b = append(b, `{devid="`...)
		b = append(b, x.mod.devidText...)
		b = append(b, '"')
		b = labels(b, x)
		b = append(b, "} "...)
		b = f.AppendValue(b, x.value)
		b = append(b, '\n')
		if len(b) >= exposition.FlushSize {
			var err error
			if b, err = exposition.Flush(w, b); err != nil {
				*bp = b
				return err
			}
		}
	}
	_, err := w.Write(b)
	*bp = b
	return err
}

// finite reports whether v can be exported as a display value; the
// exposition carries NaN and ±Inf, but a display value never is one.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
