package retrieval

import (
	"context"
	"fmt"

	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// Saved research reports (documents marked by `research --save`, see
// schemas.IsReportMeta) are left out of retrieval unless a query's
// Options.IncludeReports asks for them: a report quotes the notes it
// cites, and its copy must never be cited instead of the note.
//
// The filter runs inside each retriever call, not after fusion: every
// lexical search (the question's and its translations'), the vector search
// and the passages of vector-only candidates and graph neighbours drop the
// chunks of report documents. So that a search still returns as many
// results as asked, each search asks its retriever for as many more
// candidates as the index holds report chunks (ReportLister; the exact
// number that can be dropped), then keeps the first K of the rest. An index
// that cannot list its reports (VectorIndex, a retrieve worker without the
// SQLite file) still drops every hit whose passage is flagged as a report
// (store.Hit.Report), without the over-fetch.

// ReportLister is an Index that knows the saved research reports: each
// report document's id and its number of chunks (*store.Store).
type ReportLister interface {
	ReportDocs(ctx context.Context) (map[string]int, error)
}

// reportFilter is what a query leaves out.
type reportFilter struct {
	docs  map[string]int // report document -> its chunks
	extra int            // report chunks in all: the over-fetch
}

func (f *reportFilter) drop(docID string, flagged bool) bool {
	if flagged {
		return true
	}
	_, ok := f.docs[docID]
	return ok
}

// withoutReports is the retriever a query runs on: r itself when the query
// includes reports, else a copy whose index and vector store leave the
// reports out (see above).
func (r *Retriever) withoutReports(ctx context.Context, include bool) (*Retriever, error) {
	if include || r.Index == nil {
		return r, nil
	}
	f := &reportFilter{}
	if rl, ok := r.Index.(ReportLister); ok {
		docs, err := rl.ReportDocs(ctx)
		if err != nil {
			return nil, fmt.Errorf("leaving saved reports out: %w", err)
		}
		f.docs = docs
		for _, n := range docs {
			f.extra += n
		}
	}
	out := *r
	out.Index = &noReportsIndex{Index: r.Index, f: f}
	if r.Vectors != nil && len(f.docs) > 0 {
		out.Vectors = &noReportsVectors{Store: r.Vectors, f: f}
	}
	return &out, nil
}

// noReportsIndex is an Index that leaves report chunks out.
type noReportsIndex struct {
	Index
	f *reportFilter
}

func (x *noReportsIndex) keep(hits []store.Hit, k int) []store.Hit {
	out := hits[:0]
	for _, h := range hits {
		if !x.f.drop(h.DocID, h.Report) {
			out = append(out, h)
		}
	}
	if k > 0 && len(out) > k {
		out = out[:k]
	}
	return out
}

// Search asks for K plus the report chunks, then keeps K of the others.
func (x *noReportsIndex) Search(ctx context.Context, query string, opts store.SearchOptions) ([]store.Hit, error) {
	k := opts.K
	if k <= 0 {
		k = store.DefaultK
	}
	opts.K = min(k+x.f.extra, store.MaxK)
	hits, err := x.Index.Search(ctx, query, opts)
	if err != nil {
		return nil, err
	}
	return x.keep(hits, k), nil
}

// Passages leaves report chunks out (a vector-only candidate, a neighbour).
func (x *noReportsIndex) Passages(ctx context.Context, ids []string) ([]store.Hit, error) {
	hits, err := x.Index.Passages(ctx, ids)
	if err != nil {
		return nil, err
	}
	return x.keep(hits, 0), nil
}

// ChunkLangs passes LangCounter through (nothing when the index has none,
// as for an index that is not a LangCounter).
func (x *noReportsIndex) ChunkLangs(ctx context.Context) (map[string]int, error) {
	if lc, ok := x.Index.(LangCounter); ok {
		return lc.ChunkLangs(ctx)
	}
	return nil, nil
}

// noReportsVectors is a vector store whose searches leave the report
// documents' points out.
type noReportsVectors struct {
	vectors.Store
	f *reportFilter
}

// Search asks for K plus the report chunks, then keeps K of the others.
func (v *noReportsVectors) Search(ctx context.Context, q []float32, opts vectors.SearchOptions) ([]vectors.Result, error) {
	k := opts.K
	if k <= 0 {
		k = vectors.DefaultK
	}
	opts.K = k + v.f.extra
	res, err := v.Store.Search(ctx, q, opts)
	if err != nil {
		return nil, err
	}
	out := res[:0]
	for _, r := range res {
		if !v.f.drop(r.DocID, false) {
			out = append(out, r)
		}
	}
	if len(out) > k {
		out = out[:k]
	}
	return out, nil
}
