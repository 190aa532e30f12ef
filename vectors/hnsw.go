package vectors

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The graph: a hierarchical navigable small world (Malkov & Yashunin, 2016)
// over int8-quantised vectors.
//
// Memory layout, per node (internal id = insertion order, uint32):
//   - its record, recordSize(dim) bytes (scale + codes), in blocks of
//     blockNodes records outside the Go heap (allocBlock);
//   - its level-0 links, 1+M0 uint32 (count, then ids), in blocks likewise;
//   - its level and state, one byte each, in Go slices;
//   - for the ~1/M of nodes above level 0, level·(1+M) uint32 of upper links
//     in a map.
//
// At 1M × 384 that is 388 + 132 bytes a node off heap and ~2 on heap.
//
// Concurrency: the store's RWMutex guards the tables (blocks, levels, states,
// the upper map) — they change only under its write lock. Links change while
// searches run: a list is rewritten under its stripe lock (locks) and read
// with atomic loads, entries first and count last on write, so a reader sees
// some mix of the old and new list, every entry a valid node.

const (
	blockShift  = 14
	blockNodes  = 1 << blockShift
	blockMask   = blockNodes - 1
	lockStripes = 4096
	maxLevel    = 15
)

// Node states.
const (
	statePending uint8 = iota // added, being linked, not yet searchable
	stateLive                 // searchable
	stateDeleted              // deleted or replaced: still a waypoint, never a result
)

type graph struct {
	dim, m, m0, efc int
	levelMult       float64
	recSize         int
	l0Stride        int // uint32s per level-0 list

	vecs   [][]byte   // record blocks
	l0     [][]uint32 // level-0 link blocks (views of l0raw)
	l0raw  [][]byte
	levels []uint8
	state  []uint8
	indeg  []uint32 // level-0 in-degree, updated atomically
	upper  map[uint32][]uint32
	n      int // nodes added

	// ep is the entry point: 0 when the graph is empty, else (node+1)<<8 | level.
	ep atomic.Uint64

	locks [lockStripes]sync.Mutex
	pool  sync.Pool // *scratch
}

func newGraph(dim, m, efc int) *graph {
	return &graph{
		dim:       dim,
		m:         m,
		m0:        2 * m,
		efc:       efc,
		levelMult: 1 / math.Log(float64(m)),
		recSize:   recordSize(dim),
		l0Stride:  1 + 2*m,
		upper:     map[uint32][]uint32{},
	}
}

func (g *graph) getScratch() *scratch {
	if sc, ok := g.pool.Get().(*scratch); ok {
		return sc
	}
	return &scratch{query: make([]float32, g.dim)}
}

func (g *graph) putScratch(sc *scratch) { g.pool.Put(sc) }

// rec is node's record: scale, then dim codes.
func (g *graph) rec(node uint32) []byte {
	b := g.vecs[node>>blockShift]
	off := int(node&blockMask) * g.recSize
	return b[off : off+g.recSize : off+g.recSize]
}

// simQ is the similarity of a float32 query to a stored node.
func (g *graph) simQ(q []float32, node uint32) float32 {
	r := g.rec(node)
	return recordScale(r) * dotF32I8(q, r[4:4+g.dim])
}

// simNodes is the similarity of two stored nodes.
func (g *graph) simNodes(a, b uint32) float32 {
	ra, rb := g.rec(a), g.rec(b)
	return recordScale(ra) * recordScale(rb) * float32(dotI8I8(ra[4:4+g.dim], rb[4:4+g.dim]))
}

// links is node's link list at level: [count, id, id, ...].
func (g *graph) links(node uint32, level int) []uint32 {
	if level == 0 {
		b := g.l0[node>>blockShift]
		off := int(node&blockMask) * g.l0Stride
		return b[off : off+g.l0Stride : off+g.l0Stride]
	}
	u := g.upper[node]
	off := (level - 1) * (g.m + 1)
	return u[off : off+g.m+1 : off+g.m+1]
}

func (g *graph) maxConn(level int) int {
	if level == 0 {
		return g.m0
	}
	return g.m
}

