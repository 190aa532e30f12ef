package lexical

import "math/bits"

// Allow is the set of rows a filtered search may return, by row id (the
// store's chunk rowid, Row.ID): a bitmap over ids, so the test in the
// search's top-k pass is one load and a mask (about 1 ns). Its size is the
// largest id over 8 bytes (125 KB for ids up to 1M); rowids are dense in
// the store. The zero value and nil hold nothing. An Allow is not safe for
// concurrent writes; searches only read it, so one set may serve any
// number of concurrent searches once built.
type Allow struct {
	bits []uint64
	n    int
}

// NewAllow returns the set of ids; negative ids are left out (no row has
// one).
func NewAllow(ids []int64) *Allow {
	a := &Allow{}
	var hi int64 = -1
	for _, id := range ids {
		hi = max(hi, id)
	}
	if hi >= 0 {
		a.bits = make([]uint64, hi/64+1)
	}
	for _, id := range ids {
		a.Add(id)
	}
	return a
}

// Add puts id in the set.
func (a *Allow) Add(id int64) {
	if id < 0 {
		return
	}
	w := int(id >> 6)
	if w >= len(a.bits) {
		a.bits = append(a.bits, make([]uint64, w+1-len(a.bits))...)
	}
	m := uint64(1) << (uint(id) & 63)
	if a.bits[w]&m == 0 {
		a.bits[w] |= m
		a.n++
	}
}

// Has reports whether id is in the set.
func (a *Allow) Has(id int64) bool {
	if a == nil || id < 0 {
		return false
	}
	w := uint64(id >> 6)
	return w < uint64(len(a.bits)) && a.bits[w]&(1<<(uint(id)&63)) != 0
}

// Len is the number of ids in the set.
func (a *Allow) Len() int {
	if a == nil {
		return 0
	}
	return a.n
}

// count recounts the set (tests).
func (a *Allow) count() int {
	n := 0
	for _, w := range a.bits {
		n += bits.OnesCount64(w)
	}
	return n
}

// AllowBits returns the set whose bitmap is words (bit i of words[i/64]
// for id i), shared, not copied: the caller must not change words while
// the set is in use. The store's scope sets (store.ChunkSet) hand their
// rowid bitmap over this way at no cost.
func AllowBits(words []uint64) *Allow {
	a := &Allow{bits: words}
	a.n = a.count()
	return a
}
