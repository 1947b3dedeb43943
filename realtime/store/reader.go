package store

import (
	"strconv"
	"strings"
)

// Reader gives the raw numeric value of one stored register of a module:
// ("P4", "v7") → 53. ok is false when the register is not stored or not
// numeric. It is the one way the catalog's display rules and the collector's
// catalog families read register values, whether from this store or from a
// scrape's copy of it.
type Reader func(pool, chanIdx string) (value float64, ok bool)

// Reader reads one module's raw numeric values from the store. A read
// builds nothing: the key is parsed in place.
func (s *Store) Reader(devid string) Reader {
	return func(pool, chanIdx string) (float64, bool) {
		k, ok := readerKey(pool, chanIdx)
		if !ok {
			return 0, false
		}
		return s.number(devid, k)
	}
}

// readerKey is ParseKey(pool + "." + chanIdx) without building the string.
func readerKey(pool, chanIdx string) (Key, bool) {
	if strings.Contains(pool, ".") {
		return ParseKey(pool + "." + chanIdx) // the first dot splits elsewhere
	}
	if len(pool) < 2 || pool[0] != 'P' || len(chanIdx) < 2 {
		return Key{}, false
	}
	if _, err := strconv.Atoi(pool[1:]); err != nil {
		return Key{}, false
	}
	idx, err := strconv.Atoi(chanIdx[1:])
	if err != nil {
		return Key{}, false
	}
	return Key{Pool: pool, Chan: chanIdx[0], Idx: idx}, true
}