// readLinks copies node's links at level into buf with atomic loads.
func (g *graph) readLinks(node uint32, level int, buf []uint32) []uint32 {
	list := g.links(node, level)
	cnt := min(int(atomic.LoadUint32(&list[0])), len(list)-1)
	buf = buf[:0]
	for i := 1; i <= cnt; i++ {
		buf = append(buf, atomic.LoadUint32(&list[i]))
	}
	return buf
}

// writeLinks replaces node's links at level; the caller holds node's stripe lock.
func writeLinks(list []uint32, sel []candidate) {
	for i, c := range sel {
		atomic.StoreUint32(&list[i+1], c.id)
	}
	atomic.StoreUint32(&list[0], uint32(len(sel)))
}

// relist replaces a link list with sel. At level 0 it keeps the in-degrees
// up to date, and it will not take away a live node's last incoming link
// while the list has room: the heuristic alone leaves a few nodes in ten
// thousand unreachable, and an unreachable node is never found again. The
// in-degree of a dropped node is decremented only if it stays above zero,
// atomically, so two lists pruning the same node at once cannot both drop
// it. The caller holds the list owner's stripe lock.
func (g *graph) relist(list []uint32, level int, sel []candidate) {
	if level != 0 {
		writeLinks(list, sel)
		return
	}
	old := list[1 : 1+min(int(list[0]), len(list)-1)]
	for _, id := range old {
		if slices.ContainsFunc(sel, func(c candidate) bool { return c.id == id }) {
			continue
		}
		if g.state[id] != stateDeleted && len(sel) < g.m0 {
			if !decrementAboveOne(&g.indeg[id]) {
				sel = append(sel, candidate{id: id}) // its last way in: keep it
			}
			continue
		}
		atomic.AddUint32(&g.indeg[id], ^uint32(0))
	}
	for _, c := range sel {
		if !slices.Contains(old, c.id) {
			atomic.AddUint32(&g.indeg[c.id], 1)
		}
	}
	writeLinks(list, sel)
}

// decrementAboveOne decrements *p unless it is 1 or less, and reports
// whether it did.
func decrementAboveOne(p *uint32) bool {
	for {
		v := atomic.LoadUint32(p)
		if v <= 1 {
			return false
		}
		if atomic.CompareAndSwapUint32(p, v, v-1) {
			return true
		}
	}
}

// keepOrphans fills the room the heuristic left in sel with candidates new
// to the list that have no incoming level-0 link at all (like a node being
// inserted whose other neighbours all pruned it).
func (g *graph) keepOrphans(list []uint32, level int, cands, sel []candidate, self uint32) []candidate {
	if level != 0 {
		return sel
	}
	old := list[1 : 1+min(int(list[0]), len(list)-1)]
	for _, c := range cands {
		if len(sel) >= g.m0 {
			break
		}
		if c.id == self || g.state[c.id] == stateDeleted || slices.Contains(old, c.id) ||
			slices.ContainsFunc(sel, func(s candidate) bool { return s.id == c.id }) {
			continue
		}
		if atomic.LoadUint32(&g.indeg[c.id]) == 0 {
			sel = append(sel, c)
		}
	}
	return sel
}

// countIndegrees recomputes the level-0 in-degrees, counting only links from
// nodes for which from returns true.
func (g *graph) countIndegrees(from func(uint32) bool) {
	g.indeg = slices.Grow(g.indeg[:0], g.n)[:g.n]
	clear(g.indeg)
	for u := range g.n {
		if !from(uint32(u)) {
			continue
		}
		list := g.links(uint32(u), 0)
		for _, v := range list[1 : 1+min(int(list[0]), len(list)-1)] {
			g.indeg[v]++
		}
	}
}

func (g *graph) lock(node uint32) *sync.Mutex { return &g.locks[node%lockStripes] }

func (g *graph) entry() (node uint32, level int, ok bool) {
	v := g.ep.Load()
	if v == 0 {
		return 0, 0, false
	}
	return uint32(v>>8) - 1, int(v & 0xff), true
}

func encodeEntry(node uint32, level int) uint64 { return uint64(node+1)<<8 | uint64(level) }

// raiseEntry makes node the entry point if its level is above the current one.
func (g *graph) raiseEntry(node uint32, level int) {
	for {
		old := g.ep.Load()
		if old != 0 && int(old&0xff) >= level {
			return
		}
		if g.ep.CompareAndSwap(old, encodeEntry(node, level)) {
			return
		}
	}
}

