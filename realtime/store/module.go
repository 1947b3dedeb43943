package store

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// module holds one module's entries as columns: slot i of every column is
// one entry, and the slots are sorted by packed key. Parallel slices instead
// of a map of structs: a stored parameter costs its columns (45 bytes) and
// no pointer, map slot or per-entry allocation, which is what bounds the
// memory of a large account (issue 23: 100 modules of 1,000 parameters).
type module struct {
	keys     []uint64  // packed keys (see pack), ascending
	vals     []float64 // the value as a number (flag fNumeric)
	versions []uint64  // the write that set the value (see the ordering rule)
	times    []int64   // when that write happened, Unix nanoseconds (flag fTime)
	names    []uint32  // the param label by its number in Store.names
	extra    []uint32  // the entry's record in arena, offset+1; 0: none
	flags    []uint8   // source, numeric, time and value kind (see the f* constants)

	// byLabel lists the slots in exposition order; it is rebuilt lazily when
	// keys are added (labelDirty) and kept in order when keys are removed.
	byLabel    []int32
	labelDirty bool
	// layout changes whenever slots move (keys added or removed), so that a
	// label order computed under the read lock is installed only if it
	// still fits.
	layout uint64

	pools  []string       // pool names by pool number, in key order (poolLess)
	odd    []Key          // keys that do not pack, by odd number
	oddIDs map[Key]uint32 // their numbers

	// metaTouched remembers, for the rare entry whose latest write carried
	// meta keys but no value, that write's version: pruning needs the
	// latest write of any kind (see touched).
	metaTouched map[uint64]uint64

	arena         []byte // records of meta keys and non-number values (extra.go)
	garbage       int    // arena bytes no entry refers to
	others        []any  // values records refer to by index
	othersGarbage int    // values of others no record refers to

	nonNumeric int
	lastUpdate time.Time
	lastLive   time.Time
}

// Flags of an entry.
const (
	fSourceMask = 0x03 // the Source that wrote the value
	fNumeric    = 0x04 // vals holds the value as a number
	fTime       = 0x08 // times holds when the value was written
	fKindShift  = 4    // the value's kind (k*), three bits
	fKindMask   = 0x70
)

// Kinds of a stored value: where Entry.Value comes from.
const (
	kNone  = iota // no value (never had one, or the cloud sent null)
	kFloat        // a float64, in vals
	kTrue
	kFalse
	kArena // in the entry's record (a string, an object, ...)
)

func kindOf(f uint8) uint8 { return (f & fKindMask) >> fKindShift }

// Packed keys: pool number (16 bits), channel (8 bits), index + 2^39 (40
// bits). The order of packed keys is the key order (keyLess), because pool
// numbers follow the pools' order. A key that does not pack (an index
// outside ±2^39, or a pool past the 65,535th) gets the pool number oddPool
// and its number in module.odd below; it sorts after the others.
const (
	poolShift = 48
	chanShift = 40
	idxBias   = 1 << 39 // compared in int64: beyond int on 32-bit platforms
	oddPool   = 1<<16 - 1
	lowMask   = 1<<poolShift - 1
)

// poolLess is the key order of pool names: shorter first ("P4" < "P10"),
// then as byte strings.
func poolLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// poolNumber finds a pool by name.
func (m *module) poolNumber(pool string) (int, bool) {
	i := sort.Search(len(m.pools), func(i int) bool { return !poolLess(m.pools[i], pool) })
	return i, i < len(m.pools) && m.pools[i] == pool
}

// packed returns the packed key of k if k is stored or could be.
func (m *module) packed(k Key) (uint64, bool) {
	if int64(k.Idx) >= -idxBias && int64(k.Idx) < idxBias {
		if p, ok := m.poolNumber(k.Pool); ok {
			return uint64(p)<<poolShift | uint64(k.Chan)<<chanShift | uint64(int64(k.Idx)+idxBias), true
		}
	}
	if id, ok := m.oddIDs[k]; ok {
		return oddPool<<poolShift | uint64(id), true
	}
	return 0, false
}

// search returns the slot of packed key pk, or -1.
func (m *module) search(pk uint64) int {
	lo, hi := 0, len(m.keys)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if m.keys[h] < pk {
			lo = h + 1
		} else {
			hi = h
		}
	}
	if lo < len(m.keys) && m.keys[lo] == pk {
		return lo
	}
	return -1
}

// find returns the slot of k, or -1.
func (m *module) find(k Key) int {
	pk, ok := m.packed(k)
	if !ok {
		return -1
	}
	return m.search(pk)
}

// keyOf returns the key of slot i.
func (m *module) keyOf(i int) Key {
	pk := m.keys[i]
	if pk>>poolShift == oddPool {
		return m.odd[pk&lowMask]
	}
	return Key{Pool: m.pools[pk>>poolShift], Chan: byte(pk >> chanShift), Idx: int(int64(pk&(1<<chanShift-1)) - idxBias)}
}

