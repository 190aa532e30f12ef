package vectors

import (
	"context"
	"math"
	"slices"

	"github.com/viterin/vek/vek32"
)

// exactFactor scales walkCost, the point where a filtered search scans
// the m points that can match instead of walking the graph: it scans when
// m ≤ exactFactor·walkCost(ef, m/n). 1: the walk cost is fitted in scanned
// points already.
const exactFactor = 1

// walkCost estimates the time of a filtered walk (the predicate-aware one,
// walkFiltered) to find ef results when a fraction s of the points is
// accepted, in points a scan scores in that time (a scan reads the
// records in node order, prefetched, 35-40 ns a point; a walk pays for
// scattered records, link lists, the visited set and its queues): about
// 16·ef at high fractions, growing as 7·ef/s at low ones, where the walk
// reads more bridges and scores rejected nodes before it holds ef
// results. Fitted to the p95 as much as the p50 (a walk's p95 is about
// twice its p50, a scan's 1.4 times), ef 64: on the 100k bench store
// (BenchmarkScopedSearch) a walk of a 5% scope takes what a scan of 5000
// to 7000 points does, so 5% of 100k is scanned; on the 1M scale store a
// walk of the newest 2% takes what a scan of its 20000 points does (and
// its p95 is worse), so 2% of 1M is scanned and 5% (50000 points) walked.
func walkCost(ef int, s float64) float64 {
	return float64(ef) * (16 + 7/max(s, 1e-9))
}

// twoHopBelow is the fraction of accepted points under which the walk
// looks through rejected neighbours for accepted ones (two hops). At 50%
// one hop finds about M0/2 accepted neighbours, enough to navigate (recall
// 0.996 on the 100k bench store at 60% of the distances of two hops); at
// 20% it does not (0.89).
const twoHopBelow = 0.4

// filterPlan is how one search applies its filter.
type filterPlan struct {
	none    bool     // nothing can match
	exact   bool     // scan the matches instead of walking the graph
	docs    []uint32 // doc indexes when the filter names documents
	lang    int      // lang index, -1 for any
	ids     *idMemo  // the IDs filter resolved, nil without one
	matches int      // points that can match (an upper bound with several filters)
	// ef is the walk's candidate list size (widened by widenEf for the
	// legacy walk only).
	ef int
	// twoHop: the walk reaches accepted nodes through rejected ones
	// (acceptedNeighbours); legacy: the walk before that, for benchmarks.
	twoHop, legacy bool
	// deep: ef is beyond the store's default (a deep list, K > EfSearch):
	// the walk is widened (see walkShape and deepEf).
	deep bool
}

// walk is the shape of the plan's walk on g.
func (p *filterPlan) walk(g *graph) walkShape {
	w := walkShape{ef: p.ef, twoHop: p.twoHop, bridgeUntil: bridgeUntil, enough: g.m0 / 2}
	if p.deep {
		w.bridgeUntil, w.enough = p.ef, g.m0
	}
	return w
}

// deepEf is the ef of a walk for a deep list (ef beyond the store's
// default): ef grown by half for one hop, tripled for two, so that its
// recall@K comes within 0.02 of the unfiltered search's at the same ef
// (see walkShape). The scan crossover is priced at this ef, so at K=200
// scopes under about 25% of 100k and 7% of 1M are scanned.
func deepEf(ef int, twoHop bool) int {
	if twoHop {
		return 3 * ef
	}
	return ef + ef/2
}

