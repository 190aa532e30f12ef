// Package retrieval is the query side of search: BM25 and vector retrieval
// fused by Reciprocal Rank Fusion, the cross-encoder rerank and the 1-hop
// graph expansion. The retrieve and rerank stages wrap it for the bus; the
// CLI's search and eval call it directly.
package retrieval

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// QueryEmbedder turns a query into a vector (the embedding model with its
// "query: " prefix).
type QueryEmbedder interface {
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
	Name() string
}

// CrossEncoder scores (query, passage) pairs; higher is more relevant.
type CrossEncoder interface {
	Score(ctx context.Context, query string, passages []string) ([]float32, error)
	Name() string
}

// Index is what retrieval reads of the SQLite store (*store.Store).
type Index interface {
	Search(ctx context.Context, query string, opts store.SearchOptions) ([]store.Hit, error)
	Passages(ctx context.Context, ids []string) ([]store.Hit, error)
	Neighbors(ctx context.Context, blockID string, kinds ...string) ([]store.Edge, error)
	ChunksOfBlocks(ctx context.Context, blockIDs []string) (map[string]string, error)
	FirstChunksOfDocs(ctx context.Context, docIDs []string) (map[string]string, error)
}

// Config sizes each step.
type Config struct {
	LexicalK int     // BM25 candidates (200)
	VectorK  int     // vector candidates (200)
	FusedK   int     // candidates kept after fusion (80)
	RRFK     float64 // the k of Reciprocal Rank Fusion (60)
	RerankK  int     // contexts kept after reranking (12)
	// RerankCandidates is how many of the fused candidates, best first, the
	// cross-encoder scores (40); the others follow them in fused order. It
	// is never under RerankFloor: the fused top 20 are always scored.
	RerankCandidates int
	Expand           int // graph neighbours added at most (4)
	// EfLadder is the HNSW ef of the first vector search and of each
	// widening; WeakScore is the best cosine below which the search widens.
	EfLadder  []int
	WeakScore float32
	// RecencyHalfLife and RecencyWeight shape the recency signal of a
	// query whose scope prefers recent notes (Scope.Recent): see recency.
	// Defaults: 90 days, weight 1.
	RecencyHalfLife time.Duration
	RecencyWeight   float64
}

// RerankFloor is the fewest fused candidates the cross-encoder scores (all
// of them when there are fewer): a candidate of the fused top 20 is never
// left out of the rerank.
const RerankFloor = 20

// DefaultConfig is the pipeline of the design: vector top-200 and BM25
// top-200, RRF (k=60) to top-80, the cross-encoder over the best 40 of them
// to top-12, up to 4 neighbours.
func DefaultConfig() Config {
	return Config{LexicalK: 200, VectorK: 200, FusedK: 80, RRFK: 60, RerankK: 12, RerankCandidates: 40, Expand: 4,
		EfLadder: []int{64, 96, 128}, WeakScore: 0.80, RecencyHalfLife: DefaultRecencyHalfLife, RecencyWeight: 1}
}

// DefaultRecencyHalfLife is the age at which a note's recency share is
// half a fresh note's.
const DefaultRecencyHalfLife = 90 * 24 * time.Hour

// Retriever runs queries. Vectors, Embedder and Reranker may be nil: the
// retriever then uses the best mode it has and says why in Reasons.
type Retriever struct {
	Index    Index
	Vectors  vectors.Store
	Embedder QueryEmbedder
	Reranker CrossEncoder
	Config   Config
	// Reformulate, when set, turns a question with chat history into a
	// standalone query before retrieval (a language model's strategic role).
	Reformulate func(ctx context.Context, question string, history []schemas.Turn) (string, error)
	// Translate, when set, translates the question into each of the given
	// languages (Translator: one strategic-role call). When the question's
	// language is not the notes' and no multilingual embedding model
	// searches, the translations are searched lexically too and fused.
	Translate func(ctx context.Context, question string, to []string) (map[string]string, error)
}

// Reasons given when a mode is lowered or a search widened.
const (
	ReasonNoEmbedder = "no_embedding_model"
	ReasonNoVectors  = "no_vector_store"
	ReasonNoReranker = "no_reranker_model"
	ReasonWidened    = "widened"
	ReasonEmbedError = "embedding_failed"
)

// Modes reports the fullest mode the retriever can run.
func (r *Retriever) Modes() string {
	switch {
	case r.Embedder != nil && r.Vectors != nil && r.Reranker != nil:
		return schemas.ModeRerank
	case r.Embedder != nil && r.Vectors != nil:
		return schemas.ModeHybrid
	}
	return schemas.ModeLexical
}

