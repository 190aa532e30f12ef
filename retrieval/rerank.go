package retrieval

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// ExpansionOrder is the priority of graph edges when neighbours are added:
// the enclosing block first, then referenced blocks, siblings, the next block.
var ExpansionOrder = []string{store.EdgeParent, store.EdgeRef, store.EdgeSibling, store.EdgeNext}

// Rerank runs the second half of a query: the cross-encoder over the fused
// candidates (mode rerank) or their fused order (other modes), the top K, and
// then up to Expand graph neighbours of those contexts.
func (r *Retriever) Rerank(ctx context.Context, rq *schemas.QueryRetrieved) (*schemas.QueryReranked, error) {
	cfg := r.Config.withDefaults()
	out := &schemas.QueryReranked{Query: rq.Query, Searched: rq.Searched, Mode: rq.Mode, Reasons: append([]string(nil), rq.Reasons...),
		TimingsMS: map[string]float64{}, QueryVector: rq.QueryVector, SubmittedAt: rq.SubmittedAt, Facets: rq.Facets}
	out.Lang = langOf(rq.Lang, rq.Question)
	for k, v := range rq.TimingsMS {
		out.TimingsMS[k] = v
	}
	k := cfg.RerankK
	if rq.Options.K > 0 {
		k = rq.Options.K
	}
	ctxs := contextsOf(rq)
	// A scope listed without words (listScope) keeps its newest-first
	// order: the cross-encoder has no question to score against.
	if rq.Mode == schemas.ModeRerank && len(ctxs) > 0 && strings.TrimSpace(rq.Searched) != "" {
		if r.Reranker == nil {
			out.Mode = schemas.ModeHybrid
			out.Reasons = append(out.Reasons, ReasonNoReranker+": this worker has no reranker model; fused order kept")
		} else {
			t := time.Now()
			n, err := r.crossScore(ctx, rq, ctxs, cfg.RerankCandidates)
			if err != nil {
				return nil, err
			}
			out.TimingsMS["rerank"] = ms(time.Since(t))
			if err := r.preferRecent(ctx, rq, ctxs[:n], cfg, out); err != nil {
				return nil, err
			}
		}
	}
	// The ranked candidates below the top k still tell which chunk of a
	// linked note fits the query best (see expand).
	var rest []schemas.Context
	if len(ctxs) > k {
		ctxs, rest = ctxs[:k], ctxs[k:]
	}
	expand := cfg.Expand
	if rq.Options.Expand != 0 {
		expand = rq.Options.Expand
	}
	if expand > 0 && len(ctxs) > 0 && r.Index != nil {
		t := time.Now()
		// A neighbour in a saved report (a report's block references
		// the notes it cites) is left out like any report chunk.
		sr, _, err := r.withScope(ctx, rq.Options)
		if err != nil {
			return nil, fmt.Errorf("query %s: graph expansion: %w", rq.QueryID, err)
		}
		xr, err := sr.withoutReports(ctx, rq.Options.IncludeReports)
		if err != nil {
			return nil, fmt.Errorf("query %s: graph expansion: %w", rq.QueryID, err)
		}
		more, err := xr.expand(ctx, ctxs, rest, expand)
		if err != nil {
			return nil, fmt.Errorf("query %s: graph expansion: %w", rq.QueryID, err)
		}
		ctxs = append(ctxs, more...)
		out.TimingsMS["expand"] = ms(time.Since(t))
	}
	for i := range ctxs {
		ctxs[i].Rank = i + 1
	}
	r.dateContexts(ctx, ctxs)
	out.Contexts = ctxs
	return out, nil
}

// contextsOf turns the retrieved candidates into contexts in fused order,
// leaving out reports' chunks unless the query asked for them.
func contextsOf(rq *schemas.QueryRetrieved) []schemas.Context {
	ctxs := make([]schemas.Context, 0, len(rq.Candidates))
	for _, c := range rq.Candidates {
		if c.Report && !rq.Options.IncludeReports {
			continue // a report's chunk from a retriever that did not leave it out
		}
		// A single retriever's mode scores by that retriever (BM25, the
		// cosine): its fused score would only restate the rank.
		score, source := c.Fused, "fused"
		switch {
		case rq.Mode == schemas.ModeLexical && c.Lexical != nil:
			score, source = c.Lexical.Score, "lexical"
		case rq.Mode == schemas.ModeVector && c.Vector != nil:
			score, source = c.Vector.Score, "vector"
		}
		ctxs = append(ctxs, schemas.Context{Passage: c.Passage, Score: score, Source: source, FusedRank: c.FusedRank,
			Lexical: c.Lexical, Vector: c.Vector})
	}
	return ctxs
}

// crossScore reorders ctxs in place: the best candidates by fused rank
// (at most RerankCandidates; the fused top RerankFloor always) are scored
// by the cross-encoder and sorted by its score; the others keep their
// fused order below. It returns how many it scored.
func (r *Retriever) crossScore(ctx context.Context, rq *schemas.QueryRetrieved, ctxs []schemas.Context, candidates int) (int, error) {
	sort.SliceStable(ctxs, func(i, j int) bool { return fusedBefore(ctxs[i].FusedRank, ctxs[j].FusedRank) })
	n := min(len(ctxs), candidates)
	scored := ctxs[:n]
	texts := make([]string, n)
	for i, c := range scored {
		texts[i] = c.Text
	}
	scores, err := r.Reranker.Score(ctx, rq.Searched, texts)
	if err != nil {
		return 0, fmt.Errorf("query %s: rerank %d candidates with %s: %w", rq.QueryID, len(texts), r.Reranker.Name(), err)
	}
	if len(scores) != n {
		return 0, fmt.Errorf("query %s: rerank with %s: %d scores for %d candidates", rq.QueryID, r.Reranker.Name(), len(scores), n)
	}
	for i := range scored {
		scored[i].Score, scored[i].Source = float64(scores[i]), "rerank"
	}
	sort.SliceStable(scored, func(i, j int) bool {
		if scored[i].Score != scored[j].Score {
			return scored[i].Score > scored[j].Score
		}
		return scored[i].FusedRank < scored[j].FusedRank
	})
	return n, nil
}

