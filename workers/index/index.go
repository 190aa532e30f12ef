// Package index is the index stage: the single writer of the SQLite store.
// It applies chunks (and tombstones) from kb.chunk.created and document
// structures from kb.doc.structure; every write is an idempotent upsert
// ordered by document version, so redeliveries and reordering are harmless.
package index

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/store"
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

// batcher is implemented by *store.Store: many writes in one transaction.
type batcher interface {
	Batch(ctx context.Context, fn func(ctx context.Context) error) error
}

// Handle applies one message.
func (h *handler) Handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	return h.handle(ctx, m)
}

// Batch lets the bus apply a fetched batch of messages in one transaction
// (one fsync), when the store supports it.
func (h *handler) Batch(ctx context.Context, fn func(ctx context.Context) error) error {
	if b, ok := h.st.(batcher); ok {
		if err := b.Batch(ctx, fn); err != nil {
			return fmt.Errorf("index batch: %w", err)
		}
		return nil
	}
	return fn(ctx)
}

type handler struct {
	cfg Config
	st  Store
}

func (h *handler) handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	if h.cfg.WriteTimeout > 0 {
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
		applied, err := h.st.UpsertChunk(ctx, c)
		if err != nil {
			return nil, classify(fmt.Errorf("index chunk %s of doc %s: %w", c.ChunkID, c.DocID, err))
		}
		zerolog.Ctx(ctx).Debug().Str("chunk_id", c.ChunkID).Str("doc_id", c.DocID).Int64("doc_version", c.DocVersion).
			Bool("tombstone", c.Tombstone).Bool("applied", applied).Msg("index chunk")
		return nil, nil
	case schemas.SubjectDocStructure:
		d, err := bus.Decode[*schemas.DocStructure](m)
		if err != nil {
			return nil, err
		}
		applied, err := h.st.ApplyStructure(ctx, d)
		if err != nil {
			return nil, classify(fmt.Errorf("index structure of doc %s: %w", d.DocID, err))
		}
		zerolog.Ctx(ctx).Debug().Str("doc_id", d.DocID).Int64("doc_version", d.Version).
			Bool("deleted", d.Deleted).Int("blocks", len(d.Blocks)).Bool("applied", applied).Msg("index structure")
		return nil, nil
	default:
		return nil, bus.Permanent(fmt.Errorf("index: unexpected subject %q", m.Subject))
	}
}

// classify marks events the store rejects as invalid permanent; the rest (the
// database was busy, the disk full, the write timed out) are retried.
func classify(err error) error {
	if errors.Is(err, store.ErrInvalid) {
		return bus.Permanent(err)
	}
	return err
}
