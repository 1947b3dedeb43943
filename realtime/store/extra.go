package store

import (
	"encoding/binary"
	"math"
)

// What is not a number lives apart. Nearly every parameter holds a number
// and nothing else is read by the exporter, so the columns of a module keep
// a float per entry; an entry's meta keys (storable, updatedAt, ...) and a
// value that is neither a number, a boolean nor null (a string, an object)
// are encoded in the module's arena, a byte slice the entry points into.
//
// A record is a uvarint length and that many bytes of fields. A field is a
// tag (0: the entry's own value; 1..254: a meta key by its number in
// Store.metaKeys; 255: a meta key spelled out as a uvarint length and its
// bytes) and a value: a kind byte, then 8 bytes of float64 for a number, a
// uvarint length and the bytes for a string, 4 bytes indexing module.others
// for anything else (objects and arrays, or Go values a caller passed in).
// Rewriting a record of the same length reuses its bytes; otherwise the new
// record goes at the end and the old one counts as garbage, and the arena
// is compacted when garbage is most of it.

const (
	tagValue  = 0
	tagInline = 255
)

// Kinds of an encoded value.
const (
	vNil byte = iota
	vFalse
	vTrue
	vFloat
	vString
	vOther
)

// field is one decoded field of a record. Byte slices point into the arena
// (or into the scratch record being built): valid until the arena changes.
type field struct {
	tag   uint8
	key   []byte // the spelled-out key of tagInline
	kind  byte
	num   float64
	str   []byte
	other uint32
	val   any // a new vOther value, not yet in others
	isNew bool
}

// decodeRecord appends the fields of the record at off (offset+1 in arena)
// to fs.
func decodeRecord(arena []byte, off uint32, fs []field) []field {
	if off == 0 {
		return fs
	}
	b := arena[off-1:]
	n, w := binary.Uvarint(b)
	b = b[w : w+int(n)]
	for len(b) > 0 {
		var f field
		f.tag = b[0]
		b = b[1:]
		if f.tag == tagInline {
			l, w := binary.Uvarint(b)
			f.key = b[w : w+int(l)]
			b = b[w+int(l):]
		}
		f.kind = b[0]
		b = b[1:]
		switch f.kind {
		case vFloat:
			f.num = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case vString:
			l, w := binary.Uvarint(b)
			f.str = b[w : w+int(l)]
			b = b[w+int(l):]
		case vOther:
			f.other = binary.LittleEndian.Uint32(b)
			b = b[4:]
		}
		fs = append(fs, f)
	}
	return fs
}

// recordLen is the length in bytes of the record at off, its header included.
func (m *module) recordLen(off uint32) int {
	if off == 0 {
		return 0
	}
	n, w := binary.Uvarint(m.arena[off-1:])
	return w + int(n)
}

// encodeField appends f to b. A new vOther value is added to others here.
func (m *module) encodeField(b []byte, f *field) []byte {
	b = append(b, f.tag)
	if f.tag == tagInline {
		b = binary.AppendUvarint(b, uint64(len(f.key)))
		b = append(b, f.key...)
	}
	b = append(b, f.kind)
	switch f.kind {
	case vFloat:
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f.num))
	case vString:
		b = binary.AppendUvarint(b, uint64(len(f.str)))
		b = append(b, f.str...)
	case vOther:
		if f.isNew {
			f.other = uint32(len(m.others))
			m.others = append(m.others, f.val)
			f.isNew, f.val = false, nil
		}
		b = binary.LittleEndian.AppendUint32(b, f.other)
	}
	return b
}

// setField sets f's value to v.
func (m *module) setField(f *field, v any) {
	if f.kind == vOther && !f.isNew {
		m.othersGarbage++
	}
	f.str, f.val, f.isNew, f.num = nil, nil, false, 0
	switch x := v.(type) {
	case nil:
		f.kind = vNil
	case bool:
		f.kind = vFalse
		if x {
			f.kind = vTrue
		}
	case float64:
		f.kind, f.num = vFloat, x
	case string:
		f.kind, f.str = vString, []byte(x)
	default:
		f.kind, f.val, f.isNew = vOther, v, true
	}
}

// fieldValue is the Go value of f.
func (m *module) fieldValue(f *field) any {
	switch f.kind {
	case vFalse:
		return false
	case vTrue:
		return true
	case vFloat:
		return f.num
	case vString:
		return string(f.str)
	case vOther:
		return m.others[f.other]
	}
	return nil
}

// fieldKey is the meta key of f.
func (s *Store) fieldKey(f *field) string {
	if f.tag == tagInline {
		return string(f.key)
	}
	return s.metaKeys.name(f.tag)
}

