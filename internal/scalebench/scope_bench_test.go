package scalebench

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/exocortex/exocortex/eval"
	"github.com/exocortex/exocortex/internal/synth"
	"github.com/exocortex/exocortex/lexical"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// Scoped search (issue 29): each of Scopes resolved the way the retriever
// will (store.AllowedChunks, then a lexical.Allow over the allowed rowids
// and one vectors.IDSet of their chunk ids), then lexical, vector and
// fused searches within it, each beside the same path unscoped, with
// recall@10 against brute force over the scope.

// chunkRows maps the store's chunk rowids to chunk ids (read once, apart
// from the store: no store call lists rowids).
type chunkRows struct {
	rowids []int64  // ascending
	byRow  []string // chunk id by rowid ("" for none)
}

func readChunkRows(path string) (*chunkRows, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return nil, fmt.Errorf("chunk rowids: %w", err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, chunk_id FROM chunks ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("chunk rowids: %w", err)
	}
	defer rows.Close()
	cr := &chunkRows{}
	for rows.Next() {
		var id int64
		var chunk string
		if err := rows.Scan(&id, &chunk); err != nil {
			return nil, fmt.Errorf("chunk rowids: %w", err)
		}
		cr.rowids = append(cr.rowids, id)
		for int64(len(cr.byRow)) <= id {
			cr.byRow = append(cr.byRow, "")
		}
		cr.byRow[id] = chunk
	}
	return cr, rows.Err()
}

// bruteLex is the brute force of Store.Search's memory engine: the whole
// match list of the store's own query (Store.LexicalQuery), filtered after
// ranking by the generator's metadata (want), never by the store's set.
type bruteLex struct {
	st   *store.Store
	idx  *lexical.Index
	rows *chunkRows
}

func newBruteLex(ctx context.Context, st *store.Store, rows *chunkRows) (*bruteLex, error) {
	idx, err := st.LexicalIndex(ctx)
	if err != nil {
		return nil, err
	}
	return &bruteLex{st: st, idx: idx, rows: rows}, nil
}

// top is the first k chunk ids of the full ranking that want keeps (nil:
// all), with their scores.
func (x *bruteLex) top(ctx context.Context, text string, k int, lang string, want func(id string) bool) ([]string, []float64, error) {
	q, w, err := x.st.LexicalQuery(ctx, x.idx, text, store.SearchOptions{})
	if err != nil {
		return nil, nil, err
	}
	var ids []string
	var scores []float64
	for _, h := range x.idx.SearchWith(q, len(x.rows.rowids), w, lexical.SearchOptions{Lang: lang}) {
		if id := x.rows.byRow[h.ID]; want == nil || want(id) {
			ids, scores = append(ids, id), append(scores, h.Score)
			if len(ids) == k {
				break
			}
		}
	}
	return ids, scores, nil
}

// exactIndex is the store as the retriever's Index with its lexical search
// replaced by the brute force within want (the fused rows' truth).
type exactIndex struct {
	*store.Store
	lex  *bruteLex
	want func(id string) bool
}

func (x *exactIndex) Search(ctx context.Context, query string, opts store.SearchOptions) ([]store.Hit, error) {
	ids, scores, err := x.lex.top(ctx, query, max(opts.K, 1), opts.Lang, x.want)
	if err != nil {
		return nil, err
	}
	hits, err := x.Store.Passages(ctx, ids)
	if err != nil {
		return nil, err
	}
	score := make(map[string]float64, len(ids))
	for i, id := range ids {
		score[id] = scores[i]
	}
	for i := range hits {
		hits[i].Score = score[hits[i].ChunkID]
	}
	return hits, nil
}

// scopedVectors searches within ids (Filter.IDs), as the retriever will.
type scopedVectors struct {
	vectors.Store
	ids *vectors.IDSet
}

func (v scopedVectors) Search(ctx context.Context, q []float32, o vectors.SearchOptions) ([]vectors.Result, error) {
	o.Filter.IDs = v.ids
	return v.Store.Search(ctx, q, o)
}

