package vectors

import (
	"math/bits"
	"sync/atomic"
)

// IDSet is a set of chunk ids a filtered search may return
// (Filter.IDs): the scope a caller resolved to chunks. Build it once per
// scope and reuse it: the embedded store resolves it to its own node
// numbers at the first search and keeps that (a bitmap and a list of
// nodes) until the store changes, so later searches with the same set cost
// no lookups. Safe for concurrent use; the ids must not change after
// NewIDSet.
type IDSet struct {
	ids  []string
	memo atomic.Pointer[idMemo]
}

// idMemo is an IDSet resolved against one embedded store at one version.
type idMemo struct {
	e       *Embedded
	version uint64
	nodes   []uint32 // live nodes in the set, ascending
	bits    []uint64 // the same as a bitmap over node numbers
}

// NewIDSet returns the set of ids (duplicates are fine).
func NewIDSet(ids []string) *IDSet { return &IDSet{ids: ids} }

// IDs are the set's ids as given.
func (s *IDSet) IDs() []string { return s.ids }

// Len is the number of ids given (duplicates counted).
func (s *IDSet) Len() int { return len(s.ids) }

// resolve returns the set's live nodes in e, from the memo when e has not
// changed since. The caller holds e.mu (read).
func (s *IDSet) resolve(e *Embedded) *idMemo {
	if m := s.memo.Load(); m != nil && m.e == e && m.version == e.version {
		return m
	}
	m := &idMemo{e: e, version: e.version, bits: make([]uint64, (e.g.n+63)/64)}
	for _, id := range s.ids {
		n, ok := e.byID[id]
		if !ok || m.bits[n>>6]&(1<<(n&63)) != 0 {
			continue
		}
		m.bits[n>>6] |= 1 << (n & 63)
	}
	m.nodes = make([]uint32, 0, len(s.ids))
	for w, b := range m.bits {
		for ; b != 0; b &= b - 1 {
			m.nodes = append(m.nodes, uint32(w*64+bits.TrailingZeros64(b)))
		}
	}
	s.memo.Store(m)
	return m
}
