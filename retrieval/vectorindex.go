package retrieval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/exocortex/exocortex/analysis"
	"github.com/exocortex/exocortex/lang"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// VectorIndex is the Index of a retrieve worker that has no SQLite file: the
// lexical leg runs on the vector store's sparse vectors (Qdrant: each
// chunk's vectors.LexicalDoc, written by the index stage beside its dense
// vector), and passages come from the points' stored Passage (a
// schemas.Passage as JSON, see EncodePassage). The query is analysed with
// Analyzer, which must be the analysis mode the index stage wrote with (the
// default, analysis.Full).
//
// It has no graph: Neighbors, ChunksOfBlocks and FirstChunksOfDocs return
// nothing, so a rerank over it adds no neighbours.
type VectorIndex struct {
	Store    vectors.LexicalStore
	Analyzer *analysis.Analyzer

	mu      sync.Mutex
	langs   map[string]int
	langsAt time.Time
}

var (
	_ Index       = (*VectorIndex)(nil)
	_ LangCounter = (*VectorIndex)(nil)
)

// ChunkLangs implements LangCounter (the notes' languages decide which
// translations of a question are searched): the points per language the
// chunker tells ("ru", "en"; "" for the rest), re-read at most every
// store.LangsTTL. The map is shared: do not modify it.
func (x *VectorIndex) ChunkLangs(ctx context.Context) (map[string]int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.langs != nil && time.Since(x.langsAt) < store.LangsTTL {
		return x.langs, nil
	}
	total, err := x.Store.CountWhere(ctx, vectors.Filter{})
	if err != nil {
		return nil, fmt.Errorf("count chunk languages: %w", err)
	}
	n := map[string]int{}
	rest := total
	for _, l := range []string{lang.LangRussian, lang.LangEnglish} {
		k, err := x.Store.CountWhere(ctx, vectors.Filter{Lang: l})
		if err != nil {
			return nil, fmt.Errorf("count chunk languages: %w", err)
		}
		if k > 0 {
			n[l] = k
		}
		rest -= k
	}
	if rest > 0 {
		n[""] = rest
	}
	x.langs, x.langsAt = n, time.Now()
	return n, nil
}

// SetLexical gives p the lexical vector and passage of the chunk hit (a
// store.Passages row), analysed with a (the index's analyzer): the words
// and lemmas of its text, of its document's title and labels
// (hit.IndexTitle) and of its section path, as the full-text index holds
// them. The index stage and exocortex check --repair write points with it.
func SetLexical(p *vectors.Point, a *analysis.Analyzer, hit store.Hit) error {
	title := hit.IndexTitle
	if title == "" {
		title = hit.Title
	}
	p.Sparse = vectors.LexicalDoc(a, vectors.LexicalFields{Text: hit.Text, Title: title, Section: hit.SectionPath})
	var err error
	p.Passage, err = EncodePassage(hit)
	return err
}

// LexicalRefresher is a vector store that rewrites its stored points'
// lexical vectors and passages in place, keeping their dense vectors
// (vectors.Qdrant). fill sets a point's new fields and says whether to
// rewrite it.
type LexicalRefresher interface {
	RefreshLexical(ctx context.Context, ids []string, fill func(p *vectors.Point) bool) (int, error)
}

// PassageSource is what a point's lexical vector and passage are made from
// (*store.Store).
type PassageSource interface {
	Passages(ctx context.Context, ids []string) ([]store.Hit, error)
	Analyzer() *analysis.Analyzer
}

// RefreshLexical rewrites the lexical vectors and passages (SetLexical) of
// the points of ids that r holds, from src's passages; a point whose chunk
// src does not hold is left as it is. It returns how many points were
// rewritten. The index stage calls it when a document's structure changes,
// exocortex check --repair for points of an older lexical format.
func RefreshLexical(ctx context.Context, r LexicalRefresher, src PassageSource, ids []string) (int, error) {
	hits, err := src.Passages(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("passages of %d chunks (first %s): %w", len(ids), ids[0], err)
	}
	byID := make(map[string]store.Hit, len(hits))
	for _, h := range hits {
		byID[h.ChunkID] = h
	}
	a := src.Analyzer()
	metas, err := docMetas(ctx, src, hits)
	if err != nil {
		return 0, err
	}
	var encErr error
	n, err := r.RefreshLexical(ctx, ids, func(p *vectors.Point) bool {
		hit, ok := byID[p.ID]
		if !ok {
			return false
		}
		if err := SetLexical(p, a, hit); err != nil {
			encErr = err
			return false
		}
		p.Meta = metas[hit.DocID]
		return true
	})
	return n, errors.Join(err, encErr)
}

// MetaSource tells the scope fields of documents (*store.Store): what a
// point's Meta is made of (PointMetaOf).
type MetaSource interface {
	DocScopes(ctx context.Context, docIDs []string) (map[string]store.DocScope, error)
}

