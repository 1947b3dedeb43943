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
	series, dups := inExpositionOrder(s.direct.params)
	fams := directCatalogFamilies(&s.direct.catalog)
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
