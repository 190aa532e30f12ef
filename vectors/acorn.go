package vectors

import "sync/atomic"

// Predicate-aware graph walk for filtered searches, after ACORN-1 (Patel
// et al., "ACORN: Performant and Predicate-Agnostic Search Over Vector
// Embeddings and Structured Data", SIGMOD 2024).
//
// The plain walk (searchLayer with an accept predicate) scores every
// unvisited neighbour and keeps only the accepted ones as results: with a
// fraction s of the points accepted, (1−s) of its distances are wasted, and
// it needs a wider ef to find ef accepted results. This walk instead moves
// on the subgraph of accepted nodes: expanding a node takes its accepted
// neighbours and, through each rejected neighbour, that neighbour's
// accepted neighbours (two hops), up to M0 accepted in all, and scores only
// those. Rejected nodes are bridges, never scored nor queued. At s ≥ 1/M0
// the two-hop neighbourhood holds about M0 accepted nodes, so the accepted
// subgraph is about as well connected as the full one and the walk costs
// about what an unfiltered walk of the same ef does.

// nodeFilter is the predicate of a filtered walk: a node passes when it is
// in bits (when not nil), live, and passes rest (when not nil). Testing the
// bitmap first makes the two-hop scan, which tests about M0² nodes per
// expansion, cheap for the rejected ones.
type nodeFilter struct {
	bits  []uint64
	state []uint8
	rest  func(uint32) bool
}

func (f *nodeFilter) ok(n uint32) bool { return f.in(n) && f.pass(n) }

// in is ok's bitmap test, small enough to inline in the two-hop loops.
func (f *nodeFilter) in(n uint32) bool {
	w := int(n >> 6)
	return f.bits == nil || w < len(f.bits) && f.bits[w]&(1<<(n&63)) != 0
}

// pass is the rest of ok.
func (f *nodeFilter) pass(n uint32) bool {
	return f.state[n] == stateLive && (f.rest == nil || f.rest(n))
}

// searchFiltered returns up to ef accepted nodes nearest to q, most similar
// first, in a slice owned by sc: a greedy descent of the upper levels that
// ignores the filter, then walkFiltered at level 0. The one-hop walk starts
// from where the descent ends and from seeds (accepted nodes, so that a
// scope far from the query's region still has somewhere to start); the
// two-hop walk starts from the seeds and from what seedBeam finds near the
// query.
func (g *graph) searchFiltered(sc *scratch, q []float32, w walkShape, f *nodeFilter, seeds []uint32) []candidate {
	cur, curSim, ok := g.descend(q)
	if !ok {
		return nil
	}
	var starts, bridges []candidate
	if w.twoHop {
		starts, bridges = g.seedBeam(sc, q, cur, curSim, f)
	} else {
		starts = append(sc.nbCands[:0], candidate{curSim, cur})
		sc.nbCands = starts
	}
	g.walkFiltered(sc, q, starts, bridges, w, f, seeds)
	return sc.drainSorted()
}

// seedBeamEf is the width of seedBeam's unfiltered walk, and bridgeUntil
// the number of results the two-hop walk holds before it stops scoring
// rejected neighbours (scoreBridges). Both fitted on the 1M scale store,
// scopes of 3-5% (the smaller ones are scanned), against the walk that
// started from the descent's end alone and scored bridges until it held
// ef results: p95 0.71 → 0.49 ms for a 5% tag, 0.99 → 0.37 ms for the
// newest 3% (unscoped 0.26), recall@10 0.98-1.0 (a beam of 24, or no
// bridges after the beam, drops the newest 3% to 0.95-0.97; on the 20k
// test store a forced walk of the newest 2% needs bridgeUntil 8-16).
const (
	seedBeamEf  = 32
	bridgeUntil = 16
)