// exactVectors is the brute force over a scope's points (float32 cosine).
type exactVectors struct {
	vectors.Store
	ids   []string
	mat   []float32 // len(ids) rows of Dim
	norms []float32
}

func newExactVectors(base vectors.Store, vg *Vectors, ids []string) *exactVectors {
	e := &exactVectors{Store: base, ids: ids, mat: make([]float32, len(ids)*Dim), norms: make([]float32, len(ids))}
	for j, id := range ids {
		row := e.mat[j*Dim : (j+1)*Dim]
		vg.Vector(ChunkIndex(id), row)
		var s float64
		for _, x := range row {
			s += float64(x) * float64(x)
		}
		e.norms[j] = float32(math.Sqrt(s))
	}
	return e
}

func (e *exactVectors) Search(_ context.Context, q []float32, o vectors.SearchOptions) ([]vectors.Result, error) {
	var qn float64
	for _, x := range q {
		qn += float64(x) * float64(x)
	}
	res := make([]vectors.Result, len(e.ids))
	for j := range e.ids {
		row := e.mat[j*Dim : (j+1)*Dim]
		var d float32
		for i, x := range q {
			d += x * row[i]
		}
		res[j] = vectors.Result{ID: e.ids[j], Score: d / (e.norms[j] * float32(math.Sqrt(qn)))}
	}
	sort.Slice(res, func(a, b int) bool {
		if res[a].Score != res[b].Score {
			return res[a].Score > res[b].Score
		}
		return res[a].ID < res[b].ID
	})
	return res[:min(max(o.K, 1), len(res))], nil
}

// resolvedScope is a scope resolved to the engines' sets as the retriever
// resolves it: the store's cached chunk set, its lexical Allow and its
// vector IDSet (retrieval.ScopeIDSet, kept with the set).
type resolvedScope struct {
	Scope
	set  *store.ChunkSet // nil: unscoped
	ids  *vectors.IDSet
	list []string // the chunk ids the generator's metadata puts in it, in order
	note string
}

// want reports whether chunk id is in the scope by the generator's
// metadata (nil: unscoped).
func (s *resolvedScope) want(c *Corpus) func(id string) bool {
	if s.Want == nil {
		return nil
	}
	return func(id string) bool { return s.Want(c, ChunkIndex(id)) }
}

