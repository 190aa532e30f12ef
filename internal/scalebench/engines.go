package scalebench

import (
	"context"
	"errors"

	"github.com/exocortex/exocortex/models"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// Env is what an engine is opened on: a built directory (StorePath,
// VectorsPath) with the store and the vector index already open, the
// corpus, and the models when the suite has them (nil otherwise).
type Env struct {
	Dir          string
	Corpus       *Corpus // nil for the XQuAD-only reference store
	Store        *store.Store
	Vectors      vectors.Store // nil for the XQuAD-only reference store
	Embedder     retrieval.QueryEmbedder
	CrossEncoder retrieval.CrossEncoder
	// OpenCrossEncoder opens the same cross-encoder with other options
	// (closed with the suite's models).
	OpenCrossEncoder func(models.Options) (retrieval.CrossEncoder, error)
}

// Each measurement runs every engine of its list on the same corpus, in the
// same process, one after the other, so a new implementation is compared
// with today's in the same run: add a row to the list (its Open may build
// its own index from env.Store or env.Dir; the build time is not counted).

// Lexical is a lexical top-k search.
type Lexical interface {
	Search(ctx context.Context, query string, k int) ([]store.Hit, error)
	Close() error
}

// LexicalEngine is one row of the lexical measurement.
type LexicalEngine struct {
	Name, Note string
	Open       func(ctx context.Context, env *Env) (Lexical, error)
}

// LexicalEngines are measured in order; the first is today's.
var LexicalEngines = []LexicalEngine{
	{Name: "fts5", Note: "Store.Search: SQLite FTS5 BM25, full analyzer",
		Open: func(ctx context.Context, env *Env) (Lexical, error) {
			return useEngine(ctx, env.Store, store.LexicalFTS5)
		}},
	{Name: "memory", Note: "Store.Search on the in-memory index (lexical/), the same BM25",
		Open: func(ctx context.Context, env *Env) (Lexical, error) {
			return useEngine(ctx, env.Store, store.LexicalMemory)
		}},
}

// engineSearch runs Store.Search with one lexical engine, restoring the
// store's own on Close (rows run one after another).
type engineSearch struct {
	s    *store.Store
	prev string
}

// useEngine switches s to engine; the memory index is built (or loaded)
// here, so its build is not counted in the row's latency.
func useEngine(ctx context.Context, s *store.Store, engine string) (Lexical, error) {
	e := &engineSearch{s: s, prev: s.Lexical}
	s.Lexical = engine
	if engine == store.LexicalMemory {
		if _, err := s.LexicalIndex(ctx); err != nil {
			s.Lexical = e.prev
			return nil, err
		}
	}
	return e, nil
}

func (e *engineSearch) Search(ctx context.Context, q string, k int) ([]store.Hit, error) {
	return e.s.Search(ctx, q, store.SearchOptions{K: k, SnippetTokens: -1})
}
func (e *engineSearch) Close() error { e.s.Lexical = e.prev; return nil }

// VectorSearch is a vector top-k search returning chunk ids, best first.
type VectorSearch interface {
	Search(ctx context.Context, q []float32, k int) ([]string, error)
	Close() error
}

// VectorEngine is one row of the vector measurement.
type VectorEngine struct {
	Name, Note string
	// Ef is the HNSW ef the row searches with; hnswlib, when the suite
	// has it (EXOCORTEX_HNSWLIB_DIR), is measured at the same efs.
	Ef   int
	Open func(ctx context.Context, env *Env) (VectorSearch, error)
}

// VectorEngines are measured in order; the first is today's.
var VectorEngines = []VectorEngine{
	{Name: "embedded-hnsw", Note: "vectors.Embedded, default ef (64)", Ef: vectors.DefaultEfSearch,
		Open: func(ctx context.Context, env *Env) (VectorSearch, error) { return storeSearch{env.Vectors, 0}, nil }},
	{Name: "embedded-hnsw ef=128", Note: "vectors.Embedded, ef 128 (the widest of the retriever's ladder)", Ef: 128,
		Open: func(ctx context.Context, env *Env) (VectorSearch, error) { return storeSearch{env.Vectors, 128}, nil }},
	{Name: "embedded-hnsw ef=32", Note: "vectors.Embedded, ef 32 (of 12, 16, 24 and 32, the least with recall@10 of at least 0.98 at 100k and at 1M)", Ef: 32,
		Open: func(ctx context.Context, env *Env) (VectorSearch, error) { return storeSearch{env.Vectors, 32}, nil }},
}

type storeSearch struct {
	s  vectors.Store
	ef int
}

func (v storeSearch) Search(ctx context.Context, q []float32, k int) ([]string, error) {
	res, err := v.s.Search(ctx, q, vectors.SearchOptions{K: k, Ef: v.ef})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids, nil
}
func (storeSearch) Close() error { return nil }

// RetrievalEngine is one row of the fused retrieval or the rerank
// measurement: a retriever over env (Retrieve for fused, Retrieve then
// Rerank, only the latter timed, for rerank).
type RetrievalEngine struct {
	Name, Note string
	Open       func(ctx context.Context, env *Env) (*retrieval.Retriever, error)
}

// FusedEngines are measured in order; the first is today's.
var FusedEngines = []RetrievalEngine{
	{Name: "bm25+hnsw rrf", Note: "Retriever.Retrieve: embed, vector top-200, BM25 top-200 (the store's default lexical engine, memory), RRF to 80",
		Open: func(ctx context.Context, env *Env) (*retrieval.Retriever, error) {
			return &retrieval.Retriever{Index: env.Store, Vectors: env.Vectors, Embedder: env.Embedder}, nil
		}},
}

// RerankEngines are measured in order; the first is today's.
var RerankEngines = []RetrievalEngine{
	{Name: "cross-encoder top 40", Note: "Retriever.Rerank, the default: the fused top 40 of 80, 128 tokens around the query's words, 2 threads",
		Open: func(ctx context.Context, env *Env) (*retrieval.Retriever, error) {
			return &retrieval.Retriever{Index: env.Store, Vectors: env.Vectors, Embedder: env.Embedder,
				Reranker: env.CrossEncoder}, nil
		}},
	{Name: "cross-encoder top 80", Note: "Retriever.Rerank of all 80 fused candidates, 128 tokens around the query's words, 2 threads",
		Open: func(ctx context.Context, env *Env) (*retrieval.Retriever, error) {
			return &retrieval.Retriever{Index: env.Store, Vectors: env.Vectors, Embedder: env.Embedder,
				Reranker: env.CrossEncoder, Config: retrieval.Config{RerankCandidates: 80}}, nil
		}},
	{Name: "cross-encoder top 80, 192-token head (wide setting)",
		Note: "Retriever.Rerank with the wide setting: all 80 fused candidates, 192 tokens, each passage's beginning (--rerank-candidates 80 --rerank-tokens 192 --rerank-window=false), 2 threads",
		Open: func(ctx context.Context, env *Env) (*retrieval.Retriever, error) {
			if env.OpenCrossEncoder == nil {
				return nil, errors.New("no cross-encoder to open with other options")
			}
			o := models.RerankOptions()
			o.MaxLength, o.QueryWindow = 192, false
			ce, err := env.OpenCrossEncoder(o)
			if err != nil {
				return nil, err
			}
			return &retrieval.Retriever{Index: env.Store, Vectors: env.Vectors, Embedder: env.Embedder,
				Reranker: ce, Config: retrieval.Config{RerankCandidates: 80}}, nil
		}},
}