func (e *Embedded) planFilter(f Filter, ef int) filterPlan {
	p := filterPlan{lang: -1, matches: e.live, ef: ef}
	if f.Lang != "" {
		li, ok := e.langIdx[f.Lang]
		if !ok || e.langLive[li] == 0 {
			return filterPlan{none: true}
		}
		p.lang = int(li)
		p.matches = e.langLive[li]
	}
	if len(f.DocIDs) > 0 {
		p.matches = 0
		for _, d := range f.DocIDs {
			if i, ok := e.docIdx[d]; ok && len(e.docs[i].members) > 0 && !slices.Contains(p.docs, i) {
				p.docs = append(p.docs, i)
				p.matches += len(e.docs[i].members)
			}
		}
		if len(p.docs) == 0 {
			return filterPlan{none: true}
		}
	}
	if f.IDs != nil {
		p.ids = f.IDs.resolve(e)
		if len(p.ids.nodes) == 0 {
			return filterPlan{none: true}
		}
		p.matches = min(p.matches, len(p.ids.nodes))
	}
	filtered := p.lang >= 0 || p.docs != nil || p.ids != nil
	m := float64(p.matches)
	frac := m / float64(e.live)
	p.twoHop = frac < twoHopBelow
	p.deep = ef > e.cfg.EfSearch && !e.narrowDeep
	walkEf := ef
	if p.deep {
		walkEf = deepEf(ef, p.twoHop)
	}
	p.exact = filtered && m <= exactFactor*walkCost(walkEf, frac)
	switch e.forcePlan {
	case planExact:
		p.exact = filtered
	case planWalk:
		p.exact = false
	case planWalk1, planWalk2:
		p.exact, p.twoHop = false, e.forcePlan == planWalk2
	case planLegacy:
		p.exact, p.legacy, p.deep = false, true, false
	}
	switch {
	case filtered && !p.exact && p.legacy:
		p.ef = widenEf(ef, frac)
	case filtered && !p.exact && p.deep:
		p.ef = deepEf(ef, p.twoHop)
	}
	return p
}

// Plans a test may force (Embedded.forcePlan): the store's choice, the
// scan, the walk (one or two hops as the store chooses), the walk with one
// or two hops, and the walk before predicate-aware traversal (searchLayer
// with the filter as its accept, ef widened by widenEf).
const (
	planAuto = iota
	planExact
	planWalk
	planWalk1
	planWalk2
	planLegacy
)

// widenEf is the plain filtered walk's ef (planLegacy, kept to compare
// against) for a filter that lets a fraction s of the points through: that
// walk scores every neighbour and keeps only accepted nodes as results, so
// it needed ef grown by 1/√s (at most 4×) to hold recall@10 at 0.95. The
// predicate-aware walk keeps ef as asked: it moves among accepted nodes, so
// ef of them are as near as an unfiltered walk's ef.
func widenEf(ef int, s float64) int {
	if s >= 1 || s <= 0 {
		return ef
	}
	return int(float64(ef) * min(4, 1/math.Sqrt(s)))
}

// accept returns the graph-walk predicate of a plan.
func (e *Embedded) accept(p filterPlan) func(uint32) bool {
	state, langOf, docOf := e.g.state, e.langOf, e.docOf
	lang := uint8(max(p.lang, 0))
	if p.ids != nil {
		bits := p.ids.bits
		rest := e.accept(filterPlan{lang: p.lang, docs: p.docs})
		return func(n uint32) bool {
			w := int(n >> 6)
			return w < len(bits) && bits[w]&(1<<(n&63)) != 0 && rest(n)
		}
	}
	inDocs := func(n uint32) bool { return true }
	switch {
	case len(p.docs) == 1:
		d := p.docs[0]
		inDocs = func(n uint32) bool { return docOf[n] == d }
	case len(p.docs) > 1:
		set := make(map[uint32]struct{}, len(p.docs))
		for _, d := range p.docs {
			set[d] = struct{}{}
		}
		inDocs = func(n uint32) bool { _, ok := set[docOf[n]]; return ok }
	}
	switch {
	case p.lang < 0 && p.docs == nil:
		return func(n uint32) bool { return state[n] == stateLive }
	case p.docs == nil:
		return func(n uint32) bool { return state[n] == stateLive && langOf[n] == lang }
	case p.lang < 0:
		return func(n uint32) bool { return state[n] == stateLive && inDocs(n) }
	}
	return func(n uint32) bool { return state[n] == stateLive && langOf[n] == lang && inDocs(n) }
}