// resolveScope resolves sc as the retriever does, times each step and the
// per-query lookup that follows (AllowedChunks again: the cached set), and
// checks the set's size against the generator's metadata.
func resolveScope(b *testing.B, env *Env, sc Scope) *resolvedScope {
	ctx := context.Background()
	t0 := time.Now()
	cs, err := env.Store.AllowedChunks(ctx, sc.Filter)
	if err != nil {
		b.Fatalf("scope %s: %v", sc.Name, err)
	}
	t1 := time.Now()
	cs.Allow()
	t2 := time.Now()
	ids := retrieval.ScopeIDSet(cs)
	t3 := time.Now()
	var again []float64
	for range 200 {
		t := time.Now()
		if c2, err := env.Store.AllowedChunks(ctx, sc.Filter); err != nil || c2 != cs {
			b.Fatalf("scope %s: AllowedChunks again gave another set (%v): the per-filter cache is not kept", sc.Name, err)
		}
		again = append(again, since(t))
	}
	r := &resolvedScope{Scope: sc, set: cs, ids: ids}
	for i := range env.Corpus.cfg.Chunks {
		if sc.Want(env.Corpus, i) {
			r.list = append(r.list, fmt.Sprintf("c%07d", i))
		}
	}
	if cs.Len() != len(r.list) {
		b.Fatalf("scope %s: AllowedChunks holds %d chunks, the metadata %d", sc.Name, cs.Len(), len(r.list))
	}
	p50, p95 := pcts(again)
	r.note = fmt.Sprintf("%d chunks (%.2f%%); once per scope and index version: AllowedChunks %.2f ms, lexical.Allow %.2f ms, IDSet %.2f ms; per query after: AllowedChunks (cached set) p50 %.3f ms, p95 %.3f ms",
		len(r.list), 100*float64(len(r.list))/float64(env.Corpus.cfg.Chunks), ms(t1.Sub(t0)), ms(t2.Sub(t1)), ms(t3.Sub(t2)), p50, p95)
	b.Logf("scope %s: %s", sc.Name, r.note)
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measureScoped adds the scoped rows: per scope its resolution, then
// lexical, vector and fused within it, beside the same paths unscoped, and
// the fake Qdrant's scoped vector rows.
func measureScoped(b *testing.B, env *Env, qs []eval.Question, vg *Vectors, warm, vqs [][]float32) []Row {
	ctx := context.Background()
	rows, err := readChunkRows(StorePath(env.Dir))
	if err != nil {
		b.Fatal(err)
	}
	lex, err := newBruteLex(ctx, env.Store, rows)
	if err != nil {
		b.Fatal(err)
	}
	// The first AllowedChunks after opening reads the catalog.
	t0 := time.Now()
	if _, err := env.Store.AllowedChunks(ctx, store.DocFilter{Langs: []string{"no such language"}}); err != nil {
		b.Fatal(err)
	}
	catalog := ms(time.Since(t0))
	b.Logf("scope catalog read in %.0f ms", catalog)
	out := []Row{{Measure: "scope setup", Engine: "catalog", P50MS: catalog, P95MS: catalog, Queries: 1,
		Note: "the first store.AllowedChunks after opening: reads the documents, tags and chunks into the in-memory catalog (again whenever the index changes)"}}
	all := &resolvedScope{Scope: Scope{Name: "all"}, list: allIDs(rows)}
	scopes := []*resolvedScope{all}
	for _, sc := range Scopes {
		scopes = append(scopes, resolveScope(b, env, sc))
	}
	nt := min(len(qs), 100)
	for _, s := range scopes {
		out = append(out, measureScopedLexical(b, env, lex, s, qs, nt))
	}
	for _, s := range scopes {
		vrow, first := measureScopedVector(b, env, vg, s, warm, vqs, min(len(vqs), 100))
		if s == all {
			out = append(out, vrow)
			continue
		}
		setup := Row{Measure: "scope setup", Engine: s.Name, Queries: 1, Note: s.note}
		setup.P50MS = first
		setup.P95MS = first
		setup.Note += fmt.Sprintf("; p50/p95 here: the first vector search with the fresh IDSet (it resolves the documents to nodes once, then memoises), %.2f ms", first)
		out = append(out, setup, vrow)
	}
	for _, s := range scopes {
		out = append(out, measureScopedFused(b, env, lex, vg, s, qs, nt))
	}
	if n := envInt("EXOCORTEX_SCALE_QDRANT_POINTS", 20_000); n > 0 {
		out = append(out, measureQdrantScoped(b, env, vg, scopes, vqs[:min(len(vqs), 100)], min(n, env.Corpus.cfg.Chunks))...)
	}
	return out
}

func allIDs(rows *chunkRows) []string {
	ids := make([]string, len(rows.rowids))
	for i, id := range rows.rowids {
		ids[i] = rows.byRow[id]
	}
	return ids
}

// overlap is recall's numerator and denominator: got's ids among want's.
func overlap(got, want []string) (found, n int) {
	for _, id := range got {
		if slices.Contains(want, id) {
			found++
		}
	}
	return found, len(want)
}

// measureScopedLexical measures Store.Search with the scope's chunk set
// (SearchOptions.Chunks, the production path); recall@10 against the
// brute force over the scope for the first nt questions, and every hit is
// checked against the generator's metadata.
func measureScopedLexical(b *testing.B, env *Env, lex *bruteLex, s *resolvedScope, qs []eval.Question, nt int) Row {
	ctx := context.Background()
	opts := store.SearchOptions{K: 10, Chunks: s.set, SnippetTokens: -1}
	for _, q := range qs[:min(20, len(qs))] {
		if _, err := env.Store.Search(ctx, q.Question, opts); err != nil {
			b.Fatal(err)
		}
	}
	want := s.want(env.Corpus)
	var lat []float64
	got := make([][]string, len(qs))
	for j, q := range qs {
		t := time.Now()
		hits, err := env.Store.Search(ctx, q.Question, opts)
		if err != nil {
			b.Fatalf("scoped lexical %s: %v", s.Name, err)
		}
		lat = append(lat, since(t))
		for _, h := range hits {
			if want != nil && !want(h.ChunkID) {
				b.Fatalf("scoped lexical %s: %q found %s, outside the scope", s.Name, q.Question, h.ChunkID)
			}
			got[j] = append(got[j], h.ChunkID)
		}
	}
	var found, n, short int
	for j, q := range qs[:nt] {
		truth, _, err := lex.top(ctx, q.Question, 10, "", want)
		if err != nil {
			b.Fatal(err)
		}
		f, m := overlap(got[j], truth)
		found, n = found+f, n+m
		if len(got[j]) < len(truth) {
			short++
		}
	}
	row := Row{Measure: "scoped lexical", Engine: "memory, " + s.Name, Queries: len(qs),
		Note: fmt.Sprintf("Store.Search with SearchOptions.Chunks (the scope's cached ChunkSet), k=10; recall against the brute force (the store's query over every row, filtered by the generator's metadata) for %d questions, %d of them got fewer hits", nt, short)}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall = float64(found) / float64(max(n, 1))
	b.Logf("scoped lexical %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f, short %d", s.Name, row.P50MS, row.P95MS, row.Recall, short)
	return row
}

// measureScopedVector measures the embedded HNSW within s at the default
// ef; first is the first search's time with the fresh IDSet (its
// resolution).
func measureScopedVector(b *testing.B, env *Env, vg *Vectors, s *resolvedScope, warm, qs [][]float32, nt int) (Row, float64) {
	ctx := context.Background()
	v := scopedVectors{Store: env.Vectors, ids: s.ids}
	opts := vectors.SearchOptions{K: 10}
	t := time.Now()
	if _, err := v.Search(ctx, warm[0], opts); err != nil {
		b.Fatalf("scoped vector %s: %v", s.Name, err)
	}
	first := since(t)
	for _, q := range warm[1:] {
		if _, err := v.Search(ctx, q, opts); err != nil {
			b.Fatal(err)
		}
	}
	// As the unscoped vector row: a first pass of the queries, then the
	// second pass measured, so that both compare searches over warm pages.
	var firstPass []float64
	for _, q := range qs {
		t := time.Now()
		if _, err := v.Search(ctx, q, opts); err != nil {
			b.Fatal(err)
		}
		firstPass = append(firstPass, since(t))
	}
	p50, p95 := pcts(firstPass)
	b.Logf("scoped vector %s, first pass: p50 %.2f ms, p95 %.2f ms", s.Name, p50, p95)
	t0 := time.Now()
	exact := synth.ExactTopK(len(s.list), Dim, func(j int, dst []float32) { vg.Vector(ChunkIndex(s.list[j]), dst) }, qs[:nt], 10)
	b.Logf("exact vector top-10 over scope %s for %d queries in %s", s.Name, nt, time.Since(t0).Round(time.Millisecond))
	var lat []float64
	var found, want, short int
	for j, q := range qs {
		t := time.Now()
		res, err := v.Search(ctx, q, opts)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, since(t))
		if len(res) < min(10, len(s.list)) {
			short++
		}
		if j < nt {
			var truth []string
			for _, nb := range exact[j] {
				truth = append(truth, s.list[nb.ID])
			}
			ids := make([]string, len(res))
			for i, r := range res {
				ids[i] = r.ID
			}
			f, n := overlap(ids, truth)
			found, want = found+f, want+n
		}
	}
	row := Row{Measure: "scoped vector", Engine: "embedded-hnsw, " + s.Name, Queries: len(qs),
		Note: fmt.Sprintf("vectors.Embedded with Filter.IDs (retrieval.ScopeIDSet: one IDSet of documents per scope, resolved at its first search; none for all), default ef (64), k=10, the second pass of the queries (first pass p50 %.2f, p95 %.2f ms); recall against the exact float32 top-10 over the scope's points (%d queries); %d of %d searches returned fewer than k", p50, p95, nt, short, len(qs))}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall = float64(found) / float64(max(want, 1))
	b.Logf("scoped vector %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f, first %.2f ms, short %d", s.Name, row.P50MS, row.P95MS, row.Recall, first, short)
	return row, first
}

