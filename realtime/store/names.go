package store

import "strconv"

// names interns parameter labels ("v8"): every module of an account carries
// the same few hundred of them, so an entry keeps a 4-byte number and a scrape
// hands out the one shared string. Numbers no entry uses any more are
// dropped by collect.
type names struct {
	ids     map[string]uint32
	strs    []string
	removed int // entries removed since the last collection
}

// id returns the number of the label of channel ch and index idx, adding it
// when it is new.
func (n *names) id(ch byte, idx int) uint32 {
	var buf [24]byte
	b := strconv.AppendInt(append(buf[:0], ch), int64(idx), 10)
	if id, ok := n.ids[string(b)]; ok {
		return id
	}
	if n.ids == nil {
		n.ids = make(map[string]uint32)
	}
	s := string(b)
	id := uint32(len(n.strs))
	n.ids[s] = id
	n.strs = append(n.strs, s)
	return id
}

// collect drops the labels no module uses when they are most of the table,
// renumbering what stays. Called after removals, with the write lock held.
func (n *names) collect(modules map[string]*module) {
	if len(n.strs) < 1024 || n.removed < len(n.strs) {
		return // not worth a look at every entry yet
	}
	n.removed = 0
	used := make([]bool, len(n.strs))
	inUse := 0
	for _, m := range modules {
		for _, id := range m.names {
			if !used[id] {
				used[id] = true
				inUse++
			}
		}
	}
	if inUse*2 > len(n.strs) {
		return
	}
	renum := make([]uint32, len(n.strs))
	strs := make([]string, 0, inUse)
	ids := make(map[string]uint32, inUse)
	for id, s := range n.strs {
		if used[id] {
			renum[id] = uint32(len(strs))
			ids[s] = uint32(len(strs))
			strs = append(strs, s)
		}
	}
	for _, m := range modules {
		for i, id := range m.names {
			m.names[i] = renum[id]
		}
	}
	n.strs, n.ids = strs, ids
}

// metaKeys numbers meta key names ("storable", "updatedAt"): a stored meta
// pair names its key with one byte. The cloud uses a handful; past
// maxMetaKeyIDs, further names are spelled out in the pair itself, so the
// table stays small whatever a cloud sends.
type metaKeys struct {
	ids  map[string]uint8
	strs []string
}

// maxMetaKeyIDs is how many key names get a number (1..254; 0 is the
// entry's own value and 255 a name spelled out).
const maxMetaKeyIDs = 254

// id returns the number of key k (1..254), or 0 when k has none and the
// table is full.
func (t *metaKeys) id(k string) uint8 {
	if id, ok := t.ids[k]; ok {
		return id
	}
	if len(t.strs) >= maxMetaKeyIDs {
		return 0
	}
	if t.ids == nil {
		t.ids = make(map[string]uint8)
	}
	t.strs = append(t.strs, k)
	id := uint8(len(t.strs))
	t.ids[k] = id
	return id
}

func (t *metaKeys) name(id uint8) string { return t.strs[id-1] }
