// Package store owns the in-memory parameter store: the current value of every
// parameter (P<n>.<chan><idx>) of every module, with its meta keys, the source
// that wrote it (prime, live, snapshot) and when.
//
// Writes come from one goroutine (the gateway) in batches; scrapes and the CLI
// read concurrently. A batch takes the write lock once, so a 800-entry prime or
// a burst of live deltas costs one lock round-trip, and readers iterate under
// the read lock without copying the store.
//
// Ordering rule: a prime response never overwrites a value written after the
// prime was requested. BeginPrime hands out a mark; every entry remembers the
// version that wrote it (a live write gets a fresh version, a prime write the
// mark of its request), and ApplyPrime skips entries whose version is newer
// than its own mark.
//
// A prime is the cloud's whole truth for each module it carries: a key of
// such a module that the prime lacks, and that nothing wrote after the prime
// was requested, is removed (the cloud stopped reporting it).
//
// Null rule (docs/spec.md W-2.1d): a body without "value" is a meta-only
// frame and leaves the value as it was; an explicit null ("value": null, or a
// bare null) is the cloud saying the register has no value, and removes it,
// in a prime as in a live update: the entry keeps its meta and stops being
// exported. The reference client ignores null updates only because its
// flattening turns an absent "value" into null, so it cannot tell the two
// apart; the decoder here can (wire.ParamUpdate.HasValue). A null write is a
// write like any other: it follows the ordering rule, and a live one counts
// as live traffic.
//
// Size rule: a module holds at most MaxKeysPerModule keys; writes that would
// add more are refused and counted, so a runaway push cannot grow the store
// without bound.
package store

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bragerone/bragerone_exporter/wire"
)

// Source says what wrote a value.
type Source uint8

// Sources of a parameter value.
const (
	SourcePrime    Source = iota // REST snapshot (POST /v1/modules/parameters)
	SourceLive                   // realtime *parameters:change event
	SourceSnapshot               // realtime "snapshot" event (counts as live traffic)
)

func (s Source) String() string {
	switch s {
	case SourcePrime:
		return "prime"
	case SourceLive:
		return "live"
	case SourceSnapshot:
		return "snapshot"
	}
	return "unknown"
}

// IsLive reports whether values from this source count as live push traffic.
func (s Source) IsLive() bool { return s == SourceLive || s == SourceSnapshot }

// Key addresses one parameter of a module without building a string.
type Key struct {
	Pool string // "P4"
	Chan byte   // 'v', 's', 'u', ...
	Idx  int
}

// String renders the key as "P4.v8".
func (k Key) String() string { return k.Pool + "." + k.Param() }

// Param renders the channel and index, "v8".
func (k Key) Param() string { return string(k.Chan) + strconv.Itoa(k.Idx) }

// ParseKey parses "P4.v8".
func ParseKey(s string) (Key, bool) {
	pool, param, ok := strings.Cut(s, ".")
	if !ok || len(pool) < 2 || pool[0] != 'P' || len(param) < 2 {
		return Key{}, false
	}
	if _, err := strconv.Atoi(pool[1:]); err != nil {
		return Key{}, false
	}
	idx, err := strconv.Atoi(param[1:])
	if err != nil {
		return Key{}, false
	}
	return Key{Pool: pool, Chan: param[0], Idx: idx}, true
}

// Entry is one stored parameter. Readers get copies.
type Entry struct {
	Key      Key
	Param    string // "v8", built once when the entry is created
	Value    any    // the current value; nil while there is none (only meta seen, or the cloud reported null)
	HasValue bool
	Numeric  float64 // Value as a number when IsNumeric
	// IsNumeric is true for JSON numbers, booleans (0/1) and decimal strings.
	IsNumeric bool
	Meta      map[string]any
	Source    Source
	UpdatedAt time.Time
}

// entry is the stored form of an Entry. Meta keys live in a short slice
// rather than a map: an entry carries two or three of them, and a map costs
// about ten times the memory of the slice (memory per stored parameter is
// what bounds a large account). Readers get an Entry with a fresh map.
type entry struct {
	key       Key
	param     string
	value     any
	numeric   float64
	meta      []metaPair
	updatedAt time.Time
	version   uint64 // the write that set the value (see the ordering rule)
	touched   uint64 // the latest write of any kind, value or meta, or presence in a prime
	hasValue  bool
	isNumeric bool
	source    Source
}

type metaPair struct {
	key string
	val any
}

// Packed keys: pool number (16 bits, an index into module.pools), channel
// (8 bits) and index (40 bits).
const (
	maxPackedPools = 1 << 16
	maxPackedIdx   = 1 << 40
)