// poolOf returns the pool name of slot i.
func (m *module) poolOf(i int) string {
	pk := m.keys[i]
	if pk>>poolShift == oddPool {
		return m.odd[pk&lowMask].Pool
	}
	return m.pools[pk>>poolShift]
}

// newKey is a key about to be added: packed, with its label's number.
type newKey struct {
	pk   uint64
	name uint32
}

// addKeys adds keys ks (none of them stored, no repeats) as entries without
// a value. Called with the write lock held.
func (s *Store) addKeys(m *module, ks []Key) {
	if len(ks) == 0 {
		return
	}
	s.addPools(m, ks)
	add := s.newKeys[:0]
	for _, k := range ks {
		pk, ok := uint64(0), false
		if int64(k.Idx) >= -idxBias && int64(k.Idx) < idxBias {
			if p, found := m.poolNumber(k.Pool); found {
				pk, ok = uint64(p)<<poolShift|uint64(k.Chan)<<chanShift|uint64(int64(k.Idx)+idxBias), true
			}
		}
		if !ok {
			if m.oddIDs == nil {
				m.oddIDs = make(map[Key]uint32)
			}
			id := uint32(len(m.odd))
			m.odd = append(m.odd, k)
			m.oddIDs[k] = id
			pk = oddPool<<poolShift | uint64(id)
		}
		add = append(add, newKey{pk, s.names.id(k.Chan, k.Idx)})
	}
	slices.SortFunc(add, func(a, b newKey) int {
		switch {
		case a.pk < b.pk:
			return -1
		case a.pk > b.pk:
			return 1
		}
		return 0
	})
	s.newKeys = add[:0]

	n, k := len(m.keys), len(add)
	m.grow(n + k)
	// Merge from the back: each stored entry moves once.
	i, w := n-1, n+k-1
	for j := k - 1; j >= 0; w-- {
		if i >= 0 && m.keys[i] > add[j].pk {
			m.move(i, w)
			i--
			continue
		}
		m.keys[w], m.vals[w], m.versions[w], m.times[w] = add[j].pk, 0, 0, 0
		m.names[w], m.extra[w], m.flags[w] = add[j].name, 0, 0
		j--
	}
	m.nonNumeric += k // no value yet counts as non-numeric until one arrives
	m.labelDirty = true
	m.layout++
}

// addPools gives the pools of ks that have none a number, keeping numbers
// in pool order: the numbers of later pools shift, which keeps the packed
// keys in order.
func (s *Store) addPools(m *module, ks []Key) {
	var fresh []string
	for _, k := range ks {
		if int64(k.Idx) < -idxBias || int64(k.Idx) >= idxBias {
			continue
		}
		if _, ok := m.poolNumber(k.Pool); ok || slices.Contains(fresh, k.Pool) {
			continue
		}
		if len(m.pools)+len(fresh) >= oddPool {
			break // the rest of the keys of new pools do not pack
		}
		fresh = append(fresh, k.Pool)
	}
	if len(fresh) == 0 {
		return
	}
	old := m.pools
	pools := append(slices.Clone(old), fresh...)
	slices.SortFunc(pools, func(a, b string) int {
		switch {
		case poolLess(a, b):
			return -1
		case poolLess(b, a):
			return 1
		}
		return 0
	})
	renumber := make([]uint64, len(old))
	moved := false
	for i, j := 0, 0; i < len(old); j++ {
		if pools[j] == old[i] {
			renumber[i] = uint64(j)
			moved = moved || i != j
			i++
		}
	}
	if moved {
		m.repack(func(pk uint64) uint64 { return renumber[pk>>poolShift]<<poolShift | pk&lowMask }, false)
	}
	m.pools = pools
}

// repack replaces every packed key pk by to(pk), for the keys that pack (or
// those that do not, with odd). to must keep the keys in order.
func (m *module) repack(to func(uint64) uint64, odd bool) {
	var touched map[uint64]uint64
	if len(m.metaTouched) > 0 {
		touched = make(map[uint64]uint64, len(m.metaTouched))
	}
	for i, pk := range m.keys {
		np := pk
		if (pk>>poolShift == oddPool) == odd {
			np = to(pk)
			m.keys[i] = np
		}
		if touched != nil {
			if t, ok := m.metaTouched[pk]; ok {
				touched[np] = t
			}
		}
	}
	if touched != nil {
		m.metaTouched = touched
	}
}

// grow makes every column n long, keeping some room when a module that
// already holds entries grows, so that keys added one by one do not copy
// the columns each time.
func (m *module) grow(n int) {
	if n <= cap(m.keys) {
		m.keys, m.vals, m.versions, m.times = m.keys[:n], m.vals[:n], m.versions[:n], m.times[:n]
		m.names, m.extra, m.flags = m.names[:n], m.extra[:n], m.flags[:n]
		return
	}
	c := n
	if len(m.keys) > 0 {
		c += n / 8
	}
	m.resize(n, c)
}

