package retrieval

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
)

// Searcher runs whole queries in one mode and returns the ranked passages as
// store hits, so evaluation and the CLI treat every mode alike.
type Searcher struct {
	R    *Retriever
	Mode string
	// Expand adds graph neighbours after the ranked list (eval leaves it 0:
	// neighbours are context for an answer, not ranked results).
	Expand bool
	// IncludeReports searches saved research reports too (left out by
	// default; see QueryOptions.IncludeReports).
	IncludeReports bool
	// Scope narrows every search (nil: every note); see QueryOptions.Scope.
	Scope *schemas.Scope
	// LastMode and LastReasons describe the most recent query (the mode can
	// be lower than asked when a model is missing).
	LastMode    string
	LastReasons []string
	seq         atomic.Int64
}

// Search ranks passages for query. In rerank mode the cross-encoder orders
// the fused candidates and opts.K of them are kept; in the other modes the
// fused (or single-retriever) order is the ranking.
func (s *Searcher) Search(ctx context.Context, query string, opts store.SearchOptions) ([]store.Hit, error) {
	k := opts.K
	if k <= 0 {
		k = 10
	}
	expand := -1
	if s.Expand {
		expand = 0
	}
	q := &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprintf("search-%d", s.seq.Add(1)), Question: query,
		Options: schemas.QueryOptions{Mode: s.Mode, K: k, Lang: opts.Lang, Expand: expand, IncludeReports: s.IncludeReports, Scope: s.Scope}}}
	cfg := s.R.Config.withDefaults()
	if k > cfg.FusedK {
		// A caller that wants more than the fused list holds widens it.
		r := *s.R
		r.Config = cfg
		r.Config.FusedK = k
		return (&Searcher{R: &r, Mode: s.Mode, Expand: s.Expand, IncludeReports: s.IncludeReports, Scope: s.Scope}).Search(ctx, query, opts)
	}
	rq, err := s.R.Retrieve(ctx, q)
	if err != nil {
		return nil, err
	}
	rr, err := s.R.Rerank(ctx, rq)
	if err != nil {
		return nil, err
	}
	s.LastMode, s.LastReasons = rr.Mode, rr.Reasons
	hits := make([]store.Hit, 0, len(rr.Contexts))
	for _, c := range rr.Contexts {
		hits = append(hits, store.Hit{ChunkID: c.ChunkID, DocID: c.DocID, Title: c.Title, Path: c.Path,
			SectionPath: c.SectionPath, BlockID: c.BlockID, BlockIDs: c.BlockIDs, BlockSpans: c.BlockSpans,
			Lang: c.Lang, Score: c.Score, Text: c.Text, Report: c.Report})
	}
	return hits, nil
}
