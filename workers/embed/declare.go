package embed

import (
	"context"
	"runtime"
	"time"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/stage"
)

// Stage declares the embed stage: kb.chunk.created and kb.embed.request ->
// kb.embed.done, a fetched batch per model run, its cache in KB_EMBEDS.
// Without an embedding model it acknowledges chunks so they do not pile up
// (the system's backfill embeds what the index holds once a model is
// installed).
func Stage() stage.Declaration {
	return stage.Declaration{
		Name:    "embed",
		Stream:  stage.StreamIngest,
		Inputs:  []string{schemas.SubjectChunkCreated, schemas.SubjectEmbedRequest},
		Outputs: []string{schemas.SubjectEmbedDone},
		// A model run over a batch of passages can take a while on two cores.
		AckWait:       2 * time.Minute,
		MaxAckPending: 256,
		// Each model run uses one thread; parallel runs use the cores
		// (1.4x the chunks/s of one worker on two cores).
		Concurrency: runtime.NumCPU(),
		Batch:       DefaultConfig().MaxBatch,
		Needs:       stage.NeedEmbedder,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			if d.Embedder == nil {
				return drain(), nil
			}
			kv, err := d.KV(ctx, stage.BucketEmbeds)
			if err != nil {
				return nil, err
			}
			return New(stage.ConfigOf(d, DefaultConfig()), d.Embedder, kv), nil
		},
	}
}

// drain is the stage without a model: it acknowledges chunks.
func drain() bus.Handler {
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		return nil, nil
	})
}
