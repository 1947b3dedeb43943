package store

// Reader gives the raw numeric value of one stored register of a module:
// ("P4", "v7") → 53. ok is false when the register is not stored or not
// numeric. It is the one way the catalog's display rules and the collector's
// catalog families read register values, whether from this store or from a
// scrape's copy of it.
type Reader func(pool, chanIdx string) (value float64, ok bool)

// Reader reads one module's raw numeric values from the store.
func (s *Store) Reader(devid string) Reader {
	return func(pool, chanIdx string) (float64, bool) {
		k, ok := ParseKey(pool + "." + chanIdx)
		if !ok {
			return 0, false
		}
		e, ok := s.Get(devid, k)
		if !ok || !e.IsNumeric {
			return 0, false
		}
		return e.Numeric, true
	}
}