func (g *graph) randomLevel(r *rand.Rand) int {
	l := int(-math.Log(1-r.Float64()) * g.levelMult)
	return min(l, maxLevel)
}

// grow makes room for n nodes. The caller holds the store's write lock.
func (g *graph) grow(n int) error {
	for len(g.vecs)*blockNodes < n {
		vb, err := allocBlock(blockNodes * g.recSize)
		if err != nil {
			return err
		}
		lb, err := allocBlock(blockNodes * g.l0Stride * 4)
		if err != nil {
			freeBlock(vb)
			return err
		}
		g.vecs = append(g.vecs, vb)
		g.l0raw = append(g.l0raw, lb)
		g.l0 = append(g.l0, unsafe.Slice((*uint32)(unsafe.Pointer(&lb[0])), blockNodes*g.l0Stride))
	}
	return nil
}

// shrink frees the blocks beyond those n nodes need.
func (g *graph) shrink(n int) {
	keep := (n + blockNodes - 1) / blockNodes
	for i := keep; i < len(g.vecs); i++ {
		freeBlock(g.vecs[i])
		freeBlock(g.l0raw[i])
	}
	g.vecs, g.l0, g.l0raw = g.vecs[:keep], g.l0[:keep], g.l0raw[:keep]
}

// release frees every block; the graph is unusable afterwards.
func (g *graph) release() {
	g.shrink(0)
	g.n = 0
	g.ep.Store(0)
}

// offHeapBytes is the memory held in blocks.
func (g *graph) offHeapBytes() int64 {
	return int64(len(g.vecs)) * blockNodes * int64(g.recSize+4*g.l0Stride)
}

// addNode appends a pending node with record rec at level; grow first. The
// caller holds the store's write lock.
func (g *graph) addNode(rec []byte, level int) uint32 {
	id := uint32(g.n)
	copy(g.rec(id), rec)
	clear(g.links(id, 0))
	g.levels = append(g.levels, uint8(level))
	g.state = append(g.state, statePending)
	g.indeg = append(g.indeg, 0)
	if level > 0 {
		g.upper[id] = make([]uint32, level*(g.m+1))
	}
	g.n++
	return id
}

// greedy walks level from cur to the most similar node it can reach, one
// best neighbour at a time (ef = 1).
func (g *graph) greedy(q []float32, cur uint32, curSim float32, level int) (uint32, float32) {
	for changed := true; changed; {
		changed = false
		list := g.links(cur, level)
		cnt := min(int(atomic.LoadUint32(&list[0])), len(list)-1)
		for i := 1; i <= cnt; i++ {
			nb := atomic.LoadUint32(&list[i])
			if s := g.simQ(q, nb); s > curSim {
				cur, curSim, changed = nb, s, true
			}
		}
	}
	return cur, curSim
}

// searchLayer is the HNSW beam search at one level from one entry node. It
// leaves the best ef accepted nodes in sc.res; accept == nil accepts all.
// Rejected nodes are still walked through, so a filter or deleted nodes do
// not cut the graph.
func (g *graph) searchLayer(sc *scratch, q []float32, ep uint32, epSim float32, ef, level int, accept func(uint32) bool) {
	sc.visited.reset(g.n)
	sc.cand = sc.cand[:0]
	sc.res = sc.res[:0]
	sc.visited.visit(ep)
	sc.cand.push(candidate{epSim, ep})
	if accept == nil || accept(ep) {
		sc.res.push(candidate{epSim, ep})
	}
	for len(sc.cand) > 0 {
		c := sc.cand.pop()
		if len(sc.res) >= ef && c.sim < sc.res[0].sim {
			break
		}
		if len(sc.cand) > 0 && level == 0 {
			// The next candidate's links are likely read next: ask for
			// them now, while this one's neighbours are scored (as
			// hnswlib does).
			prefetchLinks(&g.links(sc.cand[0].id, 0)[0])
		}
		// Fetch the unvisited neighbours' records together, so their cache
		// misses overlap instead of queueing one distance at a time.
		for _, nb := range g.unvisitedNeighbours(sc, c.id, level) {
			s := g.simQ(q, nb)
			if len(sc.res) < ef || s > sc.res[0].sim {
				sc.cand.push(candidate{s, nb})
				if accept == nil || accept(nb) {
					sc.res.push(candidate{s, nb})
					if len(sc.res) > ef {
						sc.res.pop()
					}
				}
			}
		}
	}
}

