package store

// The store as it was before its entries moved into columns (issue 23),
// kept as the reference the columns are checked against: the same
// operations must give the same answers (see TestColumnsMatchReference).

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/bragerone/bragerone_exporter/wire"
)

// refEntry is the stored form of an Entry. Meta keys live in a short slice
// rather than a map: an refEntry carries two or three of them, and a map costs
// about ten times the memory of the slice (memory per stored parameter is
// what bounds a large account). Readers get an Entry with a fresh map.
type refEntry struct {
	key       Key
	param     string
	value     any
	numeric   float64
	meta      []refMetaPair
	updatedAt time.Time
	version   uint64 // the write that set the value (see the ordering rule)
	touched   uint64 // the latest write of any kind, value or meta, or presence in a prime
	hasValue  bool
	isNumeric bool
	source    Source
}

type refMetaPair struct {
	key string
	val any
}

// Packed keys: pool number (16 bits, an index into refModule.pools), channel
// (8 bits) and index (40 bits).
const (
	refMaxPackedPools = 1 << 16
	refMaxPackedIdx   = 1 << 40
)

// packKey returns the packed form of k. With add, a pool not seen before is
// given a number; without, an unknown pool means the key is not packed.
func (m *refModule) packKey(k Key, add bool) (uint64, bool) {
	if k.Idx < 0 || k.Idx >= refMaxPackedIdx {
		return 0, false
	}
	pool := -1
	for i, p := range m.pools {
		if p == k.Pool {
			pool = i
			break
		}
	}
	if pool < 0 {
		if !add || len(m.pools) >= refMaxPackedPools {
			return 0, false
		}
		m.pools = append(m.pools, k.Pool)
		pool = len(m.pools) - 1
	}
	return uint64(pool)<<48 | uint64(k.Chan)<<40 | uint64(k.Idx), true
}

func (m *refModule) lookup(k Key) *refEntry {
	if pk, ok := m.packKey(k, false); ok {
		if e := m.params[pk]; e != nil {
			return e
		}
	}
	if m.odd != nil {
		return m.odd[k]
	}
	return nil
}

func (m *refModule) insert(k Key, e *refEntry) {
	if pk, ok := m.packKey(k, true); ok {
		m.params[pk] = e
		return
	}
	if m.odd == nil {
		m.odd = make(map[Key]*refEntry)
	}
	m.odd[k] = e
}

func (m *refModule) len() int { return len(m.params) + len(m.odd) }

// setMeta sets one meta key, keeping the order keys first arrived in.
func (e *refEntry) setMeta(k string, v any) {
	for i := range e.meta {
		if e.meta[i].key == k {
			e.meta[i].val = v
			return
		}
	}
	e.meta = append(e.meta, refMetaPair{k, v})
}

type refModule struct {
	// params holds the entries by packed key (see packKey): a map slot of
	// 16 bytes instead of 40 with the Key itself, which is most of what a
	// stored parameter costs besides the refEntry. Keys that do not pack (an
	// index out of range) live in odd.
	params     map[uint64]*refEntry
	odd        map[Key]*refEntry
	pools      []string    // pool names of packed keys, by pool number
	sorted     []*refEntry // entries in key order; rebuilt lazily when keys are added
	dirty      bool
	byLabel    []*refEntry // entries in exposition order; rebuilt lazily when keys are added
	labelDirty bool
	nonNumeric int
	lastUpdate time.Time
	lastLive   time.Time
}

// refStore is the parameter store. The zero value is not usable; call New.
type refStore struct {
	mu       sync.RWMutex
	modules  map[string]*refModule
	version  uint64
	lastAny  time.Time
	lastLive time.Time
	maxKeys  int               // keys per refModule; 0 = unbounded
	refused  map[string]uint64 // devid -> updates refused by the bound
}

// newRefStore returns an empty store holding at most maxKeysPerModule keys per
// refModule; 0 means unbounded.
func newRefStore(maxKeysPerModule int) *refStore {
	return &refStore{modules: make(map[string]*refModule), maxKeys: max(0, maxKeysPerModule), refused: map[string]uint64{}}
}

// CountRefused records n updates of a refModule that a writer cut before they
// reached the store (an event carrying more keys than the bound); they are
// reported with the store's own refusals.
func (s *refStore) CountRefused(devid string, n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.refused[devid] += uint64(n)
	s.mu.Unlock()
}

// BeginPrime marks the moment a prime is requested. Call it before sending
// the request.
func (s *refStore) BeginPrime() PrimeMark {
	s.mu.Lock()
	s.version++
	m := PrimeMark(s.version)
	s.mu.Unlock()
	return m
}

// ApplyLive stores updates from a realtime event and returns how many carried a
// value or an explicit null (live traffic in the sense of the push-health
// rules; a meta-only frame is not).
func (s *refStore) ApplyLive(updates []wire.ParamUpdate, src Source, now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	return s.apply(updates, src, s.version, now)
}