// expand adds up to n chunks that neighbour the contexts' blocks, edge kind
// by edge kind in ExpansionOrder, and within a kind by the rank of the
// context they neighbour. A chunk already among the contexts is not added
// again.
//
// A ref whose target is a whole document (a Markdown wikilink, a SiYuan
// document reference) adds that document's chunk ranked best among rest (the
// candidates below the top k), else its first chunk; nothing when one of its
// chunks is already among the contexts.
func (r *Retriever) expand(ctx context.Context, ctxs, rest []schemas.Context, n int) ([]schemas.Context, error) {
	order, refs, err := r.neighbours(ctx, ctxs)
	if err != nil || len(order) == 0 {
		return nil, err
	}
	blocks := make([]string, 0, len(order))
	for _, c := range order {
		blocks = append(blocks, c.block)
	}
	chunkOf, err := r.Index.ChunksOfBlocks(ctx, blocks)
	if err != nil {
		return nil, err
	}
	var firstOf map[string]string
	if len(refs) > 0 {
		if firstOf, err = r.Index.FirstChunksOfDocs(ctx, refs); err != nil {
			return nil, err
		}
	}
	pick, src := pickNeighbours(ctxs, rest, order, chunkOf, firstOf, n)
	hits, err := r.Index.Passages(ctx, pick)
	if err != nil {
		return nil, err
	}
	out := make([]schemas.Context, 0, len(hits))
	for _, h := range hits {
		c := src[h.ChunkID]
		out = append(out, schemas.Context{Passage: passage(h), Source: "graph:" + c.kind, Of: c.of})
	}
	return out, nil
}

// neighbour is a block linked to a context's chunk by an edge of kind.
type neighbour struct {
	block, kind, of string // of: the context's chunk id
}

// neighbours lists the contexts' neighbour blocks by kind in
// ExpansionOrder, then by context, and the blocks referenced (refs: each
// may be a document's id).
func (r *Retriever) neighbours(ctx context.Context, ctxs []schemas.Context) (order []neighbour, refs []string, err error) {
	for _, kind := range ExpansionOrder {
		for _, c := range ctxs {
			for _, b := range edgeSources(c, kind) {
				edges, err := r.Index.Neighbors(ctx, b, kind)
				if err != nil {
					return nil, nil, err
				}
				for _, e := range edges {
					order = append(order, neighbour{block: e.Dst, kind: kind, of: c.ChunkID})
					if kind == store.EdgeRef {
						refs = append(refs, e.Dst)
					}
				}
			}
		}
	}
	return order, refs, nil
}

// edgeSources are the blocks of c whose edges of kind count. The chunk's
// first block stands for it: its parent is the enclosing section; refs
// and the next block come from any block.
func edgeSources(c schemas.Context, kind string) []string {
	blocks := c.BlockIDs
	if len(blocks) == 0 && c.BlockID != "" {
		blocks = []string{c.BlockID}
	}
	if kind == store.EdgeParent || kind == store.EdgeSibling {
		return blocks[:min(1, len(blocks))]
	} else if kind == store.EdgeNext && len(blocks) > 0 {
		return blocks[len(blocks)-1:]
	}
	return blocks
}

// pickNeighbours chooses up to n chunks for the neighbours in order, none
// already among ctxs: a block's chunk (chunkOf), or for a reference to a
// document (firstOf holds its first chunk) the document's best ranked chunk
// below the top k (in rest) or else its first, once per document. src
// tells each picked chunk's neighbour.
func pickNeighbours(ctxs, rest []schemas.Context, order []neighbour, chunkOf, firstOf map[string]string, n int) (pick []string, src map[string]neighbour) {
	have := map[string]bool{}
	haveDoc := map[string]bool{}
	for _, c := range ctxs {
		have[c.ChunkID] = true
		haveDoc[c.DocID] = true
	}
	bestOf := map[string]string{}
	for _, c := range rest {
		if _, ok := bestOf[c.DocID]; !ok && c.DocID != "" {
			bestOf[c.DocID] = c.ChunkID
		}
	}
	src = map[string]neighbour{}
	for _, c := range order {
		id, ok := chunkOf[c.block]
		if first, doc := firstOf[c.block]; doc && c.kind == store.EdgeRef {
			if haveDoc[c.block] {
				continue
			}
			haveDoc[c.block] = true
			id, ok = first, true
			if best, found := bestOf[c.block]; found {
				id = best
			}
		}
		if !ok || have[id] {
			continue
		}
		have[id] = true
		pick = append(pick, id)
		src[id] = c
		if len(pick) == n {
			break
		}
	}
	return pick, src
}

// fusedBefore orders fused ranks, a missing rank (0) last.
func fusedBefore(a, b int) bool {
	if a == 0 || b == 0 {
		return a != 0 && b == 0
	}
	return a < b
}
