// Package store owns the in-memory parameter store: the current value of every
// parameter (P<n>.<chan><idx>) of every module, with its meta keys, the source
// that wrote it (prime, live, snapshot) and when.
//
// Writes come from the gateways in batches; scrapes and the CLI read
// concurrently. A batch takes the write lock once, so a 1,000-entry prime of
// a module or a burst of live deltas costs one lock round-trip. A walk
// copies one module at a time out under the read lock and calls back with
// no lock held, so a scrape holds up a write for one module's copy at most,
// however long it takes to write its answer.
//
// Memory: a module keeps its entries in columns (module.go), so a stored
// parameter costs about 50 bytes; meta keys and values that are not numbers
// are encoded apart (extra.go), and param labels are interned (names.go).
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
	Param    string // "v8"
	Value    any    // the current value; nil while there is none (only meta seen, or the cloud reported null)
	HasValue bool
	Numeric  float64 // Value as a number when IsNumeric
	// IsNumeric is true for JSON numbers, booleans (0/1) and decimal strings.
	IsNumeric bool
	Meta      map[string]any
	Source    Source
	// UpdatedAt is when the value was last written, to the nanosecond (the
	// store keeps Unix nanoseconds: the instant, not the clock reading or
	// location of the time it was given).
	UpdatedAt time.Time
}

// DefaultMaxKeysPerModule bounds the keys one module may hold. A real
// controller reports under 1,000 parameters; ten times that never refuses a
// real module, while a runaway or hostile push stops at well under 1 MB of
// store per module instead of growing with every key it invents.
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

	names    names    // param labels of every module
	metaKeys metaKeys // meta key names of every module

	// Scratch space of writers (write lock held).
	newKeys  []newKey
	fresh    []Key
	pending  map[Key]struct{}
	fields   []field
	scratch  []byte
	scratch2 []byte
	remap    []int32
	present  []uint64
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
// left as it is (no answer about it is not an empty answer). A response may
// be applied module by module, in calls with the same mark: each call is the
// whole truth of the modules it carries.
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
	grouped := true // each module's updates in one run, as decoded payloads are
	var named []string
	for start := 0; start < len(updates); {
		devid := updates[start].Devid
		end := start + 1
		for end < len(updates) && updates[end].Devid == devid {
			end++
		}
		if slices.Contains(named, devid) {
			grouped = false
		} else {
			named = append(named, devid)
		}
		start = end
	}
	for start := 0; start < len(updates); {
		devid := updates[start].Devid
		end := start + 1
		for end < len(updates) && updates[end].Devid == devid {
			end++
		}
		mod := s.modules[devid]
		runs := updates[start:end]
		if !grouped {
			// A module named in several runs is pruned once, at its first,
			// against all of them.
			if slices.ContainsFunc(updates[:start], func(u wire.ParamUpdate) bool { return u.Devid == devid }) {
				mod = nil
			}
			runs = updates[start:]
		}
		start = end
		if mod == nil {
			continue
		}
		words := (len(mod.keys) + 63) / 64
		present := slices.Grow(s.present[:0], words)[:words]
		clear(present)
		for i := range runs {
			u := &runs[i]
			if u.Devid != devid {
				continue
			}
			if slot := mod.find(Key{Pool: u.Pool, Chan: u.Chan, Idx: u.Idx}); slot >= 0 {
				present[slot/64] |= 1 << (slot % 64)
			}
		}
		s.present = present[:0]
		s.names.removed += s.remove(mod, func(i int) bool { return present[i/64]&(1<<(i%64)) == 0 && mod.touched(i) < mark })
	}
	s.names.collect(s.modules)
}

func (s *Store) apply(updates []wire.ParamUpdate, src Source, version uint64, now time.Time) int {
	applied := 0
	for start := 0; start < len(updates); {
		devid := updates[start].Devid
		end := start + 1
		for end < len(updates) && updates[end].Devid == devid {
			end++
		}
		mod := s.modules[devid]
		if mod == nil {
			mod = &module{}
			s.modules[devid] = mod
		}
		applied += s.applyModule(mod, devid, updates[start:end], src, version, now)
		start = end
	}
	if applied > 0 {
		s.lastAny = now
		if src.IsLive() {
			s.lastLive = now
		}
	}
	return applied
}