// ApplyPrime stores a prime response requested at mark. Values written after
// the mark (by live updates or by a prime requested later) are kept. For every
// refModule the response carries, keys it lacks are removed unless something
// wrote them after the mark; a refModule the response does not mention at all is
// left as it is (no answer about it is not an empty answer).
func (s *refStore) ApplyPrime(mark PrimeMark, updates []wire.ParamUpdate, now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneAbsent(uint64(mark), updates)
	return s.apply(updates, SourcePrime, uint64(mark), now)
}

// pruneAbsent removes the keys of the modules in a prime that the prime
// lacks and that were last touched before its mark. It runs before the
// prime's own writes so that keys it removes make room under the bound for
// the keys it adds.
func (s *refStore) pruneAbsent(mark uint64, updates []wire.ParamUpdate) {
	var named []*refModule
	var mod *refModule
	var modID string
	for i := range updates {
		u := &updates[i]
		if mod == nil || u.Devid != modID {
			modID, mod = u.Devid, s.modules[u.Devid]
			if mod != nil && !slices.Contains(named, mod) {
				named = append(named, mod)
			}
		}
		if mod == nil {
			continue
		}
		if e := mod.lookup(Key{Pool: u.Pool, Chan: u.Chan, Idx: u.Idx}); e != nil && e.touched < mark {
			e.touched = mark // present in the prime
		}
	}
	for _, m := range named {
		m.removeTouchedBefore(mark)
	}
}

// removeTouchedBefore deletes the entries last touched before version. The
// cached orders keep their order, so nothing needs sorting again.
func (m *refModule) removeTouchedBefore(version uint64) {
	gone := 0
	for _, e := range m.sorted {
		if e.touched >= version {
			continue
		}
		gone++
		if pk, ok := m.packKey(e.key, false); ok && m.params[pk] == e {
			delete(m.params, pk)
		} else {
			delete(m.odd, e.key)
		}
		if !e.isNumeric {
			m.nonNumeric--
		}
	}
	if gone == 0 {
		return
	}
	keep := func(e *refEntry) bool { return e.touched < version }
	m.sorted = slices.DeleteFunc(m.sorted, keep)
	m.byLabel = slices.DeleteFunc(m.byLabel, keep)
}

func (s *refStore) apply(updates []wire.ParamUpdate, src Source, version uint64, now time.Time) int {
	applied := 0
	var mod *refModule
	var modID string
	for i := range updates {
		u := &updates[i]
		if mod == nil || u.Devid != modID {
			modID = u.Devid
			mod = s.modules[modID]
			if mod == nil {
				mod = &refModule{params: make(map[uint64]*refEntry, 1024)}
				s.modules[modID] = mod
			}
		}
		k := Key{Pool: u.Pool, Chan: u.Chan, Idx: u.Idx}
		e := mod.lookup(k)
		if e == nil {
			if s.maxKeys > 0 && mod.len() >= s.maxKeys {
				s.refused[modID]++
				continue
			}
			e = &refEntry{key: k, param: k.Param(), touched: version}
			mod.insert(k, e)
			mod.sorted = append(mod.sorted, e)
			mod.dirty = true
			mod.byLabel = append(mod.byLabel, e)
			mod.labelDirty = true
			mod.nonNumeric++ // no value yet counts as non-numeric until one arrives
		} else if e.version > version {
			// Written after this prime was requested: the stored value is newer.
			continue
		}
		e.touched = max(e.touched, version)
		if len(u.Meta) > 0 {
			if e.meta == nil {
				e.meta = make([]refMetaPair, 0, len(u.Meta))
			}
			for mk, mv := range u.Meta {
				e.setMeta(mk, mv)
			}
		}
		if !u.HasValue {
			continue // a meta-only frame: the value stays as it was
		}
		wasNumeric := e.isNumeric
		// An explicit null (see the null rule above) leaves the refEntry
		// without a value: numeric returns false for nil.
		e.value, e.hasValue = u.Value, u.Value != nil
		e.numeric, e.isNumeric = numeric(u.Value)
		if wasNumeric != e.isNumeric {
			if e.isNumeric {
				mod.nonNumeric--
			} else {
				mod.nonNumeric++
			}
		}
		e.source = src
		e.updatedAt = now
		e.version = version
		mod.lastUpdate = now
		if src.IsLive() {
			mod.lastLive = now
		}
		applied++
	}
	if applied > 0 {
		s.lastAny = now
		if src.IsLive() {
			s.lastLive = now
		}
	}
	return applied
}

// Retain drops every refModule not in devids (a refModule that left the account
// stops being exported).
func (s *refStore) Retain(devids []string) {
	keep := make(map[string]struct{}, len(devids))
	for _, d := range devids {
		keep[d] = struct{}{}
	}
	s.mu.Lock()
	for d := range s.modules {
		if _, ok := keep[d]; !ok {
			delete(s.modules, d)
		}
	}
	for d := range s.refused {
		if _, ok := keep[d]; !ok {
			delete(s.refused, d)
		}
	}
	s.mu.Unlock()
}

// Get returns a copy of one refEntry.
func (s *refStore) Get(devid string, k Key) (Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	mod := s.modules[devid]
	if mod == nil {
		return Entry{}, false
	}
	e := mod.lookup(k)
	if e == nil {
		return Entry{}, false
	}
	return refCopyEntry(e), true
}

