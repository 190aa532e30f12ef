package retrieval

import (
	"context"
	"fmt"
	"time"

	"github.com/exocortex/exocortex/schemas"
)

// Faceter counts documents by notebook, tag and month (*store.Store): the
// retrieve stage's facets of a query's candidates.
type Faceter interface {
	FacetsOfDocs(ctx context.Context, docIDs []string) (*schemas.Facets, error)
}

// DocTimer gives documents' own times (*store.Store): the rerank stage
// dates the final contexts with it.
type DocTimer interface {
	DocTimes(ctx context.Context, docIDs []string) (map[string]time.Time, error)
}

// baseIndex is the store under the retriever's wrappers (the one that
// leaves saved reports out).
func baseIndex(ix Index) Index {
	if w, ok := ix.(*noReportsIndex); ok {
		return w.Index
	}
	return ix
}

// addFacets counts the documents of out's fused candidates (all of them,
// up to FusedK, not only the k a rerank keeps) when the query asked for
// facets and the index can count them; Facets stays nil otherwise.
func (r *Retriever) addFacets(ctx context.Context, out *schemas.QueryRetrieved) error {
	f, ok := baseIndex(r.Index).(Faceter)
	if !out.Options.Facets || !ok {
		return nil
	}
	t := time.Now()
	docs := make([]string, 0, len(out.Candidates))
	for _, c := range out.Candidates {
		docs = append(docs, c.DocID)
	}
	fc, err := f.FacetsOfDocs(ctx, docs)
	if err != nil {
		return fmt.Errorf("query %s: %w", out.QueryID, err)
	}
	out.Facets = fc
	out.TimingsMS["facets"] = ms(time.Since(t))
	return nil
}

// dateContexts sets each context's Updated to its note's own time, when
// the index knows it: answers and reports show each source's date. A
// failure leaves them undated (a date is shown, never needed).
func (r *Retriever) dateContexts(ctx context.Context, ctxs []schemas.Context) {
	dt, ok := baseIndex(r.Index).(DocTimer)
	if !ok || len(ctxs) == 0 {
		return
	}
	var docs []string
	seen := map[string]bool{}
	for _, c := range ctxs {
		if c.DocID != "" && !seen[c.DocID] {
			seen[c.DocID] = true
			docs = append(docs, c.DocID)
		}
	}
	times, err := dt.DocTimes(ctx, docs)
	if err != nil {
		return
	}
	for i := range ctxs {
		if t, ok := times[ctxs[i].DocID]; ok && ctxs[i].Updated == "" {
			ctxs[i].Updated = t.UTC().Format(time.RFC3339)
		}
	}
}
