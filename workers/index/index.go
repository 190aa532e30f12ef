// Package index is the index stage: the single writer of the SQLite store.
// It applies chunks (and tombstones) from kb.chunk.created and document
// structures from kb.doc.structure; every write is an idempotent upsert
// ordered by document version, so redeliveries and reordering are harmless.
package index

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/metrics"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
	"github.com/exocortex/exocortex/vectors"
)

// Store is what the stage needs of the store (*store.Store implements it).
type Store interface {
	UpsertChunk(ctx context.Context, c *schemas.ChunkCreated) (applied bool, err error)
	ApplyStructure(ctx context.Context, d *schemas.DocStructure) (applied bool, err error)
}

// NewHandler returns the stage's handler with the default config.
func NewHandler(st *store.Store) bus.Handler {
	return New(DefaultConfig(), st)
}

// New returns the stage's handler. It produces no events. A database
// failure (a lock held too long, a full disk, a timeout) is returned as a
// plain error, so the message is redelivered; an event that cannot be
// decoded or lacks its keys, or a subject the stage does not handle, is a
// permanent error.
func New(cfg Config, st Store) bus.Handler {
	return &handler{cfg: cfg, st: st}
}

// Vectors is what the stage writes to the vector store.
type Vectors interface {
	Upsert(ctx context.Context, pts []vectors.Point) error
	Delete(ctx context.Context, ids []string) error
}

// VectorBook is what the stage needs of the store to keep the vector store in
// step (*store.Store implements it).
type VectorBook interface {
	ChunkHash(ctx context.Context, chunkID string) (string, error)
	MarkEmbedded(ctx context.Context, chunkID, hash, model string) (store.EmbedState, error)
	DocChunkIDs(ctx context.Context, docID string) ([]string, error)
}

// NewWithVectors returns the handler that also applies kb.embed.done: a
// vector is stored when the index still holds the content it was computed
// from; tombstones and deleted documents take their vectors with them.
func NewWithVectors(cfg Config, st Store, vs Vectors) (bus.Handler, error) {
	book, ok := st.(VectorBook)
	if !ok {
		return nil, fmt.Errorf("index: the store %T cannot track vectors", st)
	}
	return &handler{cfg: cfg, st: st, vs: vs, book: book}, nil
}

// batcher is implemented by *store.Store: many writes in one transaction.
type batcher interface {
	Batch(ctx context.Context, fn func(ctx context.Context) error) error
}

// flusher is implemented by a vector store that batches its syncs.
type flusher interface {
	Flush(ctx context.Context) error
}

// Handle applies one message.
func (h *handler) Handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	out, err := h.handle(ctx, m)
	if f, ok := h.vs.(flusher); ok && err == nil && ctx.Value(inBatch{}) == nil {
		if err := f.Flush(ctx); err != nil {
			return nil, fmt.Errorf("flush vectors: %w", err)
		}
	}
	return out, err
}

// inBatch marks the context of a message handled inside Batch, whose end
// flushes the vectors once for all.
type inBatch struct{}

// Batch lets the bus apply a fetched batch of messages in one transaction
// (one fsync), when the store supports it.
func (h *handler) Batch(ctx context.Context, fn func(ctx context.Context) error) error {
	if f, ok := h.vs.(flusher); ok {
		// The vectors of the batch are made durable before the index commits
		// the records that claim them.
		inner := fn
		fn = func(ctx context.Context) error {
			if err := inner(context.WithValue(ctx, inBatch{}, true)); err != nil {
				return err
			}
			if err := f.Flush(ctx); err != nil {
				return fmt.Errorf("flush vectors: %w", err)
			}
			return nil
		}
	}
	if b, ok := h.st.(batcher); ok {
		if err := b.Batch(ctx, fn); err != nil {
			return fmt.Errorf("index batch: %w", err)
		}
		return nil
	}
	return fn(ctx)
}

type handler struct {
	cfg  Config
	st   Store
	vs   Vectors    // nil without a vector store
	book VectorBook // set with vs
}

func (h *handler) handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	if h.cfg.WriteTimeout > 0 && m.Subject != schemas.SubjectDocStructure {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.cfg.WriteTimeout)
		defer cancel()
	}
	switch m.Subject {
	case schemas.SubjectChunkCreated:
		c, err := bus.Decode[*schemas.ChunkCreated](m)
		if err != nil {
			return nil, err
		}
		return nil, h.indexChunk(ctx, c)
	case schemas.SubjectDocStructure:
		d, err := bus.Decode[*schemas.DocStructure](m)
		if err != nil {
			return nil, err
		}
		return nil, h.indexStructure(ctx, d)
	case schemas.SubjectEmbedDone:
		if h.vs == nil {
			return nil, bus.Permanent(fmt.Errorf("index: %s arrived but this index has no vector store", m.Subject))
		}
		e, err := bus.Decode[*schemas.EmbedDone](m)
		if err != nil {
			return nil, err
		}
		return nil, h.applyVectors(ctx, m, e)
	default:
		return nil, bus.Permanent(fmt.Errorf("index: unexpected subject %q", m.Subject))
	}
}

