package evidence

import (
	"hash/maphash"
	"sync"
	"unsafe"
)

// IDTable holds the request IDs of a scenario, index i the i-th request's,
// in the least memory their pattern allows, with an index to look them up.
//
// An ID is split into a shape, its prefix and the number of its trailing
// decimal digits (at most maxIDDigits), and the number those digits spell:
// "s1r1-attack-0000042" is ("s1r1-attack-00", 9 digits) and 42, so that
// the prefix and the zero-padded number give the ID back exactly. The IDs
// rlbench generates (attack.IDs: "<prefix>-<k>" zero-padded) have one
// shape per prefix. The table holds them in one of three forms, the first
// that fits the IDs inserted so far:
//
//   - a range: every ID has the first ID's shape and the number after
//     its predecessor's (requests recorded in ID order). Nothing is held
//     per ID, and a lookup needs no index.
//   - shaped: a number (4 bytes) per ID and, once IDs of several shapes
//     are present, a shape index (2 bytes); at most maxIDShapes shapes.
//   - an arena: the IDs' bytes end to end (and where each ends), for IDs
//     of more shapes than that (no common pattern).
//
// The shaped and arena forms have an open-addressing index (linear
// probing, load at most 1/2): a slot holds the ID's index + 1 (4 bytes),
// and a probe compares the ID's number (shaped) or bytes (arena). A loaded
// scenario's table holds no index until an ID is looked up: the first
// Lookup builds it, once, also when several goroutines look up at the
// same time.
type IDTable struct {
	n    int
	form idForm
	// hint is the number of IDs grow made room for.
	hint int

	// shapes are the IDs' shapes (range and shaped forms), in first-seen
	// order; prefixes indexes byPrefix, which holds shape index + 1 per
	// digit count (0: none) of each prefix.
	shapes   []idShape
	prefixes map[string]uint16
	byPrefix [][maxIDDigits + 1]uint16
	// first is the number of ID 0 (range form).
	first uint32
	// num and shape are each ID's number and shape (shaped form); shape is
	// nil while every ID has shapes[0].
	num   []uint32
	shape []uint16
	// arena and ends hold the IDs' bytes (arena form).
	arena []byte
	ends  []int

	slots  []uint32
	seeded bool
	seed   maphash.Seed // arena form's hash
	mix    uint64       // shaped form's hash
	// lazy, when not nil, holds the index instead of slots after
	// releaseIndex; the first lookup builds it.
	lazy *lazyIndex
}

// idForm is an IDTable's form.
type idForm uint8

const (
	idRange idForm = iota
	idShaped
	idArena
)

// idShape is the shape of an ID: its prefix and the number of decimal
// digits that follow it.
type idShape struct {
	prefix string
	width  uint8
}

// maxIDDigits is the most trailing digits of an ID read as its number (a
// uint32 holds 9); maxIDShapes is the most shapes the table keeps before
// it holds the IDs' bytes instead.
const (
	maxIDDigits = 9
	maxIDShapes = 1024
)

// splitID splits id into its prefix, the number of trailing digits after
// it (at most maxIDDigits) and the number they spell.
func splitID(id []byte) (prefix []byte, width int, num uint32) {
	k := len(id)
	for k > 0 && len(id)-k < maxIDDigits && id[k-1] >= '0' && id[k-1] <= '9' {
		k--
	}
	for _, c := range id[k:] {
		num = num*10 + uint32(c-'0')
	}
	return id[:k], len(id) - k, num
}

// lazyIndex is an IDTable's index built at its first use.
type lazyIndex struct {
	once  sync.Once
	slots []uint32
}

// releaseIndex drops the index; the next lookup rebuilds it (index).
func (t *IDTable) releaseIndex() {
	if t.lazy == nil && t.slots != nil {
		t.slots, t.lazy = nil, &lazyIndex{}
	}
}

// index returns the slots, building them after releaseIndex.
func (t *IDTable) index() []uint32 {
	if t.lazy == nil {
		return t.slots
	}
	t.lazy.once.Do(func() {
		t.lazy.slots = t.buildSlots(t.n)
	})
	return t.lazy.slots
}

// buildSlots returns an index of every ID with room for n IDs.
func (t *IDTable) buildSlots(n int) []uint32 {
	size := 16
	for size < 2*n {
		size *= 2
	}
	slots := make([]uint32, size)
	mask := uint64(size - 1)
	for k := 0; k < t.n; k++ {
		i := t.hashAt(k) & mask
		for slots[i] != 0 {
			i = (i + 1) & mask
		}
		slots[i] = uint32(k + 1)
	}
	return slots
}

// own makes the index t's own again before a write (grow, insert).
func (t *IDTable) own() {
	if t.lazy != nil {
		t.slots, t.lazy = t.index(), nil
	}
}

// Len is the number of IDs.
func (t *IDTable) Len() int { return t.n }