// applyModule stores the updates of one module: first the keys it does not
// hold yet are added (as many as the bound allows, in the order they come),
// then every update is written.
func (s *Store) applyModule(mod *module, devid string, updates []wire.ParamUpdate, src Source, version uint64, now time.Time) int {
	fresh := s.fresh[:0]
	for i := range updates {
		u := &updates[i]
		if k := (Key{Pool: u.Pool, Chan: u.Chan, Idx: u.Idx}); mod.find(k) < 0 {
			fresh = append(fresh, k)
		}
	}
	if len(fresh) > 0 {
		fresh = s.admit(mod, devid, fresh)
		s.addKeys(mod, fresh)
	}
	clear(fresh)
	s.fresh = fresh[:0]

	applied := 0
	at, timeFlag := now.UnixNano(), uint8(fTime)
	if now.IsZero() {
		at, timeFlag = 0, 0
	}
	for i := range updates {
		u := &updates[i]
		slot := mod.find(Key{Pool: u.Pool, Chan: u.Chan, Idx: u.Idx})
		if slot < 0 {
			continue // refused by the bound
		}
		if mod.versions[slot] > version {
			// Written after this prime was requested: the stored value is newer.
			continue
		}
		if len(u.Meta) > 0 {
			s.rewrite(mod, slot, false, nil, false, u.Meta)
		}
		if !u.HasValue {
			// A meta-only frame: the value stays as it was.
			if version > mod.touched(slot) {
				if mod.metaTouched == nil {
					mod.metaTouched = make(map[uint64]uint64)
				}
				mod.metaTouched[mod.keys[slot]] = version
			}
			continue
		}
		s.setValue(mod, slot, u.Value)
		mod.flags[slot] = mod.flags[slot]&^(fSourceMask|fTime) | uint8(src)&fSourceMask | timeFlag
		mod.times[slot] = at
		mod.versions[slot] = version
		if t, ok := mod.metaTouched[mod.keys[slot]]; ok && t <= version {
			delete(mod.metaTouched, mod.keys[slot])
		}
		mod.lastUpdate = now
		if src.IsLive() {
			mod.lastLive = now
		}
		applied++
	}
	return applied
}

// admit returns the keys of fresh (new keys in update order, possibly
// repeated) that the bound lets in, each once, and counts an update of any
// other as refused.
func (s *Store) admit(mod *module, devid string, fresh []Key) []Key {
	room := -1 // unbounded
	if s.maxKeys > 0 {
		room = max(0, s.maxKeys-len(mod.keys))
	}
	if room < 0 || len(fresh) <= room {
		// Everything fits even with repeats: drop the repeats.
		if len(fresh) > 1 {
			slices.SortFunc(fresh, compareKeys)
			fresh = slices.Compact(fresh)
		}
		return fresh
	}
	if s.pending == nil {
		s.pending = make(map[Key]struct{})
	}
	out := fresh[:0]
	for _, k := range fresh {
		if _, ok := s.pending[k]; ok {
			continue
		}
		if len(s.pending) >= room {
			s.refused[devid]++
			continue
		}
		s.pending[k] = struct{}{}
		out = append(out, k)
	}
	if len(s.pending) > 4096 {
		s.pending = nil
	} else {
		clear(s.pending)
	}
	return out
}

func compareKeys(a, b Key) int {
	switch {
	case keyLess(a, b):
		return -1
	case keyLess(b, a):
		return 1
	}
	return 0
}

// setValue stores v as the value of slot i, with its number.
func (s *Store) setValue(mod *module, i int, v any) {
	f := mod.flags[i]
	wasNumeric := f&fNumeric != 0
	wasArena := kindOf(f) == kArena
	kind := uint8(kArena)
	switch x := v.(type) {
	case nil:
		kind = kNone
	case float64:
		kind = kFloat
	case bool:
		kind = kFalse
		if x {
			kind = kTrue
		}
	}
	// An explicit null (see the null rule above) leaves the entry without a
	// value: numeric returns false for nil.
	num, isNumeric := numeric(v)
	switch {
	case kind == kArena:
		s.rewrite(mod, i, true, v, false, nil)
	case wasArena:
		s.rewrite(mod, i, false, nil, true, nil)
	}
	f = f&^(fKindMask|fNumeric) | kind<<fKindShift
	if isNumeric {
		f |= fNumeric
	}
	mod.flags[i], mod.vals[i] = f, num
	if wasNumeric != isNumeric {
		if isNumeric {
			mod.nonNumeric--
		} else {
			mod.nonNumeric++
		}
	}
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
	for d, m := range s.modules {
		if _, ok := keep[d]; !ok {
			s.names.removed += len(m.keys)
			delete(s.modules, d)
		}
	}
	for d := range s.refused {
		if _, ok := keep[d]; !ok {
			delete(s.refused, d)
		}
	}
	s.names.collect(s.modules)
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
	i := mod.find(k)
	if i < 0 {
		return Entry{}, false
	}
	return s.entry(mod, i), true
}

// number reads the numeric value of one register without building an Entry.
func (s *Store) number(devid string, k Key) (float64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	mod := s.modules[devid]
	if mod == nil {
		return 0, false
	}
	i := mod.find(k)
	if i < 0 || mod.flags[i]&fNumeric == 0 {
		return 0, false
	}
	return mod.vals[i], true
}

