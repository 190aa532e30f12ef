package vectors

// candidate is a node and its similarity to the current query.
type candidate struct {
	sim float32
	id  uint32
}

// maxHeap pops the most similar candidate first (the HNSW candidate queue).
type maxHeap []candidate

func (h *maxHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].sim >= s[i].sim {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *maxHeap) pop() candidate {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && s[r].sim > s[l].sim {
			l = r
		}
		if s[i].sim >= s[l].sim {
			break
		}
		s[i], s[l] = s[l], s[i]
		i = l
	}
	*h = s
	return top
}

// minHeap keeps the best ef results with the worst on top, so the search can
// compare against and evict it in O(1) and O(log ef).
type minHeap []candidate

func (h *minHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s[p].sim <= s[i].sim {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *minHeap) pop() candidate {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		if r := l + 1; r < n && s[r].sim < s[l].sim {
			l = r
		}
		if s[i].sim <= s[l].sim {
			break
		}
		s[i], s[l] = s[l], s[i]
		i = l
	}
	*h = s
	return top
}

// visitedSet is a bitset over node ids that remembers which words it
// dirtied, so clearing it costs the number of visits, not the graph size.
type visitedSet struct {
	bits  []uint64
	dirty []uint32
}

func (v *visitedSet) reset(n int) {
	for _, w := range v.dirty {
		v.bits[w] = 0
	}
	v.dirty = v.dirty[:0]
	if words := (n + 63) / 64; words > len(v.bits) {
		v.bits = make([]uint64, words+words/4)
	}
}

// visit marks id and reports whether it was marked already.
func (v *visitedSet) visit(id uint32) bool {
	w, b := id>>6, uint64(1)<<(id&63)
	word := v.bits[w]
	if word&b != 0 {
		return true
	}
	if word == 0 {
		v.dirty = append(v.dirty, w)
	}
	v.bits[w] = word | b
	return false
}

// scratch is one goroutine's reusable search state.
type scratch struct {
	visited visitedSet
	cand    maxHeap
	res     minHeap
	sorted  []candidate // search results, most similar first
	sel     []candidate // the new node's selected neighbours
	nbCands []candidate // a neighbour's links being re-selected
	nbSel   []candidate
	query   []float32 // a raw vector being rescored
	rawBuf  []byte    // a raw vector's bytes where the platform is big-endian
	lows    []float32 // rescoring: lower ends of the candidates' similarities
	ids     []uint32  // rescoring: the nodes read
	vecs    []float32 // rescoring: their raw vectors, one after another
	miss    []uint32  // rescoring: indexes into ids not in the page cache
	iov     [][]byte  // rescoring: preadv2's one buffer
	list    []uint32
	next    []uint32 // a node's unvisited neighbours
}