// unvisitedNeighbours returns node's unvisited neighbours at level in
// sc.next, marking them visited and prefetching their records.
func (g *graph) unvisitedNeighbours(sc *scratch, node uint32, level int) []uint32 {
	list := g.links(node, level)
	cnt := min(int(atomic.LoadUint32(&list[0])), len(list)-1)
	next := sc.next[:0]
	for i := 1; i <= cnt; i++ {
		nb := atomic.LoadUint32(&list[i])
		if !sc.visited.visit(nb) {
			next = append(next, nb)
			prefetch(&g.rec(nb)[0])
		}
	}
	sc.next = next
	return next
}

// drainSorted empties sc.res into sc.sorted, most similar first.
func (sc *scratch) drainSorted() []candidate {
	n := len(sc.res)
	sc.sorted = slices.Grow(sc.sorted[:0], n)[:n]
	for i := n - 1; i >= 0; i-- {
		sc.sorted[i] = sc.res.pop()
	}
	return sc.sorted
}

// search returns up to ef accepted nodes nearest to q, most similar first,
// in a slice owned by sc.
func (g *graph) search(sc *scratch, q []float32, ef int, accept func(uint32) bool) []candidate {
	cur, curSim, ok := g.descend(q)
	if !ok {
		return nil
	}
	g.searchLayer(sc, q, cur, curSim, ef, 0, accept)
	return sc.drainSorted()
}

// descend is the greedy walk of the upper levels from the entry point
// towards q: the level-0 node where a search starts, and its similarity;
// ok is false for an empty graph.
func (g *graph) descend(q []float32) (cur uint32, curSim float32, ok bool) {
	ep, top, ok := g.entry()
	if !ok {
		return 0, 0, false
	}
	cur, curSim = ep, g.simQ(q, ep)
	for l := top; l > 0; l-- {
		cur, curSim = g.greedy(q, cur, curSim, l)
	}
	return cur, curSim, true
}

// selectNeighbors is the HNSW neighbour-selection heuristic (algorithm 4 of
// the paper, without extending or keeping pruned candidates): walk cands from
// the most similar and keep one only if it is more similar to the base than
// to every neighbour kept so far. This keeps links pointing in different
// directions, which is what keeps clustered data navigable. cands are sorted
// most similar first; skip is left out, and so are deleted nodes.
func (g *graph) selectNeighbors(cands []candidate, m int, skip uint32, out []candidate) []candidate {
	out = out[:0]
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		if c.id == skip || g.state[c.id] == stateDeleted {
			continue
		}
		good := true
		for _, r := range out {
			if g.simNodes(c.id, r.id) > c.sim {
				good = false
				break
			}
		}
		if good {
			out = append(out, c)
		}
	}
	return out
}

func sortBySimDesc(cs []candidate) {
	slices.SortFunc(cs, func(a, b candidate) int {
		switch {
		case a.sim > b.sim:
			return -1
		case a.sim < b.sim:
			return 1
		}
		return int(a.id) - int(b.id)
	})
}

// insert links the pending node x, whose vector is q, into the graph. It
// runs concurrently with other inserts and with searches; the entry point
// must exist already.
func (g *graph) insert(sc *scratch, x uint32, q []float32) {
	lx := int(g.levels[x])
	ep, top, _ := g.entry()
	cur, curSim := ep, g.simQ(q, ep)
	for l := top; l > lx; l-- {
		cur, curSim = g.greedy(q, cur, curSim, l)
	}
	for l := min(top, lx); l >= 0; l-- {
		g.searchLayer(sc, q, cur, curSim, g.efc, l, nil)
		cands := sc.drainSorted()
		sel := g.selectNeighbors(cands, g.m, x, sc.sel)
		sc.sel = sel
		g.mergeLinks(sc, x, l, sel)
		for _, nb := range sel {
			g.addLink(sc, nb.id, x, l)
		}
		for _, c := range cands {
			if c.id != x {
				cur, curSim = c.id, c.sim
				break
			}
		}
	}
	if lx > top {
		g.raiseEntry(x, lx)
	}
}

