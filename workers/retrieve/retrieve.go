// Package retrieve holds the query stages: retrieve (kb.query.submitted ->
// kb.query.retrieved: BM25 and vector search fused by RRF) and rerank
// (kb.query.retrieved -> kb.query.reranked: cross-encoder, top K, graph
// expansion). Both wrap a retrieval.Retriever.
package retrieve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/exocortex/exocortex/bus"
	"github.com/exocortex/exocortex/retrieval"
	"github.com/exocortex/exocortex/schemas"
)

// Timeout bounds one query's work in a stage; past it the query is retried.
const Timeout = 20 * time.Second

// NewRetrieve returns the retrieve stage's handler.
func NewRetrieve(r *retrieval.Retriever) bus.Handler {
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		q, err := bus.Decode[*schemas.QuerySubmitted](m)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, Timeout)
		defer cancel()
		out, err := r.Retrieve(ctx, q)
		if err != nil {
			return nil, classify(err)
		}
		zerolog.Ctx(ctx).Info().Str("query_id", q.QueryID).Str("mode", out.Mode).Int("candidates", len(out.Candidates)).
			Interface("timings_ms", out.TimingsMS).Strs("reasons", out.Reasons).Msg("retrieved")
		return []schemas.Event{out}, nil
	})
}

// NewRerank returns the rerank stage's handler.
func NewRerank(r *retrieval.Retriever) bus.Handler {
	return bus.HandlerFunc(func(ctx context.Context, m *bus.Msg) ([]schemas.Event, error) {
		rq, err := bus.Decode[*schemas.QueryRetrieved](m)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, Timeout)
		defer cancel()
		out, err := r.Rerank(ctx, rq)
		if err != nil {
			return nil, classify(err)
		}
		zerolog.Ctx(ctx).Info().Str("query_id", rq.QueryID).Str("mode", out.Mode).Int("contexts", len(out.Contexts)).
			Interface("timings_ms", out.TimingsMS).Msg("reranked")
		return []schemas.Event{out}, nil
	})
}

// classify retries a query that ran out of time a little later; other
// failures (the index is busy, a model failed) are retried with backoff.
func classify(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return bus.RetryAfter(fmt.Errorf("query timed out after %s: %w", Timeout, err), time.Second)
	}
	return err
}
