package collector

import (
	"cmp"
	"io"
	"math"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/bragerone/bragerone_exporter/exposition"
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

// moduleValues holds the raw values of the one described module the store's
// walk is in, so that the catalog's rules can read any of its registers: the
// walk fills it with every register of the module, the module's catalog
// series are evaluated when the walk moves on to another module, and it is
// then emptied for the next. One module's values at a time rather than an
// index per described module kept between scrapes, which cost some 30 bytes
// per stored register of an account. Registers are kept by their packed
// form in an open-addressed table; a register that does not pack is kept by
// its strings.
type moduleValues struct {
	keys    []uint64
	vals    []float64
	numeric []bool
	table   []int32 // entry + 1 by hash of the packed register; 0: free
	odd     map[addrKey]int32
}

func (v *moduleValues) reset() {
	v.keys, v.vals, v.numeric = v.keys[:0], v.vals[:0], v.numeric[:0]
	clear(v.table)
	clear(v.odd)
}

// slot returns where packed register k's hash chain holds it or ends.
func (v *moduleValues) slot(k uint64) int {
	mask := len(v.table) - 1
	for i := int((k * 0x9e3779b97f4a7c15) >> 32 & uint64(mask)); ; i = (i + 1) & mask {
		if e := v.table[i]; e == 0 || v.keys[e-1] == k {
			return i
		}
	}
}

// find returns the entry of a register, or -1.
func (v *moduleValues) find(pool, param string) int32 {
	if k, ok := packAddr(pool, param); ok {
		return v.findPacked(k)
	}
	if e, ok := v.odd[addrKey{pool, param}]; ok {
		return e
	}
	return -1
}

func (v *moduleValues) findPacked(k uint64) int32 {
	if len(v.table) == 0 {
		return -1
	}
	return v.table[v.slot(k)] - 1
}

// observe records a register's value, in the order the store reports them.
func (v *moduleValues) observe(pool, param string, value float64, numeric bool) {
	k, packed := packAddr(pool, param)
	e := int32(-1)
	if packed {
		e = v.findPacked(k)
	} else if x, ok := v.odd[addrKey{pool, param}]; ok {
		e = x
	}
	if e >= 0 {
		v.vals[e], v.numeric[e] = value, numeric
		return
	}
	if len(v.vals) >= maxValueSlots {
		return
	}
	e = int32(len(v.vals))
	v.keys = append(v.keys, k)
	v.vals = append(v.vals, value)
	v.numeric = append(v.numeric, numeric)
	if !packed {
		if v.odd == nil {
			v.odd = make(map[addrKey]int32)
		}
		v.odd[addrKey{pool, param}] = e
		return
	}
	if 2*len(v.keys) > len(v.table) {
		v.rehash()
		return
	}
	v.table[v.slot(k)] = e + 1
}

// rehash doubles the table and puts every packed register back.
func (v *moduleValues) rehash() {
	v.table = make([]int32, max(64, 2*len(v.table)))
	var odd map[int32]bool
	if len(v.odd) > 0 {
		odd = make(map[int32]bool, len(v.odd))
		for _, e := range v.odd {
			odd[e] = true
		}
	}
	for e, k := range v.keys {
		if !odd[int32(e)] {
			v.table[v.slot(k)] = int32(e) + 1
		}
	}
}

// stored reports whether described register p holds a value.
func (v *moduleValues) stored(p *renderedParam) bool {
	if p.packed {
		return v.findPacked(p.addr) >= 0
	}
	return v.find(p.d.Pool, p.d.Param) >= 0
}

// read reads the module's numeric values; it allocates nothing per read.
func (v *moduleValues) read(pool, param string) (float64, bool) {
	e := v.find(pool, param)
	if e < 0 || !v.numeric[e] {
		return 0, false
	}
	return v.vals[e], true
}

// renderedParam is one described register, rendered.
type renderedParam struct {
	d      *ParamDescription
	addr   uint64 // the register packed, when packed
	packed bool

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
	devidText []byte          // the escaped devid label value
	gen       uint32          // the scrape that last evaluated the module
	params    []renderedParam // in the order of bragerone_parameter_info
	byAddr    []int32         // params in the order of the other two families
}

// newModuleRender renders mc for the module labelled label, keeping the
// registers keep admits. The first description of a register wins.
func newModuleRender(mc *ModuleCatalog, label string, keep func(pool, param string) bool) *moduleRender {
	r := &moduleRender{src: mc, label: label}
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
		p.addr, p.packed = packAddr(p.d.Pool, p.d.Param)
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

// collectModuleCatalog evaluates rendered module r against its values,
// appending its series to out. Called with paramMu held, when the store's
// walk has reported all of r's registers.
func (c *Collector) collectModuleCatalog(r *moduleRender, v *moduleValues, out *catalogSeries) {
	read := v.read
	for i := range r.params {
		p := &r.params[i]
		if !v.stored(p) {
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
		if !v.stored(p) {
			continue
		}
		if p.role != "" {
			out.role = append(out.role, catSeries{mod: r, p: p, value: 1})
		}
		var (
			val   float64
			label string
			ok    bool
		)
		if p.d.Display != nil {
			val, label, ok = p.d.Display(read)
		} else {
			val, ok = read(p.d.Pool, p.d.Param)
		}
		if !ok {
			continue
		}
		if finite(val) {
			out.display = append(out.display, catSeries{mod: r, p: p, value: val})
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
		if !finite(val) && label != "" && !inState {
			out.text = append(out.text, catText{mod: r, p: p, text: LabelValue(label)})
		}
	}
}

// catalogWalk evaluates the described modules during the store's walk, one
// module at a time (see moduleValues). Called with paramMu held.
type catalogWalk struct {
	c       *Collector
	gen     uint32
	out     catalogSeries
	current *moduleRender // the described module the walk is in, if any
	// regroup is set when a described module comes back after the walk
	// left it (a source that does not report modules together): the
	// catalog is then evaluated after the walk, module by module.
	regroup bool
}

// enter is called when the walk reaches a module; r is its render, or nil.
func (w *catalogWalk) enter(r *moduleRender) {
	w.leave()
	if r == nil || w.regroup {
		return
	}
	if r.gen == w.gen {
		w.regroup = true
		return
	}
	r.gen = w.gen
	w.current = r
	w.c.values.reset()
}

// leave evaluates the module the walk is leaving.
func (w *catalogWalk) leave() {
	if w.current != nil && !w.regroup {
		w.c.collectModuleCatalog(w.current, &w.c.values, &w.out)
	}
	w.current = nil
}

// observe records one register of the module the walk is in.
func (w *catalogWalk) observe(pool, param string, value float64, numeric bool) {
	if w.current != nil && !w.regroup {
		w.c.values.observe(pool, param, value, numeric)
	}
}

// finish ends the walk and returns the catalog series in module order.
func (w *catalogWalk) finish(mods map[string]*exportedModule) catalogSeries {
	w.leave()
	if w.regroup {
		// Walk again for each described module alone.
		w.out = catalogSeries{}
		for _, m := range sortedModules(mods) {
			r := w.c.renders[m.devid]
			if r == nil {
				continue
			}
			w.c.values.reset()
			w.c.params.ForEachParam(func(devid, pool, param string, value float64, numeric bool) {
				if devid == m.devid {
					w.c.values.observe(pool, param, value, numeric)
				}
			})
			w.c.collectModuleCatalog(r, &w.c.values, &w.out)
		}
		return w.out
	}
	// The walk's module order is by devid; the series go by label.
	byLabel := func(a, b *moduleRender) int { return cmp.Compare(a.label, b.label) }
	for _, f := range []*[]catSeries{&w.out.info, &w.out.display, &w.out.state} {
		if !slices.IsSortedFunc(*f, func(a, b catSeries) int { return byLabel(a.mod, b.mod) }) {
			slices.SortStableFunc(*f, func(a, b catSeries) int { return byLabel(a.mod, b.mod) })
		}
	}
	if !slices.IsSortedFunc(w.out.text, func(a, b catText) int { return byLabel(a.mod, b.mod) }) {
		slices.SortStableFunc(w.out.text, func(a, b catText) int { return byLabel(a.mod, b.mod) })
	}
	return w.out
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
