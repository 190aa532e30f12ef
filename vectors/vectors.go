// Package vectors is the chunk vector index: one Store interface with two
// implementations.
//
//   - "embedded" (the default): an HNSW graph over int8-quantised vectors kept
//     in this process, whose candidates are rescored with the float32 vectors
//     on disk, persisted in the data directory (an append-only op log plus
//     periodic snapshots). No server to run; 1M × 384-d chunks take about
//     700 MiB of RAM. See README.md for the design and the measurements.
//   - "qdrant": a Qdrant collection reached over gRPC through
//     github.com/qdrant/go-client, for deployments that already run Qdrant.
//
// Both speak cosine similarity over L2-normalised vectors, key points by the
// chunk id (an upsert replaces, a delete of an unknown id is fine) and filter
// by language and by document id. storetest.Run checks that contract against
// each implementation.
package vectors

import (
	"context"
	"errors"
	"fmt"
)

// Errors; match them with errors.Is.
var (
	// ErrDimMismatch: a vector, a query or an existing collection or data
	// directory does not have the store's dimension.
	ErrDimMismatch = errors.New("vectors: dimension mismatch")
	// ErrInvalid: a point or a query the store cannot take (no id, a zero or
	// non-finite vector, a negative K); retrying won't help.
	ErrInvalid = errors.New("vectors: invalid input")
	// ErrClosed: a call on a closed store.
	ErrClosed = errors.New("vectors: store closed")
	// ErrReadOnly: a write to a store opened read-only
	// (EmbeddedConfig.ReadOnly).
	ErrReadOnly = errors.New("vectors: store opened read-only")
	// ErrCorrupt: a snapshot or an op log that fails its checksum somewhere
	// other than a torn tail.
	ErrCorrupt = errors.New("vectors: corrupt data")
	// ErrNoLexical: a lexical search on a store without lexical vectors
	// (see LexicalStore.HasLexical).
	ErrNoLexical = errors.New("vectors: no lexical vectors in this store")
)

// Store kinds, as in Config.Kind and Store.Name.
const (
	KindEmbedded = "embedded"
	KindQdrant   = "qdrant"
)

// DefaultK is the number of results a search returns when SearchOptions.K is 0.
const DefaultK = 10

// Point is one chunk's vector and the fields searches filter on.
type Point struct {
	ID     string    // chunk id, e.g. "notes/a.md:0123456789abcdef"
	DocID  string    // the document the chunk belongs to
	Lang   string    // "ru", "en", "" when unknown
	Vector []float32 // L2-normalised (the stores normalise again), length Dim
	// Sparse is the chunk's lexical vector (LexicalDoc), kept by a store
	// that searches lexically too (LexicalStore: Qdrant with its sparse
	// vector); others ignore it. Empty = none.
	Sparse SparseVector
	// Passage is stored with the point and returned as is by a
	// LexicalStore's searches (the retrieve stage keeps the chunk's
	// passage there, JSON); others ignore it.
	Passage string
	// Meta are the chunk's document fields that scopes filter on; a store
	// with payloads (Qdrant) keeps them, the embedded store ignores them.
	Meta PointMeta
}

// Filter restricts a search; the zero value matches every point. Both fields
// set means both must match.
type Filter struct {
	Lang   string   // only points with this language; "" = any
	DocIDs []string // only points of one of these documents; empty = any
	// IDs, when not nil, keeps only the points whose chunk ids it holds
	// (an empty set: none). The search applies it while it searches, not
	// after: a narrow set still returns K points when it holds K. The
	// embedded store scans a small set exactly and walks its graph for a
	// large one; Qdrant sends it as a has_id condition (prefer Payload
	// there: a scope as payload conditions costs no id list).
	IDs *IDSet
	// Meta, when not empty, keeps only the points whose metadata match
	// it (Qdrant: a payload filter, applied during the search). The
	// embedded store has no payloads and answers ErrInvalid.
	Meta *MetaFilter
}

// SearchOptions tune one search.
type SearchOptions struct {
	K      int    // results wanted; 0 = DefaultK
	Filter Filter // which points may be returned
	// Ef is the HNSW candidate list size for this query (the adaptive
	// widening passes 64, 96, 128); 0 = the store's default. A larger Ef
	// finds more of the true nearest neighbours and costs more time. It is
	// raised to at least K.
	Ef int
}

// Result is one search hit.
type Result struct {
	ID    string
	DocID string
	Score float32 // cosine similarity, higher is better (a lexical search: the BM25-like score)
	// Passage is the point's Passage, set by a LexicalStore's SearchLexical
	// and Passages only.
	Passage string
}

// Store is a vector index of chunks. Implementations are safe for concurrent
// use: any number of searches run alongside one writer.
type Store interface {
	// Upsert adds points or replaces the points with the same IDs; it is
	// idempotent. When it returns nil the points are durable.
	Upsert(ctx context.Context, pts []Point) error
	// Delete removes points by ID; unknown IDs are ignored.
	Delete(ctx context.Context, ids []string) error
	// Search returns up to K points most similar to q, best first.
	Search(ctx context.Context, q []float32, opts SearchOptions) ([]Result, error)
	// Count is the number of points stored.
	Count(ctx context.Context) (int, error)
	// Dim is the vector dimension the store was opened with.
	Dim() int
	// Name is the store kind: "embedded" or "qdrant".
	Name() string
	// Close releases the store; the embedded store writes a snapshot first.
	Close() error
}

// Open opens the store cfg describes, creating its directory or collection
// when missing.
func Open(ctx context.Context, cfg Config) (Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch cfg.Kind {
	case KindEmbedded:
		return OpenEmbedded(ctx, cfg.Dir, cfg.Dim, cfg.Embedded)
	case KindQdrant:
		return OpenQdrant(ctx, cfg.Dim, cfg.Qdrant)
	}
	return nil, fmt.Errorf("vectors: unknown store kind %q", cfg.Kind)
}

// searchK returns the K a search asks for, or an error for a negative one.
func searchK(opts SearchOptions) (int, error) {
	switch {
	case opts.K < 0:
		return 0, fmt.Errorf("search: K = %d: %w", opts.K, ErrInvalid)
	case opts.K == 0:
		return DefaultK, nil
	}
	return opts.K, nil
}
