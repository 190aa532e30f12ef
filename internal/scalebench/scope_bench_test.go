package scalebench

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/exocortex/exocortex/analysis"
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

// lexRanker ranks as Store.Search's memory engine does (the analyzer's
// query, common terms dropped, the store's weights), with an Allow.
type lexRanker struct {
	idx *lexical.Index
	a   *analysis.Analyzer
	w   lexical.Weights
	n   int // chunks, for the common terms' limit
}

func newLexRanker(ctx context.Context, st *store.Store) (*lexRanker, error) {
	idx, err := st.LexicalIndex(ctx)
	if err != nil {
		return nil, err
	}
	a := st.Analyzer()
	w := st.Weights
	if w == (store.Weights{}) {
		w = store.WeightsFor(a.Mode())
	}
	_, n, err := st.Counts(ctx)
	if err != nil {
		return nil, err
	}
	return &lexRanker{idx: idx, a: a, w: lexical.Weights{w.Body, w.Lemmas, w.Title, w.Section, w.Heads}, n: n}, nil
}

// query is text's lexical query with the terms in more than
// store.CommonFraction of the chunks left out (Store.Search's dropCommon).
func (r *lexRanker) query(text string) lexical.Query {
	aq := r.a.Query(text)
	q := lexical.Query{Words: aq.Words, Terms: aq.Terms}
	limit := int(float64(r.n) * store.CommonFraction)
	if float64(r.n)*store.CommonFraction <= store.CommonMin || len(aq.Words)+len(aq.Terms) < 2 {
		return q
	}
	keep := func(ts []string) []string {
		var out []string
		for _, t := range ts {
			if !r.idx.DocFreqAbove(t, limit) {
				out = append(out, t)
			}
		}
		return out
	}
	if out := (lexical.Query{Words: keep(aq.Words), Terms: keep(aq.Terms)}); len(out.Words)+len(out.Terms) > 0 {
		return out
	}
	return q
}

// scopedIndex is the store as the retriever's Index with a scope: lexical
// search on the memory index within allow (nil: everything), hits read
// with Passages; exact ranks the whole match list and filters it after
// (the brute force).
type scopedIndex struct {
	*store.Store
	r     *lexRanker
	rows  *chunkRows
	allow *lexical.Allow
	exact bool
}