// rewrite changes the record of slot i: setValue replaces the arena value
// (with value; or drops it when dropValue), meta is merged key by key.
// Called with the write lock held.
func (s *Store) rewrite(m *module, i int, setValue bool, value any, dropValue bool, meta map[string]any) {
	fs := decodeRecord(m.arena, m.extra[i], s.fields[:0])
	if setValue || dropValue {
		at := -1
		for j := range fs {
			if fs[j].tag == tagValue {
				at = j
				break
			}
		}
		switch {
		case dropValue && at >= 0:
			if fs[at].kind == vOther {
				m.othersGarbage++
			}
			fs = append(fs[:at], fs[at+1:]...)
		case setValue && at >= 0:
			m.setField(&fs[at], value)
		case setValue:
			fs = append(fs, field{tag: tagValue})
			m.setField(&fs[len(fs)-1], value)
		}
	}
	for k, v := range meta {
		id := s.metaKeys.id(k)
		at := -1
		for j := range fs {
			if id != 0 && fs[j].tag == id || id == 0 && fs[j].tag == tagInline && string(fs[j].key) == k {
				at = j
				break
			}
		}
		if at < 0 {
			f := field{tag: id}
			if id == 0 {
				f.tag, f.key = tagInline, []byte(k)
			}
			fs = append(fs, f)
			at = len(fs) - 1
		}
		m.setField(&fs[at], v)
	}
	s.fields = fs[:0]

	old := m.extra[i]
	oldLen := m.recordLen(old)
	if len(fs) == 0 {
		m.extra[i] = 0
		m.garbage += oldLen
		m.maybeCompact()
		return
	}
	body := s.scratch[:0]
	for j := range fs {
		body = m.encodeField(body, &fs[j])
	}
	rec := binary.AppendUvarint(s.scratch2[:0], uint64(len(body)))
	rec = append(rec, body...)
	s.scratch, s.scratch2 = body[:0], rec[:0]
	if len(rec) == oldLen {
		copy(m.arena[old-1:], rec)
		return
	}
	m.garbage += oldLen
	m.extra[i] = uint32(len(m.arena)) + 1
	m.arena = append(m.arena, rec...)
	m.maybeCompact()
}

// maybeCompact copies the live records into a new arena when garbage is
// most of the old one, and drops values of others no record refers to.
func (m *module) maybeCompact() {
	arenaWaste := m.garbage > 4096 && m.garbage*2 > len(m.arena)
	othersWaste := m.othersGarbage > 16 && m.othersGarbage*2 > len(m.others)
	if !arenaWaste && !othersWaste {
		return
	}
	m.compact()
}

// compact rewrites the arena and others with only what entries use.
func (m *module) compact() {
	arena := make([]byte, 0, len(m.arena)-m.garbage)
	var others []any
	var fs []field
	for i, off := range m.extra {
		if off == 0 {
			continue
		}
		start := len(arena)
		n := m.recordLen(off)
		arena = append(arena, m.arena[off-1:int(off-1)+n]...)
		m.extra[i] = uint32(start) + 1
		if len(m.others) == 0 {
			continue
		}
		// Renumber the others values this record refers to, in place (the
		// index has a fixed width).
		fs = decodeRecord(arena, uint32(start)+1, fs[:0])
		for _, f := range fs {
			if f.kind == vOther {
				others = append(others, m.others[f.other])
			}
		}
	}
	if len(m.others) > 0 {
		// Second pass: write the new indexes.
		next := uint32(0)
		for _, off := range m.extra {
			if off == 0 {
				continue
			}
			next = renumberOthers(arena, off, next)
		}
	}
	m.arena, m.others, m.garbage, m.othersGarbage = arena, others, 0, 0
}

// renumberOthers gives the vOther fields of the record at off the indexes
// next, next+1, ... in order, and returns the next free one.
func renumberOthers(arena []byte, off uint32, next uint32) uint32 {
	b := arena[off-1:]
	n, w := binary.Uvarint(b)
	pos := int(off-1) + w
	end := pos + int(n)
	for pos < end {
		tag := arena[pos]
		pos++
		if tag == tagInline {
			l, w := binary.Uvarint(arena[pos:])
			pos += w + int(l)
		}
		kind := arena[pos]
		pos++
		switch kind {
		case vFloat:
			pos += 8
		case vString:
			l, w := binary.Uvarint(arena[pos:])
			pos += w + int(l)
		case vOther:
			binary.LittleEndian.PutUint32(arena[pos:], next)
			next++
			pos += 4
		}
	}
	return next
}