// walkShape is how walkFiltered walks: its ef (the results it keeps),
// whether it takes two hops, how many results it holds before it stops
// scoring bridges (scoreBridges), and how many accepted nodes
// acceptedNeighbours gathers before it stops looking through rejected
// neighbours.
//
// A deep list (ef beyond the store's default, as when the retriever asks
// for the top 200 to fuse with BM25) is walked wider (filterPlan.walk,
// deepEf): the shortcuts fitted at ef 64 (bridges scored until 16
// results, truncation at M0/2, ef as asked) hold recall@10 but lose the
// tail of a top 200. At K=200, against the unfiltered search's recall@200
// (0.996 on the 100k bench store, 0.994 on the 1M scale store), those
// walks found: 100k (BenchmarkScopedSearchK200) two hops over 20% of the
// documents 0.936, the newest 20% 0.817, the newest 5% (forced) 0.44, one
// hop over 50% 0.989; 1M, two hops over a tag of 20% 0.867, a tag of 5%
// 0.752, the newest 5% 0.362, the newest 20% 0.736, one hop over a
// notebook of 50% 0.986. So for a deep list the two-hop walk scores
// bridges until it holds ef results and truncates at M0, with ef tripled
// (100k: 0.997-0.998; 1M: 0.988 and 0.978 for the 20% scopes, at 2.5-3×
// the time of the narrow walk, 1.9-2.5 ms p50), and the one-hop walk's
// ef grows by half (0.995 at 100k, 0.993 at 1M, at about the same time).
// Each step alone fell short: bridges until ef took the 100k two-hop
// walks to 0.94-0.95, M0 to 0.94-0.97, ef doubled besides to 0.99-0.995
// (1M: 0.963-0.976 for 20%). The 5% scopes of 1M, walked before, are
// scanned at K=200 now (walkCost at the tripled ef), 0.996.
type walkShape struct {
	ef          int
	twoHop      bool
	bridgeUntil int
	enough      int
}

// seedBeam is a short unfiltered level-0 beam search (width seedBeamEf)
// from ep, the descent's end: a third of an unfiltered search's cost,
// it finds the region nearest the query. It returns the accepted nodes it
// scored (the two-hop walk's first results) and the rejected nodes among
// its best (the walk's first bridges, expanded for their accepted
// neighbours), in sc.nbCands and sc.nbSel. Starting there, the walk
// needs few bridges scored to reach the scope's nearest points, where
// starting from ep alone it went through rejected nodes until it held ef
// results (the newest nodes link mostly to older ones).
func (g *graph) seedBeam(sc *scratch, q []float32, ep uint32, epSim float32, f *nodeFilter) (starts, bridges []candidate) {
	sc.visited.reset(g.n)
	sc.cand = sc.cand[:0]
	sc.res = sc.res[:0]
	sc.visited.visit(ep)
	sc.cand.push(candidate{epSim, ep})
	sc.res.push(candidate{epSim, ep})
	starts = sc.nbCands[:0]
	if f.ok(ep) {
		starts = append(starts, candidate{epSim, ep})
	}
	for len(sc.cand) > 0 {
		c := sc.cand.pop()
		if len(sc.res) >= seedBeamEf && c.sim < sc.res[0].sim {
			break
		}
		if len(sc.cand) > 0 {
			prefetchLinks(&g.links(sc.cand[0].id, 0)[0])
		}
		for _, nb := range g.unvisitedNeighbours(sc, c.id, 0) {
			s := g.simQ(q, nb)
			if f.ok(nb) {
				starts = append(starts, candidate{s, nb})
			}
			if len(sc.res) < seedBeamEf || s > sc.res[0].sim {
				sc.cand.push(candidate{s, nb})
				sc.res.push(candidate{s, nb})
				if len(sc.res) > seedBeamEf {
					sc.res.pop()
				}
			}
		}
	}
	bridges = sc.nbSel[:0]
	for _, c := range sc.res {
		if !f.ok(c.id) {
			bridges = append(bridges, c)
		}
	}
	sc.nbCands, sc.nbSel = starts, bridges
	return starts, bridges
}