// SetMeta gives each point the metadata of its document (PointMetaOf), so
// a vector store with payloads (Qdrant) filters scopes on them. The index
// stage calls it before an upsert; RefreshLexical (and so check --repair,
// for points of an older LexicalFormat) rewrites it with the lexical
// fields. A source that is not a MetaSource leaves the points as they are.
func SetMeta(ctx context.Context, src any, pts []vectors.Point) error {
	ms, ok := src.(MetaSource)
	if !ok || len(pts) == 0 {
		return nil
	}
	var docs []string
	seen := map[string]bool{}
	for _, p := range pts {
		if !seen[p.DocID] {
			seen[p.DocID] = true
			docs = append(docs, p.DocID)
		}
	}
	scopes, err := ms.DocScopes(ctx, docs)
	if err != nil {
		return fmt.Errorf("metadata of %d documents for their vector points: %w", len(docs), err)
	}
	for i := range pts {
		if d, ok := scopes[pts[i].DocID]; ok {
			pts[i].Meta = PointMetaOf(d)
		}
	}
	return nil
}

// docMetas are the points' metadata of the hits' documents (none when src
// is not a MetaSource).
func docMetas(ctx context.Context, src any, hits []store.Hit) (map[string]vectors.PointMeta, error) {
	ms, ok := src.(MetaSource)
	if !ok {
		return nil, nil
	}
	var docs []string
	for _, h := range hits {
		docs = append(docs, h.DocID)
	}
	scopes, err := ms.DocScopes(ctx, docs)
	if err != nil {
		return nil, fmt.Errorf("metadata of %d documents: %w", len(docs), err)
	}
	out := make(map[string]vectors.PointMeta, len(scopes))
	for id, d := range scopes {
		out[id] = PointMetaOf(d)
	}
	return out, nil
}

// EncodePassage is the Passage the index stage stores with a chunk's point.
func EncodePassage(h store.Hit) (string, error) {
	b, err := json.Marshal(passage(h))
	if err != nil {
		return "", fmt.Errorf("encode the passage of chunk %s: %w", h.ChunkID, err)
	}
	return string(b), nil
}

func decodePassage(id, s string) (store.Hit, error) {
	var p schemas.Passage
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return store.Hit{}, fmt.Errorf("decode the stored passage of chunk %s: %w", id, err)
	}
	return store.Hit{ChunkID: p.ChunkID, DocID: p.DocID, Title: p.Title, Path: p.Path, SectionPath: p.SectionPath,
		BlockID: p.BlockID, BlockIDs: p.BlockIDs, BlockSpans: p.BlockSpans, Lang: p.Lang, Text: p.Text,
		Report: p.Report}, nil
}

// Search implements Index: the BM25-like sparse search of the vector store.
// A point without a stored passage is left out (it cannot be shown); no
// snippets are made (the retrieve stage asks for none).
func (x *VectorIndex) Search(ctx context.Context, query string, opts store.SearchOptions) ([]store.Hit, error) {
	return x.search(ctx, query, opts, nil)
}

// search is Search within a scope's payload conditions (meta; nil: none).
func (x *VectorIndex) search(ctx context.Context, query string, opts store.SearchOptions, meta *vectors.MetaFilter) ([]store.Hit, error) {
	k := opts.K
	if k <= 0 {
		k = store.DefaultK
	}
	k = min(k, store.MaxK)
	q := vectors.LexicalQuery(x.Analyzer.Query(query))
	if q.Empty() {
		return nil, nil
	}
	res, err := x.Store.SearchLexical(ctx, q, vectors.SearchOptions{K: k, Filter: vectors.Filter{Lang: opts.Lang, Meta: meta}})
	if err != nil {
		return nil, fmt.Errorf("search %q on %s: %w", query, x.Store.Name(), err)
	}
	hits := make([]store.Hit, 0, len(res))
	for _, r := range res {
		if r.Passage == "" {
			continue
		}
		h, err := decodePassage(r.ID, r.Passage)
		if err != nil {
			return nil, err
		}
		h.Score = float64(r.Score)
		hits = append(hits, h)
	}
	return hits, nil
}

// Passages implements Index, in the order of ids; ids without a stored
// passage are left out.
func (x *VectorIndex) Passages(ctx context.Context, ids []string) ([]store.Hit, error) {
	got, err := x.Store.Passages(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("passages: %w", err)
	}
	hits := make([]store.Hit, 0, len(got))
	for _, id := range ids {
		s, ok := got[id]
		if !ok {
			continue
		}
		h, err := decodePassage(id, s)
		if err != nil {
			return nil, err
		}
		hits = append(hits, h)
	}
	return hits, nil
}

// Neighbors implements Index: no graph here.
func (x *VectorIndex) Neighbors(context.Context, string, ...string) ([]store.Edge, error) {
	return nil, nil
}

// ChunksOfBlocks implements Index: no graph here.
func (x *VectorIndex) ChunksOfBlocks(context.Context, []string) (map[string]string, error) {
	return map[string]string{}, nil
}

// FirstChunksOfDocs implements Index: no graph here.
func (x *VectorIndex) FirstChunksOfDocs(context.Context, []string) (map[string]string, error) {
	return map[string]string{}, nil
}
