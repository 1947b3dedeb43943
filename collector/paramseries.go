package collector

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Parameter series are the one large family (devid × parameter), so they do
// not go through prometheus.NewConstMetric, which allocates about fifteen
// objects per series. A scrape allocates two slabs instead: the series found
// in the store and, once their number is known, the wire form of each. Write
// then only points the registry's dto.Metric at memory that already exists.
// Nothing is shared between scrapes, so concurrent scrapes need no locking.

// Label names of bragerone_parameter_value, in the sorted order the
// exposition requires (devid < param < pool).
var (
	labelDevid = "devid"
	labelParam = "param"
	labelPool  = "pool"
)

// paramSeries is one bragerone_parameter_value series.
type paramSeries struct {
	desc  *prometheus.Desc
	mod   *exportedModule // its label is the devid label value
	pool  string          // already a safe label value
	param string          // already a safe label value
	value float64
	wire  *paramWire
}

// paramWire is the dto form of one series; it lives in a per-scrape slab.
type paramWire struct {
	pairs [3]dto.LabelPair
	ptrs  [3]*dto.LabelPair
	gauge dto.Gauge
}

// Desc implements prometheus.Metric.
func (p *paramSeries) Desc() *prometheus.Desc { return p.desc }

// Write implements prometheus.Metric. The label and value pointers refer to
// fields of p, which nobody changes once the series has been sent.
func (p *paramSeries) Write(out *dto.Metric) error {
	w := p.wire
	w.pairs[0].Name, w.pairs[0].Value = &labelDevid, &p.mod.label
	w.pairs[1].Name, w.pairs[1].Value = &labelParam, &p.param
	w.pairs[2].Name, w.pairs[2].Value = &labelPool, &p.pool
	for i := range w.pairs {
		w.ptrs[i] = &w.pairs[i]
	}
	w.gauge.Value = &p.value
	out.Label = w.ptrs[:]
	out.Gauge = &w.gauge
	return nil
}