// exactScan scores every point the plan matches on its codes and keeps the
// best k for rescoring.
func (e *Embedded) exactScan(sc *scratch, q []float32, k int, p filterPlan) []candidate {
	g := e.g
	sc.res = sc.res[:0]
	consider := func(n uint32) {
		s := g.simQ(q, n)
		if len(sc.res) < k {
			sc.res.push(candidate{s, n})
		} else if s > sc.res[0].sim {
			sc.res.pop()
			sc.res.push(candidate{s, n})
		}
	}
	if p.ids != nil {
		accept := e.accept(filterPlan{lang: p.lang, docs: p.docs})
		nodes := p.ids.nodes
		// The nodes' records are scattered: ask for a few ahead, so their
		// cache misses overlap with the scoring.
		const ahead = 8
		for _, n := range nodes[:min(ahead, len(nodes))] {
			prefetch(&g.rec(n)[0])
		}
		for i, n := range nodes {
			if i+ahead < len(nodes) {
				prefetch(&g.rec(nodes[i+ahead])[0])
			}
			if accept(n) {
				consider(n)
			}
		}
	} else if p.docs != nil {
		for _, d := range p.docs {
			for _, n := range e.docs[d].members {
				if p.lang < 0 || int(e.langOf[n]) == p.lang {
					consider(n)
				}
			}
		}
	} else {
		lang := uint8(p.lang)
		for n := range g.n {
			if g.state[n] == stateLive && e.langOf[n] == lang {
				consider(uint32(n))
			}
		}
	}
	return sc.drainSorted()
}

// searchPlan returns the best ef candidates the plan finds, most similar
// first, by their int8 estimate. A walk that finds fewer than k while the
// filter may match more (a scope the walk could not reach from where it
// started) is followed by a scan, so a scope never returns fewer hits than
// it has, up to k.
func (e *Embedded) searchPlan(sc *scratch, q []float32, ef, k int, p filterPlan) []candidate {
	g := e.g
	switch {
	case p.exact:
		return e.exactScan(sc, q, ef, p)
	case p.legacy:
		return g.search(sc, q, p.ef, e.accept(p))
	case p.lang < 0 && p.docs == nil && p.ids == nil:
		return g.search(sc, q, p.ef, e.accept(p))
	}
	f := nodeFilter{state: g.state}
	if p.ids != nil {
		f.bits = p.ids.bits
		if p.lang >= 0 || p.docs != nil {
			f.rest = e.accept(filterPlan{lang: p.lang, docs: p.docs})
		}
	} else {
		f.rest = e.accept(p)
	}
	var seedBuf [filterSeeds]uint32
	cands := g.searchFiltered(sc, q, p.walk(g), &f, p.seeds(seedBuf[:0]))
	if len(cands) < min(k, p.matches) {
		return e.exactScan(sc, q, ef, p)
	}
	return cands
}

// filterSeeds is how many accepted nodes, spread over the set, a filtered
// walk starts from besides where the descent of the upper levels ends.
const filterSeeds = 8

// seeds appends up to filterSeeds nodes of the plan's set, evenly spaced in
// node order (so spread over its documents and over time), to buf.
func (p *filterPlan) seeds(buf []uint32) []uint32 {
	if p.ids == nil {
		return buf
	}
	nodes := p.ids.nodes
	step := max(1, len(nodes)/filterSeeds)
	for i := step / 2; i < len(nodes) && len(buf) < cap(buf); i += step {
		buf = append(buf, nodes[i])
	}
	return buf
}

// Search implements Store: an HNSW search with ef = max(opts.Ef or the
// default, K) over the int8 codes, or, for a filter that leaves few points,
// a scan of them; then the best ef candidates are rescored with their
// float32 vectors, so the order and the scores (cosine similarity) are
// exact.
func (e *Embedded) Search(ctx context.Context, q []float32, opts SearchOptions) ([]Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, e.errorf("search: %w", err)
	}
	k, err := searchK(opts)
	if err != nil {
		return nil, e.errorf("%w", err)
	}
	if !opts.Filter.Meta.Empty() {
		return nil, e.errorf("search: a metadata filter needs a store with payloads; resolve the scope to chunk ids (Filter.IDs): %w", ErrInvalid)
	}
	if len(q) != e.dim {
		return nil, e.errorf("search: query has %d dimensions, store has %d: %w", len(q), e.dim, ErrDimMismatch)
	}
	qn, err := normalize(q)
	if err != nil {
		return nil, e.errorf("search: query: %w", err)
	}
	ef := opts.Ef
	if ef <= 0 {
		ef = e.cfg.EfSearch
	}
	ef = max(ef, k)

	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, e.errorf("search: %w", ErrClosed)
	}
	out := []Result{}
	if e.live == 0 {
		return out, nil
	}
	plan := e.planFilter(opts.Filter, ef)
	if plan.none {
		return out, nil
	}
	g := e.g
	sc := g.getScratch()
	defer g.putScratch(sc)
	cands := e.searchPlan(sc, qn, ef, k, plan)
	cands, err = e.rescore(sc, qn, cands, k)
	if err != nil {
		return nil, e.errorf("search: %w", err)
	}
	cands = cands[:min(len(cands), k)]
	out = make([]Result, len(cands))
	for i, c := range cands {
		out[i] = Result{ID: e.ids[c.id], DocID: e.docs[e.docOf[c.id]].name, Score: clampScore(c.sim)}
	}
	return out, nil
}