// walkFiltered is the level-0 beam search over the accepted nodes: only
// accepted nodes are scored, queued and kept (the best ef in sc.res). It
// starts from starts (scored nodes; a rejected one is expanded once, as a
// bridge), bridges (scored rejected nodes, expanded as bridges) and seeds.
func (g *graph) walkFiltered(sc *scratch, q []float32, starts, bridges []candidate, w walkShape, f *nodeFilter, seeds []uint32) {
	ef := w.ef
	sc.visited.reset(g.n)
	sc.cand = sc.cand[:0]
	sc.res = sc.res[:0]
	for _, c := range starts {
		if !sc.visited.visit(c.id) {
			sc.cand.push(c)
			if f.ok(c.id) {
				sc.res.push(c)
			}
		}
	}
	for _, c := range bridges {
		if !sc.visited.visit(c.id) {
			sc.cand.push(c)
		}
	}
	for _, s := range seeds {
		if f.ok(s) && !sc.visited.visit(s) {
			sim := g.simQ(q, s)
			sc.cand.push(candidate{sim, s})
			sc.res.push(candidate{sim, s})
		}
	}
	for len(sc.res) > ef {
		sc.res.pop()
	}
	for len(sc.cand) > 0 {
		c := sc.cand.pop()
		if len(sc.res) >= ef && c.sim < sc.res[0].sim {
			break
		}
		if len(sc.cand) > 0 {
			prefetchLinks(&g.links(sc.cand[0].id, 0)[0])
		}
		next := g.acceptedNeighbours(sc, c.id, f, w)
		if w.twoHop && len(sc.res) < min(ef, w.bridgeUntil) {
			g.scoreBridges(sc, q, ef)
		}
		for _, nb := range next {
			s := g.simQ(q, nb)
			if len(sc.res) < ef || s > sc.res[0].sim {
				sc.cand.push(candidate{s, nb})
				sc.res.push(candidate{s, nb})
				if len(sc.res) > ef {
					sc.res.pop()
				}
			}
		}
	}
}

// acceptedNeighbours returns, in sc.next, node's unvisited accepted
// neighbours and, when twoHop, those reached through its rejected
// neighbours, marking them visited; it stops looking through rejected
// neighbours once it has seen w.enough accepted nodes, visited or not
// (ACORN's truncation of the expanded list: at ef 64, M0/2 holds recall as
// M0 does and reads a third fewer link lists; see walkShape). A rejected neighbour is looked through once
// per search (it is marked visited too) and left in sc.list for
// scoreBridges. The records found are prefetched.
func (g *graph) acceptedNeighbours(sc *scratch, node uint32, f *nodeFilter, w walkShape) []uint32 {
	next, bridges := sc.next[:0], sc.list[:0]
	twoHop, seen, enough := w.twoHop, 0, w.enough
	list := g.links(node, 0)
	cnt := min(int(atomic.LoadUint32(&list[0])), len(list)-1)
	for i := 1; i <= cnt; i++ {
		nb := atomic.LoadUint32(&list[i])
		if !f.in(nb) || !f.pass(nb) {
			if twoHop && !sc.visited.visit(nb) {
				bridges = append(bridges, nb)
				prefetchLinks(&g.links(nb, 0)[0])
			}
			continue
		}
		seen++
		if !sc.visited.visit(nb) {
			next = append(next, nb)
			prefetch(&g.rec(nb)[0])
		}
	}
	for _, b := range bridges {
		if seen >= enough {
			break
		}
		list := g.links(b, 0)
		cnt := min(int(atomic.LoadUint32(&list[0])), len(list)-1)
		for i := 1; i <= cnt && seen < enough; i++ {
			nb := atomic.LoadUint32(&list[i])
			if nb == node || !f.in(nb) || !f.pass(nb) {
				continue
			}
			seen++
			if !sc.visited.visit(nb) {
				next = append(next, nb)
				prefetch(&g.rec(nb)[0])
			}
		}
	}
	sc.next, sc.list = next, bridges
	return next
}

// scoreBridges scores the rejected neighbours acceptedNeighbours left in
// sc.list and queues those that could lead somewhere as candidates, never
// as results. The two-hop walk does this until it holds w.bridgeUntil
// results (bridgeUntil at the default ef, ef for deep lists): where the accepted nodes are sparse or poorly linked to each
// other (the newest nodes, linked mostly to older ones), two hops can
// leave it in a pocket of the scope away from the query; going on through
// rejected nodes first, as the plain walk does, brings it near the query
// before it keeps to the scope. Recall@10 of a 2% scope of the newest
// points of the 100k bench store: 0.65 without this, 0.996 with it. Since
// the walk starts near the query (seedBeam) a few results' worth is
// enough: until ef results it cost the newest 3% of 1M twice the time.
func (g *graph) scoreBridges(sc *scratch, q []float32, ef int) {
	for _, b := range sc.list {
		s := g.simQ(q, b)
		if len(sc.res) < ef || s > sc.res[0].sim {
			sc.cand.push(candidate{s, b})
		}
	}
}
