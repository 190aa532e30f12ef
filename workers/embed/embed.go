// Package embed is the embed stage: it turns chunks (kb.chunk.created and
// backfill requests on kb.embed.request) into vectors with the embedding
// model, a whole fetched batch per model run, and publishes them on
// kb.embed.done for the index stage to store. Vectors are cached by model and
// content hash in a KV bucket, so content seen before (a re-sent chunk, a
// moved paragraph, a second replica) costs no model run.
package embed

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
)

// Embedder embeds passages (the model adds its own "passage: " prefix).
type Embedder interface {
	EmbedPassages(ctx context.Context, texts []string) ([][]float32, error)
	// Name identifies the model and its weights ("multilingual-e5-small@1a2b3c4d5e6f").
	Name() string
	Dim() int
}

// Config tunes the stage.
type Config struct {
	// MaxBatch is the most passages per model run (a fetched batch larger
	// than this runs in several).
	MaxBatch int
	// Timeout bounds one model run.
	Timeout time.Duration
}

// DefaultConfig: 32 passages per run, two minutes each at most.
func DefaultConfig() Config { return Config{MaxBatch: 32, Timeout: 2 * time.Minute} }

// Handler is the stage's handler; it implements bus.BatchHandler.
type Handler struct {
	cfg   Config
	emb   Embedder
	cache bus.KV // may be nil
	key   string
}

// New returns the stage's handler. cache (the KB_EMBEDS bucket) may be nil.
func New(cfg Config, emb Embedder, cache bus.KV) *Handler {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultConfig().MaxBatch
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultConfig().Timeout
	}
	return &Handler{cfg: cfg, emb: emb, cache: cache, key: kvSafe.ReplaceAllString(emb.Name(), "_")}
}

var kvSafe = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Handle embeds one chunk.
func (h *Handler) Handle(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
	o := h.HandleBatch(ctx, []*bus.Msg{m})[0]
	return o.Out, o.Err
}

// Passage is the text embedded for a chunk: its section path (document title
// and headings) above its text, so a chunk is found by what it is about even
// when its own words do not say it.
func Passage(c *schemas.ChunkCreated) string {
	if len(c.SectionPath) == 0 {
		return c.Text
	}
	return strings.Join(c.SectionPath, " / ") + "\n" + c.Text
}

type job struct {
	i     int
	chunk *schemas.ChunkCreated
}

// HandleBatch embeds every chunk of the batch: cached vectors first, then one
// model run (or a few, MaxBatch at a time) for the rest. Tombstones produce
// nothing (the index deletes their vectors itself); an undecodable message is
// a permanent error; a failing model run fails the messages of that run.
func (h *Handler) HandleBatch(ctx context.Context, msgs []*bus.Msg) []bus.Outcome {
	log := zerolog.Ctx(ctx)
	out := make([]bus.Outcome, len(msgs))
	var todo []job
	for i, m := range msgs {
		c, err := decode(m)
		if err != nil {
			out[i].Err = err
			continue
		}
		if c == nil || strings.TrimSpace(c.Text) == "" {
			continue
		}
		if v, ok := h.cached(ctx, c.Hash); ok {
			out[i].Out = []schemas.Event{h.done(c, v, true)}
			continue
		}
		todo = append(todo, job{i: i, chunk: c})
	}
	for lo := 0; lo < len(todo); lo += h.cfg.MaxBatch {
		run := todo[lo:min(lo+h.cfg.MaxBatch, len(todo))]
		texts := make([]string, len(run))
		for k, j := range run {
			texts[k] = Passage(j.chunk)
		}
		rctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
		t := time.Now()
		vecs, err := h.emb.EmbedPassages(rctx, texts)
		cancel()
		if err == nil && len(vecs) != len(run) {
			err = fmt.Errorf("model returned %d vectors for %d passages", len(vecs), len(run))
		}
		if err != nil {
			err = fmt.Errorf("embed %d chunks with %s: %w", len(run), h.emb.Name(), err)
			for _, j := range run {
				out[j.i].Err = err
			}
			log.Warn().Err(err).Msg("embed run failed")
			continue
		}
		log.Debug().Int("passages", len(run)).Dur("took", time.Since(t)).Msg("embedded")
		for k, j := range run {
			out[j.i].Out = []schemas.Event{h.done(j.chunk, vecs[k], false)}
			h.remember(ctx, j.chunk.Hash, vecs[k])
		}
	}
	return out
}

func decode(m *bus.Msg) (*schemas.ChunkCreated, error) {
	switch m.Subject {
	case schemas.SubjectChunkCreated:
		c, err := bus.Decode[*schemas.ChunkCreated](m)
		if err != nil {
			return nil, err
		}
		if c.Tombstone {
			return nil, nil
		}
		return c, nil
	case schemas.SubjectEmbedRequest:
		r, err := bus.Decode[*schemas.EmbedRequest](m)
		if err != nil {
			return nil, err
		}
		return &r.Chunk, nil
	}
	return nil, bus.Permanent(fmt.Errorf("embed: unexpected subject %q", m.Subject))
}

func (h *Handler) done(c *schemas.ChunkCreated, v []float32, cached bool) *schemas.EmbedDone {
	return &schemas.EmbedDone{Model: h.emb.Name(), Dim: len(v), Items: []schemas.EmbeddedChunk{{
		ChunkID: c.ChunkID, DocID: c.DocID, Hash: c.Hash, Lang: c.Lang, DocVersion: c.DocVersion, Cached: cached, Vector: v}}}
}

func (h *Handler) cacheKey(hash string) string { return h.key + "." + hash }

func (h *Handler) cached(ctx context.Context, hash string) ([]float32, bool) {
	if h.cache == nil {
		return nil, false
	}
	raw, err := h.cache.Get(ctx, h.cacheKey(hash))
	if err != nil || raw == nil {
		return nil, false
	}
	v, err := schemas.VectorFromBytes(raw)
	if err != nil || len(v) != h.emb.Dim() {
		return nil, false
	}
	return v, true
}

func (h *Handler) remember(ctx context.Context, hash string, v []float32) {
	if h.cache == nil {
		return
	}
	if err := h.cache.Put(ctx, h.cacheKey(hash), schemas.Vector(v).Bytes()); err != nil {
		zerolog.Ctx(ctx).Debug().Err(err).Msg("embed cache put failed")
	}
}
