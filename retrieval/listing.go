package retrieval

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// ReasonScopeListed says a query of a scope alone (operators or flags, no
// words) was answered with the scope's notes, newest first.
const ReasonScopeListed = "scope_listed"

// listsScope reports whether the query is a scope alone: no words to search.
func listsScope(qs *queryScope, searched string) bool {
	return qs != nil && qs.set != nil && strings.TrimSpace(searched) == ""
}

// listScope answers a scope alone: each note of the scope once (its first
// chunk), the newest first (by the note's own time; unknown times last, then
// by id), at most FusedK. Nothing is ranked by words: there are none.
func (r *Retriever) listScope(ctx context.Context, qs *queryScope, out *schemas.QueryRetrieved, cfg Config) error {
	t := time.Now()
	docs := qs.set.DocIDs()
	var times map[string]time.Time
	if si, ok := qs.raw.(ScopeIndex); ok {
		var err error
		if times, err = si.DocTimes(ctx, docs); err != nil {
			return fmt.Errorf("list the scope: %w", err)
		}
	}
	sort.SliceStable(docs, func(i, j int) bool {
		ti, tj := times[docs[i]], times[docs[j]]
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return docs[i] < docs[j]
	})
	docs = docs[:min(len(docs), cfg.FusedK)]
	first, err := r.Index.FirstChunksOfDocs(ctx, docs)
	if err != nil {
		return fmt.Errorf("list the scope: %w", err)
	}
	ids := make([]string, 0, len(docs))
	for _, d := range docs {
		if id, ok := first[d]; ok && qs.set.HasDoc(d) {
			ids = append(ids, id)
		}
	}
	hits, err := r.Index.Passages(ctx, ids)
	if err != nil {
		return fmt.Errorf("list the scope: %w", err)
	}
	byID := make(map[string]schemas.Passage, len(hits))
	for _, h := range hits {
		byID[h.ChunkID] = passage(h)
	}
	for _, id := range ids {
		if p, ok := byID[id]; ok {
			n := len(out.Candidates) + 1
			out.Candidates = append(out.Candidates, schemas.Candidate{Passage: p, Fused: 1 / (cfg.RRFK + float64(n)), FusedRank: n})
		}
	}
	out.Reasons = append(out.Reasons, fmt.Sprintf("%s: no words to search; the %d newest of the scope's %d notes", ReasonScopeListed, len(out.Candidates), qs.set.Docs()))
	out.TimingsMS["list"] = ms(time.Since(t))
	return nil
}
