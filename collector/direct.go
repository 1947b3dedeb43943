package collector

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bragerone/bragerone_exporter/exposition"
)

// DirectScrape is one scrape of a Collector for a /metrics handler that
// writes the large families (bragerone_parameter_value and the catalog's
// parameter families) itself: registered in a registry, it collects every
// other family as the Collector does and keeps the large ones back; once
// the registry's Gather has returned, Families hands them out.
type DirectScrape struct {
	c      *Collector
	direct directSeries
}

// NewDirectScrape returns a scrape of c whose large families are kept back
// for the caller to write.
func (c *Collector) NewDirectScrape() *DirectScrape { return &DirectScrape{c: c} }

// Describe implements prometheus.Collector.
func (s *DirectScrape) Describe(ch chan<- *prometheus.Desc) { s.c.Describe(ch) }

// Collect implements prometheus.Collector.
func (s *DirectScrape) Collect(ch chan<- prometheus.Metric) { s.c.collect(ch, &s.direct) }

// Families returns the families Collect kept back that have series, each
// with its writer, in no particular order. The parameter series are in
// exposition order and unique by construction; the error, when not nil,
// says how many repeated parameter series were dropped (the first of each
// is kept, as the registry keeps it).
func (s *DirectScrape) Families() ([]exposition.Family, error) {
	fams := directCatalogFamilies(&s.direct.catalog)
	if st := s.direct.stream; st != nil {
		if st.count > 0 {
			fams = append(fams, exposition.Family{Name: paramValueName, Series: st.count, Write: st.write})
		}
		return fams, nil
	}
	series, dups := inExpositionOrder(s.direct.params)
	if len(series) > 0 {
		fams = append(fams, exposition.Family{Name: paramValueName, Series: len(series), Write: func(w io.Writer, f exposition.Format) error {
			return writeParamFamily(w, f, series)
		}})
	}
	if dups > 0 {
		return fams, fmt.Errorf("%d %s series collected more than once; the first of each is exported", dups, paramValueName)
	}
	return fams, nil
}

// compareExposition orders series as the registry does: by label values in
// label name order (devid, param, pool), as byte strings.
func compareExposition(a, b *paramSeries) int {
	if a.mod != b.mod { // the same module has the same label
		if c := cmp.Compare(a.mod.label, b.mod.label); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(a.param, b.param), cmp.Compare(a.pool, b.pool))
}

// inExpositionOrder puts series in exposition order and removes repeated label
// sets, keeping the first collected (the registry rejects later ones). It
// returns the series and how many were removed. A source in exposition order
// without repeats costs one linear check.
func inExpositionOrder(series []paramSeries) ([]paramSeries, int) {
	repeats := false
	for i := 1; i < len(series); i++ {
		c := compareExposition(&series[i-1], &series[i])
		if c > 0 {
			slices.SortStableFunc(series, func(a, b paramSeries) int { return compareExposition(&a, &b) })
			repeats = true // not known: look
			break
		}
		repeats = repeats || c == 0
	}
	if !repeats {
		return series, 0
	}
	j := 1
	for i := 1; i < len(series); i++ {
		if compareExposition(&series[j-1], &series[i]) != 0 {
			series[j] = series[i]
			j++
		}
	}
	return series[:j], len(series) - j
}