// indexChunk stores a chunk (or its tombstone, which also deletes its
// vector).
func (h *handler) indexChunk(ctx context.Context, c *schemas.ChunkCreated) error {
	applied, err := h.st.UpsertChunk(ctx, c)
	if err != nil {
		return classify(fmt.Errorf("index chunk %s of doc %s: %w", c.ChunkID, c.DocID, err))
	}
	if c.Tombstone && applied && h.vs != nil {
		if err := h.vs.Delete(ctx, []string{c.ChunkID}); err != nil {
			return fmt.Errorf("index: delete vector of chunk %s: %w", c.ChunkID, err)
		}
	}
	zerolog.Ctx(ctx).Debug().Str("chunk_id", c.ChunkID).Str("doc_id", c.DocID).Int64("doc_version", c.DocVersion).
		Bool("tombstone", c.Tombstone).Bool("applied", applied).Msg("index chunk")
	return nil
}

// indexStructure applies a document's structure (or its deletion, which
// also deletes its chunks' vectors) and refreshes its chunks' lexical
// vectors.
func (h *handler) indexStructure(ctx context.Context, d *schemas.DocStructure) error {
	if h.cfg.WriteTimeout > 0 {
		// A large document writes a row per block and a few edges per
		// block (a 20 MB note has ~100k blocks): the write runs, in one
		// transaction, as long as rows keep going in, and fails once it
		// has made no progress for WriteTimeout.
		var cancel context.CancelFunc
		ctx, cancel = store.WithStallTimeout(ctx, h.cfg.WriteTimeout)
		defer cancel()
	}
	var gone []string
	if d.Deleted && h.vs != nil {
		var err error
		if gone, err = h.book.DocChunkIDs(ctx, d.DocID); err != nil {
			return err
		}
	}
	applied, err := h.st.ApplyStructure(ctx, d)
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, store.ErrStalled) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return classify(fmt.Errorf("index structure of doc %s (%d blocks): %w", d.DocID, len(d.Blocks), err))
	}
	if applied && len(gone) > 0 {
		if err := h.vs.Delete(ctx, gone); err != nil {
			return fmt.Errorf("index: delete vectors of doc %s: %w", d.DocID, err)
		}
	}
	if applied && !d.Deleted && h.vs != nil {
		if err := h.refreshLexical(ctx, d.DocID); err != nil {
			return err
		}
	}
	if applied && !d.Deleted && d.Version > 0 {
		// The version is the source's update time (unix ns).
		metrics.ObserveSourceLag(d.Source, time.Unix(0, d.Version))
	}
	zerolog.Ctx(ctx).Debug().Str("doc_id", d.DocID).Int64("doc_version", d.Version).
		Bool("deleted", d.Deleted).Int("blocks", len(d.Blocks)).Bool("applied", applied).Msg("index structure")
	return nil
}

// classify marks events the store rejects as invalid permanent; the rest (the
// database was busy, the disk full, the write timed out) are retried.
func classify(err error) error {
	if errors.Is(err, store.ErrInvalid) {
		return bus.Permanent(err)
	}
	return err
}

// applyVectors stores the vectors whose content the index still holds. A
// vector for a chunk the index does not hold yet (its chunk event is being
// retried) is retried a few times; after that the chunk is taken as deleted.
func (h *handler) applyVectors(ctx context.Context, m *bus.Msg, e *schemas.EmbedDone) error {
	var pts []vectors.Point
	missing := 0
	for _, it := range e.Items {
		have, err := h.book.ChunkHash(ctx, it.ChunkID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			missing++
		case err != nil:
			return classify(err)
		case have == it.Hash:
			pts = append(pts, vectors.Point{ID: it.ChunkID, DocID: it.DocID, Lang: it.Lang, Vector: it.Vector})
		}
	}
	pts, held, err := h.addLexical(ctx, m, pts)
	if err != nil {
		return err
	}
	if h.keepsMeta() {
		if err := retrieval.SetMeta(ctx, h.st, pts); err != nil {
			return classify(fmt.Errorf("index: %w", err))
		}
	}
	missing += held
	if len(pts) > 0 {
		// The vector goes in before the index records it, so a record never
		// claims a vector the store lacks.
		if err := h.vs.Upsert(ctx, pts); err != nil {
			return fmt.Errorf("index: upsert %d vectors (first %s): %w", len(pts), pts[0].ID, err)
		}
		for _, p := range pts {
			if _, err := h.book.MarkEmbedded(ctx, p.ID, hashOf(e, p.ID), e.Model); err != nil {
				return classify(err)
			}
		}
	}
	if missing > 0 && m.Delivered < 3 {
		return bus.RetryAfter(fmt.Errorf("index: %d of %d vectors are for chunks not indexed yet (or whose document has no structure yet)", missing, len(e.Items)), 2*time.Second)
	}
	zerolog.Ctx(ctx).Debug().Str("model", e.Model).Int("items", len(e.Items)).Int("stored", len(pts)).Int("missing", missing).Msg("index vectors")
	return nil
}