// mergeLinks sets x's links at level to sel, merged with any links other
// inserts added to x meanwhile (x is reachable from above before its lower
// levels are linked).
func (g *graph) mergeLinks(sc *scratch, x uint32, level int, sel []candidate) {
	mu := g.lock(x)
	mu.Lock()
	defer mu.Unlock()
	list := g.links(x, level)
	cnt := int(list[0])
	if cnt == 0 {
		g.relist(list, level, sel)
		return
	}
	cands := append(sc.nbCands[:0], sel...)
	for _, id := range list[1 : 1+cnt] {
		if !slices.ContainsFunc(sel, func(c candidate) bool { return c.id == id }) {
			cands = append(cands, candidate{g.simNodes(x, id), id})
		}
	}
	sortBySimDesc(cands)
	sc.nbCands = cands
	sc.nbSel = g.selectNeighbors(cands, g.maxConn(level), x, sc.nbSel)
	sc.nbSel = g.keepOrphans(list, level, cands, sc.nbSel, x)
	g.relist(list, level, sc.nbSel)
}

// addLink adds x to nb's links at level; a full list is re-selected with the
// heuristic over its members and x.
func (g *graph) addLink(sc *scratch, nb, x uint32, level int) {
	mu := g.lock(nb)
	mu.Lock()
	defer mu.Unlock()
	list := g.links(nb, level)
	cnt := int(list[0])
	if slices.Contains(list[1:1+cnt], x) {
		return
	}
	maxConn := g.maxConn(level)
	if cnt < maxConn {
		atomic.StoreUint32(&list[cnt+1], x)
		atomic.StoreUint32(&list[0], uint32(cnt+1))
		if level == 0 {
			atomic.AddUint32(&g.indeg[x], 1)
		}
		return
	}
	cands := sc.nbCands[:0]
	for _, id := range list[1 : 1+cnt] {
		cands = append(cands, candidate{g.simNodes(nb, id), id})
	}
	cands = append(cands, candidate{g.simNodes(nb, x), x})
	sortBySimDesc(cands)
	sc.nbCands = cands
	sc.nbSel = g.selectNeighbors(cands, maxConn, nb, sc.nbSel)
	sc.nbSel = g.keepOrphans(list, level, cands, sc.nbSel, nb)
	g.relist(list, level, sc.nbSel)
}

// repair relinks live node u around deleted neighbours: at each level where
// u links to a deleted node, its new links are chosen by the heuristic from
// its live neighbours and the live neighbours of its deleted ones. Run for
// every live node before the deleted nodes are dropped; the deleted nodes'
// own lists do not change meanwhile, so this runs in parallel.
func (g *graph) repair(sc *scratch, u uint32) {
	for l := 0; l <= int(g.levels[u]); l++ {
		list := g.links(u, l)
		cnt := min(int(list[0]), len(list)-1)
		dead := false
		for _, id := range list[1 : 1+cnt] {
			if g.state[id] == stateDeleted {
				dead = true
				break
			}
		}
		if !dead {
			continue
		}
		sc.visited.reset(g.n)
		sc.visited.visit(u)
		cands := sc.nbCands[:0]
		add := func(id uint32) {
			if g.state[id] != stateDeleted && !sc.visited.visit(id) {
				cands = append(cands, candidate{g.simNodes(u, id), id})
			}
		}
		for _, id := range list[1 : 1+cnt] {
			if g.state[id] != stateDeleted {
				add(id)
				continue
			}
			sc.list = g.readLinks(id, l, sc.list)
			for _, id2 := range sc.list {
				add(id2)
			}
		}
		sortBySimDesc(cands)
		sc.nbCands = cands
		sc.nbSel = g.selectNeighbors(cands, g.maxConn(l), u, sc.nbSel)
		mu := g.lock(u)
		mu.Lock()
		sc.nbSel = g.keepOrphans(list, l, cands, sc.nbSel, u)
		g.relist(list, l, sc.nbSel)
		mu.Unlock()
	}
}