func (x *scopedIndex) Search(ctx context.Context, query string, opts store.SearchOptions) ([]store.Hit, error) {
	k := opts.K
	if k <= 0 {
		k = store.DefaultK
	}
	q := x.r.query(query)
	var ranked []lexical.Hit
	if x.exact {
		for _, h := range x.r.idx.SearchWith(q, len(x.rows.rowids), x.r.w, lexical.SearchOptions{Lang: opts.Lang}) {
			if x.allow == nil || x.allow.Has(h.ID) {
				if ranked = append(ranked, h); len(ranked) == k {
					break
				}
			}
		}
	} else {
		ranked = x.r.idx.SearchWith(q, k, x.r.w, lexical.SearchOptions{Lang: opts.Lang, Allow: x.allow})
	}
	ids := make([]string, len(ranked))
	for i, h := range ranked {
		ids[i] = x.rows.byRow[h.ID]
	}
	hits, err := x.Store.Passages(ctx, ids)
	if err != nil {
		return nil, err
	}
	score := make(map[string]float64, len(ranked))
	for i, h := range ranked {
		score[ids[i]] = h.Score
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

// resolvedScope is a scope resolved to the engines' sets.
type resolvedScope struct {
	Scope
	allow *lexical.Allow // nil: unscoped
	ids   *vectors.IDSet
	list  []string // chunk ids, rowid order
	note  string
}

// resolveScope resolves sc as the retriever will, times it, and checks the
// set against the generator's metadata.
func resolveScope(b *testing.B, env *Env, rows *chunkRows, sc Scope) *resolvedScope {
	ctx := context.Background()
	t0 := time.Now()
	cs, err := env.Store.AllowedChunks(ctx, sc.Filter)
	if err != nil {
		b.Fatalf("scope %s: %v", sc.Name, err)
	}
	t1 := time.Now()
	var allowed []int64
	var list []string
	for _, id := range rows.rowids {
		if cs.HasRow(id) {
			allowed = append(allowed, id)
			list = append(list, rows.byRow[id])
		}
	}
	allow := lexical.NewAllow(allowed)
	t2 := time.Now()
	ids := vectors.NewIDSet(list)
	t3 := time.Now()
	want := 0
	for i := range env.Corpus.cfg.Chunks {
		if sc.Want(env.Corpus, i) {
			want++
		}
	}
	for _, id := range list {
		if !sc.Want(env.Corpus, ChunkIndex(id)) {
			b.Fatalf("scope %s allows %s, which the generator's metadata leaves out", sc.Name, id)
		}
	}
	if len(list) != want || cs.Len() != want {
		b.Fatalf("scope %s: AllowedChunks holds %d chunks (%d by rowid), the metadata %d", sc.Name, cs.Len(), len(list), want)
	}
	r := &resolvedScope{Scope: sc, allow: allow, ids: ids, list: list}
	r.note = fmt.Sprintf("%d chunks (%.2f%%); AllowedChunks %.2f ms, lexical.Allow %.2f ms, IDSet %.2f ms",
		len(list), 100*float64(len(list))/float64(len(rows.rowids)), ms(t1.Sub(t0)), ms(t2.Sub(t1)), ms(t3.Sub(t2)))
	b.Logf("scope %s: %s", sc.Name, r.note)
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measureScoped adds the scoped rows: per scope its resolution, then
// lexical, vector and fused within it, beside the same paths unscoped.
func measureScoped(b *testing.B, env *Env, qs []eval.Question, vg *Vectors, warm, vqs [][]float32) []Row {
	ctx := context.Background()
	rows, err := readChunkRows(StorePath(env.Dir))
	if err != nil {
		b.Fatal(err)
	}
	lr, err := newLexRanker(ctx, env.Store)
	if err != nil {
		b.Fatal(err)
	}
	// The first AllowedChunks after opening reads the catalog.
	t0 := time.Now()
	if _, err := env.Store.AllowedChunks(ctx, Scopes[0].Filter); err != nil {
		b.Fatal(err)
	}
	catalog := ms(time.Since(t0))
	b.Logf("scope catalog read in %.0f ms", catalog)
	out := []Row{{Measure: "scope setup", Engine: "catalog", P50MS: catalog, P95MS: catalog, Queries: 1,
		Note: "the first store.AllowedChunks after opening: reads the documents, tags and chunks into the in-memory catalog (again whenever the index changes)"}}
	all := &resolvedScope{Scope: Scope{Name: "all"}, list: allIDs(rows)}
	scopes := []*resolvedScope{all}
	for _, sc := range Scopes {
		scopes = append(scopes, resolveScope(b, env, rows, sc))
	}
	lexTruth := scopedLexTruth(b, lr, rows, qs, scopes)
	for i, s := range scopes {
		out = append(out, measureScopedLexical(b, env, lr, rows, s, qs, lexTruth[i]))
	}
	nt := min(len(vqs), 100)
	for _, s := range scopes[1:] {
		setup := Row{Measure: "scope setup", Engine: s.Name, Queries: 1, Note: s.note}
		vrow, first := measureScopedVector(b, env, vg, s, warm, vqs, nt)
		setup.P50MS = first
		setup.P95MS = first
		setup.Note += fmt.Sprintf("; p50/p95 here: the first vector search with the fresh IDSet (it resolves the ids to nodes once, then memoises), %.2f ms", first)
		out = append(out, setup, vrow)
	}
	for _, s := range scopes {
		out = append(out, measureScopedFused(b, env, lr, rows, vg, s, qs))
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

// scopedLexTruth is, per scope and question, the exact BM25 top-10 over the
// scope's rows: the whole match list ranked once per question, then
// filtered.
func scopedLexTruth(b *testing.B, lr *lexRanker, rows *chunkRows, qs []eval.Question, scopes []*resolvedScope) [][][]string {
	t0 := time.Now()
	truth := make([][][]string, len(scopes))
	for i := range truth {
		truth[i] = make([][]string, len(qs))
	}
	for j, q := range qs {
		full := lr.idx.SearchWith(lr.query(q.Question), len(rows.rowids), lr.w, lexical.SearchOptions{})
		for i, s := range scopes {
			for _, h := range full {
				if len(truth[i][j]) == 10 {
					break
				}
				if s.allow == nil || s.allow.Has(h.ID) {
					truth[i][j] = append(truth[i][j], rows.byRow[h.ID])
				}
			}
		}
	}
	b.Logf("exact BM25 over every scope for %d questions in %s", len(qs), time.Since(t0).Round(time.Millisecond))
	return truth
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

func measureScopedLexical(b *testing.B, env *Env, lr *lexRanker, rows *chunkRows, s *resolvedScope, qs []eval.Question, truth [][]string) Row {
	ctx := context.Background()
	x := &scopedIndex{Store: env.Store, r: lr, rows: rows, allow: s.allow}
	for _, q := range qs[:min(20, len(qs))] {
		if _, err := x.Search(ctx, q.Question, store.SearchOptions{K: 10}); err != nil {
			b.Fatal(err)
		}
	}
	var lat []float64
	var found, want, short int
	for j, q := range qs {
		t := time.Now()
		hits, err := x.Search(ctx, q.Question, store.SearchOptions{K: 10})
		if err != nil {
			b.Fatalf("scoped lexical %s: %v", s.Name, err)
		}
		lat = append(lat, since(t))
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.ChunkID
		}
		f, n := overlap(ids, truth[j])
		found, want = found+f, want+n
		if len(hits) < len(truth[j]) {
			short++
		}
	}
	row := Row{Measure: "scoped lexical", Engine: "memory, " + s.Name, Queries: len(qs),
		Note: fmt.Sprintf("lexical.Index.SearchWith with the scope's Allow (Store.Search's query and weights), k=10, hits read with Store.Passages; recall against the exact BM25 top-10 over the scope's rows; %d of %d questions got fewer than the exact list's hits", short, len(qs))}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall = float64(found) / float64(max(want, 1))
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
		Note: fmt.Sprintf("vectors.Embedded with Filter.IDs (one IDSet per scope, resolved at its first search), default ef (64), k=10; recall against the exact float32 top-10 over the scope's points (%d queries); %d of %d searches returned fewer than k", nt, short, len(qs))}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall = float64(found) / float64(max(want, 1))
	b.Logf("scoped vector %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f, first %.2f ms, short %d", s.Name, row.P50MS, row.P95MS, row.Recall, first, short)
	return row, first
}

// measureScopedFused runs the retriever over the scoped Index and Vectors
// (its own fusion: Retrieve's RRF of BM25 top-200 and vector top-200 to
// 80); recall is the fused top-10's share of the same retriever's top-10
// over the exact scoped lists (brute-force BM25 and float32 cosine).
func measureScopedFused(b *testing.B, env *Env, lr *lexRanker, rows *chunkRows, vg *Vectors, s *resolvedScope, qs []eval.Question) Row {
	ctx := context.Background()
	r := &retrieval.Retriever{Index: &scopedIndex{Store: env.Store, r: lr, rows: rows, allow: s.allow},
		Vectors: env.Vectors, Embedder: env.Embedder}
	if s.ids != nil {
		r.Vectors = scopedVectors{Store: env.Vectors, ids: s.ids}
	}
	retrieve := func(r *retrieval.Retriever, i int, text string) []string {
		out, err := r.Retrieve(ctx, &schemas.QuerySubmitted{Query: schemas.Query{QueryID: fmt.Sprint(i), Question: text,
			Options: schemas.QueryOptions{Mode: schemas.ModeHybrid}}})
		if err != nil {
			b.Fatalf("scoped fused %s: %v", s.Name, err)
		}
		var ids []string
		for _, c := range out.Candidates[:min(10, len(out.Candidates))] {
			ids = append(ids, c.ChunkID)
		}
		return ids
	}
	var lat []float64
	got := make([][]string, len(qs))
	for i, q := range qs {
		t := time.Now()
		got[i] = retrieve(r, i, q.Question)
		lat = append(lat, since(t))
	}
	nt := min(len(qs), 100)
	t0 := time.Now()
	exact := &retrieval.Retriever{Index: &scopedIndex{Store: env.Store, r: lr, rows: rows, allow: s.allow, exact: true},
		Vectors: newExactVectors(env.Vectors, vg, s.list), Embedder: env.Embedder}
	var found, want int
	for i, q := range qs[:nt] {
		f, n := overlap(got[i], retrieve(exact, i, q.Question))
		found, want = found+f, want+n
	}
	b.Logf("exact fused over scope %s for %d questions in %s", s.Name, nt, time.Since(t0).Round(time.Millisecond))
	row := Row{Measure: "scoped fused", Engine: "bm25+hnsw rrf, " + s.Name, Queries: len(qs),
		Note: fmt.Sprintf("Retriever.Retrieve over the scoped lexical index and vectors above (its own RRF: BM25 top-200, vector top-200 with the ef ladder, to 80); recall: the top-10's share of the same retriever's over brute-force scoped lists (%d questions); models of the real shapes with random weights", nt)}
	row.P50MS, row.P95MS = pcts(lat)
	row.Recall = float64(found) / float64(max(want, 1))
	b.Logf("scoped fused %s: p50 %.2f ms, p95 %.2f ms, recall@10 %.3f", s.Name, row.P50MS, row.P95MS, row.Recall)
	return row
}