// resolve picks the mode to run for the one asked, and why it is lower.
func (r *Retriever) resolve(asked string) (mode string, reasons []string) {
	if asked == "" {
		asked = schemas.ModeRerank
	}
	vec := r.Embedder != nil && r.Vectors != nil
	if !vec && asked != schemas.ModeLexical {
		if r.Embedder == nil {
			reasons = append(reasons, ReasonNoEmbedder+": no embedding model is installed (exocortex models fetch); lexical search only")
		} else {
			reasons = append(reasons, ReasonNoVectors+": no vector store is open; lexical search only")
		}
		return schemas.ModeLexical, reasons
	}
	if asked == schemas.ModeRerank && r.Reranker == nil {
		reasons = append(reasons, ReasonNoReranker+": no reranker model is installed (exocortex models fetch); fused order kept")
		return schemas.ModeHybrid, reasons
	}
	return asked, nil
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.LexicalK <= 0 {
		c.LexicalK = d.LexicalK
	}
	if c.VectorK <= 0 {
		c.VectorK = d.VectorK
	}
	if c.FusedK <= 0 {
		c.FusedK = d.FusedK
	}
	if c.RRFK <= 0 {
		c.RRFK = d.RRFK
	}
	if c.RerankK <= 0 {
		c.RerankK = d.RerankK
	}
	if c.RerankCandidates <= 0 {
		c.RerankCandidates = d.RerankCandidates
	}
	c.RerankCandidates = max(c.RerankCandidates, RerankFloor)
	if c.Expand == 0 {
		c.Expand = d.Expand
	}
	if len(c.EfLadder) == 0 {
		c.EfLadder = d.EfLadder
	}
	if c.WeakScore == 0 {
		c.WeakScore = d.WeakScore
	}
	if c.RecencyHalfLife <= 0 {
		c.RecencyHalfLife = d.RecencyHalfLife
	}
	if c.RecencyWeight <= 0 {
		c.RecencyWeight = d.RecencyWeight
	}
	return c
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Retrieve runs the first half of a query: BM25 and vector search, fused.
//
// A scoped query (Options.Scope) searches within its scope (see withScope);
// one whose scope holds no note returns no candidates and says so
// (ReasonScopeEmpty).
func (r *Retriever) Retrieve(ctx context.Context, q *schemas.QuerySubmitted) (*schemas.QueryRetrieved, error) {
	t0 := time.Now()
	r, qs, err := r.withScope(ctx, q.Options)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.QueryID, err)
	}
	r, err = r.withoutReports(ctx, q.Options.IncludeReports)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.QueryID, err)
	}
	cfg := r.Config.withDefaults()
	mode, reasons := r.resolve(q.Options.Mode)
	// The question's language decides the answer's; Options.Lang, which
	// restricts the chunks searched, stays as the client gave it.
	out := &schemas.QueryRetrieved{Query: q.Query, Searched: q.Question, Mode: mode, Reasons: reasons, TimingsMS: map[string]float64{},
		SubmittedAt: q.Time}
	out.Lang = langOf(q.Lang, q.Question)
	if qs != nil {
		out.TimingsMS["scope"] = ms(time.Since(t0))
	}
	if qs.empty() {
		out.Reasons = append(out.Reasons, emptyReason(ctx, qs))
		return out, nil
	}
	if r.Reformulate != nil && len(q.History) > 0 {
		t := time.Now()
		query, err := r.Reformulate(ctx, q.Question, q.History)
		if err != nil {
			out.Reasons = append(out.Reasons, "reformulation_failed: "+err.Error())
		} else {
			out.Searched = query
		}
		out.TimingsMS["reformulate"] = ms(time.Since(t))
	}

	if listsScope(qs, out.Searched) {
		if err := r.listScope(ctx, qs, out, cfg); err != nil {
			return nil, fmt.Errorf("query %s: %w", q.QueryID, err)
		}
		return out, r.addFacets(ctx, out)
	}
	var lex []store.Hit
	if mode != schemas.ModeVector {
		t := time.Now()
		var err error
		lex, err = r.Index.Search(ctx, out.Searched, store.SearchOptions{K: cfg.LexicalK, Lang: q.Options.Lang, SnippetTokens: -1})
		if err != nil {
			return nil, fmt.Errorf("query %s: lexical search: %w", q.QueryID, err)
		}
		out.TimingsMS["lexical"] = ms(time.Since(t))
	}
	lists := [][]store.Hit{lex}
	if mode != schemas.ModeVector {
		more, err := r.crossLingual(ctx, out, mode, cfg)
		if err != nil {
			return nil, err
		}
		lists = append(lists, more...)
	}
	var vec []vectors.Result
	if mode != schemas.ModeLexical {
		var err error
		vec, err = r.vectorSearch(ctx, out, cfg)
		if err != nil {
			if mode == schemas.ModeVector || ctx.Err() != nil {
				return nil, err
			}
			// A failing model or store lowers the query to lexical; it is not lost.
			out.Mode = schemas.ModeLexical
			out.Reasons = append(out.Reasons, ReasonEmbedError+": "+err.Error())
			vec = nil
		}
	}
	t := time.Now()
	cands, err := r.fuse(ctx, lists, vec, cfg, recencyOf(qs, out))
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", q.QueryID, err)
	}
	out.Candidates = cands
	out.TimingsMS["fuse"] = ms(time.Since(t))
	if err := r.addFacets(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (r *Retriever) vectorSearch(ctx context.Context, out *schemas.QueryRetrieved, cfg Config) ([]vectors.Result, error) {
	t := time.Now()
	qv, err := r.Embedder.EmbedQuery(ctx, out.Searched)
	if err != nil {
		return nil, fmt.Errorf("query %s: embed with %s: %w", out.QueryID, r.Embedder.Name(), err)
	}
	out.TimingsMS["embed"] = ms(time.Since(t))
	out.QueryVector = qv
	t = time.Now()
	var res []vectors.Result
	ladder := efRungs(cfg.EfLadder, cfg.VectorK)
	for i, ef := range ladder {
		res, err = r.Vectors.Search(ctx, qv, vectors.SearchOptions{K: cfg.VectorK, Ef: ef,
			Filter: vectors.Filter{Lang: out.Options.Lang}})
		if err != nil {
			return nil, fmt.Errorf("query %s: vector search (%s, ef %d): %w", out.QueryID, r.Vectors.Name(), ef, err)
		}
		if len(res) > 0 && res[0].Score >= cfg.WeakScore || i == len(ladder)-1 {
			break
		}
		out.Reasons = append(out.Reasons, fmt.Sprintf("%s: best cosine %.3f under %.2f, ef %d -> %d",
			ReasonWidened, bestScore(res), cfg.WeakScore, ef, ladder[i+1]))
	}
	out.TimingsMS["vector"] = ms(time.Since(t))
	return res, nil
}

// efRungs are the ladder's rungs that widen the search: both stores
// search with ef at least k (the embedded store and Qdrant take
// max(ef, k)), so a rung at or below k, or at or below the rung before,
// would repeat the same search for the same results (with the default
// VectorK of 200 and ladder 64/96/128, two of the three; a scoped search,
// whose filtered walk costs more, paid them three times).
func efRungs(ladder []int, k int) []int {
	var out []int
	last := 0
	for _, ef := range ladder {
		if eff := max(ef, k); eff > last {
			out = append(out, ef)
			last = eff
		}
	}
	if len(out) == 0 {
		out = []int{k}
	}
	return out
}

func bestScore(res []vectors.Result) float32 {
	if len(res) == 0 {
		return 0
	}
	return res[0].Score
}

// fuse merges the ranked lists (lexical ones: the question's and its
// translations'; the vector one) by Reciprocal Rank Fusion: each chunk
// scores the sum of 1/(k+rank) over the lists that hold it. A candidate's
// Lexical hit is its best among the lexical lists. Ties keep the better
// single rank first, then a rank of the question as asked (its lexical or
// vector list) before one of a translation, then the chunk id, so the order
// is stable and does not hang on ids (a Markdown note's id is a hash of its
// path): a note ranked first for the question and one ranked first for its
// translation, each second in the other list, tie, and the one the question
// itself found comes first wherever the notes are kept.
func (r *Retriever) fuse(ctx context.Context, lexLists [][]store.Hit, vec []vectors.Result, cfg Config, rec *recencyPref) ([]schemas.Candidate, error) {
	f := fusion{byID: map[string]*schemas.Candidate{}, translated: map[string]bool{}, rrfK: cfg.RRFK}
	f.addLexical(lexLists)
	f.addVector(vec)
	if err := rec.apply(ctx, &f, cfg); err != nil {
		return nil, err
	}
	cands := f.ranked(cfg.FusedK)
	cands, err := r.fillPassages(ctx, cands, f.missing)
	if err != nil {
		return nil, err
	}
	for i := range cands {
		cands[i].FusedRank = i + 1
	}
	return cands, nil
}

// fusion gathers the candidates of one retrieval's lists and their
// reciprocal rank fusion scores.
type fusion struct {
	byID  map[string]*schemas.Candidate
	order []string // candidates' ids in the order first met
	// translated: the candidate's best lexical rank is a translation's
	// (lexLists[1:]), not the question's.
	translated map[string]bool
	missing    []string // vector-only candidates: their text is still to read
	rrfK       float64
}

// get returns the candidate with chunk id, adding it when new.
func (f *fusion) get(id string) *schemas.Candidate {
	c, ok := f.byID[id]
	if !ok {
		c = &schemas.Candidate{}
		c.ChunkID = id
		f.byID[id] = c
		f.order = append(f.order, id)
	}
	return c
}

// addLexical adds the lexical lists (the question's, then its
// translations'): a chunk's best rank over them and an RRF share per list.
func (f *fusion) addLexical(lexLists [][]store.Hit) {
	for l, lex := range lexLists {
		seen := map[string]bool{}
		for i, h := range lex {
			c := f.get(h.ChunkID)
			if seen[h.ChunkID] {
				continue
			}
			seen[h.ChunkID] = true
			if c.Lexical == nil {
				c.Passage = passage(h)
				c.Lexical = &schemas.RetrieverHit{Rank: i + 1, Score: h.Score}
				f.translated[h.ChunkID] = l > 0
			} else if i+1 < c.Lexical.Rank {
				c.Lexical = &schemas.RetrieverHit{Rank: i + 1, Score: h.Score}
				f.translated[h.ChunkID] = l > 0
			}
			c.Fused += 1 / (f.rrfK + float64(i+1))
		}
	}
}

// addVector adds the vector list: each chunk's first rank and its RRF share.
func (f *fusion) addVector(vec []vectors.Result) {
	for i, v := range vec {
		c := f.get(v.ID)
		if c.Vector != nil {
			continue
		}
		c.Vector = &schemas.RetrieverHit{Rank: i + 1, Score: float64(v.Score)}
		if c.DocID == "" {
			c.DocID = v.DocID // for the recency signal; the passage comes later
		}
		c.Fused += 1 / (f.rrfK + float64(i+1))
		if c.Lexical == nil {
			f.missing = append(f.missing, v.ID)
		}
	}
}

// ranked returns the best k candidates by fused score; ties go to the
// better single rank, then to the question's own words over a
// translation's, then to the chunk id.
func (f *fusion) ranked(k int) []schemas.Candidate {
	cands := make([]schemas.Candidate, 0, len(f.order))
	for _, id := range f.order {
		cands = append(cands, *f.byID[id])
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Fused != b.Fused {
			return a.Fused > b.Fused
		}
		ba, bb := bestRank(a), bestRank(b)
		if ba != bb {
			return ba < bb
		}
		if ta, tb := byTranslation(a, ba, f.translated), byTranslation(b, bb, f.translated); ta != tb {
			return tb
		}
		return a.ChunkID < b.ChunkID
	})
	if len(cands) > k {
		cands = cands[:k]
	}
	return cands
}