func refCopyEntry(e *refEntry) Entry {
	c := Entry{
		Key: e.key, Param: e.param, Value: e.value, HasValue: e.hasValue,
		Numeric: e.numeric, IsNumeric: e.isNumeric, Source: e.source, UpdatedAt: e.updatedAt,
	}
	if e.meta != nil {
		c.Meta = make(map[string]any, len(e.meta))
		for _, p := range e.meta {
			c.Meta[p.key] = p.val
		}
	}
	return c
}

// Devids returns the modules with stored parameters, sorted.
func (s *refStore) Devids() []string {
	s.mu.RLock()
	out := make([]string, 0, len(s.modules))
	for d := range s.modules {
		out = append(out, d)
	}
	s.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Entries returns copies of every refEntry of a refModule in key order.
func (s *refStore) Entries(devid string) []Entry {
	s.mu.Lock() // may sort
	defer s.mu.Unlock()
	mod := s.modules[devid]
	if mod == nil {
		return nil
	}
	mod.sort()
	out := make([]Entry, len(mod.sorted))
	for i, e := range mod.sorted {
		out[i] = refCopyEntry(e)
	}
	return out
}

func (m *refModule) sort() {
	if !m.dirty {
		return
	}
	sort.Slice(m.sorted, func(i, j int) bool { return refKeyLess(m.sorted[i].key, m.sorted[j].key) })
	m.dirty = false
}

func refKeyLess(a, b Key) bool {
	if a.Pool != b.Pool {
		if len(a.Pool) != len(b.Pool) {
			return len(a.Pool) < len(b.Pool)
		}
		return a.Pool < b.Pool
	}
	if a.Chan != b.Chan {
		return a.Chan < b.Chan
	}
	return a.Idx < b.Idx
}

// Stats returns per-refModule summaries keyed by devid.
func (s *refStore) Stats() map[string]ModuleStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]ModuleStats, len(s.modules))
	for d, m := range s.modules {
		out[d] = ModuleStats{Params: m.len(), NonNumeric: m.nonNumeric, LastUpdate: m.lastUpdate, LastLive: m.lastLive, Refused: s.refused[d]}
	}
	for d, n := range s.refused {
		if _, ok := out[d]; !ok {
			out[d] = ModuleStats{Refused: n}
		}
	}
	return out
}

// LastUpdate returns when any value was last written (any source) and when a
// live value was last written; zero times mean never.
func (s *refStore) LastUpdate() (anySource, live time.Time) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lastAny, s.lastLive
}

// ForEachParam calls fn for every stored parameter that has a value, refModule by
// refModule in devid order and key order within a refModule. fn must not call back
// into the store.
func (s *refStore) ForEachParam(fn func(devid, pool, param string, value float64, numeric bool)) {
	s.forEach(false, fn)
}

// ForEachParamInLabelOrder is ForEachParam in the order of the Prometheus
// exposition: modules in devid order and, within a refModule, parameters by
// param label ("s40" < "u1" < "v10" < "v2"), then pool, compared as byte
// strings. That is the order the registry sorts series of
// bragerone_parameter_value into (labels devid, param, pool), so a scrape
// fed in this order finds them already sorted, which turns the registry's
// n·log n sort into one linear pass. The order is cached per refModule and
// rebuilt only when keys were added.
func (s *refStore) ForEachParamInLabelOrder(fn func(devid, pool, param string, value float64, numeric bool)) {
	s.forEach(true, fn)
}

// forEach takes the write lock only to bring each refModule's cached order up
// to date, then visits under the read lock. Keys added between the two locks
// sit unsorted at the end of the list: still visited.
func (s *refStore) forEach(byLabel bool, fn func(devid, pool, param string, value float64, numeric bool)) {
	s.mu.Lock()
	devids := make([]string, 0, len(s.modules))
	for d, m := range s.modules {
		if byLabel {
			m.sortByLabel()
		} else {
			m.sort()
		}
		devids = append(devids, d)
	}
	s.mu.Unlock()
	sort.Strings(devids)

	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, d := range devids {
		m := s.modules[d]
		if m == nil {
			continue
		}
		list := m.sorted
		if byLabel {
			list = m.byLabel
		}
		for _, e := range list {
			if !e.hasValue {
				continue
			}
			fn(d, e.key.Pool, e.param, e.numeric, e.isNumeric)
		}
	}
}

func (m *refModule) sortByLabel() {
	if !m.labelDirty {
		return
	}
	sort.Slice(m.byLabel, func(i, j int) bool {
		a, b := m.byLabel[i], m.byLabel[j]
		if a.param != b.param {
			return a.param < b.param
		}
		return a.key.Pool < b.key.Pool
	})
	m.labelDirty = false
}

// Forget drops the modules devids (their parameters and refused counts):
// modules that left what one gateway watches. Other modules are untouched,
// so gateways of several objects may share the store.
func (s *refStore) Forget(devids []string) {
	if len(devids) == 0 {
		return
	}
	s.mu.Lock()
	for _, d := range devids {
		delete(s.modules, d)
		delete(s.refused, d)
	}
	s.mu.Unlock()
}