// packKey returns the packed form of k. With add, a pool not seen before is
// given a number; without, an unknown pool means the key is not packed.
func (m *module) packKey(k Key, add bool) (uint64, bool) {
	if k.Idx < 0 || k.Idx >= maxPackedIdx {
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
		if !add || len(m.pools) >= maxPackedPools {
			return 0, false
		}
		m.pools = append(m.pools, k.Pool)
		pool = len(m.pools) - 1
	}
	return uint64(pool)<<48 | uint64(k.Chan)<<40 | uint64(k.Idx), true
}

func (m *module) lookup(k Key) *entry {
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

func (m *module) insert(k Key, e *entry) {
	if pk, ok := m.packKey(k, true); ok {
		m.params[pk] = e
		return
	}
	if m.odd == nil {
		m.odd = make(map[Key]*entry)
	}
	m.odd[k] = e
}

func (m *module) len() int { return len(m.params) + len(m.odd) }

// setMeta sets one meta key, keeping the order keys first arrived in.
func (e *entry) setMeta(k string, v any) {
	for i := range e.meta {
		if e.meta[i].key == k {
			e.meta[i].val = v
			return
		}
	}
	e.meta = append(e.meta, metaPair{k, v})
}

type module struct {
	// params holds the entries by packed key (see packKey): a map slot of
	// 16 bytes instead of 40 with the Key itself, which is most of what a
	// stored parameter costs besides the entry. Keys that do not pack (an
	// index out of range) live in odd.
	params     map[uint64]*entry
	odd        map[Key]*entry
	pools      []string // pool names of packed keys, by pool number
	sorted     []*entry // entries in key order; rebuilt lazily when keys are added
	dirty      bool
	byLabel    []*entry // entries in exposition order; rebuilt lazily when keys are added
	labelDirty bool
	nonNumeric int
	lastUpdate time.Time
	lastLive   time.Time
}

// DefaultMaxKeysPerModule bounds the keys one module may hold. A real
// controller reports under 1,000 parameters; ten times that never refuses a
// real module, while a runaway or hostile push stops at about 2 MB of store
// per module instead of growing with every key it invents.
const DefaultMaxKeysPerModule = 10_000

// Store is the parameter store. The zero value is not usable; call New.
type Store struct {
	mu       sync.RWMutex
	modules  map[string]*module
	version  uint64
	lastAny  time.Time
	lastLive time.Time
	maxKeys  int               // keys per module; 0 = unbounded
	refused  map[string]uint64 // devid -> updates refused by the bound
}

// New returns an empty store holding at most DefaultMaxKeysPerModule keys
// per module.
func New() *Store { return NewLimited(DefaultMaxKeysPerModule) }

// NewLimited returns an empty store holding at most maxKeysPerModule keys per
// module; 0 means unbounded.
func NewLimited(maxKeysPerModule int) *Store {
	return &Store{modules: make(map[string]*module), maxKeys: max(0, maxKeysPerModule), refused: map[string]uint64{}}
}

// MaxKeysPerModule is the bound on keys per module (0 = unbounded): writers
// cut oversized batches to it before they reach the store.
func (s *Store) MaxKeysPerModule() int { return s.maxKeys }

// CountRefused records n updates of a module that a writer cut before they
// reached the store (an event carrying more keys than the bound); they are
// reported with the store's own refusals.
func (s *Store) CountRefused(devid string, n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.refused[devid] += uint64(n)
	s.mu.Unlock()
}

// PrimeMark is handed out by BeginPrime and passed to ApplyPrime.
type PrimeMark uint64

// BeginPrime marks the moment a prime is requested. Call it before sending
// the request.
func (s *Store) BeginPrime() PrimeMark {
	s.mu.Lock()
	s.version++
	m := PrimeMark(s.version)
	s.mu.Unlock()
	return m
}

// ApplyLive stores updates from a realtime event and returns how many carried a
// value or an explicit null (live traffic in the sense of the push-health
// rules; a meta-only frame is not).
func (s *Store) ApplyLive(updates []wire.ParamUpdate, src Source, now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.version++
	return s.apply(updates, src, s.version, now)
}

// ApplyPrime stores a prime response requested at mark. Values written after
// the mark (by live updates or by a prime requested later) are kept. For every
// module the response carries, keys it lacks are removed unless something
// wrote them after the mark; a module the response does not mention at all is
// left as it is (no answer about it is not an empty answer).
func (s *Store) ApplyPrime(mark PrimeMark, updates []wire.ParamUpdate, now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneAbsent(uint64(mark), updates)
	return s.apply(updates, SourcePrime, uint64(mark), now)
}

// pruneAbsent removes the keys of the modules in a prime that the prime
// lacks and that were last touched before its mark. It runs before the
// prime's own writes so that keys it removes make room under the bound for
// the keys it adds.
func (s *Store) pruneAbsent(mark uint64, updates []wire.ParamUpdate) {
	var named []*module
	var mod *module
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
func (m *module) removeTouchedBefore(version uint64) {
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
	keep := func(e *entry) bool { return e.touched < version }
	m.sorted = slices.DeleteFunc(m.sorted, keep)
	m.byLabel = slices.DeleteFunc(m.byLabel, keep)
}

func (s *Store) apply(updates []wire.ParamUpdate, src Source, version uint64, now time.Time) int {
	applied := 0
	var mod *module
	var modID string
	for i := range updates {
		u := &updates[i]
		if mod == nil || u.Devid != modID {
			modID = u.Devid
			mod = s.modules[modID]
			if mod == nil {
				mod = &module{params: make(map[uint64]*entry, 1024)}
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
			e = &entry{key: k, param: k.Param(), touched: version}
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
				e.meta = make([]metaPair, 0, len(u.Meta))
			}
			for mk, mv := range u.Meta {
				e.setMeta(mk, mv)
			}
		}
		if !u.HasValue {
			continue // a meta-only frame: the value stays as it was
		}
		wasNumeric := e.isNumeric
		// An explicit null (see the null rule above) leaves the entry
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

// numeric converts a decoded JSON value to a float when it is a number, a
// boolean or a number written as text (wire.NumberText's rule); other values
// are not exported as series.
func numeric(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case string:
		return wire.NumberText(x)
	}
	return 0, false
}

// Retain drops every module not in devids (a module that left the account
// stops being exported).
func (s *Store) Retain(devids []string) {
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

// Get returns a copy of one entry.
func (s *Store) Get(devid string, k Key) (Entry, bool) {
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
	return copyEntry(e), true
}

func copyEntry(e *entry) Entry {
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
func (s *Store) Devids() []string {
	s.mu.RLock()
	out := make([]string, 0, len(s.modules))
	for d := range s.modules {
		out = append(out, d)
	}
	s.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Entries returns copies of every entry of a module in key order.
func (s *Store) Entries(devid string) []Entry {
	s.mu.Lock() // may sort
	defer s.mu.Unlock()
	mod := s.modules[devid]
	if mod == nil {
		return nil
	}
	mod.sort()
	out := make([]Entry, len(mod.sorted))
	for i, e := range mod.sorted {
		out[i] = copyEntry(e)
	}
	return out
}

func (m *module) sort() {
	if !m.dirty {
		return
	}
	sort.Slice(m.sorted, func(i, j int) bool { return keyLess(m.sorted[i].key, m.sorted[j].key) })
	m.dirty = false
}

func keyLess(a, b Key) bool {
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

// ModuleStats summarises one module.
type ModuleStats struct {
	Params, NonNumeric int
	LastUpdate         time.Time // any source
	LastLive           time.Time
	// Refused counts updates refused because the module held
	// MaxKeysPerModule keys or an event carried more than that.
	Refused uint64
}

// Stats returns per-module summaries keyed by devid.
func (s *Store) Stats() map[string]ModuleStats {
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
func (s *Store) LastUpdate() (anySource, live time.Time) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lastAny, s.lastLive
}

// ForEachParam calls fn for every stored parameter that has a value, module by
// module in devid order and key order within a module. fn must not call back
// into the store.
func (s *Store) ForEachParam(fn func(devid, pool, param string, value float64, numeric bool)) {
	s.forEach(false, fn)
}

// ForEachParamInLabelOrder is ForEachParam in the order of the Prometheus
// exposition: modules in devid order and, within a module, parameters by
// param label ("s40" < "u1" < "v10" < "v2"), then pool, compared as byte
// strings. That is the order the registry sorts series of
// bragerone_parameter_value into (labels devid, param, pool), so a scrape
// fed in this order finds them already sorted, which turns the registry's
// n·log n sort into one linear pass. The order is cached per module and
// rebuilt only when keys were added.
func (s *Store) ForEachParamInLabelOrder(fn func(devid, pool, param string, value float64, numeric bool)) {
	s.forEach(true, fn)
}

// forEach takes the write lock only to bring each module's cached order up
// to date, then visits under the read lock. Keys added between the two locks
// sit unsorted at the end of the list: still visited.
func (s *Store) forEach(byLabel bool, fn func(devid, pool, param string, value float64, numeric bool)) {
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

func (m *module) sortByLabel() {
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
func (s *Store) Forget(devids []string) {
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