// fillPassages reads the text of the vector-only candidates (missing) that
// survived the cut, in one query, and drops those whose chunk is gone.
func (r *Retriever) fillPassages(ctx context.Context, cands []schemas.Candidate, missing []string) ([]schemas.Candidate, error) {
	need := map[string]bool{}
	for _, id := range missing {
		need[id] = true
	}
	var ids []string
	for _, c := range cands {
		if need[c.ChunkID] {
			ids = append(ids, c.ChunkID)
		}
	}
	if len(ids) == 0 {
		return cands, nil
	}
	hits, err := r.Index.Passages(ctx, ids)
	if err != nil {
		return nil, err
	}
	found := make(map[string]store.Hit, len(hits))
	for _, h := range hits {
		found[h.ChunkID] = h
	}
	kept := cands[:0]
	for _, c := range cands {
		if need[c.ChunkID] {
			h, ok := found[c.ChunkID]
			if !ok {
				continue // the vector outlived its chunk
			}
			c.Passage = passage(h)
		}
		kept = append(kept, c)
	}
	return kept, nil
}

func bestRank(c schemas.Candidate) int {
	best := 1 << 30
	if c.Lexical != nil {
		best = c.Lexical.Rank
	}
	if c.Vector != nil && c.Vector.Rank < best {
		best = c.Vector.Rank
	}
	return best
}

// byTranslation tells whether the candidate's best rank (best) is only a
// translation's: its lexical rank came from a translated question's list
// and the vector list, the question's own, does not rank it as well.
func byTranslation(c schemas.Candidate, best int, translated map[string]bool) bool {
	if c.Vector != nil && c.Vector.Rank == best {
		return false
	}
	return c.Lexical != nil && c.Lexical.Rank == best && translated[c.ChunkID]
}

func passage(h store.Hit) schemas.Passage {
	return schemas.Passage{ChunkID: h.ChunkID, DocID: h.DocID, Title: h.Title, Path: h.Path,
		SectionPath: h.SectionPath, BlockID: h.BlockID, BlockIDs: h.BlockIDs, BlockSpans: h.BlockSpans,
		Lang: h.Lang, Text: h.Text, Report: h.Report}
}