func clampScore(s float32) float32 {
	if math.IsNaN(float64(s)) {
		return 0
	}
	return min(max(s, -1), 1)
}

// rescoreZ is how many standard deviations of the int8 estimate's error a
// candidate may be off by before rescoring leaves it out (see rescore).
const rescoreZ = 6

// rescore replaces the similarities of the candidates that can still be
// among the best k with exact ones from the raw vectors, sorts them again
// and returns them; the others are dropped.
//
// Which can: the int8 estimate a of a stored vector x = s·c + r (s its
// scale, each rounding error r_i uniform in ±s/2) against a unit query q is
// off by q·r, a sum of dim independent terms with standard deviation
// σ = s/√12. Rounding errors are independent of the walk's order, so the
// exact similarity lies in [a−zσ, a+zσ] with z = 6 but for a chance of about
// 1e-9 per candidate. With L the k-th largest lower end, a candidate whose
// upper end is below L has k candidates certainly above it, so it cannot be
// in the top k: it is not read. On embedding-like data this reads about a
// third of ef (one pread and dot product each), and returns the same top k
// as rescoring all of them (TestRescoreKeepsTopK).
func (e *Embedded) rescore(sc *scratch, q []float32, cands []candidate, k int) ([]candidate, error) {
	if !e.rescoreAll && len(cands) > k {
		cands = e.g.rescoreCandidates(sc, cands, k)
	}
	if e.rescoreAll {
		v := sc.query[:e.dim]
		for i := range cands {
			if err := e.raw.read(cands[i].id, v, &sc.rawBuf); err != nil {
				return nil, err
			}
			cands[i].sim = vek32.Dot(q, v)
		}
		sortBySimDesc(cands)
		return cands, nil
	}
	sc.ids = sc.ids[:0]
	for _, c := range cands {
		sc.ids = append(sc.ids, c.id)
	}
	sc.vecs = slices.Grow(sc.vecs[:0], len(cands)*e.dim)[:len(cands)*e.dim]
	if err := e.raw.readBatch(sc, sc.ids, sc.vecs); err != nil {
		return nil, err
	}
	for i := range cands {
		cands[i].sim = vek32.Dot(q, sc.vecs[i*e.dim:(i+1)*e.dim]) // AVX2 where the CPU has it
	}
	sortBySimDesc(cands)
	return cands, nil
}

// rescoreCandidates keeps the candidates (most similar first, by their int8
// estimate) whose exact similarity can still be among the best k; see
// rescore.
func (g *graph) rescoreCandidates(sc *scratch, cands []candidate, k int) []candidate {
	const z = rescoreZ / 3.4641016 // 6/√12: z·σ = s·z/√12
	lows := sc.lows[:0]
	for _, c := range cands {
		lows = append(lows, c.sim-z*recordScale(g.rec(c.id)))
	}
	sc.lows = lows
	// L, the k-th largest lower end: a min-heap of the k largest seen.
	top := sc.res[:0]
	for i, lo := range lows {
		switch {
		case i < k:
			top.push(candidate{sim: lo})
		case lo > top[0].sim:
			top.pop()
			top.push(candidate{sim: lo})
		}
	}
	sc.res = top
	bound := top[0].sim
	keep := cands[:0]
	for _, c := range cands {
		if c.sim+z*recordScale(g.rec(c.id)) >= bound {
			keep = append(keep, c)
		}
	}
	return keep
}