// resize copies the columns into new ones of length n and capacity c.
func (m *module) resize(n, c int) {
	m.keys = resized(m.keys, n, c)
	m.vals = resized(m.vals, n, c)
	m.versions = resized(m.versions, n, c)
	m.times = resized(m.times, n, c)
	m.names = resized(m.names, n, c)
	m.extra = resized(m.extra, n, c)
	m.flags = resized(m.flags, n, c)
}

func resized[T any](s []T, n, c int) []T {
	out := make([]T, n, c)
	copy(out, s)
	return out
}

// move copies slot i to slot w.
func (m *module) move(i, w int) {
	m.keys[w], m.vals[w], m.versions[w], m.times[w] = m.keys[i], m.vals[i], m.versions[i], m.times[i]
	m.names[w], m.extra[w], m.flags[w] = m.names[i], m.extra[i], m.flags[i]
}

// remove deletes the slots for which gone is true, keeping the order of the
// rest (and of byLabel). Called with the write lock held.
func (s *Store) remove(m *module, gone func(i int) bool) int {
	remap := s.remap[:0]
	w := 0
	for i := range m.keys {
		if !gone(i) {
			remap = append(remap, int32(w))
			if i != w {
				m.move(i, w)
			}
			w++
			continue
		}
		remap = append(remap, -1)
		pk := m.keys[i]
		if m.flags[i]&fNumeric == 0 {
			m.nonNumeric--
		}
		if off := m.extra[i]; off != 0 {
			m.garbage += m.recordLen(off)
			for _, f := range decodeRecord(m.arena, off, s.fields[:0]) {
				if f.kind == vOther {
					m.othersGarbage++
				}
			}
		}
		delete(m.metaTouched, pk)
		if pk>>poolShift == oddPool {
			delete(m.oddIDs, m.odd[pk&lowMask])
		}
	}
	removed := len(m.keys) - w
	s.remap = remap[:0]
	if removed == 0 {
		return 0
	}
	m.grow(w)
	if !m.labelDirty {
		j := 0
		for _, x := range m.byLabel {
			if r := remap[x]; r >= 0 {
				m.byLabel[j] = r
				j++
			}
		}
		m.byLabel = m.byLabel[:j]
	}
	m.layout++
	if c := cap(m.keys); c > 64 && c > 2*w {
		m.resize(w, w)
		m.byLabel = slices.Clip(m.byLabel)
	}
	m.compactOdd()
	m.compactPools()
	m.maybeCompact()
	return removed
}

// compactOdd renumbers the keys that do not pack when most numbers are
// unused. The numbers keep their order, so the keys stay sorted.
func (m *module) compactOdd() {
	if len(m.odd) < 16 || len(m.oddIDs)*2 > len(m.odd) {
		return
	}
	odd := make([]Key, 0, len(m.oddIDs))
	m.repack(func(pk uint64) uint64 {
		k := m.odd[pk&lowMask]
		m.oddIDs[k] = uint32(len(odd))
		odd = append(odd, k)
		return oddPool<<poolShift | uint64(len(odd)-1)
	}, true)
	m.odd = odd
}

// compactPools drops pool names no key uses when most are unused.
func (m *module) compactPools() {
	if len(m.pools) < 16 {
		return
	}
	used := make([]bool, len(m.pools))
	inUse := 0
	for _, pk := range m.keys {
		if p := pk >> poolShift; p != oddPool && !used[p] {
			used[p] = true
			inUse++
		}
	}
	if inUse*2 > len(m.pools) {
		return
	}
	renumber := make([]uint64, len(m.pools))
	pools := make([]string, 0, inUse)
	for p, name := range m.pools {
		if used[p] {
			renumber[p] = uint64(len(pools))
			pools = append(pools, name)
		}
	}
	m.repack(func(pk uint64) uint64 { return renumber[pk>>poolShift]<<poolShift | pk&lowMask }, false)
	m.pools = pools
}

// labelOrder returns the slots in exposition order: by param label, then
// pool, as byte strings, in a new slice.
func (m *module) labelOrder(nm *names) []int32 {
	order := make([]int32, len(m.keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(nm.strs[m.names[a]], nm.strs[m.names[b]]); c != 0 {
			return c
		}
		return strings.Compare(m.poolOf(int(a)), m.poolOf(int(b)))
	})
	return order
}

// keyOrder returns the slots in key order (keyLess), or nil when that is
// the slot order (no key that does not pack).
func (m *module) keyOrder() []int32 {
	if len(m.oddIDs) == 0 {
		return nil
	}
	order := make([]int32, len(m.keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ka, kb := m.keyOf(int(a)), m.keyOf(int(b))
		switch {
		case keyLess(ka, kb):
			return -1
		case keyLess(kb, ka):
			return 1
		}
		return 0
	})
	return order
}

// touched is the version of the latest write of slot i of any kind: its
// value, or meta keys alone (pruning removes only what nothing wrote after
// a prime was requested).
func (m *module) touched(i int) uint64 {
	v := m.versions[i]
	if len(m.metaTouched) > 0 {
		if t, ok := m.metaTouched[m.keys[i]]; ok && t > v {
			return t
		}
	}
	return v
}
