package collector

import (
	"maps"
	"slices"

	"github.com/bragerone/bragerone_exporter/history"
	"github.com/prometheus/client_golang/prometheus"
)

// collectHistory exports what each module's alarm history and activity log
// said since the module was watched; nothing for a module whose history was
// not read yet. Alarms are named as the active alarm series name them, from
// the symbol of the newest occurrence known.
func (c *Collector) collectHistory(e *emitter, modules []ModuleState, mods map[string]*exportedModule, cs *CatalogState) {
	done := make(map[*exportedModule]bool, len(mods))
	for i := range modules {
		m := &modules[i]
		em := mods[m.Devid]
		h := m.History
		if em == nil || done[em] || h == nil {
			continue // a repeated devid is exported from its first entry only
		}
		done[em] = true
		symbols := make(map[string]string, len(h.AlarmCounts))
		for _, o := range h.Alarms { // newest first: the first symbol wins
			if _, ok := symbols[o.Code]; !ok && o.Symbol != "" {
				symbols[o.Code] = o.Symbol
			}
		}
		for _, a := range m.ActiveAlarms {
			if _, ok := symbols[a.Code]; !ok && a.Symbol != "" {
				symbols[a.Code] = a.Symbol
			}
		}
		seen := make(map[string]bool, len(h.AlarmCounts))
		for _, code := range slices.Sorted(maps.Keys(h.AlarmCounts)) {
			label := LabelValue(code)
			if seen[label] {
				continue
			}
			seen[label] = true
			e.emit(c.moduleAlarmsTotal, prometheus.CounterValue, float64(h.AlarmCounts[code]), em.label, label,
				LabelValue(alarmName(cs, code, symbols[code])))
		}
		clear(seen)
		for _, code := range slices.Sorted(maps.Keys(h.AlarmLastDuration)) {
			if label := LabelValue(code); !seen[label] {
				seen[label] = true
				e.emit(c.moduleAlarmLastDuration, prometheus.GaugeValue, seconds(h.AlarmLastDuration[code]), em.label, label)
			}
		}
		clear(seen)
		for _, state := range slices.Sorted(maps.Keys(h.ChangesByState)) {
			if label := LabelValue(state); !seen[label] {
				seen[label] = true
				e.emit(c.moduleChangesTotal, prometheus.CounterValue, float64(h.ChangesByState[state]), em.label, label)
			}
		}
		if !h.LastChange.IsZero() {
			e.emit(c.moduleLastChange, prometheus.GaugeValue, unixSeconds(h.LastChange), em.label)
		}
		for _, list := range history.Lists() {
			e.emit(c.historyRowsDropped, prometheus.CounterValue, float64(h.RowsDropped[list]), em.label, list)
		}
	}
}