// ID returns the i-th ID. In the arena form it does not copy: the string
// shares the table's arena, whose bytes are never written again once
// appended (insert only appends), so it stays valid and unchanged for the
// table's life.
func (t *IDTable) ID(i int) string {
	if t.form == idArena {
		b := t.bytes(i)
		if len(b) == 0 {
			return ""
		}
		return unsafe.String(&b[0], len(b))
	}
	sh := &t.shapes[t.shapeAt(i)]
	b := t.AppendID(make([]byte, 0, len(sh.prefix)+int(sh.width)), i)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// AppendID appends the i-th ID to dst and returns the extended slice.
func (t *IDTable) AppendID(dst []byte, i int) []byte {
	if t.form == idArena {
		return append(dst, t.bytes(i)...)
	}
	sh := &t.shapes[t.shapeAt(i)]
	dst = append(dst, sh.prefix...)
	var d [maxIDDigits]byte
	v := t.numAt(i)
	for k := int(sh.width) - 1; k >= 0; k-- {
		d[k] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, d[:sh.width]...)
}

func (t *IDTable) bytes(i int) []byte {
	start := 0
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.arena[start:t.ends[i]]
}

// shapeAt and numAt are the shape and number of ID i (range and shaped forms).
func (t *IDTable) shapeAt(i int) uint16 {
	if t.shape == nil {
		return 0
	}
	return t.shape[i]
}

func (t *IDTable) numAt(i int) uint32 {
	if t.form == idRange {
		return t.first + uint32(i)
	}
	return t.num[i]
}

// keyAt is ID i's shape and number as one key (range and shaped forms).
func (t *IDTable) keyAt(i int) uint64 { return uint64(t.shapeAt(i))<<32 | uint64(t.numAt(i)) }

// hashAt is ID i's hash.
func (t *IDTable) hashAt(i int) uint64 {
	if t.form == idArena {
		return maphash.Bytes(t.seed, t.bytes(i))
	}
	return t.hashKey(t.keyAt(i))
}

// hashKey mixes a shape-and-number key (the finalizer of MurmurHash3's
// 64-bit variant, after the table's random seed).
func (t *IDTable) hashKey(k uint64) uint64 {
	k ^= t.mix
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}

func (t *IDTable) seedOnce() {
	if !t.seeded {
		t.seed, t.seeded = maphash.MakeSeed(), true
		t.mix = maphash.Bytes(t.seed, []byte("rlbench ids"))
	}
}

// findShape returns the index of the shape (prefix, width), if known.
func (t *IDTable) findShape(prefix []byte, width int) (uint16, bool) {
	if len(t.shapes) == 0 {
		return 0, false
	}
	if s := &t.shapes[0]; int(s.width) == width && s.prefix == string(prefix) {
		return 0, true
	}
	p, ok := t.prefixes[string(prefix)]
	if !ok || t.byPrefix[p][width] == 0 {
		return 0, false
	}
	return t.byPrefix[p][width] - 1, true
}

// addShape adds the shape (prefix, width) and returns its index; false
// when the table holds maxIDShapes already.
func (t *IDTable) addShape(prefix []byte, width int) (uint16, bool) {
	if len(t.shapes) >= maxIDShapes {
		return 0, false
	}
	if t.prefixes == nil {
		t.prefixes = map[string]uint16{}
	}
	p, ok := t.prefixes[string(prefix)]
	if !ok {
		p = uint16(len(t.byPrefix))
		t.prefixes[string(prefix)] = p
		t.byPrefix = append(t.byPrefix, [maxIDDigits + 1]uint16{})
	}
	s := uint16(len(t.shapes))
	t.shapes = append(t.shapes, idShape{prefix: string(prefix), width: uint8(width)})
	t.byPrefix[p][width] = s + 1
	return s, true
}

// Lookup returns the index of id.
func (t *IDTable) Lookup(id string) (int, bool) {
	return t.lookup(unsafe.Slice(unsafe.StringData(id), len(id)))
}

func (t *IDTable) lookup(id []byte) (int, bool) {
	if t.form == idArena {
		slots := t.index()
		if len(slots) == 0 {
			return 0, false
		}
		h := maphash.Bytes(t.seed, id)
		return t.probe(slots, h, func(k int) bool { return string(t.bytes(k)) == string(id) })
	}
	prefix, width, num := splitID(id)
	s, ok := t.findShape(prefix, width)
	if !ok {
		return 0, false
	}
	if t.form == idRange {
		if s == 0 && num >= t.first && num-t.first < uint32(t.n) {
			return int(num - t.first), true
		}
		return 0, false
	}
	key := uint64(s)<<32 | uint64(num)
	return t.probe(t.index(), t.hashKey(key), func(k int) bool { return t.keyAt(k) == key })
}

// probe finds the ID of hash h in slots for which same is true.
func (t *IDTable) probe(slots []uint32, h uint64, same func(k int) bool) (int, bool) {
	if len(slots) == 0 {
		return 0, false
	}
	mask := uint64(len(slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := slots[i]
		if s == 0 {
			return 0, false
		}
		if k := int(s) - 1; same(k) {
			return k, true
		}
	}
}

// is reports whether ID k is id.
func (t *IDTable) is(k int, id []byte) bool {
	if k < 0 || k >= t.n {
		return false
	}
	if t.form == idArena {
		return string(t.bytes(k)) == string(id)
	}
	prefix, width, num := splitID(id)
	s, ok := t.findShape(prefix, width)
	return ok && t.keyAt(k) == uint64(s)<<32|uint64(num)
}

// grow makes room for n IDs.
func (t *IDTable) grow(n int) {
	t.own()
	t.hint = max(t.hint, n)
	switch t.form {
	case idShaped:
		t.num = growTo(t.num, n)
		if t.shape != nil {
			t.shape = growTo(t.shape, n)
		}
	case idArena:
		t.ends = growTo(t.ends, n)
	default:
		return // nothing held per ID
	}
	if 2*n > len(t.slots) {
		t.slots = t.buildSlots(n)
	}
}

// insert adds id as the next index (Len) and returns it and false; when id
// is present it returns its index and true.
func (t *IDTable) insert(id []byte) (int, bool) {
	t.own()
	if t.form != idArena {
		prefix, width, num := splitID(id)
		s, ok := t.findShape(prefix, width)
		if !ok {
			if s, ok = t.addShape(prefix, width); !ok {
				t.toArena()
				return t.insertArena(id)
			}
		}
		if t.form == idRange {
			if t.n == 0 {
				t.first = num
			}
			if s == 0 && num == t.first+uint32(t.n) {
				t.n++
				return t.n - 1, false
			}
			if s == 0 && num >= t.first && num-t.first < uint32(t.n) {
				return int(num - t.first), true // repeated
			}
			t.toShaped()
		}
		return t.insertShaped(s, num)
	}
	return t.insertArena(id)
}

// toShaped turns the range form into the shaped form.
func (t *IDTable) toShaped() {
	t.seedOnce()
	t.num = make([]uint32, t.n, max(t.hint, t.n+1))
	for k := range t.num {
		t.num[k] = t.first + uint32(k)
	}
	t.form = idShaped
	t.slots = t.buildSlots(max(t.hint, t.n+1))
}

// toArena turns the range or shaped form into the arena form.
func (t *IDTable) toArena() {
	t.seedOnce()
	size := 0
	for k := 0; k < t.n; k++ {
		sh := &t.shapes[t.shapeAt(k)]
		size += len(sh.prefix) + int(sh.width)
	}
	arena := make([]byte, 0, size+size/max(t.n, 1)*max(t.hint-t.n, 0))
	ends := make([]int, t.n, max(t.hint, t.n+1))
	for k := range ends {
		arena = t.AppendID(arena, k)
		ends[k] = len(arena)
	}
	t.arena, t.ends = arena, ends
	t.form = idArena
	t.num, t.shape, t.shapes, t.prefixes, t.byPrefix = nil, nil, nil, nil, nil
	t.slots = t.buildSlots(max(t.hint, t.n+1))
}

// insertShaped is insert of the ID of shape s and number num in the shaped form.
func (t *IDTable) insertShaped(s uint16, num uint32) (int, bool) {
	key := uint64(s)<<32 | uint64(num)
	j, k, dup := t.slot(t.hashKey(key), func(k int) bool { return t.keyAt(k) == key })
	if dup {
		return k, true
	}
	if s != 0 && t.shape == nil {
		t.shape = make([]uint16, t.n, cap(t.num))
	}
	t.num = append(t.num, num)
	if t.shape != nil {
		t.shape = append(t.shape, s)
	}
	t.slots[j] = uint32(t.n + 1)
	t.n++
	return t.n - 1, false
}

// insertArena is insert in the arena form.
func (t *IDTable) insertArena(id []byte) (int, bool) {
	j, k, dup := t.slot(maphash.Bytes(t.seed, id), func(k int) bool { return string(t.bytes(k)) == string(id) })
	if dup {
		return k, true
	}
	t.arena = append(t.arena, id...)
	t.ends = append(t.ends, len(t.arena))
	t.slots[j] = uint32(t.n + 1)
	t.n++
	return t.n - 1, false
}

// slot makes room for one more ID and returns the free slot for the ID
// of hash h, or the index of the ID for which same is true.
func (t *IDTable) slot(h uint64, same func(k int) bool) (j uint64, k int, found bool) {
	if 2*(t.n+1) > len(t.slots) {
		t.slots = t.buildSlots(2 * (t.n + 1))
	}
	mask := uint64(len(t.slots) - 1)
	for j = h & mask; t.slots[j] != 0; j = (j + 1) & mask {
		if k := int(t.slots[j]) - 1; same(k) {
			return j, k, true
		}
	}
	return j, 0, false
}
