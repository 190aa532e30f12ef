// Package rerank is the rerank stage: kb.query.retrieved ->
// kb.query.reranked (cross-encoder over the fused candidates to the top K,
// then graph expansion), over a retrieval.Retriever.
package rerank

import (
	"context"
	"runtime"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
	"github.com/exocortex/exocortex/workers/retrieve"
	"github.com/exocortex/exocortex/workers/stage"
)

// Stage declares the rerank stage.
func Stage() stage.Declaration {
	return stage.Declaration{
		Name:        "rerank",
		Stream:      stage.StreamQuery,
		Inputs:      []string{schemas.SubjectRetrieved},
		Outputs:     []string{schemas.SubjectReranked},
		AckWait:     time.Minute,
		Concurrency: max(2, runtime.NumCPU()), // CPU work (the cross-encoder), but a question also waits on reads and publishes
		Batch:       1,
		Needs:       stage.NeedStore | stage.NeedReranker | stage.NeedRetriever,
		New: func(ctx context.Context, d *stage.Deps) (bus.Handler, error) {
			return New(d.Retriever), nil
		},
	}
}

// New returns the stage's handler.
func New(r *retrieval.Retriever) bus.Handler {
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		rq, err := bus.Decode[*schemas.QueryRetrieved](m)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, retrieve.Timeout)
		defer cancel()
		out, err := r.Rerank(ctx, rq)
		if err != nil {
			return nil, retrieve.Classify(err)
		}
		zerolog.Ctx(ctx).Info().Str("query_id", rq.QueryID).Str("mode", out.Mode).Int("contexts", len(out.Contexts)).
			Interface("timings_ms", out.TimingsMS).Msg("reranked")
		return []schemas.Event{out}, nil
	})
}