// writeParamFamily writes bragerone_parameter_value in the text format f,
// as expfmt would write the registry's family: HELP, TYPE, then one line per
// series with labels devid, param, pool.
func writeParamFamily(w io.Writer, f exposition.Format, series []paramSeries) error {
	bp := exposition.GetBuffer()
	defer exposition.PutBuffer(bp)
	b := f.AppendGaugeHeader((*bp)[:0], paramValueName, paramValueHelp)

	var (
		mod    *exportedModule
		prefix []byte // `bragerone_parameter_value{devid="<devid>",param="` of mod
	)
	for i := range series {
		s := &series[i]
		if s.mod != mod {
			mod = s.mod
			prefix = append(prefix[:0], paramValueName+`{devid="`...)
			prefix = exposition.AppendEscaped(prefix, mod.label, true)
			prefix = append(prefix, `",param="`...)
		}
		b = append(b, prefix...)
		b = exposition.AppendEscaped(b, s.param, true)
		b = append(b, `",pool="`...)
		b = exposition.AppendEscaped(b, s.pool, true)
		b = append(b, `"} `...)
		b = f.AppendValue(b, s.value)
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

// A scrape of a large account need not hold its parameter series: the
// store hands them out in exposition order, one module at a time, and lets
// go of its lock before each module is handed out. So the /metrics handler
// writes bragerone_parameter_value from a second walk of the source as it
// goes, holding one line at a time instead of a series slab of some 64
// bytes per series (6 MB at 100 modules × 1,000 parameters, and what the
// garbage collector then sizes the heap by). The scrape's own walk checks
// that this is exactly what the slab would give: series in exposition order
// without repeats, modules in label order, none over the series cap, no
// filter (whose decisions are cached under the scrape lock); otherwise the
// slab is built. The second walk reads the values as they are then, a few
// milliseconds after the first.

// streamCheck follows the scrape's walk and says whether the parameter
// series can be written from a walk of their own.
type streamCheck struct {
	ok               bool
	limit            int // the series cap per module; 0: none
	count            int // series seen
	mod              *exportedModule
	n                int // series of mod
	prevParam, prevP string
}

// shortLabel is LabelValue for what parameter labels nearly always are,
// short ASCII ("P4", "v123"), without the UTF-8 check's call: the two walks
// of a streamed scrape label every series twice each.
func shortLabel(s string) string {
	if len(s) <= 16 {
		i := 0
		for i < len(s) && s[i] < 0x80 {
			i++
		}
		if i == len(s) {
			return s
		}
	}
	return LabelValue(s)
}

// add follows one series of module m.
func (w *streamCheck) add(m *exportedModule, pool, param string) {
	p, q := shortLabel(param), shortLabel(pool)
	if m != w.mod {
		if w.mod != nil && m.label <= w.mod.label {
			w.ok = false // modules out of label order, or one reported twice
		}
		w.mod, w.n = m, 0
	} else if p < w.prevParam || p == w.prevParam && q <= w.prevP {
		w.ok = false // out of exposition order, or repeated
	}
	w.prevParam, w.prevP = p, q
	w.n++
	w.count++
	if w.limit > 0 && w.n > w.limit {
		w.ok = false
	}
}

// walkSeries walks the source again for the parameter series, when the
// first walk found they cannot be written as the walk goes. Called with
// paramMu held, without filters.
func (c *Collector) walkSeries(mods map[string]*exportedModule, hint int) []paramSeries {
	series := make([]paramSeries, 0, hint)
	var (
		lastDevid string
		lastMod   *exportedModule
		haveLast  bool
	)
	c.params.ForEachParam(func(devid, pool, param string, value float64, numeric bool) {
		if !haveLast || devid != lastDevid {
			lastDevid, lastMod, haveLast = devid, mods[devid], true
		}
		if lastMod == nil || !numeric {
			return
		}
		series = append(series, paramSeries{desc: c.paramValue, mod: lastMod, pool: LabelValue(pool), param: LabelValue(param), value: value})
	})
	return series
}

// paramStream writes bragerone_parameter_value from a walk of its own.
type paramStream struct {
	c     *Collector
	mods  map[string]*exportedModule
	count int // series the scrape's walk saw
}

// write writes the family in the text format f as writeParamFamily would.
// Should the source have changed its order since the scrape's walk checked
// it, series out of order are left out (a repeated label set would make the
// answer invalid) and counted in the error.
func (p *paramStream) write(w io.Writer, f exposition.Format) error {
	bp := exposition.GetBuffer()
	defer exposition.PutBuffer(bp)
	b := f.AppendGaugeHeader((*bp)[:0], paramValueName, paramValueHelp)
	var (
		err                 error
		left                int
		lastDevid           string
		haveLast, inOrder   bool
		mod, prevMod        *exportedModule
		prefix              []byte
		prevParam, prevPool string
		firstOfModule       bool
	)
	p.c.params.ForEachParam(func(devid, pool, param string, value float64, numeric bool) {
		if err != nil {
			return
		}
		if !haveLast || devid != lastDevid {
			lastDevid, haveLast = devid, true
			mod, inOrder = p.mods[devid], true
			if mod != nil {
				if prevMod != nil && mod.label <= prevMod.label {
					inOrder = false
				} else {
					prevMod, firstOfModule = mod, true
					prefix = append(prefix[:0], paramValueName+`{devid="`...)
					prefix = exposition.AppendEscaped(prefix, mod.label, true)
					prefix = append(prefix, `",param="`...)
				}
			}
		}
		if mod == nil || !numeric {
			return
		}
		lp, lpool := shortLabel(param), shortLabel(pool)
		if !inOrder || !firstOfModule && (lp < prevParam || lp == prevParam && lpool <= prevPool) {
			left++
			return
		}
		firstOfModule, prevParam, prevPool = false, lp, lpool
		b = append(b, prefix...)
		b = exposition.AppendEscaped(b, lp, true)
		b = append(b, `",pool="`...)
		b = exposition.AppendEscaped(b, lpool, true)
		b = append(b, `"} `...)
		b = f.AppendValue(b, value)
		b = append(b, '\n')
		if len(b) >= exposition.FlushSize {
			b, err = exposition.Flush(w, b)
		}
	})
	if err == nil {
		_, err = w.Write(b)
	}
	*bp = b
	if err == nil && left > 0 {
		err = fmt.Errorf("%d %s series left out: the parameter source changed their order during the scrape", left, paramValueName)
	}
	return err
}
