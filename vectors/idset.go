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
// no lookups. The bitmap is the predicate of the predicate-aware graph
// walk (one bit test per node it looks at, two hops deep); the node list
// is what a scan of a small set reads and where the walk takes its seeds
// (see planFilter). Safe for concurrent use; the ids must not change after
// NewIDSet.
type IDSet struct {
	ids []string
	// docs and langs, when docs is not nil, make it the set of the points
	// of those documents (in those languages; nil = any): NewDocIDSet.
	docs, langs []string
	memo        atomic.Pointer[idMemo]
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

// NewDocIDSet returns the set of the points of the documents docIDs whose
// language is one of langs (nil langs: any). A scope is a set of documents
// (and languages), so this is how a caller that resolved a scope to
// documents (store.ChunkSet.DocIDs) filters: the embedded store resolves it
// through its per-document member lists, one lookup per document rather
// than per chunk.
func NewDocIDSet(docIDs, langs []string) *IDSet {
	if docIDs == nil {
		docIDs = []string{}
	}
	return &IDSet{docs: docIDs, langs: langs}
}

// IDs are the set's ids as given (nil for a set of documents).
func (s *IDSet) IDs() []string { return s.ids }

// Len is the number of ids given (duplicates counted), or of documents
// for a set of documents.
func (s *IDSet) Len() int { return len(s.ids) + len(s.docs) }

// resolveDocs marks the live members of the set's documents in m.bits.
func (s *IDSet) resolveDocs(e *Embedded, m *idMemo) {
	var langOK []bool
	if s.langs != nil {
		langOK = make([]bool, len(e.langs))
		for i, l := range e.langs {
			for _, want := range s.langs {
				if l == want {
					langOK[i] = true
				}
			}
		}
	}
	for _, d := range s.docs {
		i, ok := e.docIdx[d]
		if !ok {
			continue
		}
		for _, n := range e.docs[i].members {
			if langOK == nil || langOK[e.langOf[n]] {
				m.bits[n>>6] |= 1 << (n & 63)
			}
		}
	}
}

// resolve returns the set's live nodes in e, from the memo when e has not
// changed since. The caller holds e.mu (read).
func (s *IDSet) resolve(e *Embedded) *idMemo {
	if m := s.memo.Load(); m != nil && m.e == e && m.version == e.version {
		return m
	}
	m := &idMemo{e: e, version: e.version, bits: make([]uint64, (e.g.n+63)/64)}
	if s.docs != nil {
		s.resolveDocs(e, m)
	}
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