// addLexical gives each point its lexical vector (vectors.LexicalDoc of the
// chunk's text, its document's title and its section path) and its passage
// (retrieval.EncodePassage), when the vector store searches lexically too
// (Qdrant with its sparse vector): retrieve workers then need no SQLite
// file. A chunk whose document's structure has not arrived has no passage
// yet: its point is held back (and the message retried) for the first two
// deliveries, then stored with its dense vector only.
func (h *handler) addLexical(ctx context.Context, m *bus.Msg, pts []vectors.Point) ([]vectors.Point, int, error) {
	ls, ok := h.vs.(vectors.LexicalStore)
	if !ok || len(pts) == 0 {
		return pts, 0, nil
	}
	if has, _ := ls.HasLexical(); !has {
		return pts, 0, nil
	}
	src, ok := h.st.(retrieval.PassageSource)
	if !ok {
		return pts, 0, nil
	}
	ids := make([]string, len(pts))
	for i, p := range pts {
		ids[i] = p.ID
	}
	hits, err := src.Passages(ctx, ids)
	if err != nil {
		return nil, 0, classify(fmt.Errorf("index: passages of %d chunks for their lexical vectors: %w", len(ids), err))
	}
	byID := make(map[string]store.Hit, len(hits))
	for _, hit := range hits {
		byID[hit.ChunkID] = hit
	}
	a := src.Analyzer()
	kept, held := pts[:0], 0
	for _, p := range pts {
		hit, ok := byID[p.ID]
		if !ok {
			if m.Delivered < 3 {
				held++
				continue
			}
			zerolog.Ctx(ctx).Warn().Str("chunk_id", p.ID).Str("doc_id", p.DocID).
				Msg("index: the chunk's document has no structure yet; its vector is stored without a lexical vector")
			kept = append(kept, p)
			continue
		}
		if err := retrieval.SetLexical(&p, a, hit); err != nil {
			return nil, 0, bus.Permanent(err)
		}
		kept = append(kept, p)
	}
	return kept, held, nil
}

// refreshLexical rewrites the lexical vectors, passages and metadata of a
// document's chunks already in the vector store, after its structure
// changed: a new title, section path, tags, notebook or time changes them
// without new content to embed.
func (h *handler) refreshLexical(ctx context.Context, docID string) error {
	r, ok := h.vs.(retrieval.LexicalRefresher)
	if !ok {
		return nil
	}
	if ls, ok := h.vs.(vectors.LexicalStore); !ok {
		return nil
	} else if has, _ := ls.HasLexical(); !has && !h.keepsMeta() {
		return nil
	}
	src, ok := h.st.(retrieval.PassageSource)
	if !ok {
		return nil
	}
	ids, err := h.book.DocChunkIDs(ctx, docID)
	if err != nil || len(ids) == 0 {
		return classify(err)
	}
	n, err := retrieval.RefreshLexical(ctx, r, src, ids)
	if err != nil {
		return classify(fmt.Errorf("index: refresh the lexical vectors of doc %s: %w", docID, err))
	}
	zerolog.Ctx(ctx).Debug().Str("doc_id", docID).Int("chunks", len(ids)).Int("refreshed", n).Msg("index lexical vectors")
	return nil
}

// keepsMeta reports whether the vector store keeps point metadata for
// scope filters (Qdrant's payload; the embedded store filters by the
// index's chunk sets instead).
func (h *handler) keepsMeta() bool {
	n, ok := h.vs.(interface{ Name() string })
	return ok && n.Name() == vectors.KindQdrant
}

func hashOf(e *schemas.EmbedDone, chunkID string) string {
	for _, it := range e.Items {
		if it.ChunkID == chunkID {
			return it.Hash
		}
	}
	return ""
}