// renumber drops every node whose mapping is noNode and moves the others to
// their new ids, which must keep their order. Links to dropped nodes are
// removed (repair has replaced them already). The caller holds the store's
// write lock.
func (g *graph) renumber(mapping []uint32, newN int) {
	for old := 0; old < g.n; old++ {
		nw := mapping[old]
		if nw == noNode {
			continue
		}
		if int(nw) != old {
			copy(g.rec(nw), g.rec(uint32(old)))
			copy(g.links(nw, 0), g.links(uint32(old), 0))
			g.levels[nw] = g.levels[old]
			g.state[nw] = g.state[old]
		}
		remapList(g.links(nw, 0), mapping)
	}
	upper := make(map[uint32][]uint32, len(g.upper))
	for old, lists := range g.upper {
		nw := mapping[old]
		if nw == noNode {
			continue
		}
		for l := 0; l < len(lists); l += g.m + 1 {
			remapList(lists[l:l+g.m+1], mapping)
		}
		upper[nw] = lists
	}
	g.upper = upper
	g.levels, g.state, g.n = g.levels[:newN], g.state[:newN], newN
	g.countIndegrees(func(uint32) bool { return true })

	ep, _, ok := g.entry()
	switch {
	case !ok:
	case mapping[ep] != noNode:
		g.ep.Store(encodeEntry(mapping[ep], int(g.levels[mapping[ep]])))
	default:
		g.ep.Store(0)
		for id := range newN {
			g.raiseEntry(uint32(id), int(g.levels[id]))
		}
	}
	g.shrink(newN)
}

const noNode = ^uint32(0)

func remapList(list []uint32, mapping []uint32) {
	cnt := min(int(list[0]), len(list)-1)
	k := 0
	for _, id := range list[1 : 1+cnt] {
		if nw := mapping[id]; nw != noNode {
			k++
			list[k] = nw
		}
	}
	list[0] = uint32(k)
}

// connect makes every node reachable at level 0 from the entry point, as
// Lucene's HNSW builder does after a merge: HNSW does not promise
// connectivity, and a few nodes in ten thousand can end up cut off — a pair
// of nodes inserted together that only link to each other, say — and then
// are never found. It walks the graph from the entry point; each live or
// pending node it did not reach gets a link from the nearest node it did
// (replacing that node's most redundant link when its list is full), and
// what the new link reaches joins the walk. It returns how many links it
// added. Runs like an insert: concurrently with searches, not with other
// writers.
func (g *graph) connect(sc *scratch) int {
	ep, _, ok := g.entry()
	if !ok {
		return 0
	}
	reached := make([]uint64, (g.n+63)/64)
	isReached := func(v uint32) bool { return reached[v>>6]&(1<<(v&63)) != 0 }
	stack := []uint32{ep}
	reached[ep>>6] |= 1 << (ep & 63)
	walk := func() {
		for len(stack) > 0 {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			sc.list = g.readLinks(u, 0, sc.list)
			for _, v := range sc.list {
				if !isReached(v) {
					reached[v>>6] |= 1 << (v & 63)
					stack = append(stack, v)
				}
			}
		}
	}
	walk()
	added := 0
	for u := range uint32(g.n) {
		if isReached(u) || g.state[u] == stateDeleted {
			continue
		}
		dequantize(g.rec(u), sc.query)
		cands := g.search(sc, sc.query, 16, func(v uint32) bool { return v != u && g.state[v] != stateDeleted })
		if len(cands) == 0 {
			continue
		}
		g.forceLink(cands[0].id, u)
		added++
		reached[u>>6] |= 1 << (u & 63)
		stack = append(stack, u)
		walk()
	}
	return added
}

// forceLink adds u to v's level-0 links, in place of the link whose target
// has the most other ways in when the list is full.
func (g *graph) forceLink(v, u uint32) {
	mu := g.lock(v)
	mu.Lock()
	defer mu.Unlock()
	list := g.links(v, 0)
	cnt := int(list[0])
	if slices.Contains(list[1:1+cnt], u) {
		return
	}
	atomic.AddUint32(&g.indeg[u], 1)
	if cnt < g.m0 {
		atomic.StoreUint32(&list[cnt+1], u)
		atomic.StoreUint32(&list[0], uint32(cnt+1))
		return
	}
	worst := 1
	for i := 2; i <= cnt; i++ {
		if atomic.LoadUint32(&g.indeg[list[i]]) > atomic.LoadUint32(&g.indeg[list[worst]]) {
			worst = i
		}
	}
	atomic.AddUint32(&g.indeg[list[worst]], ^uint32(0))
	atomic.StoreUint32(&list[worst], u)
}