// entry builds the Entry of slot i (read lock held).
func (s *Store) entry(mod *module, i int) Entry {
	f := mod.flags[i]
	e := Entry{
		Key: mod.keyOf(i), Param: s.names.strs[mod.names[i]],
		Source: Source(f & fSourceMask), IsNumeric: f&fNumeric != 0,
	}
	if e.IsNumeric {
		e.Numeric = mod.vals[i]
	}
	if f&fTime != 0 {
		e.UpdatedAt = time.Unix(0, mod.times[i])
	}
	switch kindOf(f) {
	case kFloat:
		e.Value, e.HasValue = mod.vals[i], true
	case kTrue:
		e.Value, e.HasValue = true, true
	case kFalse:
		e.Value, e.HasValue = false, true
	}
	if off := mod.extra[i]; off != 0 {
		for _, fl := range decodeRecord(mod.arena, off, nil) {
			if fl.tag == tagValue {
				e.Value, e.HasValue = mod.fieldValue(&fl), true
				continue
			}
			if e.Meta == nil {
				e.Meta = make(map[string]any, 4)
			}
			e.Meta[s.fieldKey(&fl)] = mod.fieldValue(&fl)
		}
	}
	return e
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	mod := s.modules[devid]
	if mod == nil {
		return nil
	}
	out := make([]Entry, len(mod.keys))
	if order := mod.keyOrder(); order != nil {
		for j, i := range order {
			out[j] = s.entry(mod, int(i))
		}
		return out
	}
	for i := range out {
		out[i] = s.entry(mod, i)
	}
	return out
}

func keyLess(a, b Key) bool {
	if a.Pool != b.Pool {
		return poolLess(a.Pool, b.Pool)
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
		out[d] = ModuleStats{Params: len(m.keys), NonNumeric: m.nonNumeric, LastUpdate: m.lastUpdate, LastLive: m.lastLive, Refused: s.refused[d]}
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
// module in devid order and key order within a module. Each module is copied
// under the read lock and fn is called with no lock held, so fn may take its
// time (write to a client) without holding up the gateway, and may call back
// into the store; each module is seen whole, as it was between two writes.
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

// item copies slot i of m for a walk (read lock held).
func (s *Store) item(m *module, i int) walkItem {
	pk := m.keys[i]
	pool := ""
	if p := pk >> poolShift; p != oddPool {
		pool = m.pools[p]
	} else {
		pool = m.odd[pk&lowMask].Pool
	}
	return walkItem{pool, s.names.strs[m.names[i]], m.vals[i], m.flags[i]&fNumeric != 0}
}

// walkItem is one parameter of a module being walked, copied out of the
// store so that fn runs without the lock.
type walkItem struct {
	pool, param string
	value       float64
	numeric     bool
}

// walkBufs holds the copy buffers of walks (a module's worth each).
var walkBufs = sync.Pool{New: func() any { return new([]walkItem) }}

// forEach visits the modules one at a time: each is copied under the read
// lock, so a writer waits for one module's copy at most, and fn runs
// unlocked. A label order to rebuild is computed under the read lock and
// installed under the write lock if no key moved since.
func (s *Store) forEach(byLabel bool, fn func(devid, pool, param string, value float64, numeric bool)) {
	bp := walkBufs.Get().(*[]walkItem)
	defer func() {
		if cap(*bp) <= 4*DefaultMaxKeysPerModule {
			walkBufs.Put(bp)
		}
	}()
	for _, d := range s.Devids() {
		items := s.copyModule(d, byLabel, (*bp)[:0])
		for i := range items {
			it := &items[i]
			fn(d, it.pool, it.param, it.value, it.numeric)
		}
		clear(items) // the strings are the store's; keep none alive
		*bp = items[:0]
	}
}

// copyModule appends the parameters with a value of module d to items, in
// label or key order.
func (s *Store) copyModule(d string, byLabel bool, items []walkItem) []walkItem {
	s.mu.RLock()
	m := s.modules[d]
	if m == nil {
		s.mu.RUnlock()
		return items
	}
	var order []int32
	if byLabel {
		order = m.byLabel
		if m.labelDirty {
			order = m.labelOrder(&s.names)
			seen, layout := m, m.layout
			s.mu.RUnlock()
			s.mu.Lock()
			if s.modules[d] == seen && m.layout == layout && m.labelDirty {
				m.byLabel, m.labelDirty = order, false
			}
			s.mu.Unlock()
			s.mu.RLock()
			if m = s.modules[d]; m == nil {
				s.mu.RUnlock()
				return items
			}
			switch {
			case m == seen && m.layout == layout:
				// order still fits
			case m.labelDirty:
				order = m.labelOrder(&s.names) // keys moved meanwhile
			default:
				order = m.byLabel
			}
		}
	} else {
		order = m.keyOrder()
	}
	items = slices.Grow(items, len(m.keys))
	if order == nil {
		for i := range m.keys {
			if kindOf(m.flags[i]) != kNone {
				items = append(items, s.item(m, i))
			}
		}
	} else {
		for _, i := range order {
			if kindOf(m.flags[i]) != kNone {
				items = append(items, s.item(m, int(i)))
			}
		}
	}
	s.mu.RUnlock()
	return items
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
		if m := s.modules[d]; m != nil {
			s.names.removed += len(m.keys)
		}
		delete(s.modules, d)
		delete(s.refused, d)
	}
	s.names.collect(s.modules)
	s.mu.Unlock()
}