// measureScopedFused runs the retriever on the real store and vectors
// with QueryOptions.Scope (withScope: the cached ChunkSet, Store.Search
// with Chunks, the ladder's vector searches with its IDSet; its own
// fusion: RRF of BM25 top-200 and vector top-200 to 80). Recall: the
// top-10's share of the same retriever's over brute-force scoped lists.
// The note gives the stages' p95 (the retriever's TimingsMS).
func measureScopedFused(b *testing.B, env *Env, lex *bruteLex, vg *Vectors, s *resolvedScope, qs []eval.Question, nt int) Row {
	ctx := context.Background()
	var scope *schemas.Scope
	if s.Want != nil {
		scope = &s.Query
	}
	stages := map[string][]float64{}
	widened := 0 // the ef ladder's extra vector searches
	retrieve := func(r *retrieval.Retriever, i int, text string, scope *schemas.Scope) []string {
		out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprint(i), Question: text,
			Options: schemas.QueryOptions{Mode: schemas.ModeHybrid, Scope: scope}}})
		if err != nil {
			b.Fatalf("scoped fused %s: %v", s.Name, err)
		}
		for k, v := range out.TimingsMS {
			stages[k] = append(stages[k], v)
		}
		for _, reason := range out.Reasons {
			if strings.HasPrefix(reason, retrieval.ReasonWidened) {
				widened++
			}
		}
		var ids []string
		for _, c := range out.Candidates[:min(10, len(out.Candidates))] {
			ids = append(ids, c.ChunkID)
		}
		return ids
	}
	r := &retrieval.Retriever{Index: env.Store, Vectors: env.Vectors, Embedder: env.Embedder}
	var lat []float64
	got := make([][]string, len(qs))
	want := s.want(env.Corpus)
	for i, q := range qs {
		t := time.Now()
		got[i] = retrieve(r, i, q.Question, scope)
		lat = append(lat, since(t))
		for _, id := range got[i] {
			if want != nil && !want(id) {
				b.Fatalf("scoped fused %s: %q found %s, outside the scope", s.Name, q.Question, id)
			}
		}
	}
	var parts []string
	for _, k := range []string{"scope", "lexical", "embed", "vector", "fuse"} {
		if v := stages[k]; len(v) > 0 {
			_, p95 := pcts(v)
			parts = append(parts, fmt.Sprintf("%s %.2f", k, p95))
		}
	}
	parts = append(parts, fmt.Sprintf("ef ladder rungs past the first %.2f per query", float64(widened)/float64(len(qs))))
	t0 := time.Now()
	exact := &retrieval.Retriever{Index: &exactIndex{Store: env.Store, lex: lex, want: want},
		Vectors: newExactVectors(env.Vectors, vg, s.list), Embedder: env.Embedder}
	var found, n int
	for i, q := range qs[:nt] {
		f, m := overlap(got[i], retrieve(exact, i, q.Question, nil))
		found, n = found+f, n+m
	}
	b.Logf("exact fused over scope %s for %d questions in %s", s.Name, nt, time.Since(t0).Round(time.Millisecond))
	row := Row{Measure: "scoped fused", Engine: "bm25+hnsw rrf, " + s.Name, Queries: len(qs),
		Note: fmt.Sprintf("Retriever.Retrieve on the store and embedded vectors with QueryOptions.Scope (its own RRF: BM25 top-200, vector top-200 with the ef ladder, to 80); stages' p95 ms: %s; recall: the top-10's share of the same retriever's over brute-force scoped lists (%d questions); models of the real shapes with random weights",
			strings.Join(parts, ", "), nt)}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall = float64(found) / float64(max(n, 1))
	b.Logf("scoped fused %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f; stages p95 %s", s.Name, row.P50MS, row.P95MS, row.Recall, strings.Join(parts, ", "))
	return row
}
